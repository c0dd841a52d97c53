"""Where a worker's CPU goes per second of audio, and FP32 levers that keep the output.

Issue 27 asks for more audio per CPU-second of the serving pool with FP32 weights. This
module measures the three things that decide whether a graph or session change can give
it, all in CPU time (user + sys, ``time.process_time``: robust on a busy machine):

- `stage_split`: the engine's CPU per stage over a text rendered chunk by chunk (as a
  serving worker renders it), the rest being the pipeline's Python; seconds of audio and
  of speech (the audio less the pauses between chunks) per CPU-second.
- `op_shares`: each operator type's share of a stage's kernel time (ONNX Runtime's own
  profiler), and `gemm_share`: the matrix-multiply part, which no session option, graph
  rewrite or layout change can shrink while the numbers stay the same;
  `exact_ceiling` turns the two into the most any such FP32 change could give.
- `lever_ab`: a stage under each FP32 lever (`FP32_LEVERS`: the pointwise-conv -> MatMul
  rewrite, the saved optimised and pre-packed copy, graph optimisation level, memory
  pattern, arena), CPU per call in alternating rounds in one process, with each lever's
  largest difference from the stage's own output.

``python bench/fp32_levers.py`` prints all three on the full stand-in.

Example:
    >>> round(exact_ceiling({"vector_estimator": 0.8, "vocoder": 0.2},
    ...                     {"vector_estimator": 0.9, "vocoder": 0.5}), 3)
    1.22
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

#: Operator types that are matrix multiplies (a convolution runs as one after im2col).
GEMM_OPS = ("MatMul", "FusedMatMul", "Gemm", "Conv", "MatMulInteger",
            "DynamicQuantizeMatMul", "ConvInteger")
#: The levers `lever_ab` measures; each keeps the stage's output to float rounding.
FP32_LEVERS = ("base", "pointwise-matmul", "optimised-copy", "level-extended",
               "mem-pattern-off", "arena-off", "prepack-off", "denormal-zero")
#: Levers that are one session config entry (issue 37: pre-packing off is the control that
#: shows what ONNX Runtime's default pre-packing gives; denormals as zero).
CONFIG_LEVERS = {"prepack-off": ("session.use_prepacking", "0"),
                 "denormal-zero": ("session.set_denormal_as_zero", "1")}


def stage_split(engine: Any, text: str, *, lang: str = "en", steps: int = 8, seed: int = 0,
                max_chunk_chars: int | None = None) -> dict[str, Any]:
    """CPU-seconds per stage while ``engine`` renders ``text`` chunk by chunk.

    Returns ``{"stages": {stage: cpu_s}, "other_s", "total_s", "chunks", "audio_s",
    "speech_s"}``; ``other_s`` is the pipeline's own work between stages (planning, noise,
    casts). The engine must already be warm (its first call makes its sessions).

    Example:
        >>> split = stage_split(engine, "Hello there.")  # doctest: +SKIP
        >>> sorted(split["stages"])  # doctest: +SKIP
        ['duration_predictor', 'text_encoder', 'vector_estimator', 'vocoder']
    """
    stages: dict[str, float] = {}
    orig = engine._run

    def run(stage: str, feeds: Mapping[str, np.ndarray], timings: dict[str, float]) -> Any:
        c0 = time.process_time()
        try:
            return orig(stage, feeds, timings)
        finally:
            stages[stage] = stages.get(stage, 0.0) + time.process_time() - c0

    engine._run = run
    try:
        c0 = time.process_time()
        cfg = engine.config(lang=lang, seed=seed, steps=steps, max_chunk_chars=max_chunk_chars)
        plan = engine.plan(text, cfg)
        audio = sum(engine.render_chunk(plan, k).duration_s for k in range(len(plan.chunks)))
        total = time.process_time() - c0
    finally:
        del engine._run  # the instance attribute goes; the class's method is back
    pauses = engine.chunk_pause_s * (len(plan.chunks) - 1)
    return {"stages": stages, "other_s": total - sum(stages.values()), "total_s": total,
            "chunks": len(plan.chunks), "audio_s": audio, "speech_s": audio - pauses}


def _options(threads: int, **kw: Any) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    for key, value in kw.items():
        setattr(so, key, value)
    return so


def op_shares(path: str | Path, feeds: Mapping[str, np.ndarray], *, threads: int = 1,
              calls: int = 2, prefix: str = "/tmp/tts_kit_op_shares") -> dict[str, float]:
    """Each operator type's share of ``path``'s kernel time on ``feeds`` (ONNX Runtime's
    profiler, after one warm-up call), largest first.

    Example:
        >>> shares = op_shares("vocoder.onnx", {"latent": latent})  # doctest: +SKIP
        >>> next(iter(shares))  # doctest: +SKIP
        'MatMul'
    """
    import json
    import os

    import onnxruntime as ort

    so = _options(threads, enable_profiling=True, profile_file_prefix=prefix)
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    x = {k: v for k, v in feeds.items() if k in {i.name for i in sess.get_inputs()}}
    for _ in range(calls + 1):
        sess.run(None, x)
    trace = sess.end_profiling()
    try:
        events = json.loads(Path(trace).read_text(encoding="utf-8"))
    finally:
        os.remove(trace)
    spent: Counter[str] = Counter()
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            spent[e["args"]["op_name"]] += e["dur"]
    total = sum(spent.values()) or 1
    return {op: d / total for op, d in spent.most_common()}


def gemm_share(shares: Mapping[str, float]) -> float:
    """The matrix-multiply part of `op_shares` (`GEMM_OPS`).

    Example:
        >>> gemm_share({"MatMul": 0.7, "Conv": 0.1, "Add": 0.2})
        0.8
    """
    return round(sum(v for op, v in shares.items() if op in GEMM_OPS), 12)


def exact_ceiling(cpu_share: Mapping[str, float], gemm: Mapping[str, float]) -> float:
    """The most audio per CPU-second an output-keeping FP32 change could add, as a ratio:
    every non-GEMM operator made free, the GEMMs as they are. ``cpu_share``: each stage's
    share of the worker's CPU; ``gemm``: each stage's `gemm_share`. A share without a
    GEMM figure (the light stages, the Python between stages) counts as removable
    altogether, so the ceiling errs high.

    Example:
        >>> exact_ceiling({"vocoder": 1.0}, {"vocoder": 0.8})
        1.25
    """
    return 1.0 / sum(cpu_share[s] * gemm.get(s, 0.0) for s in cpu_share)


def _lever_session(lever: str, src: Path, threads: int, scratch: Path) -> Any:
    import onnxruntime as ort

    from tts_kit.runtime.session_files import create_session

    cpu = ["CPUExecutionProvider"]
    if lever == "pointwise-matmul":
        import onnx

        from tts_kit.precision.pointwise import pointwise_to_matmul

        model = onnx.load(str(src))
        pointwise_to_matmul(model)
        src = scratch / f"pw-{src.name}"
        onnx.save(model, str(src))
    if lever == "optimised-copy":  # what paged loads use: saved once, optimiser off after
        return create_session(src, _options(threads), cpu, policy="resident+ext+opt")
    kw = {"level-extended": {"graph_optimization_level":
                             ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED},
          "mem-pattern-off": {"enable_mem_pattern": False},
          "arena-off": {"enable_cpu_mem_arena": False}}.get(lever, {})
    so = _options(threads, **kw)
    if lever in CONFIG_LEVERS:
        so.add_session_config_entry(*CONFIG_LEVERS[lever])
    return ort.InferenceSession(str(src), so, providers=cpu)


def lever_ab(src: str | Path, feeds: Mapping[str, np.ndarray], scratch: str | Path, *,
             levers: tuple[str, ...] = FP32_LEVERS, rounds: int = 5, calls: int = 2,
             threads: int = 1, clock: Callable[[], float] = time.process_time
             ) -> dict[str, dict[str, float]]:
    """CPU-seconds per call of the stage graph ``src`` under each lever, in one process:
    every round runs each lever ``calls`` times, in turn (the order reversed every other
    round, so a drifting machine load falls on all alike). Per lever: ``cpu_s`` (median
    over rounds), ``min_s``/``max_s``, ``x_base`` and ``max_abs_diff`` from ``base``'s
    output (0.0: the same numbers).

    Example:
        >>> ab = lever_ab("vocoder.onnx", feeds, "/tmp")  # doctest: +SKIP
        >>> ab["pointwise-matmul"]["max_abs_diff"] < 1e-5  # doctest: +SKIP
        True
    """
    scratch = Path(scratch)
    levers = ("base", *[v for v in levers if v != "base"])
    sess = {v: _lever_session(v, Path(src), threads, scratch) for v in levers}
    x = {k: v for k, v in feeds.items() if k in {i.name for i in sess["base"].get_inputs()}}
    ref = sess["base"].run(None, x)[0]
    diff = {v: float(np.max(np.abs(s.run(None, x)[0] - ref))) for v, s in sess.items()}
    got: dict[str, list[float]] = {v: [] for v in levers}
    for r in range(rounds):
        for v in levers if r % 2 == 0 else levers[::-1]:
            c0 = clock()
            for _ in range(calls):
                sess[v].run(None, x)
            got[v].append((clock() - c0) / calls)
    base = statistics.median(got["base"])
    return {v: {"cpu_s": statistics.median(t), "min_s": min(t), "max_s": max(t),
                "x_base": statistics.median(t) / base if base else float("nan"),
                "max_abs_diff": diff[v]} for v, t in got.items()}
