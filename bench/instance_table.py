"""Seed article 000's instance table, reproduced with emulated small instances.

Each row is one isolated trial pinned to N cores and killed past the instance's memory,
on the ``full`` stand-in by default (`tts_kit.experiments.instances.instance_table`): idle RSS after
loading, peak RSS, CPU use (as a share of the instance's cores, as the article reports
it) and RTF, per preset, printed next to the article's numbers. Instances larger than
this machine are listed with the article's numbers only.

    python bench/instance_table.py [--model DIR] [--scale full] [--presets a,b]
                                   [--repeats 3] [--steps 8] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from _common import add_model_args, model_dir


def main(argv: list[str] | None = None) -> int:
    from tts_kit.core import contract, procfacts
    from tts_kit.experiments.instances import format_instance_table, instance_table
    from tts_kit.experiments.workload import Workload

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--presets", default="supertonic-default,seed-2vcpu,low-memory,lean")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)

    model = model_dir(args)
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    print(f"bundle: {model}  steps: {args.steps}  repeats: {args.repeats}  "
          f"machine: {len(procfacts.allowed_cpus())} core(s)\n")
    rows = instance_table(model, presets, Workload(steps=args.steps, repeats=args.repeats))
    print(format_instance_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
