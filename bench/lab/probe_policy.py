"""Load policies over requests: serve a few syntheses under a policy in a fresh process and
read RSS around them (what ``bench/paged.py`` compares; the policies themselves live in
`tts_kit.runtime.loading`)."""

from __future__ import annotations

import math
import time
from typing import Any

from tts_kit.core import events
from tts_kit.core.procfacts import release_memory, rss_mb, status_mb
from tts_kit.runtime.sessions import SessionPreset
from tts_kit.tuning.records import LOAD_S
from tts_kit.tuning.workload import Workload


def probe_policy(
    bundle_path: str,
    loading: str,
    preset: SessionPreset | None = None,
    workload: Workload | None = None,
    requests: int = 3,
    stage_costs_mb: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Serve ``requests`` syntheses under ``loading`` and read RSS around them.

    Request ``i`` reads text ``i`` of ``workload`` (default `Workload()`; cycled) with
    noise seed ``seed + i``, one text per request whatever its ``batch_size``.

    Meant to run in a fresh process (`tts_kit.runtime.measure.run_isolated`), whose peak RSS is
    the policy's peak. Returns ``before_mb`` (RSS after imports and the bundle, before the
    engine loads anything), ``idle_mb`` (RSS after each request, between requests),
    ``latency_s`` per request, ``anon_peak_mb`` (the most anonymous memory seen at a stage
    event) and ``loaded`` (stages resident after each request).

    Example:
        >>> from tts_kit.runtime.measure import run_isolated
        >>> m = run_isolated(probe_policy, "bundle-dir", "paged")  # doctest: +SKIP
        >>> m.result["idle_mb"][-1] - m.result["before_mb"] < 50  # doctest: +SKIP
        True
    """
    from tts_kit.models.family import make_engine
    from tts_kit.models.resolve import open_model

    workload = Workload() if workload is None else workload
    bundle = open_model(bundle_path)
    voice = workload.voice_for(bundle)
    anon: list[float] = []

    def on_event(_t: float, name: str) -> None:
        if name.startswith(("release ", "run ")):
            anon.append(status_mb("RssAnon").get("RssAnon", math.nan))

    release_memory()
    before = rss_mb()
    events.add_listener(on_event)
    try:
        engine = make_engine(bundle, preset=preset, loading=loading,
                             stage_costs_mb=stage_costs_mb)
        idle, latency, loaded = [], [], []
        for i in range(requests):
            t0 = time.perf_counter()
            engine.synthesize(workload.texts[i % len(workload.texts)], lang=workload.lang,
                              voice=voice, steps=workload.steps, speed=workload.speed,
                              seed=workload.seed + i)
            latency.append(time.perf_counter() - t0)
            idle.append(rss_mb())
            loaded.append(engine.loaded_stages)
            events.mark(f"request {i + 1} done")
    finally:
        events.remove_listener(on_event)
    return {"before_mb": before, "idle_mb": idle, "latency_s": latency, "loaded": loaded,
            "anon_peak_mb": max(anon) if anon else math.nan, "loading": engine.loading,
            LOAD_S: engine.load_s}
