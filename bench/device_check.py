"""GPU device check: FP32 vs FP16 on the CUDA provider, and the CUDA session options.

One short, self-contained run for a machine with an NVIDIA GPU (about 2-4 minutes at the
``full`` scale). From the repository root, with numpy, onnx, onnxruntime-gpu, psutil,
memory_profiler, soundfile and num2words installed (``pip install -e .`` and then
``pip install onnxruntime-gpu`` in place of ``onnxruntime``, or just those packages: the
script puts the repository on ``sys.path`` itself)::

    python bench/device_check.py [--scale full] [--budget-s 220] [--out DIR]

It builds (or reuses from the cache) the stand-in, converts it to FP16 (all stages, and
with the duration predictor kept FP32), and prints, each measured in a fresh process with
the same texts, seeds and noise:

1. FP32 vs FP16 on CUDA: GPU memory (nvidia-smi, see `tts_kit.runtime.devices.gpu_memory_mb`),
   host RSS, p50 latency, waveform SNR and per-stage SNR against FP32 on CUDA.
2. cuDNN's convolution search on FP32 and FP16: EXHAUSTIVE (ORT's default) vs HEURISTIC
   (tts_kit's, `SessionPreset.cuda`), each timed with the texts alternating (new shapes every
   call, as a server sees) and with one text repeated (the same shapes every call).
3. CUDA options on the FP16 bundle: ``arena_extend_strategy`` kNextPowerOfTwo (ORT's
   default) vs kSameAsRequested, a ``gpu_mem_limit``, and ``cudnn_conv_algo_search`` DEFAULT.

Without a usable CUDA provider it says why, runs the FP32 vs FP16 comparison on the CPU
instead (so the run still yields numbers) and exits with 3. Exit codes: 0 CUDA measured,
2 a Python package is missing, 3 CUDA unavailable (CPU fallback ran). JSON goes to
``--out`` (default ``$OUT`` when set) as ``device_check.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NEEDED = ["numpy", "onnx", "onnxruntime", "psutil", "memory_profiler", "soundfile", "num2words"]
TEXTS = ["The quick brown fox jumps over the lazy dog.",
         "On a small server, memory decides how many voices can speak at once."]


def _missing() -> list[str]:
    out = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except Exception:  # broken installs raise more than ImportError
            out.append(name)
    return out


def _say(msg: str) -> None:
    print(msg, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", default="full", help="stand-in scale: tiny, medium or full")
    ap.add_argument("--budget-s", type=float, default=220.0,
                    help="skip the remaining steps once this many seconds have passed")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=os.environ.get("OUT"), help="directory for the JSON")
    args = ap.parse_args()
    t0 = time.perf_counter()

    missing = _missing()
    if missing:
        pkgs = " ".join("onnxruntime-gpu" if m == "onnxruntime" else m for m in missing)
        _say(f"device_check: missing Python packages: {', '.join(missing)}; "
             f"install them, e.g. pip install {pkgs}")
        return 2

    import onnxruntime as ort

    from tts_kit.models.supertonic.standin import ensure_standin
    from tts_kit.precision import (
        Fidelity,
        convert,
        fidelity_isolated,
        format_runs,
        measure_bundle,
    )
    from tts_kit.runtime.devices import CPU, CUDA, gpu_list, probe_cuda
    from tts_kit.runtime.sessions import get_preset

    def left() -> float:
        return args.budget_s - (time.perf_counter() - t0)

    result: dict = {"scale": args.scale, "python": platform.python_version(),
                    "onnxruntime": ort.__version__,
                    "available_providers": ort.get_available_providers()}
    _say(f"python {result['python']}, onnxruntime {ort.__version__}, "
         f"providers {ort.get_available_providers()}")
    gpus = gpu_list()
    if gpus is not None:
        result["gpus"] = gpus
        _say(gpus or "nvidia-smi lists no GPU")
    else:
        _say("nvidia-smi not found (GPU memory cannot be read)")
    usable, why = probe_cuda(timeout_s=180)  # in a child: no CUDA context in this process
    result["cuda_usable"], result["cuda_reason"] = usable, why
    provider = CUDA if usable else CPU
    if not usable:
        _say(f"*** CUDA NOT AVAILABLE: {why}\n*** falling back to the CPU provider; "
             "the GPU questions stay open")

    t1 = time.perf_counter()
    src = ensure_standin(args.scale)
    _say(f"stand-in {args.scale} ready in {time.perf_counter() - t1:.0f} s: {src}")
    tmp = Path(tempfile.mkdtemp(prefix="tts_kit-device-check-"))
    try:
        bundles = {"fp32": src}
        for name, kw in (("fp16", {}),
                         ("fp16-dp32", {"stages": ["text_encoder", "vector_estimator",
                                                   "vocoder"]})):
            t1 = time.perf_counter()
            r = convert(src, tmp / name, to="fp16", measure=False, **kw)
            bundles[name] = tmp / name
            before = sum(st.size_before for st in r.stages.values()) / 2**20
            after = sum(st.size_after for st in r.stages.values()) / 2**20
            _say(f"converted {name}: {before:.0f} -> {after:.0f} "
                 f"MB in {time.perf_counter() - t1:.0f} s")

        # 1. FP32 vs FP16 on the chosen provider.
        runs, fids = [], []
        kw = dict(texts=TEXTS, repeats=args.repeats, timeout_s=150)
        recs = {}
        for name, path in bundles.items():
            if left() < 30 and name != "fp16" and "fp32" in recs:
                _say(f"skipped {name}: time budget")
                continue
            recs[name] = measure_bundle(path, name, provider, **kw)
            runs.append(recs[name])
            _say(f"measured {name} on {provider}: {recs[name].status} "
                 f"({time.perf_counter() - t0:.0f} s elapsed)")
        for name in [n for n in recs if n != "fp32"]:
            if left() < 20:
                _say(f"skipped fidelity of {name}: time budget")
                f = Fidelity(provider, error="skipped (time budget)").evaluate()
            else:
                f = fidelity_isolated(src, bundles[name], "fp16", provider, texts=TEXTS,
                                      timeout_s=150)
            fids.append((name, f))

        # 2. cuDNN's algorithm search, shapes changing vs repeated.
        search_runs = []
        base = get_preset("supertonic-default")
        for name in (("fp32", "fp16") if usable else ()):
            for search in ("EXHAUSTIVE", "HEURISTIC"):
                if left() < 25:
                    _say(f"skipped cudnn {search} on {name}: time budget")
                    continue
                preset = base.cuda(cudnn_conv_algo_search=search)
                rec = measure_bundle(bundles[name], name, CUDA, preset=preset, **kw)
                # One text repeated: the same shapes every call, in a process of its own.
                same = measure_bundle(bundles[name], name, CUDA, preset=preset,
                                      **dict(kw, texts=TEXTS[:1]))
                search_runs.append((name, search, rec, same))
                _say(f"measured cudnn {search} on {name}: {rec.status}")

        # 3. CUDA options on the FP16 bundle.
        opt_runs = []
        if usable:
            variants = [
                ("defaults (kNextPowerOfTwo, HEURISTIC)", base.cuda()),
                ("kSameAsRequested", base.cuda(arena_extend_strategy="kSameAsRequested")),
                ("kSameAsRequested + gpu_mem_limit 2 GB",
                 base.cuda(2048, arena_extend_strategy="kSameAsRequested")),
                ("cudnn DEFAULT", base.cuda(cudnn_conv_algo_search="DEFAULT")),
            ]
            for label, preset in variants:
                if left() < 25:
                    _say(f"skipped CUDA option '{label}': time budget")
                    continue
                rec = measure_bundle(bundles["fp16"], "fp16", CUDA, preset=preset, **kw)
                opt_runs.append((label, preset.provider_options.get(CUDA, {}), rec))
                _say(f"measured option '{label}': {rec.status}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    _say("")
    _say(format_runs(runs))
    for name, f in fids:
        stages = ", ".join(f"{k} {v:.1f}" for k, v in f.stage_snr_db.items())
        _say(f"{name} vs fp32 on {provider}: waveform SNR {f.waveform_snr_db:.1f} dB, "
             f"log-mel {f.log_mel_distance_db:.2f} dB, stages: {stages or '-'} -> "
             f"{'pass' if f.passed else 'FAIL: ' + '; '.join(f.reasons)}")
    if search_runs:
        _say(f"\ncuDNN convolution search ({args.scale}; p50 s per synthesis):")
        _say(f"{'bundle':<8}{'search':<12}{'texts alternating':>19}{'one text repeated':>19}"
             f"{'ratio':>7}  status")
        for name, search, r, same in search_runs:
            _say(f"{name:<8}{search:<12}{r.p50_s:>19.3f}{same.p50_s:>19.3f}"
                 f"{r.p50_s / same.p50_s:>7.1f}  {r.status} {r.error}")
    if opt_runs:
        _say(f"\nCUDA options on fp16 ({args.scale}):")
        _say(f"{'option':<42}{'GPU MB':>8}{'load s':>8}{'p50 s':>8}{'peak RSS':>10}  status")
        for label, _, r in opt_runs:
            gpu = "n/a" if r.gpu_mem_mb is None else f"{r.gpu_mem_mb:.0f}"
            _say(f"{label:<42}{gpu:>8}{r.load_s:>8.2f}{r.p50_s:>8.3f}{r.peak_rss_mb:>10.0f}  "
                 f"{r.status} {r.error}")
        _say(f"(GPU MB read with: {opt_runs[0][2].gpu_mem_source})")
    _say(f"\ntotal {time.perf_counter() - t0:.0f} s")

    result.update(
        provider=provider,
        runs=[r.to_dict() for r in runs],
        fidelity=[{"variant": n, **f.to_dict()} for n, f in fids],
        cudnn_search=[{"bundle": n, "search": se, **r.to_dict(), "p50_same_text_s": same.p50_s}
                      for n, se, r, same in search_runs],
        cuda_options=[{"label": lab, "options": o, **r.to_dict()} for lab, o, r in opt_runs],
        total_s=time.perf_counter() - t0,
    )
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        path = Path(args.out) / "device_check.json"
        path.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
        _say(f"wrote {path}")
    return 0 if usable else 3


if __name__ == "__main__":
    raise SystemExit(main())
