"""Where a serving worker's CPU goes per second of audio, and which FP32 levers move it.

Issue 27's FP32 target (audio-seconds per CPU-second of the pool >= 1.25x request
scheduling's) asks for less CPU per second of audio with the same numbers. This script
measures, in CPU time (user + sys, robust to a busy machine), on one worker's settings
(1 intra-op thread, spinning off, the server's default preset):

1. the engine's CPU per stage over the serving bench's text, rendered chunk by chunk as
   a worker renders it, and the Python between stages (`cpu_split.stage_split`), at
   each ``--chunk-chars`` (attention is quadratic in length: does a shorter chunk cost
   less per second of speech?);
2. each operator type's share of the vector estimator's and vocoder's kernel time, the
   GEMM part, and the ceiling that gives every output-keeping FP32 change
   (`cpu_split.exact_ceiling`: all non-GEMM operators made free);
3. each FP32 lever on those two stages (`cpu_split.FP32_LEVERS`), alternating in one
   process, with its largest difference from the stage's own output.

    python bench/fp32_levers.py [--model DIR] [--scale full] [--steps 8] [--rounds 5]
                                [--calls 2] [--chunk-chars 300,100,50] [--json OUT]

The pool's own split (server against workers, request against chunk scheduling) is
``bench/serving.py``'s business; this one is the engine inside a worker.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from _common import add_model_args, model_dir

#: The stages where the work is (the other two are under 1 % of a worker's CPU).
HEAVY = ("vector_estimator", "vocoder")


def _engine(model: str):
    from tts_kit.models.supertonic.engine import Engine
    from tts_kit.serve.worker import WorkerConfig

    # A serving worker's own preset: 1 thread, spinning off (`tts-kit serve`'s defaults).
    preset = WorkerConfig(model=model, threads=1, spinning=False).preset_obj()
    engine = Engine(model, preset=preset)
    engine.synthesize("Warm up, please.", steps=1, seed=0)
    return engine


def _splits(engine, text: str, args) -> list[dict]:
    from lab.cpu_split import stage_split

    sizes = [int(s) for s in args.chunk_chars.split(",")]
    per: dict[int, list[dict]] = {s: [] for s in sizes}
    for r in range(max(1, args.split_rounds)):
        for s in sizes if r % 2 == 0 else sizes[::-1]:
            per[s].append(stage_split(engine, text, steps=args.steps, max_chunk_chars=s))
    rows = []
    for s, got in per.items():
        total = sum(g["total_s"] for g in got)
        stages = {k: sum(g["stages"].get(k, 0.0) for g in got) for k in got[0]["stages"]}
        rows.append({"chunk_chars": s, "chunks": got[0]["chunks"],
                     "audio_per_cpu_s": sum(g["audio_s"] for g in got) / total,
                     "speech_per_cpu_s": sum(g["speech_s"] for g in got) / total,
                     "per_round": [g["speech_s"] / g["total_s"] for g in got],
                     "share": {**{k: v / total for k, v in stages.items()},
                               "python": sum(g["other_s"] for g in got) / total}})
    return rows


def _print_splits(rows: list[dict]) -> None:
    print("\n1. worker CPU per stage (1 thread, spinning off), chunk by chunk")
    names = list(rows[0]["share"])
    print(f"{'chunk chars':>11}{'chunks':>7}{'speech-s/CPU-s':>15}{'audio-s/CPU-s':>14}"
          + "".join(f"{n[:12]:>13}" for n in names))
    for r in rows:
        print(f"{r['chunk_chars']:>11}{r['chunks']:>7}{r['speech_per_cpu_s']:>15.3f}"
              f"{r['audio_per_cpu_s']:>14.3f}"
              + "".join(f"{100 * r['share'][n]:>12.1f}%" for n in names))
    print("(speech: the audio less the 0.3 s pauses between chunks, which cost no CPU)")


def main(argv: list[str] | None = None) -> int:
    from lab.cpu_split import (
        FP32_LEVERS,
        exact_ceiling,
        gemm_share,
        lever_ab,
        op_shares,
    )
    from lab.stage_speed import cpu_features, stage_feeds

    from tts_kit.models.supertonic.bundle import Bundle
    from tts_kit.serve.loadtest import DEFAULT_TEXT

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5, help="lever rounds (alternating)")
    ap.add_argument("--calls", type=int, default=2, help="calls per lever per round")
    ap.add_argument("--split-rounds", type=int, default=2)
    ap.add_argument("--chunk-chars", default="300,100,50",
                    help="chunk limits to render the text at (300: the default)")
    ap.add_argument("--levers", default=",".join(FP32_LEVERS))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    model = str(model_dir(args))
    load0 = os.getloadavg()[0]
    print(f"bundle: {model}  cpu: {cpu_features()['model']}  load average: {load0:.2f}")

    engine = _engine(model)
    rows = _splits(engine, DEFAULT_TEXT, args)
    engine.close()
    _print_splits(rows)

    feeds = stage_feeds(model, DEFAULT_TEXT, steps=args.steps)
    bundle = Bundle(model)
    shares = {s: op_shares(bundle.stage_path(s), feeds[s]) for s in HEAVY}
    gemm = {s: gemm_share(v) for s, v in shares.items()}
    default = next(r for r in rows if r["chunk_chars"] == max(r["chunk_chars"] for r in rows))
    ceiling = exact_ceiling(default["share"], gemm)
    print("\n2. operator shares of kernel time (ONNX Runtime's profiler, 1 thread)")
    for s, v in shares.items():
        top = ", ".join(f"{op} {100 * x:.1f}%" for op, x in list(v.items())[:5])
        print(f"  {s:<18} GEMM {100 * gemm[s]:.1f}%  ({top})")
    print(f"  ceiling of any output-keeping FP32 change (every non-GEMM operator free): "
          f"{ceiling:.3f}x the audio per CPU-second")

    levers = tuple(v.strip() for v in args.levers.split(",") if v.strip())
    ab = {}
    print(f"\n3. FP32 levers: CPU-ms per call, median of {args.rounds} alternating rounds x "
          f"{args.calls} calls [min-max], x base, max |diff| from base's output")
    with tempfile.TemporaryDirectory(prefix="tts_kit-levers-") as tmp:
        for s in HEAVY:
            ab[s] = lever_ab(bundle.stage_path(s), feeds[s], tmp, levers=levers,
                             rounds=args.rounds, calls=args.calls)
            print(f"  {s}")
            for v, r in ab[s].items():
                print(f"    {v:<18}{1000 * r['cpu_s']:9.1f} [{1000 * r['min_s']:.0f}-"
                      f"{1000 * r['max_s']:.0f}]  x{r['x_base']:.3f}  {r['max_abs_diff']:.2g}")
    weights = {s: default["share"][s] for s in HEAVY}
    whole = {v: sum(weights[s] * ab[s][v]["x_base"] for s in HEAVY) / sum(weights.values())
             for v in levers}
    print("  weighted by the stages' CPU shares: " + ", ".join(
        f"{v} x{x:.3f}" for v, x in whole.items()))
    load1 = os.getloadavg()[0]
    print(f"load average after: {load1:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"model": model, "steps": args.steps, "loadavg": [load0, load1], "splits": rows,
             "op_shares": shares, "gemm_share": gemm, "exact_ceiling": ceiling,
             "levers": ab, "levers_weighted": whole,
             "speech_per_cpu_s": statistics.median(r["speech_per_cpu_s"] for r in rows)},
            indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
