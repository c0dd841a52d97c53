"""Answers that repeat (issue 35): README's main job run N times, its answers compared.

Runs ``python -m tts_kit.cli report --out DIR`` (README's default report; any options after
``--`` are passed on, e.g. ``-- --sweep small.json --model DIR`` while developing) ``--runs``
times in a row, each into a fresh directory, and prints per run its wall time, its pick,
its tie set and its A/A check (the pick measured again in another fresh process, held to
the same verdict). At the end:

- picks consistent: identical, or each inside the others' tie sets (count of runs);
- the same vCPUs and loading as the first run (count);
- the A/A verdicts (tied in how many runs);
- `tts-kit report --compare` of each run against the first (dimensions that hold);
- where the latency spread lies: between fresh processes of one configuration (the round
  medians' relative spread) or between calls inside one (the calls' around their round's
  median), pooled over every configuration measured in 2+ rounds: racing buys fresh
  processes, which pay where the first is the larger.

On a quiet machine the target is 3 of 3 consistent, A/A tied 3 of 3, and each run's wall
time within 10 % of the default sweep's before racing (``--reference-s``: that time, to
print the ratio). Exit 1 when a run fails or the picks are not consistent.

Usage:
    python bench/repeatability.py [--runs 3] [--keep DIR] [--reference-s 480] [--json OUT]
                                  [-- REPORT OPTIONS]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEY = ("preset", "cpus", "loading", "steps", "batch_size")


def _run(out: Path, extra: list[str]) -> tuple[float, dict]:
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "tts_kit.cli", "report", "--out", str(out), *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"report failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return wall, json.loads((out / "report.json").read_text())


def _pick(rep: dict) -> list | None:
    rec = rep["recommendation"]["record"]
    return None if rec is None else [rec.get(k) for k in KEY]


def _spread(reports: list[dict]) -> tuple[float, float]:
    """(between fresh processes, within one): pooled standard deviations (the root of the
    mean variance), between as `tts_kit.tuning.verdict.noise` reads it (log round medians),
    within as the calls' relative deviation from their round's median."""
    from tts_kit.tuning.verdict import noise

    between = [noise(rep["records"]) for rep in reports]
    within = []
    for rep in reports:
        for r in rep["records"]:
            for g in r.get("round_latencies_ms") or []:
                if len(g) > 1:
                    m = statistics.median(g)
                    within += [(x / m - 1) ** 2 for x in g]
    return (statistics.mean(between) if between else float("nan"),
            (statistics.mean(within) ** 0.5) if within else float("nan"))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="keep the reports here (run-N/)")
    ap.add_argument("--reference-s", type=float, default=None,
                    help="the default report's wall time before racing, for the ratio")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    root = args.keep or Path(tempfile.mkdtemp(prefix="tts-kit-repeat-"))
    walls, reports = [], []
    for i in range(args.runs):
        wall, rep = _run(root / f"run-{i + 1}", extra)
        walls.append(wall)
        reports.append(rep)
        v = rep["recommendation"]
        aa = (v.get("aa") or {}).get("p50_ms") or {}
        ratio = f" ({wall / args.reference_s:.2f}x the reference)" if args.reference_s else ""
        print(f"run {i + 1}: {wall:.0f} s{ratio}; pick {_pick(rep)}; tie set of "
              f"{len(v.get('tie_set') or [])} within {100 * (v.get('band') or 0):.0f} %: "
              f"{v.get('tie_set')}; A/A {aa.get('word', 'not measured')} "
              f"({aa.get('lo', float('nan')):.3f}-{aa.get('hi', float('nan')):.3f})")
    picks = [_pick(r) for r in reports]
    ties = [[list(t) for t in r["recommendation"].get("tie_set") or []] for r in reports]
    consistent = sum(all(p == q or (p in ties[j] and q in ties[i])
                         for j, q in enumerate(picks)) for i, p in enumerate(picks))
    same = sum(p is not None and p[1:3] == picks[0][1:3] for p in picks if picks[0])
    aa_tied = sum(((r["recommendation"].get("aa") or {}).get("p50_ms") or {}).get("word")
                  == "tied" for r in reports)
    print(f"picks consistent (identical or inside each other's tie sets): {consistent} of "
          f"{len(picks)}")
    print(f"same vCPUs and loading as run 1: {same} of {len(picks)}")
    print(f"A/A check tied: {aa_tied} of {len(reports)}")
    print(f"wall time: {', '.join(f'{w:.0f} s' for w in walls)}")
    for i in range(1, args.runs):
        cmd = [sys.executable, "-m", "tts_kit.cli", "report", "--compare",
               str(root / "run-1" / "report.json"), str(root / f"run-{i + 1}" / "report.json")]
        done = subprocess.run(cmd, capture_output=True, text=True)
        said = [line for line in done.stdout.splitlines() if "then and now" in line]
        print(f"compare run 1 with run {i + 1} (exit {done.returncode}): "
              + (said[0] if said else done.stdout.splitlines()[0]))
    between, within = _spread(reports)
    where = "between fresh processes" if between > within else "between calls in one process"
    print(f"latency spread: {between:.1%} between fresh processes (round medians), "
          f"{within:.1%} between calls in one; the larger is {where}")
    print(f"reports in {root}")
    if args.json:
        runs = [{"wall_s": w, "pick": p, "tie_set": t, "band": r["recommendation"].get("band"),
                 "aa": r["recommendation"].get("aa")}
                for w, p, t, r in zip(walls, picks, ties, reports)]
        args.json.write_text(json.dumps({
            "runs": runs, "consistent": consistent, "same_cpus_loading": same,
            "aa_tied": aa_tied, "spread": {"between": between, "within": within}}, indent=2))
    return 0 if consistent == len(picks) else 1


if __name__ == "__main__":
    sys.exit(main())
