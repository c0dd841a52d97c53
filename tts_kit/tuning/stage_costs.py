"""Stage costs: each stage loaded, run and released under ``paged`` in one fresh process,
RSS and the high-water mark read at every stage event."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import onnxruntime as ort

from tts_kit.core import events
from tts_kit.core.procfacts import MIB, release_memory, reset_peak_rss, rss_mb, status_mb
from tts_kit.runtime.loading import LoadPolicy, StageCost, StageCosts
from tts_kit.tuning.workload import Workload

if TYPE_CHECKING:
    from tts_kit.runtime.sessions import SessionPreset


def _reading() -> tuple[float, float]:
    """(RSS, high-water mark since the last `reset_peak_rss`) in MB (off Linux: RSS twice)."""
    now = rss_mb()
    peak = status_mb("VmHWM").get("VmHWM", math.nan)
    return now, max(peak, now) if math.isfinite(peak) else now


def _stage_costs_child(bundle_path: str, preset: SessionPreset | None, workload: Workload,
                       policy: LoadPolicy, warm_model: bytes) -> dict[str, Any]:
    """Inside a fresh process: load, run and release each stage in pipeline order."""
    import numpy as np

    from tts_kit.models.family import make_engine
    from tts_kit.models.resolve import open_model

    release_memory()
    imports = rss_mb()
    # A one-node session first: ORT's globals are not the first stage's cost.
    ort.InferenceSession(warm_model).run(None, {"x": np.ones(1, np.float32)})
    release_memory()
    runtime = rss_mb()
    bundle = open_model(bundle_path)
    engine = make_engine(bundle, preset=preset, loading=policy)
    # load -> run -> release marks of each stage, with the RSS and high-water mark at each.
    marks: list[tuple[str, str, float, float, float]] = []

    def on_event(_t: float, name: str) -> None:
        verb, _, stage = name.partition(" ")
        if verb in ("load", "run", "release"):
            now, peak = _reading()
            marks.append((verb, stage, time.perf_counter(), now, peak))
            reset_peak_rss()

    events.add_listener(on_event)
    try:
        release_memory()
        reset_peak_rss()
        engine.synthesize(workload.texts[0], lang=workload.lang,
                          voice=workload.voice_for(bundle), steps=workload.steps,
                          speed=workload.speed, seed=workload.seed)
        now, peak = _reading()
        marks.append(("end", "", time.perf_counter(), now, peak))
    finally:
        events.remove_listener(on_event)
    out: dict[str, StageCost] = {}
    for i, (verb, stage, _t, rss, _) in enumerate(marks[:-1]):
        if verb != "load" or stage in out:
            continue  # multi-chunk texts: the first chunk's pass is the measurement
        run, rel, nxt = marks[i + 1], marks[i + 2], marks[i + 3]
        out[stage] = StageCost(
            stage=stage, file_mb=bundle.stages[stage].size_bytes / MIB, load_mb=run[3] - rss,
            load_peak_mb=run[4] - rss, run_mb=rel[4] - run[3], left_mb=nxt[3] - rss,
            load_s=engine.load_s.get(stage, math.nan), run_s=rel[2] - run[2])
    # The high-water mark was reset at every event; the process's peak is the largest.
    peak = max((m[4] for m in marks if math.isfinite(m[4])), default=math.nan)
    return {"stages": out, "runtime_mb": runtime, "imports_mb": imports, "peak_rss_mb": peak}


def stage_costs(
    bundle: Any,
    preset: str | SessionPreset | None = None,
    workload: Workload | None = None,
    loading: str | LoadPolicy = "paged",
    cpus: int | None = None,
    timeout_s: float | None = 600,
) -> StageCosts:
    """Measure the RSS each stage adds by loading and by running, in a fresh process: the
    workload's first text under ``loading`` made ``paged``, one stage at a time.

    Example:
        >>> stage_costs("bundle-dir", "lean", Workload(steps=2)).dataframe()  # doctest: +SKIP
    """
    from tts_kit.models.base import SpeechModel
    from tts_kit.runtime.devices import one_node_model
    from tts_kit.runtime.measure import run_isolated
    from tts_kit.runtime.sessions import get_preset

    path = bundle.ref() if isinstance(bundle, SpeechModel) else str(bundle)
    preset_obj = get_preset(preset) if preset is not None else None
    workload = Workload() if workload is None else workload
    policy = LoadPolicy.parse(loading)  # a bad spec fails here, not in the child
    if policy.policy != "paged":  # each stage alone; the spec's options still count
        policy = LoadPolicy("paged", trim=policy.trim, external_data=policy.external_data,
                            prepack=policy.prepack)
    # The warm-up graph is built here: the measuring child must not import onnx.
    m = run_isolated(_stage_costs_child, path, preset_obj, workload, policy, one_node_model(),
                     cpus=cpus, timeout_s=timeout_s)
    if not m.ok:
        raise RuntimeError(f"stage_costs: the measuring process ended with {m.status}: {m.error}")
    return StageCosts(**m.result, loading=loading if isinstance(loading, str) else loading.spec,
                      preset=preset_obj.name if preset_obj else "engine default",
                      text=workload.texts[0], steps=workload.steps)
