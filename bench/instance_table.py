"""Seed article 000's instance table, reproduced with emulated small instances.

Each row is one isolated trial pinned to N cores and killed past the instance's memory,
on the ``full`` stand-in by default (`lab.instances.instance_table`): idle RSS after
loading, peak RSS, CPU use (as a share of the instance's cores, as the article reports
it) and RTF, per preset, printed next to the article's numbers. Instances larger than
this machine are listed with the article's numbers only.

Then the seed check (`lab.seed_check`) for the first preset: its idle RSS,
peak RSS and RTF over seed 000's, and its memory split (one `stage_costs` measurement)
beside seed 004's, as ratios; the seeds' tables are parsed from ``--seeds`` (default
``../shared/seeds``), else read from the packaged copy that names them.

    python bench/instance_table.py [--model DIR] [--scale full] [--presets a,b]
                                   [--repeats 3] [--steps 8] [--seeds DIR] [--no-split]
                                   [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from _common import add_model_args, model_dir


def main(argv: list[str] | None = None) -> int:
    from lab import seed_check
    from lab.instances import format_instance_table, instance_table

    from tts_kit.core import contract, procfacts
    from tts_kit.tuning.stage_costs import stage_costs
    from tts_kit.tuning.workload import Workload

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--presets", default="supertonic-default,seed-2vcpu,low-memory,lean")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--seeds", help="the seed articles' folder (default ../shared/seeds)")
    ap.add_argument("--no-split", action="store_true", help="leave out the memory split")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)

    model = model_dir(args)
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    workload = Workload(steps=args.steps, repeats=args.repeats)
    claims = seed_check.seed_claims(args.seeds)
    print(f"bundle: {model}  steps: {args.steps}  repeats: {args.repeats}  "
          f"machine: {len(procfacts.allowed_cpus())} core(s)  "
          f"load average: {os.getloadavg()[0]:.1f}\n")
    rows = instance_table(model, presets, workload)
    print(format_instance_table(rows))

    first = [r for r in rows if r.get("preset") == presets[0]]
    split = []
    if not args.no_split:
        split = seed_check.split_ratios(stage_costs(model, presets[0], workload).split(), claims)
    check = seed_check.SeedCheck(seed_check.instance_ratios(first, claims), split,
                                 claims.sources, presets[0], procfacts.usable_cores())
    print(f"\n{presets[0]} beside the seeds (ratio: this model / the seed's claim for the "
          f"real model)  load average: {os.getloadavg()[0]:.1f}")
    print(check.table())
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "seed_check": check.to_dict()},
                                              indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
