"""What the benchmark scripts share: the model arguments and the ratio cell.

Each script is run as ``python bench/NAME.py`` (this folder is then first on sys.path).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path


def add_model_args(ap: argparse.ArgumentParser, default_scale: str = "full") -> None:
    """``--model DIR`` and ``--scale`` (the stand-in built on first use when no --model)."""
    ap.add_argument("--model", help="bundle directory (default: the stand-in of --scale)")
    ap.add_argument("--scale", default=default_scale,
                    help="stand-in scale when no --model: tiny, medium or full")


def model_dir(args: argparse.Namespace) -> Path:
    """The bundle the arguments name: --model, else the cached stand-in of --scale."""
    from tts_kit.standin import ensure_standin

    return Path(args.model) if args.model else ensure_standin(args.scale)


def ratio(value: float | None, ref: float | None) -> str:
    """``value / ref`` to two decimals, or ``-`` when either is missing or the ref is 0."""
    if value is None or ref is None or not ref or math.isnan(value) or math.isnan(ref):
        return "-"
    return f"{value / ref:.2f}"
