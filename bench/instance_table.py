"""Seed article 000's instance table, reproduced with emulated small instances.

Each row is one isolated trial (`tts_kit.tune.trial`) pinned to N cores and killed
past the instance's memory (``mem_budget_mb``), on the ``full`` stand-in by default:
idle RSS after loading, peak RSS, CPU use (as a share of the instance's cores, as the
article reports it) and RTF, per preset, printed next to the article's numbers.
Instances larger than this machine are listed with the article's numbers only.

    python bench/instance_table.py [--model DIR] [--scale full] [--presets a,b]
                                   [--repeats 3] [--steps 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

#: Claimed by the article (seed 000), not measured here: instance -> its table row.
CLAIMED_BY_THE_ARTICLE: dict[str, dict[str, float]] = {
    "1 vCPU / 1 GB": {"cpus": 1, "mem_mb": 1024, "idle_rss_mb": 280, "peak_rss_mb": 890,
                      "cpu_percent": 98, "rtf": 0.85},
    "2 vCPU / 2 GB": {"cpus": 2, "mem_mb": 2048, "idle_rss_mb": 320, "peak_rss_mb": 920,
                      "cpu_percent": 48, "rtf": 0.28},
    "4 vCPU / 4 GB": {"cpus": 4, "mem_mb": 4096, "idle_rss_mb": 350, "peak_rss_mb": 950,
                      "cpu_percent": 25, "rtf": 0.15},
}
#: Also claimed by the article: a 1 vCPU / 1 GB box is OOM-killed.
CLAIMED_1GB_OUTCOME = "OOM-killed"


def fmt(value: object, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main(argv: list[str] | None = None) -> int:
    from tts_kit.measure import available_cpus
    from tts_kit.standin import ensure_standin
    from tts_kit.tune import trial

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="bundle directory (default: the stand-in of --scale)")
    ap.add_argument("--scale", default="full", help="stand-in scale when no --model")
    ap.add_argument("--presets", default="supertonic-default,seed-2vcpu,low-memory,lean")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--json", help="also write the records here")
    args = ap.parse_args(argv)

    model = Path(args.model) if args.model else ensure_standin(args.scale)
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    cores = len(available_cpus())
    records = []
    print(f"bundle: {model}  steps: {args.steps}  repeats: {args.repeats}  "
          f"machine: {cores} core(s)\n")
    head = (f"{'instance':<15}{'preset':<20}{'status':<8}{'idle MB':>9}{'peak MB':>9}"
            f"{'CPU %':>7}{'RTF':>7}   | claimed by the article: idle  peak  CPU %  RTF")
    print(head)
    print("-" * len(head))
    for instance, claim in CLAIMED_BY_THE_ARTICLE.items():
        claimed = (f"{claim['idle_rss_mb']:>5.0f} {claim['peak_rss_mb']:>5.0f} "
                   f"{claim['cpu_percent']:>6.0f} {claim['rtf']:>5.2f}")
        if claim["cpus"] > cores:
            skipped = f"(not measured: needs {int(claim['cpus'])} cores)"
            print(f"{instance:<15}{skipped:<55}|{' ' * 24}{claimed}")
            continue
        for name in presets:
            rec = trial(model, name, cpus=int(claim["cpus"]), mem_budget_mb=claim["mem_mb"],
                        steps=args.steps, repeats=args.repeats)
            rec["instance"] = instance
            # The article's CPU use is a share of the whole instance, not of one core.
            share = None if rec["cpu_percent"] is None else rec["cpu_percent"] / claim["cpus"]
            rec["cpu_share_percent"] = share
            records.append({k: v for k, v in rec.items() if k not in ("timeline", "events")})
            print(f"{instance:<15}{name:<20}{rec['status']:<8}"
                  f"{fmt(rec['idle_rss_mb'], '9.0f')}{fmt(rec['peak_rss_mb'], '9.0f')}"
                  f"{fmt(share, '7.0f')}{fmt(rec['rtf'], '7.3f')}   |{' ' * 24}{claimed}")
    print(f"\nclaimed by the article for 1 vCPU / 1 GB: {CLAIMED_1GB_OUTCOME}; measured: "
          + ", ".join(f"{r['preset']} {r['status']}" for r in records
                      if r["instance"] == "1 vCPU / 1 GB"))
    if args.json:
        Path(args.json).write_text(json.dumps({"records": records}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
