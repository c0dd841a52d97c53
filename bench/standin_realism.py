"""Stand-in realism: FLOPs per stage against the architecture's, the roofline, the seed check.

For each stage: FLOPs counted from the graph (concrete shapes for ~8 s of audio) beside the
architecture's formula from the bundle's ``tts.json`` (target: within 2 %); then the
roofline (`tts_kit.tuning.roofline`): one chunk at ``--steps`` (default 8, the official
package's) with ``--threads`` intra-op threads in a fresh process pinned to that many cores,
each stage's achieved GFLOP/s against this machine's MatMul peak (an ONNX Runtime MatMul
micro-benchmark at 1..``--threads`` threads), and the sentence it implies; then, unless
``--no-instances``, the stand-in's instance table and memory split beside seeds 000 and 004,
as ratios (`lab.seed_check`; a few minutes on the full stand-in).

Usage:
    python bench/standin_realism.py [--model DIR] [--scale full] [--steps 8] [--threads 2]
                                    [--repeats 3] [--no-instances] [--seeds DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from _common import add_model_args, model_dir


def main(argv: list[str] | None = None) -> int:
    from lab.architecture_flops import architecture_flops
    from lab.seed_check import seed_check

    from tts_kit.core import contract
    from tts_kit.models.resolve import open_model
    from tts_kit.tuning import flops
    from tts_kit.tuning.roofline import measure_roofline
    from tts_kit.tuning.workload import Workload

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-instances", action="store_true",
                    help="leave out the instance table and memory split beside the seeds")
    ap.add_argument("--seeds", help="the seed articles' folder (default ../shared/seeds)")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args(argv)

    model = model_dir(args)
    bundle = open_model(str(model))
    cfg = json.loads((model / "onnx" / "tts.json").read_text(encoding="utf-8"))
    dims = flops.reference_dims()
    arch = architecture_flops(cfg, dims)
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

    roof = measure_roofline(bundle, threads=args.threads, steps=args.steps,
                            repeats=args.repeats)
    print("\nMatMul peak (ORT, 1024^3): " + ", ".join(
        f"{t} thread{'s' if t > 1 else ''} {p:.1f} GFLOP/s" for t, p in roof.peaks.items()))
    print(f"\none chunk at {args.steps} steps, {args.threads} threads, best of {args.repeats}; "
          f"load average {roof.loadavg[0]:.1f} before, {roof.loadavg[1]:.1f} after")
    print(roof.table())
    print(roof.sentence())

    check = None
    if not args.no_instances:
        check = seed_check(model, Workload(steps=args.steps, repeats=args.repeats),
                           seeds_dir=args.seeds)
        print(f"\nthe stand-in beside the seeds (ratio: stand-in / the seed's claim for the "
              f"real model)  load average: {os.getloadavg()[0]:.1f}")
        print(check.table())
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"dims": dims, "graph_flops": counted, "arch_flops": arch,
                       "roofline": roof.to_dict(),
                       "seed_check": check.to_dict() if check else None}, fh, indent=2)
    print("\nFLOPs within 2 % of the architecture: " + ("yes" if ok else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
