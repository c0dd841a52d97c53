"""What the benchmark scripts share: the model arguments and the ratio cell.

Each script is run as ``python bench/NAME.py`` (this folder is then first on sys.path).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_model_args(ap: argparse.ArgumentParser, default_scale: str = "full") -> None:
    """``--model DIR`` and ``--scale`` (the stand-in built on first use when no --model)."""
    ap.add_argument("--model", help="bundle directory (default: the stand-in of --scale)")
    ap.add_argument("--scale", default=default_scale,
                    help="stand-in scale when no --model: tiny, medium or full")


def model_dir(args: argparse.Namespace) -> Path:
    """The bundle the arguments name: --model, else the cached stand-in of --scale."""
    from tts_kit.models.supertonic.standin import ensure_standin

    return Path(args.model) if args.model else ensure_standin(args.scale)


def ratio(value: float | None, ref: float | None) -> str:
    """``value / ref`` to two decimals, or ``-`` when either is missing or the ref is 0."""
    from tts_kit.tuning.records import to_number

    value, ref = to_number(value), to_number(ref)
    if value is None or not ref:
        return "-"
    return f"{value / ref:.2f}"


def print_ratio_table(records: list[dict], reference: str, label: str = "preset") -> None:
    """One row per record: each cost (`tts_kit.tuning.records.COST_KEYS`) over the
    ``reference``
    preset's record, headed by the costs' short names."""
    from tts_kit.tuning.records import COLUMNS, COST_KEYS

    ref = next(r for r in records if r["preset"] == reference)
    print(f"\nratios to {reference} (measured in this run)")
    print(f"{label:<28}" + "".join(f"{COLUMNS[k].short:>9}" for k in COST_KEYS))
    for r in records:
        print(f"{r['preset']:<28}" + "".join(f"{ratio(r[k], ref[k]):>9}" for k in COST_KEYS))
    print("(CPU: CPU time per call, all threads; it moves less than latency when other "
          "processes share the cores. ld-peak / run-peak: high-water mark while loading / "
          "while serving.)")


def add_rounds_arg(ap: argparse.ArgumentParser) -> None:
    """``--rounds``: fresh trials per configuration, alternating (`tts_kit.tuning.tune.
    sweep`'s ``rounds``, default 2; 1 for a quick look without the spread)."""
    from tts_kit.tuning.spread import DEFAULT_ROUNDS

    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                    help=f"fresh trials per configuration, alternating (default "
                         f"{DEFAULT_ROUNDS}; 1: no spread)")


def sweep_against(model: Path, presets: list, args: argparse.Namespace, reference: str,
                  label: str = "preset", loading: str = "resident") -> int:
    """Sweep ``presets`` (one isolated trial each, same cores and workload), print the
    table and the ratios to ``reference``, write ``--json``; the presets/options benches."""
    import json

    from tts_kit.tuning.tune import format_table, sweep
    from tts_kit.tuning.workload import Workload

    result = sweep(model, presets, Workload(steps=args.steps, repeats=args.repeats),
                   cpus=(args.cpus,), loadings=(loading,), progress=True, rounds=args.rounds)
    print(f"bundle: {model}  cpus: {args.cpus or 'all'}  steps: {args.steps}  "
          f"repeats: {args.repeats}  rounds: {args.rounds}  loading: {loading}\n")
    print(format_table(result.records))
    print_ratio_table(result.records, reference, label=label)
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_dict(), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
