"""``tts-kit`` commands about the model itself: synth, info, standin, fetch, doctor."""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tts_kit.cli._common import (
    LOADING_HELP,
    AddCommand,
    UserError,
    _bundle,
    _check_language,
    _check_output_file,
    _say,
    out_path,
)
from tts_kit.core import contract
from tts_kit.core.textsafe import term_safe


def _audio_output(path: str) -> tuple[Path, str]:
    """Check ``-o`` before any synthesis: (path, soundfile format) or a one-line UserError."""
    import soundfile as sf

    out = Path(path).expanduser()
    fmt = out.suffix[1:].upper()
    if not out.is_dir() and (fmt not in sf.available_formats()
                             or not sf.check_format(fmt, "PCM_16")):
        raise UserError(f"-o {path}: unknown audio file type "
                        f"({out.suffix or 'no extension'}); end it with .wav (or .flac, .aiff)")
    return _check_output_file(path, "-o", "out.wav"), fmt


def cmd_synth(args: argparse.Namespace) -> int:
    import soundfile as sf

    from tts_kit.core.atomic import atomic_file
    from tts_kit.models.family import make_engine
    from tts_kit.models.synthesis import SynthesisConfig
    from tts_kit.tuning.records import format_timings

    out, fmt = _audio_output(args.output)  # before the model loads: a bad -o costs nothing
    _check_language(args.text, args.lang)
    bundle = _bundle(args)
    scaled = bundle.capabilities.noise_scales
    if not scaled and (args.noise_scale is not None or args.noise_w is not None):
        raise UserError("--noise-scale and --noise-w apply to Piper voices only (--model "
                        "piper:joe-us); a Supertonic bundle's noise is its --seed")
    extra = {"noise_scale": args.noise_scale, "noise_w": args.noise_w} if scaled else {}
    engine = make_engine(bundle, normalize=not args.no_normalize, loading=args.loading, **extra)
    # No --speed (None): the model's own natural rate.
    config = SynthesisConfig(lang=args.lang, voice=args.voice or engine.bundle.default_voice,
                             steps=args.steps, speed=args.speed, seed=args.seed,
                             order=args.order)
    t0 = time.perf_counter()
    parts = engine.stream(args.text, config)  # checked here, before the output is touched
    timings: Counter[str] = Counter()
    frames = 0
    # Chunk by chunk into a file beside the output, renamed into place at the end: a full
    # disk, an error or a kill leaves an existing file as it was.
    try:
        with parts, atomic_file(out) as tmp, sf.SoundFile(
                str(tmp), "w", engine.bundle.sample_rate, 1, subtype="PCM_16",
                format=fmt) as fh:
            for part in parts:
                fh.write(part.samples)
                frames += len(part.samples)
                timings.update(part.timings)  # adds them up
    except (OSError, sf.SoundFileError) as exc:
        why = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
        raise UserError(f"{out}: could not write the audio ({why}); nothing was changed; "
                        "free some space or choose another -o") from None
    timings["total"] = time.perf_counter() - t0
    sr = engine.bundle.sample_rate
    _say(f"wrote {out} ({frames / sr:.2f} s of audio at {sr} Hz; "
         f"spoken by {term_safe(bundle.label)})")
    if parts.text != " ".join(args.text.split()):
        _say(f"read: {term_safe(parts.text)}")
    rtf = timings["total"] / max(frames / sr, 1e-9)
    _say(f"RTF {rtf:.3f}  (synthesis {timings['total'] * 1000:.0f} ms)")
    for stage, ms in format_timings(timings):
        _say(f"  {stage:<20} {ms:8.1f} ms")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    import onnxruntime

    from tts_kit.runtime.loading import check_loads

    bundle = _bundle(args)
    info = bundle.describe()
    # Loading each graph finds an operator ORT lacks, which the file checks cannot.
    loads = None if args.no_load else check_loads(bundle) == list(bundle.stages)
    info["runtime"] = {"onnxruntime": onnxruntime.__version__, "graphs_load": loads}
    info.setdefault("family", bundle.family)
    info.setdefault("model", bundle.label)
    if args.costs:
        from tts_kit.tuning.flops import model_costs

        info["costs"] = model_costs(bundle, steps=args.steps)
        if args.measure:  # achieved GFLOP/s against this machine's MatMul peak
            from tts_kit.tuning.roofline import measure_roofline

            roofline = measure_roofline(bundle, threads=args.threads, steps=args.steps)
            info["roofline"] = roofline.to_dict()
    elif args.measure:
        raise UserError("--measure times the cost model's stages: give it with --costs")
    if args.json:
        _say(json.dumps(info, indent=2))
        return 0
    kind = "real model"
    standin = info["standin"]
    if isinstance(standin, dict):
        from tts_kit.models.supertonic.standin import scale_note

        scale = str(standin.get("scale", "?"))
        kind = f"stand-in, {scale} scale, seed {standin.get('seed', '?')} ({scale_note(scale)})"
    n = len(info["stages"])
    if loads:
        what = "the graph" if n == 1 else f"all {'four' if n == 4 else n} graphs"
        runtime = f"onnxruntime {onnxruntime.__version__} loads {what} (CPU)"
    elif loads is None:
        runtime = "not checked (--no-load): whether onnxruntime can load the graphs"
    else:
        runtime = f"onnxruntime {onnxruntime.__version__} could NOT load every graph"
    rows = [("model", term_safe(info["model"])), ("bundle", str(info["path"])), ("kind", kind),
            ("voices", ", ".join(term_safe(v) for v in info["voices"])),
            ("params", f"{info['params'] / 1e6:.2f} M"), ("runtime", runtime)]
    _say("\n".join(f"{k:<9}{v}" for k, v in rows))
    # The same columns and units as `tts-kit standin` prints (MB = 10^6 bytes).
    _say(f"\n{'stage':<20}{'params':>10}{'MB':>9}  {'precision':<9}  sha256")
    stages = info["stages"]
    for stage, st in stages.items():
        _say(f"{stage:<20}{st['params'] / 1e6:>9.2f}M{st['size_bytes'] / 1e6:>9.1f}  "
             f"{st['precision']:<9}  {st['sha256'][:16]}")
    _say(f"{'total':<20}{sum(st['params'] for st in stages.values()) / 1e6:>9.2f}M"
         f"{sum(st['size_bytes'] for st in stages.values()) / 1e6:>9.1f}")
    if args.costs:
        _say_costs(info["costs"])
        if args.measure:
            _say_roofline(roofline)
    return 0


def _say_roofline(r: Any) -> None:
    load = (f", load average {r.loadavg[0]:.1f}-{r.loadavg[1]:.1f}" if r.loadavg else "")
    _say(f"\nmeasured: one {r.audio_s:.2f} s chunk, {r.threads} thread(s), best of {r.repeats} "
         f"in a fresh pinned process; MatMul peak {r.peak_gflops:.1f} GFLOP/s{load}")
    _say(r.table())
    _say(r.sentence())


def _say_costs(costs: dict) -> None:
    from tts_kit.tuning.flops import StageFlops, costs_table

    _say(f"\ncosts at {costs['steps']} flow steps, counted from the graphs for "
         f"{costs['seconds']:.2f} s of audio ({', '.join(costs['counted'])}: 2 x multiply-adds)")
    rows = [StageFlops(c["stage"], c["params"], c["runs"], c["flops_per_run"], c["seconds"])
            for c in costs["stages"]]
    _say(costs_table(rows))


def cmd_standin(args: argparse.Namespace) -> int:
    from tts_kit.models.supertonic.standin import build_standin, scale_note

    summary = build_standin(args.dir, scale=args.scale, seed=args.seed)
    _say(summary.table())
    _say(f"built {args.dir} in {summary.build_s:.1f} s ({scale_note(args.scale)})")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from tts_kit.models.supertonic.bundle import FetchError, fetch_model

    try:
        path = fetch_model(args.model_name, args.dir)
    except FetchError as exc:
        raise UserError(str(exc)) from None
    _say(f"downloaded {args.model_name} to {path}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from tts_kit.doctor import failed, format_checks, run_checks

    checks = run_checks(model=args.model, load=not args.no_load)
    if args.json:
        _say(json.dumps({"ok": not failed(checks), "checks": [c.to_dict() for c in checks]},
                        indent=2))
    else:
        _say(format_checks(checks))
    # Like a test run: 1 when something breaks a deployment, so scripts and CI can gate.
    return 1 if failed(checks) else 0


def register(add: AddCommand) -> None:
    """Register synth, info, standin and fetch (in the order ``--help`` lists them).

    Example:
        >>> from tts_kit.cli import _parser
        >>> _parser().parse_args(["synth", "Hi.", "-o", "hi.wav"]).loading
        'resident'
    """
    sp = add("synth", cmd_synth, "synthesise TEXT into a mono WAV file (44.1 kHz for "
             "Supertonic, the voice's rate for Piper)")
    sp.add_argument("text", help="the text to speak")
    sp.add_argument("-o", "--output", required=True, type=out_path,
                    help="output .wav (or .flac, .aiff) path")
    sp.add_argument("--lang", default=contract.DEFAULT_LANG, metavar="LANG",
                    help=f"language code, one of {', '.join(contract.LANGUAGES)}")
    sp.add_argument("--voice", default=None, help="voice style (default: M1, else the "
                    "bundle's first voice; `tts-kit info` lists them)")
    sp.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS,
                    help="flow-matching steps (more: slower, smoother)")
    sp.add_argument("--speed", type=float, default=None,
                    help=f"speaking rate (default {contract.DEFAULT_SPEED:g}; 1 for Piper)")
    sp.add_argument("--seed", type=int, default=None,
                    help="noise seed, for the same audio every run (default: random)")
    sp.add_argument("--noise-scale", type=float, default=None,
                    help="Piper only: the prior's noise (default: the voice's; 0: none)")
    sp.add_argument("--noise-w", type=float, default=None,
                    help="Piper only: the duration noise (default: the voice's; 0: none)")
    sp.add_argument("--loading", default="resident", metavar="POLICY", help=LOADING_HELP)
    sp.add_argument("--order", default="chunk", choices=["chunk", "stage"],
                    help="chunk: each chunk through all stages, first audio soonest; stage: "
                    "each stage over all chunks, so paged loading loads each graph once")
    sp.add_argument("--no-normalize", action="store_true",
                    help="skip text normalisation (numbers, dates, acronyms stay as typed)")

    sp = add("info", cmd_info, "show what the bundle contains (stages, sizes, SHA-256)")
    sp.add_argument("--json", action="store_true", help="print it as JSON")
    sp.add_argument("--no-load", action="store_true",
                    help="skip loading each graph in onnxruntime (then only the files "
                    "are checked, not that ORT knows every operator)")
    sp.add_argument("--costs", action="store_true",
                    help="add the cost model: parameters and FLOPs per second of audio per "
                    "stage, counted from the graphs")
    sp.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS,
                    help="flow steps the costs are counted at")
    sp.add_argument("--measure", action="store_true",
                    help="with --costs: time each stage on one chunk in a fresh pinned process "
                    "and show its GFLOP/s against this machine's MatMul peak (how far from "
                    "the floor: what thread tuning can still win)")
    sp.add_argument("--threads", type=int, default=1,
                    help="with --measure: intra-op threads (and cores) to measure at")

    sp = add("standin", cmd_standin, "build a synthetic stand-in bundle in DIR", model=False)
    sp.add_argument("dir", type=out_path, help="where to build it: a new path, or an "
                    "empty directory (such as a volume's mount point), filled in place")
    sp.add_argument("--scale", default=contract.DEFAULT_STANDIN_SCALE,
                    choices=contract.STANDIN_SCALES,
                    help="full: the published size, realistic costs (~400 MB); medium: a "
                    "quarter; tiny: a few MB, for tests")
    sp.add_argument("--seed", type=int, default=0, help="weight seed")

    sp = add("fetch", cmd_fetch, "download the real model (needs the model hub)", model=False)
    sp.add_argument("--model", dest="model_name", default="supertonic-3",
                    choices=["supertonic-3", "supertonic-2"], help="which model")
    sp.add_argument("--dir", default=None, type=out_path,
                    help="target directory (default: the official cache)")


def register_doctor(add: AddCommand) -> None:
    """Register doctor (listed last in ``--help``).

    Example:
        >>> from tts_kit.cli import _parser
        >>> _parser().parse_args(["doctor", "--json"]).json
        True
    """
    sp = add("doctor", cmd_doctor,
             "check what breaks deployments here (onnxruntime, libgomp, CPU features, cgroup "
             "CPU quota and memory limit, providers, the model), each with the fix; exit 1 "
             "when a check fails")
    sp.add_argument("--json", action="store_true", help="print the checks as JSON")
    sp.add_argument("--no-load", action="store_true",
                    help="do not load the model's graphs in onnxruntime (faster)")
