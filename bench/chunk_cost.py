"""What a chunk costs by its length, per stage, and the fixed part every chunk pays.

Issue 37: a short first chunk is only cheap if a chunk's cost is mostly proportional to its
length. One engine, a serving worker's settings (1 intra-op thread, spinning off), renders
one-chunk texts of ``--lengths`` characters (cut at a space) in alternating rounds; each
stage's CPU time (the calling thread's: with one intra-op thread ONNX Runtime runs there) is
read between stage hooks. A least-squares line per stage over the chunks' audio seconds
gives the **fixed cost** (its value at zero audio) and the cost per audio second. Then the
vector estimator's fixed part per flow step is set beside the time to read its weights once
from memory (the same bytes summed by NumPy, beyond any cache): if they match, the fixed
cost is the weights streaming from DRAM once per step, which no FP32 setting that keeps the
numbers removes (only more frames per weight read: batching, `bench/batching.py`).

    python bench/chunk_cost.py [--scale full] [--lengths 8,20,40,80,160] [--rounds 3]
                               [--json OUT]

About 1 minute on the full stand-in on a quiet 2-core box (3 rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from _common import add_model_args, model_dir

TEXT = ("The quick brown fox jumps over the lazy dog while the farmer watches from the old "
        "wooden porch, and the children laugh as the sun sets slowly behind the distant "
        "hills, painting the sky in shades of orange and purple before the night comes.")
STAGES = ("duration_predictor", "text_encoder", "vector_estimator", "vocoder")


def cut(n: int) -> str:
    """The first ``n`` characters of `TEXT`, back to the last whole word."""
    return TEXT[:n].rsplit(" ", 1)[0] if n < len(TEXT) else TEXT


def render_costs(engine, text: str, steps: int) -> dict[str, float]:
    """CPU-seconds per stage (and ``total``, ``audio_s``) of one one-chunk render."""
    marks: list[tuple[str, float]] = []
    remove = engine.add_stage_hook(lambda st, f, o: marks.append((st, time.thread_time())))
    plan = engine.plan(text, steps=steps, seed=1, max_chunk_chars=300)
    assert len(plan.chunks) == 1, plan.chunks
    t0 = prev = time.thread_time()
    part = engine.render_chunk(plan, 0)
    remove()
    out = dict.fromkeys(STAGES, 0.0)
    for st, t in marks:
        out[st] += t - prev
        prev = t
    return {**out, "total": time.thread_time() - t0, "audio_s": part.duration_s}


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``(intercept, slope)``."""
    slope, intercept = np.polyfit(np.asarray(xs), np.asarray(ys), 1)
    return float(intercept), float(slope)


def stream_s(nbytes: int, repeats: int = 5) -> float:
    """Seconds to read ``nbytes`` once from memory (best of ``repeats``)."""
    a = np.ones(nbytes // 4, np.float32)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.thread_time()
        a.sum()
        best = min(best, time.thread_time() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    from tts_kit.models.supertonic.engine import Engine
    from tts_kit.serve.worker import WorkerConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--lengths", default="8,20,40,80,160")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    model = model_dir(args)
    print(f"bundle: {model}  load average: {os.getloadavg()[0]:.2f}")
    preset = WorkerConfig(model=str(model), threads=1, spinning=False).preset_obj()
    engine = Engine(model, preset=preset)
    engine.synthesize("Warm up, please.", steps=2, seed=0)
    lengths = [int(x) for x in args.lengths.split(",")]
    runs: dict[int, list[dict]] = {n: [] for n in lengths}
    for r in range(args.rounds):
        for n in lengths if r % 2 == 0 else lengths[::-1]:
            runs[n].append(render_costs(engine, cut(n), args.steps))
    med = {n: {k: statistics.median(d[k] for d in v) for k in v[0]} for n, v in runs.items()}
    print(f"\nCPU-ms per one-chunk render (median of {args.rounds}, {args.steps} steps, "
          "1 thread): the time to first audio of an idle worker at that first-chunk length")
    print(f"{'chars':>5} {'audio s':>7} " + " ".join(f"{s[:12]:>12}" for s in STAGES)
          + f" {'total':>7}")
    for n in lengths:
        m = med[n]
        print(f"{len(cut(n)):>5} {m['audio_s']:>7.2f} "
              + " ".join(f"{1000 * m[s]:>12.0f}" for s in STAGES) + f" {1000 * m['total']:>7.0f}")
    audio = [med[n]["audio_s"] for n in lengths]
    lines = {s: fit(audio, [med[n][s] for n in lengths]) for s in (*STAGES, "total")}
    print("\nfixed cost per chunk (line's value at 0 s of audio) and cost per audio second:")
    for s, (b, a) in lines.items():
        print(f"  {s:<20} fixed {1000 * b:7.0f} ms   {1000 * a:6.0f} ms per audio-s")
    ve = os.path.getsize(os.path.join(model, "onnx", "vector_estimator.onnx"))
    read_s = stream_s(ve)
    per_step = lines["vector_estimator"][0] / args.steps
    print(f"\nvector estimator: fixed {1000 * per_step:.1f} ms per flow step; reading its "
          f"{ve / 2**20:.0f} MB of weights once: {1000 * read_s:.1f} ms")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"steps": args.steps, "costs": {len(cut(n)): med[n] for n in lengths},
             "fixed_s": {s: v[0] for s, v in lines.items()},
             "per_audio_s": {s: v[1] for s, v in lines.items()},
             "ve_fixed_per_step_s": per_step, "ve_weight_read_s": read_s}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
