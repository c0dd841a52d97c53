"""Every session preset against ``supertonic-default``: latency and peak RSS as ratios.

All presets are measured in one run, each trial in its own isolated process
(`tts_kit.tuning.tune.sweep`) on the same bundle (the ``full`` stand-in by default, built on
first use), the same cores and the same workload. Prints absolute numbers and the
ratios preset / supertonic-default (latency < 1: faster; peak < 1: less memory).

    python bench/presets.py [--model DIR] [--scale full] [--cpus 2] [--repeats 5]
                            [--steps 8] [--rounds 2] [--loading resident]
                            [--json OUT]
"""

from __future__ import annotations

import argparse
import sys

from _common import add_model_args, add_rounds_arg, model_dir, sweep_against

REFERENCE = "supertonic-default"


def main(argv: list[str] | None = None) -> int:
    from tts_kit.core import contract
    from tts_kit.runtime.sessions import PRESETS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--cpus", type=int, default=None, help="pin every trial to N cores")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--loading", default="resident")
    add_rounds_arg(ap)
    ap.add_argument("--json", help="also write the records here")
    args = ap.parse_args(argv)

    model = model_dir(args)
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    if REFERENCE not in presets:
        presets.insert(0, REFERENCE)
    return sweep_against(model, presets, args, REFERENCE, loading=args.loading)


if __name__ == "__main__":
    sys.exit(main())
