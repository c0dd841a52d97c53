"""``bench/precision.py --stage-speed``: per-stage speed of FP32 and the INT8 recipes (issue 27).

Run through ``python bench/precision.py --stage-speed``; see its docstring.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from lab.stage_speed import cpu_features, faster_stages, stage_feeds, stage_speed

from tts_kit.core import contract
from tts_kit.precision import convert

#: The recorded input: three sentences, so the vocoder and vector estimator see a real length.
TEXT = ("The quick brown fox jumps over the lazy dog. On a small server, memory decides how "
        "many voices can speak at once. Please call me back when you have a minute.")


def _variants(src: Path, recipes: list[str], tmp: Path, reuse: str | None) -> dict[str, Path]:
    out = {"fp32": src}
    for name in recipes:
        done = Path(reuse) / name if reuse else None
        if done is not None and (done / contract.CONFIG_FILE).is_file():
            cfg = json.loads((done / contract.CONFIG_FILE).read_text(encoding="utf-8"))
            if cfg.get("tts_kit_precision", {}).get("recipe") == name:
                out[name] = done
                continue
        t0 = time.perf_counter()
        out[name] = Path(convert(src, tmp / name, recipe=name, measure=False).dst)
        print(f"converted {name} in {time.perf_counter() - t0:.0f} s")
    return out


def stage_speed_table(args: argparse.Namespace) -> int:
    """Print (and with --json write) the per-stage speed table; returns the exit status."""
    from tts_kit.models.supertonic.standin import ensure_standin

    src = Path(args.model) if args.model else ensure_standin(args.scale)
    recipes = [r.strip() for r in args.recipes.split(",") if r.strip()]
    cpu = cpu_features()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="tts_kit-stage-speed-") as tmp:
        variants = _variants(src, recipes, Path(tmp), args.reuse)
        feeds = stage_feeds(src, TEXT, steps=args.steps)
        p50 = stage_speed(variants, feeds, repeats=max(args.repeats, 3), rounds=args.rounds,
                          cpus=args.cpus)
    load_after = os.getloadavg()
    faster = faster_stages(p50, "fp32")
    print(f"model: {src}; CPU: {cpu['model']}; integer-kernel flags: {', '.join(cpu['flags'])}"
          f" (MLAS INT8 GEMM path: {cpu['int8_gemm']})")
    print(f"load average before/after: {load[0]:.2f} / {load_after[0]:.2f}; "
          f"{args.rounds} rounds x p50 of {max(args.repeats, 3)} calls, fresh process each")
    names = list(p50)
    print(f"{'stage':<20}" + "".join(f"{n + ' ms':>14}" for n in names)
          + "".join(f"{n + '/fp32':>16}" for n in names[1:]))
    for stage in contract.STAGES:
        if stage not in p50["fp32"]:
            continue
        ref = p50["fp32"][stage]
        print(f"{stage:<20}" + "".join(f"{p50[n][stage] * 1000:>14.1f}" for n in names)
              + "".join(f"{p50[n][stage] / ref:>16.2f}" for n in names[1:]))
    for name, stages in faster.items():
        print(f"{name}: faster than fp32 (< {0.95:.2f}x) on: {', '.join(stages) or 'no stage'}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"model": str(src), "cpu": cpu, "loadavg": [load[0], load_after[0]],
             "p50_s": p50, "faster": faster, "rounds": args.rounds}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
