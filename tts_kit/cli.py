"""``tts-kit``: a thin command line over the library.

Every subcommand parses its arguments, calls one library function and prints the
result. User errors (bad text, a broken model, a missing file) exit with status 2
and one line on stderr, never a traceback.

Example:
    $ tts-kit synth "Hello there." -o hello.wav
    $ tts-kit info
    $ tts-kit normalize "2026년 8월 24일 10:30" --lang ko --trace
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import __version__, contract
from .textsafe import term_safe

EXIT_USER_ERROR = 2


def _say(text: object = "", file: Any = None) -> None:
    """Print ``text`` with its control characters shown as escapes (`term_safe`).

    Every line the CLI prints goes through here: voice names, report fields, normalised
    text and error messages come from files and users, and a raw ESC in them would drive
    the terminal (clear it, retitle it). Newlines and tabs of the block itself are kept.
    """
    print(term_safe(text, keep="\n\t"), file=file if file is not None else sys.stdout)


class UserError(Exception):
    """An error the user can fix; printed as one line."""


def _bundle(args: argparse.Namespace):
    from .bundle import Bundle, resolve_model_dir

    path, source = resolve_model_dir(args.model)
    bundle = Bundle(path)
    if bundle.is_standin:
        from .standin import NOTE

        _say(f"note: using a stand-in model ({source}): {NOTE}", file=sys.stderr)
    return bundle


def cmd_synth(args: argparse.Namespace) -> int:
    from .engine import Engine
    from .records import format_timings

    engine = Engine(_bundle(args), normalize=not args.no_normalize, loading=args.loading)
    result = engine.synthesize(
        args.text, lang=args.lang, voice=args.voice or engine.bundle.default_voice,
        steps=args.steps, speed=args.speed, seed=args.seed,
    )
    out = Path(args.output)
    if out.parent and not out.parent.exists():
        raise UserError(f"{out.parent}: directory does not exist; create it or choose another -o")
    import soundfile as sf

    sf.write(str(out), result.wav, result.sample_rate, subtype="PCM_16")
    _say(f"wrote {out} ({result.duration_s:.2f} s of audio at {result.sample_rate} Hz)")
    if result.text != " ".join(args.text.split()):
        # What normalisation made of it (dropped characters too), on one line.
        _say(f"read: {term_safe(result.text)}")
    _say(f"RTF {result.rtf:.3f}  (synthesis {result.timings['total'] * 1000:.0f} ms)")
    for stage, ms in format_timings(result.timings):
        _say(f"  {stage:<20} {ms:8.1f} ms")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    info = _bundle(args).describe()
    if args.json:
        _say(json.dumps(info, indent=2))
        return 0
    _say(f"bundle   {info['path']}")
    kind = f"stand-in {info['standin']}" if info["standin"] else "real model"
    _say(f"kind     {kind}")
    _say(f"voices   {', '.join(term_safe(v) for v in info['voices'])}")
    _say(f"params   {info['params'] / 1e6:.2f} M")
    _say(f"{'stage':<20} {'params':>12} {'MB':>9} {'precision':>9}  sha256")
    for stage, s in info["stages"].items():
        _say(
            f"{stage:<20} {s['params']:>12,} {s['size_bytes'] / 2**20:>9.2f} "
            f"{s['precision']:>9}  {s['sha256'][:16]}"
        )
    return 0


def cmd_standin(args: argparse.Namespace) -> int:
    from .standin import NOTE, build_standin

    summary = build_standin(args.dir, scale=args.scale, seed=args.seed)
    _say(summary.table())
    _say(f"built {args.dir} in {summary.build_s:.1f} s ({NOTE})")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from .fetch import FetchError, fetch_model

    try:
        path = fetch_model(args.model_name, args.dir)
    except FetchError as exc:
        raise UserError(str(exc)) from None
    _say(f"downloaded {args.model_name} to {path}")
    return 0


def cmd_normalize(args: argparse.Namespace) -> int:
    from .text import Normalizer

    norm = Normalizer(args.lang)
    _say(norm.normalize(args.text))
    if args.trace:
        for step in norm.trace(args.text):
            _say(f"  {step.rule:<18} {step.before!r} -> {step.after!r}")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from .tune import format_table, sweep
    from .workload import Workload

    bundle = _bundle(args)
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    try:
        cpus = tuple(int(c) for c in args.cpus.split(","))
    except ValueError:
        raise UserError(f"--cpus takes core counts like 1,2; got {args.cpus!r}") from None
    loadings = tuple(x.strip() for x in args.loading.split(",") if x.strip())
    costs: Any = None if args.stage_costs == "estimate" else args.stage_costs
    if costs not in (None, "measure"):
        try:
            costs = json.loads(Path(costs).read_text())
        except (OSError, ValueError) as exc:
            raise UserError(f"--stage-costs {args.stage_costs}: cannot read it as JSON "
                            f"({exc}); give measure, estimate or a JSON file "
                            '{"stage": MB, ...}') from None
    workload = Workload(steps=args.steps, repeats=args.repeats)
    result = sweep(
        bundle, presets, workload, cpus=cpus, loadings=loadings, mem_budget_mb=args.mem_budget,
        progress=not args.quiet, stage_costs_mb=costs,
    )
    _say(format_table(result.records))
    rec, reason = result.recommend(args.mem_budget)
    _say(f"recommendation: {reason}")
    if args.json:
        drop = () if args.timelines else ("timeline", "events")
        records = [{k: v for k, v in r.items() if k not in drop} for r in result.records]
        Path(args.json).write_text(json.dumps({"records": records}, indent=2) + "\n")
        _say(f"wrote {args.json}")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from .precision import convert

    stages = [s.strip() for s in args.stages.split(",")] if args.stages else None
    measure = False if args.no_measure else ("fidelity" if args.fidelity_only else True)
    try:
        report = convert(args.src, args.dst, to=args.to, stages=stages, measure=measure)
    except RuntimeError as exc:  # the source changed while converting: nothing written
        raise UserError(str(exc)) from None
    _say(report.table())
    if args.report:
        report.save(args.report)
        _say(f"wrote {args.report}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report import make_report, rerun_report

    if args.rerun:
        verdict = rerun_report(args.rerun, model=args.model, out=args.out,
                               confirm_rounds=args.confirm_rounds, full_paths=args.full_paths)
        _say(verdict.summary())
        # Like `diff`: 0 the recommendation holds, 1 it does not (scripts can gate on it),
        # 2 bad input (UserError).
        return 0 if verdict.holds else 1
    if not args.out:
        raise UserError("give --out DIR for the report (or --rerun report.json)")
    paths = make_report(out=args.out, model=args.model, sweep=args.sweep,
                        full_paths=args.full_paths)
    for p in paths:
        _say(f"wrote {p}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tts-kit", description=__doc__.split("\n")[0])
    p.add_argument("--version", action="version", version=f"tts_kit {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str, model: bool = True):
        sp = sub.add_parser(name, help=help, description=help)
        sp.set_defaults(func=fn)
        if model:
            sp.add_argument("--model", help="bundle directory (default: discovered; see README)")
        return sp

    sp = add("synth", cmd_synth, "synthesise TEXT into a 44.1 kHz mono WAV file")
    sp.add_argument("text")
    sp.add_argument("-o", "--output", required=True, help="output .wav path")
    sp.add_argument("--lang", default="en", help="language code (en, ko, ... or na)")
    sp.add_argument("--voice", default=None, help="voice style (default: M1, else the "
                    "bundle's first voice)")
    sp.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    sp.add_argument("--speed", type=float, default=contract.DEFAULT_SPEED)
    sp.add_argument("--seed", type=int, default=None)
    sp.add_argument("--loading", default="resident", help="resident, paged or budget:MB")
    sp.add_argument("--no-normalize", action="store_true", help="skip text normalisation")

    sp = add("info", cmd_info, "show what the bundle contains (stages, sizes, SHA-256)")
    sp.add_argument("--json", action="store_true")

    sp = add("standin", cmd_standin, "build a synthetic stand-in bundle in DIR", model=False)
    sp.add_argument("dir")
    sp.add_argument("--scale", default="tiny", help="tiny, medium or full")
    sp.add_argument("--seed", type=int, default=0)

    sp = add("fetch", cmd_fetch, "download the real model (needs the model hub)", model=False)
    sp.add_argument("--model", dest="model_name", default="supertonic-3",
                    help="supertonic-3 or supertonic-2")
    sp.add_argument("--dir", default=None, help="target directory (default: official cache)")

    sp = add("normalize", cmd_normalize, "spell out numbers, dates, acronyms in TEXT",
             model=False)
    sp.add_argument("text")
    sp.add_argument("--lang", default="ko", help="ko or en")
    sp.add_argument("--trace", action="store_true", help="list the rules that changed the text")

    sp = add("tune", cmd_tune, "measure session presets and load policies in isolation")
    sp.add_argument("--presets", default="supertonic-default,seed-2vcpu,low-memory,lean")
    sp.add_argument("--cpus", default="1,2")
    sp.add_argument("--loading", default="resident", help="e.g. resident,paged,budget:300")
    sp.add_argument("--mem-budget", type=float, default=None, help="memory budget in MB")
    sp.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    sp.add_argument("--repeats", type=int, default=5)
    sp.add_argument("--stage-costs", default="measure",
                    help="per-stage MB for budget:MB loadings: measure (default; one "
                    "isolated run per preset), estimate (from file sizes) or a JSON file")
    sp.add_argument("--json", default=None, help="write the records as JSON here")
    sp.add_argument("--timelines", action="store_true",
                    help="keep each trial's RSS timeline and stage events in --json")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")

    sp = add("convert", cmd_convert, "convert a bundle or .onnx file to FP16 or INT8",
             model=False)
    sp.add_argument("src")
    sp.add_argument("dst")
    sp.add_argument("--to", required=True, choices=["fp16", "int8"])
    sp.add_argument("--stages", default=None, help="comma-separated stages (default: all)")
    sp.add_argument("--report", default=None, help="write the conversion report JSON here")
    sp.add_argument("--no-measure", action="store_true",
                    help="only convert (skip memory, latency and fidelity measurements)")
    sp.add_argument("--fidelity-only", action="store_true",
                    help="measure fidelity against the source, not memory or latency")

    sp = add("report", cmd_report,
             "run a tuning sweep, write report.json, and render it as HTML and a notebook")
    sp.add_argument("--out", default=None, help="output directory")
    sp.add_argument("--sweep", default=None, help="sweep spec JSON")
    sp.add_argument("--rerun", default=None,
                    help="repeat the sweep of an earlier report.json here; exit 0 when its "
                    "recommendation holds, 1 when it does not")
    sp.add_argument("--confirm-rounds", type=int, default=3,
                    help="with --rerun: when the two picks differ by more than the noise, "
                    "measure them in this many alternating rounds before deciding (0: off)")
    sp.add_argument("--full-paths", action="store_true",
                    help="write absolute paths into the report (default: ~/... under your "
                    "home directory, so a shared report does not name you)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tts-kit`` console script."""
    args = _parser().parse_args(argv)
    from .bundle import BundleError

    try:
        return args.func(args)
    except (UserError, BundleError, ValueError, FileNotFoundError, PermissionError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        _say(f"tts-kit {args.command}: error: {term_safe(msg)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        _say(f"tts-kit {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
