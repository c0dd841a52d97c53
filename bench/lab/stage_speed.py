"""Per-stage speed of precision variants: which stage an INT8 recipe makes faster, on this CPU.

`stage_feeds` records what each stage of a bundle is fed while it synthesises a text
(the engine's public stage hook; one flow step of the vector estimator). `stage_speed`
then times every stage of every variant on those same feeds, each variant in a fresh
process (`tts_kit.runtime.measure.run_isolated`, warm-up call first), ``rounds`` times in
turn; the figure of a stage is the median over rounds of each round's p50. `faster_stages`
says which stages measured faster than the reference beyond a margin: a recipe is listed
as faster only there. `cpu_features` says what the CPU offers the integer kernels
(ONNX Runtime's MLAS picks its INT8 GEMM by these flags: AVX512-VNNI or AVX-VNNI first,
then AVX512BW, then AVX2).

Example:
    >>> feeds = stage_feeds("standin-full", "Hello there.")  # doctest: +SKIP
    >>> variants = {"fp32": "standin-full", "int8-pw": "full-int8-pw"}
    >>> p50 = stage_speed(variants, feeds)  # doctest: +SKIP
    >>> faster_stages(p50, "fp32")["int8-pw"]  # doctest: +SKIP
    ['vector_estimator', 'vocoder']
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tts_kit.core import contract

#: Flags that decide ONNX Runtime's integer GEMM kernel on x86 (best first).
INT8_FLAGS = ("amx_int8", "avx512_vnni", "avx_vnni", "avx512bw", "avx2")
#: A stage counts as faster only when its p50 is below this share of the reference's.
FASTER_BELOW = 0.95


def cpu_features(path: str = "/proc/cpuinfo") -> dict[str, Any]:
    """The CPU's model name and which of `INT8_FLAGS` it has; ``int8_gemm``: the first.

    Example:
        >>> sorted(cpu_features())
        ['flags', 'int8_gemm', 'model']
    """
    model, flags = "", set()
    try:
        for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass
    have = [f for f in INT8_FLAGS if f in flags]
    return {"model": model, "flags": have, "int8_gemm": have[0] if have else "none found"}


def stage_feeds(bundle: str | os.PathLike[str], text: str, *, lang: str = "en",
                steps: int = contract.DEFAULT_STEPS, seed: int = 0) -> dict[str, dict]:
    """The inputs each stage of ``bundle`` gets while it says ``text`` (the vector
    estimator's of its first flow step).

    Example:
        >>> sorted(stage_feeds("standin-tiny", "Hi."))  # doctest: +SKIP
        ['duration_predictor', 'text_encoder', 'vector_estimator', 'vocoder']
    """
    from tts_kit.models.supertonic.engine import Engine

    engine = Engine(bundle, normalize=False)
    feeds: dict[str, dict] = {}

    def keep(stage: str, f: Any, out: np.ndarray) -> None:
        feeds.setdefault(stage, {k: np.array(v) for k, v in f.items()})

    engine.add_stage_hook(keep)
    try:
        engine.synthesize(text, lang=lang, steps=steps, seed=seed)
    finally:
        engine.close()
    return feeds


def _time_child(bundle: str, feeds: dict[str, dict], repeats: int, threads: int | None
                ) -> dict[str, float]:
    """In a fresh process: each stage's p50 over ``repeats`` calls, after one warm-up."""
    import onnxruntime as ort

    from tts_kit.models.supertonic.bundle import Bundle

    b = Bundle(bundle)
    out = {}
    for stage, f in feeds.items():
        so = ort.SessionOptions()
        so.log_severity_level = 3
        if threads:
            so.intra_op_num_threads = threads
        sess = ort.InferenceSession(str(b.stage_path(stage)), so,
                                    providers=["CPUExecutionProvider"])
        names = {i.name for i in sess.get_inputs()}
        kinds = {i.name: i.type for i in sess.get_inputs()}
        x = {k: (v.astype(np.float16) if kinds[k] == "tensor(float16)" else v)
             for k, v in f.items() if k in names}
        sess.run(None, x)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            sess.run(None, x)
            times.append(time.perf_counter() - t0)
        out[stage] = statistics.median(times)
        del sess
    return out


def stage_speed(variants: Mapping[str, str | os.PathLike[str]], feeds: dict[str, dict], *,
                repeats: int = 5, rounds: int = 3, cpus: int | None = None
                ) -> dict[str, dict[str, float]]:
    """Seconds per call of each stage of each variant (median over ``rounds`` of the p50
    of ``repeats`` calls, each round a fresh process per variant, variants in turn).

    Example:
        >>> stage_speed({"fp32": "a", "int8": "b"}, feeds)["int8"]["vocoder"]  # doctest: +SKIP
        0.021
    """
    from tts_kit.runtime.measure import run_isolated

    got: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
    for _ in range(rounds):
        for name, path in variants.items():
            m = run_isolated(_time_child, str(path), feeds, repeats, cpus, cpus=cpus)
            if not (m.ok and isinstance(m.result, dict)):
                raise RuntimeError(f"timing {name} failed: {m.error}")
            for stage, s in m.result.items():
                got[name].setdefault(stage, []).append(float(s))
    return {name: {s: statistics.median(v) for s, v in per.items()} for name, per in got.items()}


def faster_stages(p50: Mapping[str, Mapping[str, float]], reference: str,
                  below: float = FASTER_BELOW) -> dict[str, list[str]]:
    """For each variant, the stages whose time is under ``below`` x the reference's.

    Example:
        >>> faster_stages({"fp32": {"vocoder": 1.0}, "int8": {"vocoder": 0.5}}, "fp32")
        {'int8': ['vocoder']}
    """
    ref = p50[reference]
    return {name: [s for s, t in per.items() if s in ref and t < below * ref[s]]
            for name, per in p50.items() if name != reference}
