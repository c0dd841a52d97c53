"""Stand-in realism: FLOPs per stage against the architecture's, and the roofline fractions.

For each stage: FLOPs counted from the graph (concrete shapes for ~8 s of audio) beside the
architecture's formula from the bundle's ``tts.json`` (target: within 2 %), then one
synthesis of one chunk at ``--steps`` (default 8, the official package's) with ``--threads``
intra-op threads, each stage's achieved GFLOP/s and its fraction of this machine's
MatMul peak (an ONNX Runtime MatMul micro-benchmark at 1..``--threads`` threads).

Usage:
    python bench/standin_realism.py [--model DIR] [--scale full] [--steps 8] [--threads 2]
                                    [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys

from _common import add_model_args, model_dir

TEXT = ("The quick brown fox jumps over the lazy dog, and then it runs back home again "
        "before the rain starts to fall.")  # ~112 characters, ~8 s of audio


def _achieved(engine, bundle, steps: int, threads: int) -> dict[str, dict[str, float]]:
    from tts_kit.core import contract
    from tts_kit.experiments import flops

    engine.synthesize_batch([TEXT], steps=steps, seed=0)  # warm-up: arenas, pre-packing
    res = engine.synthesize_batch([TEXT], steps=steps, seed=0)[0]
    dims = {"B": 1, "T": len(TEXT) + 1,
            "L": max(1, round(res.duration_s / flops.SECONDS_PER_FRAME))}
    peak = flops.matmul_peak_gflops(threads)
    out = {}
    for stage in contract.STAGES:
        runs = steps if stage == "vector_estimator" else 1
        gflop = runs * flops.graph_flops(bundle.stages[stage].path, dims) / 1e9
        sec = res.timings.get(stage)
        rate = gflop / sec if sec else float("nan")
        out[stage] = {"gflop": gflop, "s": sec, "gflops": rate, "of_peak": rate / peak}
    return out


def main(argv: list[str] | None = None) -> int:
    from tts_kit.core import contract
    from tts_kit.experiments import flops
    from tts_kit.models.family import make_engine, open_model
    from tts_kit.runtime.sessions import SessionPreset

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)

    model = model_dir(args)
    bundle = open_model(str(model))
    cfg = json.loads((model / "onnx" / "tts.json").read_text(encoding="utf-8"))
    dims = flops.reference_dims()
    arch = flops.architecture_flops(cfg, dims)
    print(f"FLOPs per run for {dims['L'] * flops.SECONDS_PER_FRAME:.2f} s of audio "
          f"(T={dims['T']} characters, L={dims['L']} latent frames)")
    print(f"{'stage':<20}{'graph GFLOP':>12}{'arch GFLOP':>12}{'ratio':>8}")
    ok = True
    counted = {}
    for stage in contract.STAGES:
        g = flops.graph_flops(bundle.stages[stage].path, dims)
        counted[stage] = g
        r = g / arch[stage]
        ok &= abs(r - 1) <= 0.02
        print(f"{stage:<20}{g / 1e9:>12.3f}{arch[stage] / 1e9:>12.3f}{r:>8.4f}")
    peaks = {t: flops.matmul_peak_gflops(t) for t in range(1, args.threads + 1)}
    print("\nMatMul peak (ORT, 1024^3): " + ", ".join(
        f"{t} thread{'s' if t > 1 else ''} {p:.1f} GFLOP/s" for t, p in peaks.items()))
    engine = make_engine(bundle, preset=SessionPreset(name="bench",
                                                      intra_op_num_threads=args.threads))
    got = _achieved(engine, bundle, args.steps, args.threads)
    print(f"\none chunk at {args.steps} steps, {args.threads} threads")
    print(f"{'stage':<20}{'GFLOP':>9}{'s':>8}{'GFLOP/s':>9}{'of peak':>9}")
    for stage, r in got.items():
        print(f"{stage:<20}{r['gflop']:>9.2f}{r['s'] or float('nan'):>8.3f}"
              f"{r['gflops']:>9.1f}{r['of_peak']:>9.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"dims": dims, "graph_flops": counted, "arch_flops": arch,
                       "matmul_peak_gflops": peaks, "achieved": got}, fh, indent=2)
    print("\nFLOPs within 2 % of the architecture: " + ("yes" if ok else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
