"""Figures that repeat: one configuration measured N times in fresh process trees, with and
without each suspected cause of its wobble, and each figure's spread as a ratio.

Every run is a whole `tts_kit.tuning.tune.trial` (its own spawned process tree, as a
sweep measures it) of one configuration. The spread of a figure is
``(max - min) / median`` over the runs; the target for peak RSS is 3 %. Variants (each
changes one thing for its runs, and puts it back):

- ``base``: as a sweep measures;
- ``cpus1``: one core (no thread timing in the intra-op pool);
- ``arena1``: ``MALLOC_ARENA_MAX=1`` (one glibc arena for every thread);
- ``evict``: the model's files dropped from the page cache before each run;
- ``sampler``: the harness samples every 500 ms instead of 10 ms;
- ``noaslr``: address-space layout randomisation off for the trial processes
  (``personality(ADDR_NO_RANDOMIZE)``, inherited by what this process starts);
- ``mmapfix``: ``MALLOC_MMAP_THRESHOLD_=131072``: a fixed mmap threshold, which turns
  glibc's dynamic one off.

On the full stand-in (supertonic-default, 2 cpus) the peak is the load's (ONNX Runtime
building the vector estimator's and vocoder's sessions): ``base`` 588-625 MB (spread 0.060), and
8-23 % in load-only runs under ``cpus1``, ``arena1`` and ``evict`` alike, while the serving
peak repeats (502 MB). ``noaslr`` repeats it (541.0-541.1 MB) and ``mmapfix`` repeats it
lower (load 472.7-472.8 MB, so the trial's peak becomes the serving one, 500.5-500.7 MB):
glibc's dynamic mmap threshold meets a random address layout. It is the runtime's, not
the harness's; a sweep reports it as the spread of alternating rounds
(`tts_kit.tuning.spread`).

    python bench/repeat.py [--model DIR] [--scale full] [--preset supertonic-default]
                           [--cpus 2] [--loading resident] [--runs 4] [--repeats 1]
                           [--variants base,mmapfix] [--json OUT]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import add_model_args, model_dir

TARGET = 0.03
FIGURES = ("peak_rss_mb", "load_peak_rss_mb", "run_peak_rss_mb", "idle_rss_mb", "p50_ms")
VARIANTS = ("base", "cpus1", "arena1", "evict", "sampler", "noaslr", "mmapfix")
_ENV = {"arena1": {"MALLOC_ARENA_MAX": "1"}, "mmapfix": {"MALLOC_MMAP_THRESHOLD_": "131072"}}
_ADDR_NO_RANDOMIZE = 0x0040000


def _evict(model: Path) -> None:
    """Drop the model's files from the page cache (only these files; others' untouched)."""
    for path in model.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


@contextmanager
def _variant(name: str) -> Iterator[None]:
    """The environment or process personality of ``name`` while its runs start."""
    env = _ENV.get(name, {})
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    libc = ctypes.CDLL(None) if name == "noaslr" else None
    before = libc.personality(0xFFFFFFFF) if libc else None
    if libc:
        libc.personality(before | _ADDR_NO_RANDOMIZE)
    try:
        yield
    finally:
        if libc:
            libc.personality(before)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def spread(values: list[float]) -> float | None:
    """``(max - min) / median``; None with fewer than two values."""
    values = [v for v in values if v is not None]
    if len(values) < 2 or not statistics.median(values):
        return None
    return (max(values) - min(values)) / statistics.median(values)


def measure(model: Path, name: str, args: argparse.Namespace) -> list[dict]:
    """``args.runs`` fresh trials of the configuration under variant ``name``."""
    from tts_kit.tuning.tune import trial
    from tts_kit.tuning.workload import Workload

    rows = []
    with _variant(name):
        for i in range(args.runs):
            if name == "evict":
                _evict(model)
            r = trial(model, args.preset, Workload(steps=args.steps, repeats=args.repeats),
                      cpus=1 if name == "cpus1" else args.cpus, loading=args.loading,
                      sample_ms=500 if name == "sampler" else 10, timeout_s=900)
            rows.append({k: r.get(k) for k in (*FIGURES, "status", "loadavg_before")})
            cells = "  ".join(f"{k} {r.get(k) or 0:.1f}" for k in FIGURES)
            print(f"  {name:<8} run {i + 1}: {r['status']}  {cells}  "
                  f"(load average {r.get('loadavg_before') or 0:.1f})", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--preset", default="supertonic-default")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--loading", default="resident")
    ap.add_argument("--steps", type=int, default=None, help="flow steps (default: the engine's)")
    ap.add_argument("--runs", type=int, default=4, help="fresh trials per variant")
    ap.add_argument("--repeats", type=int, default=1, help="timed calls per trial")
    ap.add_argument("--variants", default="base,mmapfix",
                    help=f"comma-separated, of: {', '.join(VARIANTS)}")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args(argv)
    from tts_kit.core import contract

    args.steps = args.steps or contract.DEFAULT_STEPS
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown or args.runs < 2:
        ap.error(f"unknown variant(s) {unknown}" if unknown else "--runs must be >= 2")
    model = model_dir(args)
    print(f"bundle: {model}  preset: {args.preset}  cpus: {args.cpus}  loading: "
          f"{args.loading}  runs: {args.runs} per variant")
    out: dict = {"model": str(model), "preset": args.preset, "cpus": args.cpus,
                 "loading": args.loading, "runs": args.runs, "target": TARGET, "variants": {}}
    for name in variants:
        rows = measure(model, name, args)
        out["variants"][name] = {"runs": rows, "spread": {
            k: spread([r[k] for r in rows if r["status"] == "ok"]) for k in FIGURES}}
    print(f"\nspread = (max - min) / median over the runs (target for peak RSS: "
          f"<= {TARGET:.0%})")
    print(f"{'variant':<9}" + "".join(f"{k:>18}" for k in FIGURES) + "   peak within target")
    for name, v in out["variants"].items():
        cells = "".join(f"{'-' if s is None else format(s, '.3f'):>18}"
                        for s in v["spread"].values())
        ok = v["spread"]["peak_rss_mb"]
        print(f"{name:<9}{cells}   {'-' if ok is None else ('yes' if ok <= TARGET else 'no')}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
