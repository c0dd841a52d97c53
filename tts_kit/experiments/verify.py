"""`tts-kit verify`: does tts_kit's engine give the official package's audio on a bundle?

Both pipelines get the same cases (texts in English and Korean, voices, flow steps,
speed, batch size) and the same initial noise: the official ``supertonic`` package draws
``np.random.randn(B, 144, L)`` from numpy's global generator, which this module seeds
(and restores afterwards); tts_kit gets `tts_kit.models.supertonic.engine.OfficialNoise` with the
same
seed, which draws the same numbers from a private generator. Every stage's output is
recorded on both sides (the official engine's four ONNX Runtime sessions are wrapped by
recorders; tts_kit's through `tts_kit.models.supertonic.engine.Engine.add_stage_hook`), and
compared:
max absolute difference and SNR per stage, then the waveform (SNR, max absolute
difference, length in samples, log-mel distance and mel-cepstral distortion with DTW
alignment, `tts_kit.experiments.audio_metrics`).

``against`` is ``"official"`` or a second bundle directory; against a converted copy
(FP16, INT8) of the same model the report is the conversion's fidelity report (the same
cases and noise through tts_kit on both).

What is compared, exactly:

- The official package returns the vocoder's whole output (a multiple of 3072 samples);
  it is trimmed to the official predicted duration, ``int(duration * 44100)`` samples,
  as tts_kit trims its own.
- The official engine vocodes a batch padded to its longest item. Its vocoder
  de-normalises the latent before its first convolution, so the zero padding becomes a
  non-zero signal that leaks into the last two latent frames (about 0.14 s) of every
  shorter item: the official batch output of such an item is not its single-call output.
  tts_kit vocodes each item unpadded (a batch equals the single calls). The reference
  waveform of item ``b`` is therefore the official vocoder session run on item ``b``'s
  own latent, as the official single call would; the leak itself is reported
  (``official_batch_leak``) and does not count against the verdict.
- Texts are read without tts_kit's normalisation (the official package has none), and
  each text must fit one chunk (the official batch call does not chunk).

The official package is given the model directory and ``auto_download=False``; it only
reads there (a test runs it on a read-only copy and compares SHA-256s before and after).

Example:
    >>> report = verify("models/supertonic-3")  # doctest: +SKIP
    >>> report.passed, report.worst_snr_db  # doctest: +SKIP
    (True, inf)
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.experiments.audio_metrics import (
    log_mel_distance,
    mel_cepstral_distortion,
    snr_from_energies,
)

#: Default tolerance: every stage and every waveform within this SNR of the reference ...
MIN_SNR_DB = 60.0
#: ... and no sample further than this from it ...
MAX_ABS_DIFF = 1e-3
#: ... and every item exactly as long (predicted durations round to the same sample).
MAX_LENGTH_DIFF_SAMPLES = 0

OFFICIAL = "official"

#: What the reports call each stage's compared output.
STAGE_OUTPUTS = {
    "duration_predictor": "duration (s)",
    "text_encoder": "text embedding",
    "vector_estimator": "latent after every flow step",
    "vocoder": "waveform per item (trimmed)",
}


@dataclass(frozen=True)
class Case:
    """One verification case: a batch of texts (one voice each) at one setting.

    Example:
        >>> Case(("Hello.",), "en", ("M1",), steps=2).batch
        1
    """

    texts: tuple[str, ...]
    lang: str
    voices: tuple[str, ...]
    steps: int = contract.DEFAULT_STEPS
    speed: float = contract.DEFAULT_SPEED
    seed: int = 0

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.voices) or not self.texts:
            raise TtsKitError(f"a case needs one voice per text, got {len(self.texts)} texts "
                             f"and {len(self.voices)} voices")
        from tts_kit.text import chunk

        for t in self.texts:  # the official batch call reads each text as one chunk
            if len(chunk(t, self.lang)) != 1:
                raise TtsKitError(f"verify compares texts of one chunk each; {t[:30]!r}... "
                                 "is split in several: give shorter texts")

    @property
    def batch(self) -> int:
        return len(self.texts)

    def label(self) -> str:
        return (f"{self.lang} B={self.batch} steps={self.steps} speed={self.speed:g} "
                f"seed={self.seed} voices={','.join(self.voices)}")


#: English and Korean texts of one chunk each (the official batch call does not chunk).
TEXTS = {
    "en": ("The quick brown fox jumps over the lazy dog.",
           "Hello there, how are you today?",
           "On a small server, memory decides how many voices can speak at once."),
    "ko": ("안녕하세요, 반갑습니다.",
           "오늘 날씨가 정말 좋네요.",
           "작은 서버에서는 메모리가 동시에 말할 수 있는 목소리의 수를 정합니다."),
}


def default_cases(voices: Sequence[str]) -> list[Case]:
    """Both languages, batch sizes 1 to 3, several speeds and step counts, two voices.

    Example:
        >>> len(default_cases(["M1", "F1"]))
        6
    """
    v = list(voices)[:2] or ["M1"]
    pick = lambda n: tuple(v[i % len(v)] for i in range(n))  # noqa: E731
    cases = []
    for lang in ("en", "ko"):
        t = TEXTS[lang]
        cases += [
            Case(t[:1], lang, pick(1), steps=5, speed=1.05, seed=0),
            Case(t[:2], lang, pick(2), steps=3, speed=0.8, seed=1),
            Case(t[:3], lang, pick(3), steps=2, speed=1.6, seed=2),
        ]
    return cases


@dataclass
class Trace:
    """What one pipeline produced for one case: every stage's outputs and the waveforms.

    Example:
        >>> Trace({"vocoder": [np.zeros(4)]}, [np.zeros(4)]).leak
        0.0
    """

    stages: dict[str, list[np.ndarray]] = field(default_factory=dict)
    wavs: list[np.ndarray] = field(default_factory=list)
    leak: float = 0.0  # official only: batch output vs single-item vocoding, max |diff|
    calls: list[tuple[str, dict[str, np.ndarray], np.ndarray]] = field(default_factory=list)
    """tts_kit with ``keep_calls``: every stage run's inputs and output, to replay."""


@dataclass
class Comparison:
    """One output compared with its reference.

    Example:
        >>> c = Comparison.of([np.ones(4)], [np.ones(4) * 1.1])
        >>> round(c.snr_db, 1), round(c.max_abs_diff, 2), c.length_diff
        (20.0, 0.1, 0)
    """

    max_abs_diff: float
    snr_db: float
    length_diff: int = 0  # samples (waveforms) or elements, candidate - reference

    @staticmethod
    def of(ref: Sequence[np.ndarray], cand: Sequence[np.ndarray]) -> Comparison:
        """Pool several paired arrays (compared over their common leading length)."""
        sig = err = 0.0
        worst = 0.0
        diff = 0
        for r, c in zip(ref, cand):
            r64 = np.asarray(r, np.float64)
            c64 = np.asarray(c, np.float64)
            if r64.shape != c64.shape:
                diff += c64.size - r64.size
                n = min(r64.shape[-1], c64.shape[-1])
                r64, c64 = r64[..., :n], c64[..., :n]
                if r64.shape != c64.shape:
                    return Comparison(math.nan, math.nan, diff)
            if not np.isfinite(c64).all():
                return Comparison(math.nan, math.nan, diff)
            sig += float(np.sum(r64 * r64))
            err += float(np.sum((r64 - c64) ** 2))
            if r64.size:
                worst = max(worst, float(np.max(np.abs(r64 - c64))))
        return Comparison(worst, snr_from_energies(sig, err), diff)


@dataclass
class CaseResult:
    """A case's comparisons: per stage, the waveform, and what the ear would notice.

    Example:
        >>> r = verify("standin-tiny").results[0]  # doctest: +SKIP
        >>> r.waveform.snr_db, r.mcd_db, r.duration_change_s  # doctest: +SKIP
        (inf, 0.0, 0.0)
    """

    case: Case
    stages: dict[str, Comparison]
    waveform: Comparison
    samples_ref: list[int]
    samples_candidate: list[int]
    log_mel_db: float
    mcd_db: float
    official_batch_leak: float = 0.0
    stages_alone: dict[str, Comparison] = field(default_factory=dict)
    """Against a bundle: each candidate stage on the reference's inputs (`replay`)."""

    @property
    def duration_change_s(self) -> float:
        """Largest |candidate - reference| item length, in seconds."""
        return max(abs(a - b) for a, b in zip(self.samples_ref, self.samples_candidate)) / (
            contract.SAMPLE_RATE)


@dataclass
class VerifyReport:
    """All cases, the tolerance, and the verdict.

    Example:
        >>> r = VerifyReport("m", "official", [])
        >>> r.passed
        False
    """

    model: str
    against: str
    results: list[CaseResult]
    min_snr_db: float = MIN_SNR_DB
    max_abs_diff: float = MAX_ABS_DIFF
    max_length_diff: int = MAX_LENGTH_DIFF_SAMPLES
    notes: list[str] = field(default_factory=list)
    floor: Floor | None = None
    """With ``floor=True``: the reference model's noise floor (`noise_floor`)."""

    @property
    def distances(self) -> Distances:
        """The candidate's audio against the reference's, pooled over the cases."""
        return Distances.of_results(self.results)

    @property
    def verdict(self) -> tuple[str, list[str]] | None:
        """Against the floor (when measured): within the floor, audible risk, or broken."""
        return self.floor.verdict(self.distances) if self.floor and self.results else None

    def failures(self) -> list[str]:
        """One line per comparison outside the tolerance."""
        out = []
        for r in self.results:
            parts = {**r.stages, "waveform": r.waveform}
            for name, c in parts.items():
                if not (c.snr_db >= self.min_snr_db):
                    out.append(f"{r.case.label()}: {name} SNR {c.snr_db:.1f} dB < "
                               f"{self.min_snr_db:g} dB")
                elif not (c.max_abs_diff <= self.max_abs_diff):
                    out.append(f"{r.case.label()}: {name} max |diff| {c.max_abs_diff:.3g} > "
                               f"{self.max_abs_diff:g}")
            lengths = [abs(a - b) for a, b in zip(r.samples_ref, r.samples_candidate)]
            if max(lengths) > self.max_length_diff:
                out.append(f"{r.case.label()}: lengths {r.samples_candidate} samples, "
                           f"reference {r.samples_ref}")
        return out

    @property
    def passed(self) -> bool:
        return bool(self.results) and not self.failures()

    @property
    def worst_snr_db(self) -> float:
        vals = [c.snr_db for r in self.results for c in (*r.stages.values(), r.waveform)]
        return min(vals, key=lambda v: -math.inf if math.isnan(v) else v) if vals else math.nan

    def tolerance(self) -> str:
        return (f"every stage and waveform SNR >= {self.min_snr_db:g} dB and max |diff| <= "
                f"{self.max_abs_diff:g}; item lengths within {self.max_length_diff} samples")

    def table(self) -> str:
        """The report as text: one block per case, a line per stage."""
        lines = [f"verify {self.model} against {self.against}",
                 f"tolerance: {self.tolerance()}", ""]
        for r in self.results:
            lines.append(r.case.label())
            for name, c in {**r.stages, "waveform": r.waveform}.items():
                alone = r.stages_alone.get(name)
                extra = (f"   (alone, on the reference's inputs: SNR {_db(alone.snr_db)} dB)"
                         if alone else "")
                lines.append(f"  {name:<19} max|diff| {c.max_abs_diff:10.3g}   "
                             f"SNR {_db(c.snr_db):>8} dB{extra}")
            dur = ", ".join(f"{b - a:+d}" for a, b in zip(r.samples_ref, r.samples_candidate))
            lines.append(f"  {'length change':<19} {dur} samples "
                         f"({r.duration_change_s * 1000:.1f} ms at most)")
            lines.append(f"  {'log-mel distance':<19} {r.log_mel_db:.3f} dB;  MCD (DTW) "
                         f"{r.mcd_db:.3f} dB")
            if r.official_batch_leak:
                lines.append(f"  (official batch output of shorter items differs from their "
                             f"single-call output by up to {r.official_batch_leak:.3g}: "
                             "padding leaks through its vocoder; not counted)")
        lines += ["", *self.notes] if self.notes else []
        if self.floor is not None and self.results:
            verdict, why = self.verdict or ("", [])
            lines += ["", "noise floor of the reference (what legitimately varies):",
                      self.floor.table(), "", f"candidate (pooled over the cases): "
                      f"SNR {_db(self.distances.snr_db)} dB, log-mel "
                      f"{self.distances.log_mel_db:.4f} dB, MCD {self.distances.mcd_db:.4f} dB, "
                      f"length change {self.distances.duration_change_s * 1000:.1f} ms",
                      f"verdict: {verdict}", *[f"  {w}" for w in why]]
        bad = self.failures()
        lines.append("")
        lines.append("PASS: within tolerance" if self.passed else
                     f"FAIL: {len(bad)} comparison(s) outside tolerance" if bad else
                     "FAIL: nothing compared")
        lines += [f"  {b}" for b in bad[:20]]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["passed"] = self.passed
        out["distances"] = asdict(self.distances) if self.results else None
        out["verdict"] = self.verdict[0] if self.verdict else None
        return _json_safe(out)


def _json_safe(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def _db(v: float) -> str:
    return "inf" if v == math.inf else "nan" if math.isnan(v) else f"{v:.1f}"


# -- the two pipelines ----------------------------------------------------------------


def _engine(model: str | os.PathLike[str], threads: int | None, optimization: str = "all"
            ) -> Any:
    from tts_kit.models.supertonic.engine import Engine
    from tts_kit.runtime.sessions import get_preset

    preset = get_preset("supertonic-default").replace(graph_optimization_level=optimization)
    if threads is not None:
        preset = preset.replace(intra_op_num_threads=threads, inter_op_num_threads=1)
    return Engine(model, preset=preset, normalize=False)


def run_tts_kit(engine: Any, case: Case, keep_calls: bool = False) -> Trace:
    """One case through tts_kit's engine, with `OfficialNoise` seeded by ``case.seed``.

    ``keep_calls``: also keep every stage run's inputs and output (``trace.calls``), so a
    candidate can replay them (`replay`).

    Example:
        >>> case = Case(("Hi.",), "en", ("M1",))
        >>> trace = run_tts_kit(_engine("standin-tiny", 1), case)  # doctest: +SKIP
    """
    from tts_kit.models.supertonic.engine import OfficialNoise

    trace = Trace({s: [] for s in contract.STAGES})

    def hook(stage: str, feeds: Any, out: np.ndarray) -> None:
        # The official package's duration output is before the division by speed.
        trace.stages[stage].append(np.array(out))
        if keep_calls:
            trace.calls.append((stage, {k: np.array(v) for k, v in feeds.items()},
                                np.array(out)))

    remove = engine.add_stage_hook(hook)
    try:
        results = engine.synthesize_batch(list(case.texts), case.lang, list(case.voices),
                                          case.steps, case.speed, noise=OfficialNoise(case.seed))
    finally:
        remove()
    trace.stages["duration_predictor"] = [np.concatenate(
        [a.reshape(-1) for a in trace.stages["duration_predictor"]])]
    trace.stages["vector_estimator"] = [np.stack(trace.stages["vector_estimator"])]
    trace.stages["vocoder"] = [w.reshape(-1)[: len(r.wav)] for w, r in
                               zip(trace.stages["vocoder"], results)]
    trace.wavs = [r.wav for r in results]
    return trace


class _Recorder:
    """Stands in for one of the official engine's sessions: runs it, keeps the outputs."""

    def __init__(self, sess: Any, sink: list[np.ndarray], inputs: list[dict] | None = None):
        self.sess, self.sink, self.inputs = sess, sink, inputs

    def run(self, names: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        out = self.sess.run(names, feeds)
        self.sink.append(np.array(out[0], np.float32))
        if self.inputs is not None:
            self.inputs.append({k: np.array(v) for k, v in feeds.items()})
        return out


@contextmanager
def _seeded_global_numpy(seed: int) -> Iterator[None]:
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def official_tts(model: str | os.PathLike[str], threads: int | None) -> Any:
    """The official package's ``TTS`` on ``model``: no download, reads only.

    Example:
        >>> tts = official_tts("standin-tiny", threads=1)  # doctest: +SKIP

    Raises:
        TtsKitError: the package is not installed (with the fix).
    """
    try:
        import supertonic
    except ImportError:  # pragma: no cover - a test dependency, optional for users
        raise TtsKitError("the official 'supertonic' package is not installed; "
                         "pip install supertonic (or verify --against DIR)") from None
    return supertonic.TTS(model_dir=str(model), auto_download=False,
                          intra_op_num_threads=threads,
                          inter_op_num_threads=None if threads is None else 1)


def run_official(tts: Any, case: Case) -> Trace:
    """One case through the official engine (``TTS.model``, its batch call), its four
    sessions wrapped by recorders (put back afterwards) and numpy's global generator seeded
    with ``case.seed`` (restored afterwards).

    Example:
        >>> trace = run_official(official_tts("standin-tiny", 1),
        ...                      Case(("Hi.",), "en", ("M1",)))  # doctest: +SKIP
    """
    from supertonic.core import Style

    model = tts.model
    sessions = ("dp_ort", "text_enc_ort", "vector_est_ort", "vocoder_ort")
    trace = Trace({s: [] for s in contract.STAGES})
    voc_in: list[dict] = []
    saved = {name: getattr(model, name) for name in sessions}
    for name, stage in zip(sessions, contract.STAGES):
        setattr(model, name, _Recorder(saved[name], trace.stages[stage],
                                       voc_in if stage == "vocoder" else None))
    styles = [tts.get_voice_style(v) for v in case.voices]
    style = Style(np.concatenate([s.ttl for s in styles]), np.concatenate([s.dp for s in styles]))
    try:
        with _seeded_global_numpy(case.seed):
            wav, dur = model(list(case.texts), style, case.steps, case.speed, case.lang)
    finally:
        for name, sess in saved.items():
            setattr(model, name, sess)
    sr = model.sample_rate
    n_samples = [int(d * sr) for d in np.asarray(dur).reshape(-1)]
    latent = voc_in[0]["latent"]
    wavs, leak = [], 0.0
    for b, n in enumerate(n_samples):
        frames = -(-n // contract.FRAME_SAMPLES)
        if latent.shape[0] == 1 or frames == latent.shape[-1]:
            single = wav[b]
        else:  # the official single call of this item: its latent, unpadded
            single = saved["vocoder_ort"].run(None, {"latent": latent[b:b + 1, :, :frames]})[0][0]
            leak = max(leak, float(np.max(np.abs(single[:n] - wav[b, :n]))))
        wavs.append(np.asarray(single[:n], np.float32))
    trace.stages["duration_predictor"] = [trace.stages["duration_predictor"][0].reshape(-1)]
    trace.stages["vector_estimator"] = [np.stack(trace.stages["vector_estimator"])]
    trace.stages["vocoder"] = list(wavs)
    trace.wavs = wavs
    trace.leak = leak
    return trace


def replay(engine: Any, ref: Trace) -> dict[str, Comparison]:
    """Each stage of ``engine`` on the reference's own inputs (`Engine.run_stage`): its
    error alone, not inherited from the stages before it (a duration that moves a frame
    boundary otherwise changes every later shape).

    Example:
        >>> ref = run_tts_kit(_engine("fp32-dir", 1), case, keep_calls=True)  # doctest: +SKIP
        >>> replay(_engine("int8-dir", 1), ref)["vocoder"].snr_db  # doctest: +SKIP
        31.6
    """
    got: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {
        s: ([], []) for s in contract.STAGES}
    for stage, feeds, out in ref.calls:
        got[stage][0].append(out)
        got[stage][1].append(engine.run_stage(stage, feeds))
    return {s: Comparison.of(a, b) for s, (a, b) in got.items() if a}


def compare(case: Case, ref: Trace, cand: Trace, sample_rate: int = contract.SAMPLE_RATE
            ) -> CaseResult:
    """Compare a candidate trace with the reference's, stage by stage and as audio.

    Example:
        >>> t = Trace({s: [np.ones(8)] for s in contract.STAGES}, [np.ones(8)])
        >>> compare(Case(("Hi.",), "en", ("M1",)), t, t).waveform.snr_db
        inf
    """
    stages = {s: Comparison.of(ref.stages[s], cand.stages[s]) for s in contract.STAGES}
    wave = Comparison.of(ref.wavs, cand.wavs)
    lmd = [log_mel_distance(r, c, sample_rate) for r, c in zip(ref.wavs, cand.wavs)]
    mcd = [mel_cepstral_distortion(r, c, sample_rate) for r, c in zip(ref.wavs, cand.wavs)]
    return CaseResult(case, stages, wave, [len(w) for w in ref.wavs],
                      [len(w) for w in cand.wavs], float(np.mean(lmd)), float(np.mean(mcd)),
                      ref.leak)


def verify(
    model: Any = None,
    against: str | os.PathLike[str] = OFFICIAL,
    cases: Sequence[Case] | None = None,
    threads: int | None = 1,
    min_snr_db: float = MIN_SNR_DB,
    max_abs_diff: float = MAX_ABS_DIFF,
    max_length_diff: int = MAX_LENGTH_DIFF_SAMPLES,
    floor: bool = False,
) -> VerifyReport:
    """Run the cases through tts_kit on ``model`` and through the reference; compare.

    Args:
        model: a `tts_kit.Bundle` or its directory (None: discovery,
            `tts_kit.models.supertonic.bundle.resolve_model_dir`).
        against: ``"official"`` (the official package on the same bundle: the
            reference) or a second bundle directory (tts_kit on ``model`` is the
            reference, tts_kit on this one the candidate: a conversion's fidelity).
        cases: what to synthesise (default `default_cases` with the bundle's voices).
        threads: intra-op threads on both sides (1: reproducible; None: ORT's default).
        min_snr_db, max_abs_diff, max_length_diff: the tolerance.
        floor: also measure the reference model's noise floor (`noise_floor`) and give
            the candidate a verdict against it (``report.verdict``).

    Example:
        >>> verify("standin-tiny").passed  # doctest: +SKIP
        True
    """
    from tts_kit.models.supertonic.bundle import Bundle

    bundle = model if isinstance(model, Bundle) else Bundle.discover(model)
    cases = list(cases) if cases is not None else default_cases(_voices(bundle))
    report = VerifyReport(str(bundle.path), str(against), [], min_snr_db, max_abs_diff,
                          max_length_diff)
    mine = _engine(bundle.path, threads)
    if str(against) == OFFICIAL:
        tts = official_tts(bundle.path, threads)
        for case in cases:
            report.results.append(compare(case, run_official(tts, case), run_tts_kit(mine, case)))
        report.notes.append("reference: the official supertonic package on the same bundle")
    else:
        other = Bundle(Path(against).expanduser())
        refs = [run_tts_kit(mine, case, keep_calls=True) for case in cases]
        mine.close()
        theirs = _engine(other.path, threads)
        for case, ref in zip(cases, refs):
            result = compare(case, ref, run_tts_kit(theirs, case))
            result.stages_alone = replay(theirs, ref)
            ref.calls.clear()
            report.results.append(result)
        theirs.close()
        report.notes.append(f"reference: tts_kit on {bundle.path}; candidate: tts_kit on "
                            f"{other.path}")
    if floor:
        report.floor = noise_floor(bundle, cases)
    return report


def _voices(bundle: Any) -> list[str]:
    """The default voice first, then another (two voices exercise the batch's styles)."""
    first = bundle.default_voice
    return [first, *[v for v in bundle.voices if v != first]][:2]


# -- the noise floor and verdicts -------------------------------------------------------------

#: A companion text longer than every case text: batched with it, each case item is padded.
PADDING_COMPANION = {
    "en": "While the others were talking, the old clockmaker quietly repaired the tower clock, "
          "one small brass wheel after another, until it struck noon again.",
    "ko": "다른 사람들이 이야기하는 동안 늙은 시계공은 탑시계의 작은 톱니바퀴를 하나씩 고쳐서 "
          "마침내 정오를 다시 알리게 했습니다.",
}

#: A distance within this factor of the floor's is "within the floor" (an SNR within
#: 10 log10(4) = 6 dB of it: at most four times the error energy of the legitimate variation).
FLOOR_FACTOR = 2.0

#: A log-mel distance or MCD at least this fraction of another noise draw's is "broken":
#: the candidate is nearer to an unrelated take than to the rendition it should reproduce.
BROKEN_FRACTION = 0.5

VERDICTS = ("within the floor", "audible risk", "broken")


@dataclass
class Distances:
    """How far one set of waveforms is from the reference's, pooled over the cases.

    Example:
        >>> Distances(40.0, 0.1, 0.2, 0.0).worse_than(Distances(60.0, 0.05, 0.05, 0.0), 2.0)
        ['waveform SNR 40.0 dB < 54.0 dB', 'MCD 0.2 dB > 0.1 dB']
    """

    snr_db: float
    log_mel_db: float
    mcd_db: float
    duration_change_s: float

    @staticmethod
    def of(ref: Sequence[np.ndarray], cand: Sequence[np.ndarray],
           sample_rate: int = contract.SAMPLE_RATE) -> Distances:
        wave = Comparison.of(ref, cand)
        lmd = [log_mel_distance(r, c, sample_rate) for r, c in zip(ref, cand)]
        mcd = [mel_cepstral_distortion(r, c, sample_rate) for r, c in zip(ref, cand)]
        dur = max(abs(len(r) - len(c)) for r, c in zip(ref, cand)) / sample_rate
        return Distances(wave.snr_db, float(np.mean(lmd)), float(np.mean(mcd)), dur)

    @staticmethod
    def of_results(results: Sequence[CaseResult]) -> Distances:
        """Pooled over verify's case results (worst SNR, mean distances, worst length)."""
        return Distances(
            min((r.waveform.snr_db for r in results), default=math.nan),
            float(np.mean([r.log_mel_db for r in results])),
            float(np.mean([r.mcd_db for r in results])),
            max(r.duration_change_s for r in results),
        )

    def finite(self) -> bool:
        return not any(math.isnan(v) for v in (self.snr_db, self.log_mel_db, self.mcd_db))

    def worse_than(self, limit: Distances, factor: float = 1.0) -> list[str]:
        """What is further than ``factor`` x ``limit``'s distances (each line says so)."""
        out = []
        snr_limit = limit.snr_db - 20 * math.log10(factor)
        if not (self.snr_db >= snr_limit):
            out.append(f"waveform SNR {self.snr_db:.1f} dB < {snr_limit:.1f} dB")
        for name, mine, lim in (("log-mel distance", self.log_mel_db, limit.log_mel_db),
                                ("MCD", self.mcd_db, limit.mcd_db)):
            if not (mine <= factor * lim):
                out.append(f"{name} {mine:.3g} dB > {factor * lim:.3g} dB")
        if self.duration_change_s > limit.duration_change_s:
            out.append(f"length change {self.duration_change_s * 1000:.1f} ms > "
                       f"{limit.duration_change_s * 1000:.1f} ms")
        return out


@dataclass
class Floor:
    """What legitimately varies, measured: the scale a conversion is judged on.

    ``runs`` holds the distances between two runs of the unconverted model that differ
    only in what may legitimately differ (intra-op thread count; ONNX Runtime's graph
    fusions, ``all`` against ``basic``: the same arithmetic in another order; batch
    padding: each text alone, then batched beside a longer text), ``floor``
    their worst; ``take`` the distance to another noise draw (another take of the same
    text by the same model: a conversion that moves the audio this far has lost the
    rendition it was meant to reproduce). Verdicts: ``broken`` when the log-mel distance
    or MCD reaches `BROKEN_FRACTION` of another take's; ``within the floor`` when every
    distance is within `FLOOR_FACTOR` of the floor's and the length change within the
    floor's; ``audible risk`` between.

    Example:
        >>> f = Floor({}, Distances(90.0, 0.01, 0.01, 0.0), Distances(0.5, 8.0, 9.0, 0.0))
        >>> f.verdict(Distances(88.0, 0.015, 0.012, 0.0))[0]
        'within the floor'
        >>> f.verdict(Distances(30.0, 1.0, 1.5, 0.0))[0]
        'audible risk'
        >>> f.verdict(Distances(0.1, 9.0, 9.5, 0.2))[0]
        'broken'
    """

    runs: dict[str, Distances]
    floor: Distances
    take: Distances
    factor: float = FLOOR_FACTOR

    def verdict(self, d: Distances) -> tuple[str, list[str]]:
        """``(verdict, reasons)``: within the floor, audible risk, or broken."""
        if not d.finite():
            return "broken", ["non-finite audio"]
        half = BROKEN_FRACTION
        past_take = [r for r in d.worse_than(self.take, half) if r.startswith(("log-mel", "MCD"))]
        if past_take:
            return "broken", [f"{r} ({half:g}x another noise draw's)" for r in past_take]
        beyond = d.worse_than(self.floor, self.factor)
        if beyond:
            return "audible risk", [f"{r} ({self.factor:g}x the floor)" for r in beyond]
        return "within the floor", []

    def table(self) -> str:
        lines = [f"{'':<22}{'SNR dB':>9}{'log-mel dB':>12}{'MCD dB':>9}{'length ms':>11}"]
        for name, d in {**self.runs, "floor (worst)": self.floor,
                        "another noise draw": self.take}.items():
            lines.append(f"{name:<22}{_db(d.snr_db):>9}{d.log_mel_db:>12.4f}{d.mcd_db:>9.4f}"
                         f"{d.duration_change_s * 1000:>11.1f}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return _json_safe(asdict(self))


def _seeded_wavs(engine: Any, case: Case, seed_offset: int = 0,
                 companion: bool = False) -> list[np.ndarray]:
    """The case's waveforms with per-item seeds (`Engine` default noise: independent of
    the batch), optionally each batched beside a longer companion text."""
    seeds = [case.seed * 100 + i + seed_offset for i in range(case.batch)]
    if not companion:
        res = engine.synthesize_batch(list(case.texts), case.lang, list(case.voices),
                                      case.steps, case.speed, seed=seeds)
        return [r.wav for r in res]
    wavs = []
    for text, voice, s in zip(case.texts, case.voices, seeds):
        res = engine.synthesize_batch([text, PADDING_COMPANION[case.lang]], case.lang,
                                      [voice, voice], case.steps, case.speed, seed=[s, 10**6])
        wavs.append(res[0].wav)
    return wavs


def noise_floor(
    model: Any = None, cases: Sequence[Case] | None = None, threads: tuple[int, int] = (1, 2),
    make_engine: Callable[[Path, int | None, str], Any] | None = None,
    *,
    padding: bool = True,
) -> Floor:
    """Measure the floor: the same cases through the unconverted model, varied only in
    what legitimately varies (thread count; graph fusions; batch padding), and against
    another noise draw.

    ``padding=False`` leaves out the batch padding run, for a model that synthesises each
    text alone (``capabilities.batching`` False: nothing is padded). Distances are taken
    at the engine's sample rate.

    ``make_engine(path, threads, optimization)`` builds the engine (default: tts_kit's
    Supertonic `Engine`, ONNX Runtime fusions ``all`` or ``basic``); another model family
    passes its own, whose ``synthesize_batch(texts, lang, voices, steps, speed,
    seed=[...])`` draws each item's noise from its seed alone. ``cases`` are then required.

    Example:
        >>> floor = noise_floor("standin-tiny")  # doctest: +SKIP
        >>> print(floor.table())  # doctest: +SKIP
    """
    if make_engine is None:
        from tts_kit.models.supertonic.bundle import Bundle

        bundle = model if isinstance(model, Bundle) else Bundle.discover(model)
        path = bundle.path
        cases = list(cases) if cases is not None else default_cases(_voices(bundle))
        make_engine = _engine
    else:
        if cases is None:
            raise TtsKitError("give the cases when you give make_engine (the default cases "
                             "use a Supertonic bundle's voices)")
        path, cases = Path(model), list(cases)
    a, b = make_engine(path, threads[0], "all"), make_engine(path, threads[1], "all")
    c = make_engine(path, threads[0], "basic")
    sr = getattr(getattr(a, "bundle", None), "sample_rate", contract.SAMPLE_RATE)
    ref, other_threads, basic, padded, other_take = [], [], [], [], []
    for case in cases:
        ref += _seeded_wavs(a, case)
        other_threads += _seeded_wavs(b, case)
        basic += _seeded_wavs(c, case)
        if padding:
            padded += _seeded_wavs(a, case, companion=True)
        other_take += _seeded_wavs(a, case, seed_offset=50)
    runs = {
        f"threads {threads[0]} vs {threads[1]}": Distances.of(ref, other_threads, sr),
        "graph fusions all vs basic": Distances.of(ref, basic, sr),
    }
    if padding:
        runs["batch padding"] = Distances.of(ref, padded, sr)
    worst = Distances(
        min(d.snr_db for d in runs.values()), max(d.log_mel_db for d in runs.values()),
        max(d.mcd_db for d in runs.values()), max(d.duration_change_s for d in runs.values()))
    return Floor(runs, worst, Distances.of(ref, other_take, sr))
