"""Measure precisions: memory and latency in isolated processes, fidelity to FP32, and a
copy against its source's noise floor. What each measures, and why: docs/benchmarks.md."""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from tts_kit.core import contract
from tts_kit.core.procfacts import rss_mb
from tts_kit.fidelity.audio_metrics import waveform_fidelity
from tts_kit.fidelity.cases import Comparison, json_safe
from tts_kit.fidelity.floor import Distances, conformance, noise_floor
from tts_kit.fidelity.listening import QUALITY_TEXTS, decide, judge_quality, quality_lines
from tts_kit.precision.conversion_report import (
    MAX_LOG_MEL_DB,
    MIN_SNR_DB,
    ConversionReport,
    Fidelity,
    MeasureSpec,
    RunRecord,
    check_target,
)
from tts_kit.runtime.devices import (
    CPU,
    CUDA,
    MEASURED_PROVIDERS,
    available_providers,
    cuda_usable,
    gpu_memory_mb,
    probe_cuda,
)
from tts_kit.tuning.workload import DEFAULT_TEXTS as WORKLOAD_TEXTS

#: Texts the measurements synthesise unless told: the shortest workload text, alone (fidelity
#: keeps every stage's FP32 tensors in memory; one short text keeps the checks cheap).
DEFAULT_TEXTS: tuple[str, ...] = (WORKLOAD_TEXTS[1],)


def _preset_for(preset: Any, provider: str) -> Any:
    """The measurement preset for one provider (CUDA keeps the CPU as fallback for odd ops)."""
    from tts_kit.runtime.sessions import get_preset

    base = get_preset(preset or "supertonic-default")
    if provider == CUDA:
        return base if CUDA in base.providers else base.cuda()
    return base.replace(providers=[provider])


def _measure_job(bundle_dir: str, spec: MeasureSpec) -> dict[str, Any]:
    """Child side of `measure_bundle` (runs in a fresh process; the spec's preset is a
    `SessionPreset`, which pickles)."""
    from tts_kit.models.supertonic.engine import Engine

    cuda = CUDA in spec.preset.providers
    if cuda:
        ok, why = cuda_usable()
        if not ok:
            return {"error": why}
    gpu0 = gpu_memory_mb() if cuda else (None, "")
    out: dict[str, Any] = {"baseline_rss_mb": rss_mb()}
    t0 = time.perf_counter()
    engine = Engine(bundle_dir, preset=spec.preset, loading="resident")
    out["load_s"] = time.perf_counter() - t0
    out["load_rss_mb"] = rss_mb()

    def timed(i: int, text: str) -> tuple[float, float]:  # (seconds, audio seconds)
        t1 = time.perf_counter()
        r = engine.synthesize(text, lang=spec.lang, seed=spec.seed + i, steps=spec.steps)
        return time.perf_counter() - t1, r.duration_s

    texts = list(spec.texts or ())
    for i, t in enumerate(texts):  # warm-up: first-run allocations, cuDNN algorithm search
        timed(i, t)
    runs = [timed(i, t) for _ in range(spec.repeats) for i, t in enumerate(texts)]
    out["p50_s"] = statistics.median([s for s, _ in runs]) if runs else math.nan
    out["rtf"] = out["p50_s"] / statistics.median([a for _, a in runs]) if runs else math.nan
    if cuda:
        used, how = gpu_memory_mb()
        if used is not None and "device" in how and gpu0[0] is not None:
            # Device-wide figures include other processes: keep only what this one added.
            used, how = used - gpu0[0], how + ", minus the figure before loading"
        out["gpu_mem_mb"], out["gpu_mem_source"] = used, how
    return out


def measure_bundle(
    path: str | os.PathLike[str],
    label: str,
    provider: str = "CPUExecutionProvider",
    spec: MeasureSpec | None = None,
    *,
    timeout_s: float | None = 900,
    cpus: int | None = None,
    **options: Any,
) -> RunRecord:
    """Load a bundle in a fresh process (pinned to ``cpus`` cores) and measure RSS, peak RSS,
    p50 latency and GPU memory over ``spec``'s texts (or its fields as keywords).

    Example:
        >>> measure_bundle("standin-tiny", "fp32").p50_s > 0  # doctest: +SKIP
        True
    """
    from tts_kit.models.supertonic.bundle import Bundle
    from tts_kit.runtime.measure import run_isolated

    spec = _resolved(spec, options, provider)
    b = Bundle(path)
    size = sum(s.size_bytes for s in b.stages.values()) / 2**20
    m = run_isolated(_measure_job, str(b.path), spec, timeout_s=timeout_s, cpus=cpus)
    rec = RunRecord(label, provider, status=m.status, error=m.error, size_mb=size,
                    peak_rss_mb=m.peak_rss_mb, preset=spec.preset.name)
    if m.ok and isinstance(m.result, dict):
        if "error" in m.result:
            rec.status, rec.error = "error", m.result["error"]
        else:
            rec = dataclasses.replace(rec, **m.result)
    return rec


def _resolved(spec: MeasureSpec | None, options: dict[str, Any], provider: str) -> MeasureSpec:
    """``spec`` with the keyword overrides, its default texts and the provider's preset."""
    spec = dataclasses.replace(spec or MeasureSpec(), **options)
    return dataclasses.replace(spec, texts=list(spec.texts or DEFAULT_TEXTS),
                               preset=_preset_for(spec.preset, provider))


def fidelity(
    reference: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    to: str = "fp16",
    spec: MeasureSpec | None = None,
    **options: Any,
) -> Fidelity:
    """Compare a converted bundle with its FP32 source in this process (one resident at a
    time): each candidate stage on the FP32 stage's recorded inputs, then both end to end
    on ``spec``'s texts and noise; ``to`` picks the thresholds (`MIN_SNR_DB`, ...).

    Example:
        >>> round(fidelity("standin-tiny", "standin-fp16").waveform_snr_db)  # doctest: +SKIP
        49
    """
    from tts_kit.models.supertonic.engine import Engine
    from tts_kit.runtime.sessions import SessionPreset

    check_target(to)
    spec = dataclasses.replace(spec or MeasureSpec(), **options)
    p = spec.preset if isinstance(spec.preset, SessionPreset) else _preset_for(spec.preset, CPU)
    texts = list(spec.texts or DEFAULT_TEXTS)

    def read(engine: Any) -> list[np.ndarray]:
        return [engine.synthesize(t, lang=spec.lang, seed=spec.seed + i, steps=spec.steps).wav
                for i, t in enumerate(texts)]

    f = Fidelity(p.providers[0], min_snr_db=MIN_SNR_DB[to], max_log_mel_db=MAX_LOG_MEL_DB[to])
    ref = Engine(reference, preset=p)
    calls: list[tuple[str, dict[str, np.ndarray], np.ndarray]] = []

    def record(stage: str, feeds: Mapping[str, np.ndarray], out: np.ndarray) -> None:
        calls.append((stage, {k: np.array(v) for k, v in feeds.items()}, np.array(out)))

    ref.add_stage_hook(record)
    ref_wavs = read(ref)
    ref.close()
    ref_frames = [feeds["latent"].shape[-1] for st, feeds, _ in calls if st == "vocoder"]
    # Resident loading (the default): each candidate stage loads once for all its replays.
    cand = Engine(candidate, preset=p)
    for stage in contract.STAGES:
        pairs = [(want, cand.run_stage(stage, feeds)) for st, feeds, want in calls if st == stage]
        f.stage_snr_db[stage] = Comparison.of(*zip(*pairs)).snr_db if pairs else math.nan
    calls.clear()  # the recorded tensors are no longer needed
    cand_frames: list[int] = []

    def count_frames(stage: str, feeds: Mapping[str, np.ndarray], out: np.ndarray) -> None:
        if stage == "vocoder":
            cand_frames.append(feeds["latent"].shape[-1])

    cand.add_stage_hook(count_frames)
    cand_wavs = read(cand)
    cand.close()
    f.frames_changed = sum(a != b for a, b in zip(ref_frames, cand_frames)) + abs(
        len(ref_frames) - len(cand_frames))
    (f.waveform_snr_db, f.log_mel_distance_db, f.length_ref,
     f.length_candidate) = waveform_fidelity(ref_wavs, cand_wavs, ref.bundle.sample_rate)
    return f.evaluate()


def fidelity_isolated(
    reference: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    to: str = "fp16",
    provider: str = "CPUExecutionProvider",
    spec: MeasureSpec | None = None,
    *,
    timeout_s: float | None = 900,
    **options: Any,
) -> Fidelity:
    """`fidelity` in a fresh process on ``provider`` (a failure comes back in ``error``).

    Example:
        >>> fidelity_isolated("standin-tiny", "standin-int8", "int8").passed  # doctest: +SKIP
        True
    """
    from tts_kit.runtime.measure import run_isolated

    m = run_isolated(fidelity, str(reference), str(candidate), to,
                     _resolved(spec, options, provider), timeout_s=timeout_s)
    if m.ok and isinstance(m.result, Fidelity):
        return m.result
    return Fidelity(provider, min_snr_db=MIN_SNR_DB[to], max_log_mel_db=MAX_LOG_MEL_DB[to],
                    error=f"{m.status}: {m.error}").evaluate()


def measure_conversion(report: ConversionReport, spec: MeasureSpec | None = None,
                       providers: Sequence[str] | None = None, runs: bool = True) -> None:
    """Fill ``report`` with measurements on each provider (default: those available): memory
    and latency of source and result when ``runs``, then their fidelity, each in a fresh
    process. Providers that cannot be measured become notes.

    Example:
        >>> report = ConversionReport("bundle", "fp32-dir", "int8-dir", "int8")
        >>> measure_conversion(report, MeasureSpec(steps=5), runs=False)  # doctest: +SKIP
    """
    spec = spec or MeasureSpec()
    spec = dataclasses.replace(spec, texts=list(spec.texts or DEFAULT_TEXTS))
    report.texts, report.seed, report.steps = list(spec.texts), spec.seed, spec.steps
    wanted = list(providers) if providers is not None else available_providers()
    for prov in wanted:
        if prov not in MEASURED_PROVIDERS:
            report.notes.append(f"{prov}: not measured (tts_kit measures {MEASURED_PROVIDERS})")
            continue
        if prov == CUDA:
            ok, why = probe_cuda(timeout_s=300)
            if not ok:
                report.notes.append(f"CUDA not measured: {why}")
                continue
        if runs:
            report.runs += [measure_bundle(report.src, "fp32", prov, spec),
                            measure_bundle(report.dst, report.to, prov, spec)]
        report.fidelity[prov] = fidelity_isolated(report.src, report.dst, report.to, prov,
                                                  spec)


# -- Piper voices: distances and the noise floor on the real voice ---------------------------

#: Texts the Piper floor and distances read (English: the voice's language).
PIPER_TEXTS = QUALITY_TEXTS


def piper_distances(reference: Any, candidate: Any, texts: Sequence[str] = PIPER_TEXTS,
                    seed: int = 0) -> Any:
    """`tts_kit.fidelity.floor.Distances` of a Piper voice's converted copy from the voice
    (the same texts and seed, so the same noise).

    Example:
        >>> piper_distances("piper:joe-us", "joe-fp16").snr_db > 30  # doctest: +SKIP
        True
    """
    from tts_kit.fidelity.engine_reuse import default_preset, engine

    with engine(reference, default_preset()) as ref_engine, \
            engine(candidate, default_preset()) as cand_engine:
        ref, cand = ([r.wav for r in e.synthesize_batch(list(texts), seed=seed)]
                     for e in (ref_engine, cand_engine))
        return Distances.of(ref, cand, ref_engine.bundle.sample_rate)


def piper_floor(model: Any, texts: Sequence[str] = PIPER_TEXTS, seed: int = 0,
                threads: tuple[int, int] = (1, 2)) -> Any:
    """The noise floor of a Piper voice (`tts_kit.fidelity.floor.noise_floor` with an engine
    of the model's family; no batch padding: each sentence runs alone).

    Example:
        >>> print(piper_floor("piper:joe-us").table())  # doctest: +SKIP
    """
    from tts_kit.fidelity.cases import Case
    from tts_kit.fidelity.engine_reuse import default_preset
    from tts_kit.models.family import make_engine
    from tts_kit.models.resolve import open_model

    bundle = open_model(model)
    case = Case(tuple(texts), bundle.languages[0], (bundle.default_voice,) * len(texts),
                steps=1, speed=1.0, seed=seed)
    return noise_floor(bundle.path, [case], threads,
                       lambda _path, n, fusions: make_engine(bundle,
                                                             preset=default_preset(n, fusions)),
                       padding=bundle.capabilities.batching)


# -- a conversion judged against the source's measured noise floor ---------------------------


def judge_against_floor(src: Any, dst: Any, texts: Sequence[str] | None = None
                        ) -> dict[str, Any]:
    """``dst`` (a converted copy) against ``src``'s measured noise floor, as `judgement`: a
    batching model through `tts_kit.fidelity.verify.verify`, another through `piper_floor`
    and `piper_distances` on ``texts`` (default `PIPER_TEXTS`).

    Example:
        >>> judge_against_floor("standin-tiny", "standin-tiny-fp16")["verdict"]  # doctest: +SKIP
        'beyond the floor'
    """
    from tts_kit.fidelity.verify import verify
    from tts_kit.models.resolve import open_model

    # verify's cases are batches of 1-3 texts in English and Korean: a model that reads
    # each text alone (no batching) is judged on its own texts and floor instead.
    if not open_model(src).capabilities.batching:
        read = (f"{len(texts)} text(s), the same as the fidelity check's" if texts
                else f"{len(PIPER_TEXTS)} text(s)")
        texts = tuple(texts or PIPER_TEXTS)
        return judgement(piper_floor(src, texts), piper_distances(src, dst, texts), read)
    rep = verify(src, dst, floor=True)
    return judgement(rep.floor, rep.distances,
                     f"verify's {len(rep.results)} cases (English and Korean, batches of 1-3)")


def judgement(floor: Any, distances: Any, read: str = "") -> dict[str, Any]:
    """A candidate's `Distances` read on a measured `Floor`, JSON-ready: the verdict, its
    reasons, what was ``read``, the distances, the floor, another take and the runs.

    Example:
        >>> from tts_kit.fidelity.floor import Distances, Floor
        >>> f = Floor({}, Distances(90.0, 0.01, 0.01, 0.0), Distances(0.5, 8.0, 9.0, 0.0))
        >>> judgement(f, Distances(30.0, 1.0, 1.5, 0.0))["verdict"]
        'beyond the floor'
    """
    verdict, why = floor.verdict(distances)
    return json_safe({"verdict": verdict, "reasons": why, "read": read,
                       "distances": asdict(distances),
                       "floor": asdict(floor.floor), "take": asdict(floor.take),
                       "runs": {k: asdict(v) for k, v in floor.runs.items()}})


# -- a converted copy of a voice against it (``tts-kit verify`` without an official reference)


@dataclass
class CopyCheck:
    """A converted copy of a Piper voice against the voice (`verify_piper_copy`), read like
    `tts_kit.fidelity.verify.VerifyReport`.

    Example:
        >>> from tts_kit.fidelity.floor import Distances
        >>> c = CopyCheck("Piper x", "x-fp16", Distances(80.0, 0.1, 0.1, 0.0), [])
        >>> c.passed, c.verdict, c.table().splitlines()[-1]
        (True, None, 'PASS: within the tolerance')
    """

    model: str
    against: str
    distances: Any
    problems: list[str]
    conformance: dict[str, Any] | None = None
    quality: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        """Within the tolerance: no problem found."""
        return not self.problems

    @property
    def verdict(self) -> tuple[str, list[str]] | None:
        """``(verdict, reasons)``: `tts_kit.fidelity.listening.decide`."""
        c = self.conformance
        return decide(self.quality, (c["verdict"], c["reasons"]) if c else None)

    def table(self) -> str:
        """The listener's verdict (when measured) first, the distances, the floor's
        conformance figure, then PASS or FAIL (the tolerance)."""
        d, c = self.distances, self.conformance
        lines = [*(quality_lines(self.quality) if self.quality else []),
                 f"{self.model} against {self.against} (same texts, same noise): "
                 f"SNR {d.snr_db:.1f} dB, log-mel {d.log_mel_db:.3g} dB, MCD {d.mcd_db:.3g} dB, "
                 f"length change {d.duration_change_s * 1000:.1f} ms"]
        if c:
            lines.append(f"conformance against the voice's measured floor: "
                         f"{conformance(c['verdict'])}")
            lines += [f"  {reason}" for reason in c["reasons"]]
        lines.append("PASS: within the tolerance" if self.passed
                     else "FAIL: " + "; ".join(self.problems))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: model, against, distances, problems, the verdict (`verdict`), the
        listener's details (``quality``) and the floor's conformance figure."""
        out = {"model": self.model, "against": self.against, "distances": asdict(self.distances),
               "problems": self.problems, "verdict": (self.verdict or (None,))[0],
               "conformance": self.conformance, "quality": self.quality}
        return json_safe({k: v for k, v in out.items() if v is not None})  # None: not measured


def verify_piper_copy(model: Any, against: str, *, min_snr_db: float = 60.0,
                      floor: bool = False) -> CopyCheck:
    """A converted copy (``against``) of the opened Piper voice ``model``: `piper_distances`
    against ``min_snr_db`` and an unchanged length; ``floor``: also `judgement` and the
    listener's verdict.

    Example:
        >>> from tts_kit.models.resolve import open_model
        >>> check = verify_piper_copy(open_model("piper:joe-us"), "joe-fp16")  # doctest: +SKIP
        >>> check.passed  # doctest: +SKIP
        False
    """
    from tts_kit.fidelity.engine_reuse import reuse_engines

    with reuse_engines():  # the distances and the listener read the same two engines
        d = piper_distances(str(model.path), against, PIPER_TEXTS)
        problems = []
        if not d.snr_db >= min_snr_db:
            problems.append(f"waveform SNR {d.snr_db:.1f} dB < {min_snr_db:g} dB")
        if d.duration_change_s > 0:
            problems.append(f"length changed by {d.duration_change_s * 1000:.1f} ms")
        if not floor:
            return CopyCheck(model.label, against, d, problems)
        j = judgement(piper_floor(str(model.path), PIPER_TEXTS), d, f"{len(PIPER_TEXTS)} text(s)")
        return CopyCheck(model.label, against, d, problems, j,
                         judge_quality(str(model.path), against))
