"""Benchmark: FP32 vs FP16 vs INT8, and both with the duration predictor kept FP32.

On a stand-in (default ``full``, the published size): file size, load RSS (what creating
the four sessions adds), peak RSS, p50 latency of one synthesis, all as ratios to FP32 on
the same provider, and the fidelity against FP32 (waveform SNR, log-mel distance, SNR of
every stage on FP32 inputs). Every measurement runs in a fresh process
(`tts_kit.measure.run_isolated`) with the same texts, seeds and noise. CPU always; CUDA
too when this ONNX Runtime has it and it works.

Heavy at ``full`` (a few minutes on 2 cores: the stand-in build is cached, the three
conversions and ten isolated runs are not).

Usage:
    python bench/precision.py [--scale full] [--repeats 3] [--steps 5] [--cpus 2]
                              [--providers CPUExecutionProvider,CUDAExecutionProvider]
                              [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tts_kit import contract  # noqa: E402
from tts_kit.devices import available_providers  # noqa: E402
from tts_kit.precision import (  # noqa: E402
    convert,
    fidelity_isolated,
    format_runs,
    measure_bundle,
)
from tts_kit.standin import ensure_standin  # noqa: E402

VARIANTS = {
    "fp16": dict(to="fp16"),
    "int8": dict(to="int8"),
    "fp16-dp32": dict(to="fp16", stages=["text_encoder", "vector_estimator", "vocoder"]),
    "int8-dp32": dict(to="int8", stages=["text_encoder", "vector_estimator", "vocoder"]),
}
TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "On a small server, memory decides how many voices can speak at once.",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", default="full", help="stand-in scale: tiny, medium or full")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per text")
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--cpus", type=int, default=None, help="pin each run to N cores")
    ap.add_argument("--providers", default=None, help="comma-separated (default: available)")
    ap.add_argument("--json", default=None, help="write all numbers here")
    args = ap.parse_args()
    providers = args.providers.split(",") if args.providers else available_providers()

    t0 = time.perf_counter()
    src = ensure_standin(args.scale)
    print(f"stand-in {args.scale}: {src} (ready after {time.perf_counter() - t0:.0f} s)")
    out: dict = {"scale": args.scale, "texts": TEXTS, "steps": args.steps, "variants": {}}
    with tempfile.TemporaryDirectory(prefix="tts_kit-precision-bench-") as tmp:
        bundles = {"fp32": src}
        for name, kw in VARIANTS.items():
            t1 = time.perf_counter()
            r = convert(src, Path(tmp) / name, measure=False, **kw)
            bundles[name] = Path(r.dst)
            out["variants"][name] = r.to_dict()
            print(f"converted {name:<10} {r.total_before / 2**20:7.1f} MB -> "
                  f"{r.total_after / 2**20:7.1f} MB (bundle) "
                  f"in {time.perf_counter() - t1:.0f} s")
        runs, fids = [], []
        for prov in providers:
            kw = dict(texts=TEXTS, steps=args.steps, repeats=args.repeats, cpus=args.cpus)
            recs = {name: measure_bundle(path, name, prov, **kw) for name, path in bundles.items()}
            runs += recs.values()
            for name in VARIANTS:
                fids.append((name, fidelity_isolated(src, bundles[name], VARIANTS[name]["to"],
                                                     prov, TEXTS, steps=args.steps)))
    print()
    print(format_runs(runs))
    print()
    print(f"{'provider':<9}{'variant':<11}{'SNR dB':>8}{'logmel dB':>10}  stage SNR dB"
          f"{'':<24}verdict")
    for name, f in fids:
        stages = " ".join(f"{contract.STAGE_SHORT[k]} {v:5.1f}" for k, v in f.stage_snr_db.items())
        verdict = "pass" if f.passed else "FAIL: " + "; ".join(f.reasons)
        print(f"{f.provider.replace('ExecutionProvider', ''):<9}{name:<11}"
              f"{f.waveform_snr_db:>8.1f}{f.log_mel_distance_db:>10.2f}  {stages:<36}{verdict}")
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    if args.json:
        out["runs"] = [r.to_dict() for r in runs]
        out["fidelity"] = [{"variant": n, **f.to_dict()} for n, f in fids]
        Path(args.json).write_text(json.dumps(out, indent=2, allow_nan=False) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
