"""`tts-kit verify`: does tts_kit's engine give the official package's audio on a bundle (or a
converted copy's)? Same cases and noise on both sides; what is compared: docs/benchmarks.md."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import asdict, astuple, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.fidelity.cases import (
    Case,
    CaseResult,
    Comparison,
    _db,
    _engine,
    _voices,
    default_cases,
    json_safe,
)
from tts_kit.fidelity.floor import Distances, Floor, conformance, noise_floor

#: Default tolerance: every stage and every waveform within this SNR of the reference ...
MIN_SNR_DB = 60.0
#: ... and no sample further than this from it ...
MAX_ABS_DIFF = 1e-3
#: ... and every item exactly as long (predicted durations round to the same sample).
MAX_LENGTH_DIFF_SAMPLES = 0

OFFICIAL = "official"


@dataclass(frozen=True)
class Tolerance:
    """What `verify` lets through (SNR in dB, length in samples).

    Example:
        >>> Tolerance(min_snr_db=40.0).max_abs_diff == MAX_ABS_DIFF
        True
    """

    min_snr_db: float = MIN_SNR_DB
    max_abs_diff: float = MAX_ABS_DIFF
    max_length_diff: int = MAX_LENGTH_DIFF_SAMPLES


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
    #: With ``keep_calls``: every stage run's inputs and output, to replay.
    calls: list[tuple[str, dict[str, np.ndarray], np.ndarray]] = field(default_factory=list)


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
    floor: Floor | None = None  # with ``floor=True``
    quality: dict[str, Any] | None = None  # with ``quality=True``: the listener's verdict

    @property
    def distances(self) -> Distances:
        """The candidate's audio against the reference's, pooled over the cases (worst SNR,
        mean distances, worst length)."""
        rs = self.results
        return Distances(min((r.waveform.snr_db for r in rs), default=math.nan),
                         float(np.mean([r.log_mel_db for r in rs])),
                         float(np.mean([r.mcd_db for r in rs])),
                         max(r.duration_change_s for r in rs))

    @property
    def verdict(self) -> tuple[str, list[str]] | None:
        """The verdict (`tts_kit.fidelity.listening.decide`); None when none was asked."""
        from tts_kit.fidelity.listening import decide

        return decide(self.quality, self.floor_verdict)

    @property
    def floor_verdict(self) -> tuple[str, list[str]] | None:
        """Against the floor (when measured): within the floor, beyond the floor, or broken."""
        return self.floor.verdict(self.distances) if self.floor and self.results else None

    def failures(self) -> list[str]:
        """One line per comparison outside the tolerance."""
        out = []
        for r in self.results:
            for name, c in {**r.stages, "waveform": r.waveform}.items():
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
        from tts_kit.fidelity.listening import quality_lines

        lines = [f"verify {self.model} against {self.against}",  # the verdict first, alone
                 *(quality_lines(self.quality) if self.quality else []),
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
            verdict, why = self.floor_verdict or ("", [])
            lines += ["", "noise floor of the reference (what legitimately varies):",
                      self.floor.table(), "", f"candidate (pooled over the cases): "
                      f"SNR {_db(self.distances.snr_db)} dB, log-mel "
                      f"{self.distances.log_mel_db:.4f} dB, MCD {self.distances.mcd_db:.4f} dB, "
                      f"length change {self.distances.duration_change_s * 1000:.1f} ms",
                      f"conformance: {conformance(verdict)}" if self.quality
                      else f"verdict: {verdict}",
                      *[f"  {w}" for w in why]]
        bad = self.failures()
        lines += ["", ("float-rounding tolerance (conformance, not the verdict of a lossy copy): "
                       if self.quality else "")
                  + ("PASS: within tolerance" if self.passed else
                     f"FAIL: {len(bad)} comparison(s) outside tolerance" if bad else
                     "FAIL: nothing compared"), *[f"  {b}" for b in bad[:20]]]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return json_safe({**asdict(self), "passed": self.passed,
                          "distances": asdict(self.distances) if self.results else None,
                          "verdict": (self.verdict or (None,))[0],
                          "floor_verdict": (self.floor_verdict or (None,))[0]})


# -- the two pipelines ----------------------------------------------------------------


def run_tts_kit(engine: Any, case: Case, keep_calls: bool = False) -> Trace:
    """One case through tts_kit's engine, with `OfficialNoise` seeded by ``case.seed``;
    ``keep_calls`` also keeps every stage run's inputs and output (for `replay`).

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


def official_tts(model: str | os.PathLike[str], threads: int | None) -> Any:
    """The official package's ``TTS`` on ``model``: no download, reads only (a one-line
    error with the fix when the package is not installed).

    Example:
        >>> tts = official_tts("standin-tiny", threads=1)  # doctest: +SKIP
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
    """One case through the official engine's batch call, its four sessions wrapped by
    recorders and numpy's global generator seeded with ``case.seed`` (both restored after).

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
    state = np.random.get_state()
    np.random.seed(case.seed)
    try:
        wav, dur = model(list(case.texts), style, case.steps, case.speed, case.lang)
    finally:
        np.random.set_state(state)
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
    trace.stages["vocoder"], trace.wavs, trace.leak = list(wavs), wavs, leak
    return trace


def replay(engine: Any, ref: Trace) -> dict[str, Comparison]:
    """Each stage of ``engine`` on the reference's own inputs: its error alone, not
    inherited from the stages before it.

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
    audio = Distances.of(ref.wavs, cand.wavs, sample_rate)
    return CaseResult(case, stages, Comparison.of(ref.wavs, cand.wavs),
                      [len(w) for w in ref.wavs], [len(w) for w in cand.wavs],
                      audio.log_mel_db, audio.mcd_db, ref.leak)


def verify(
    model: Any = None,
    against: str | os.PathLike[str] = OFFICIAL,
    cases: Sequence[Case] | None = None,
    threads: int | None = 1,
    tolerance: Tolerance | None = None,
    floor: bool = False,
    *,
    quality: bool = False,
    quality_texts: Sequence[str] | None = None,
) -> VerifyReport:
    """Run the cases (default `default_cases`) through tts_kit on ``model`` (a bundle or its
    directory) and through the reference: ``"official"`` (the official package on the same
    bundle) or a second bundle directory, the candidate. ``threads``: intra-op threads on
    both sides (None: ORT's default); ``floor``: also the reference's noise floor;
    ``quality``: against a directory, also the listener's verdict (`judge_quality`).

    Example:
        >>> verify("standin-tiny").passed  # doctest: +SKIP
        True
    """
    from tts_kit.models.supertonic.bundle import Bundle

    if quality and str(against) == OFFICIAL:
        raise TtsKitError("the listener's verdict judges a converted copy: give a bundle "
                          "directory to compare with, not 'official' (a conformance check)")
    bundle = model if isinstance(model, Bundle) else Bundle.discover(model)
    cases = list(cases) if cases is not None else default_cases(_voices(bundle))
    report = VerifyReport(str(bundle.path), str(against), [],
                          *astuple(tolerance or Tolerance()))  # the same three fields
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
    if quality:
        from tts_kit.fidelity.listening import judge_quality

        report.quality = judge_quality(bundle.path, Path(against).expanduser(), quality_texts)
    return report



