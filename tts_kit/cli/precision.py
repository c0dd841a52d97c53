"""``tts-kit`` commands about numeric precision: convert (FP16/INT8) and verify."""

from __future__ import annotations

import argparse
import errno
import sys
from pathlib import Path
from typing import Any

from tts_kit.cli._common import (
    AddCommand,
    UserError,
    _bundle,
    _say,
    _write_json,
    in_path,
    out_file,
    out_path,
)
from tts_kit.core import contract


def cmd_convert(args: argparse.Namespace) -> int:
    from tts_kit.precision import convert

    stages = [s.strip() for s in args.stages.split(",")] if args.stages else None
    measure = False if args.no_measure else ("fidelity" if args.fidelity_only else True)
    if (args.to is None) == (args.recipe is None):
        raise UserError("give --to fp16|int8 or --recipe NAME (one of them)")
    if args.recipe and stages:
        raise UserError("--recipe says what each stage becomes; leave out --stages")
    if args.recipe:  # the model says which recipes it has
        from tts_kit.precision.recipes import check_recipe_for

        check_recipe_for(args.src, args.recipe)
    try:
        report = convert(args.src, args.dst, to=args.to or "fp16", stages=stages,
                         measure=measure, recipe=args.recipe,
                         floor=False if args.no_floor else None)
    except RuntimeError as exc:  # the source changed while converting: nothing written
        raise UserError(str(exc)) from None
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        # onnx's serialiser names no file: say which output, and that nothing was written.
        raise UserError(f"{args.dst}: {exc.strerror or exc} while converting; nothing was "
                        "written; free some space (or raise ulimit -f) or choose another "
                        "place, and retry") from None
    _say(report.table())
    if args.report:
        report.save(args.report)
        _say(f"wrote {args.report}")
    verdict, why = report.verdict or ("", [])
    if verdict == "broken":
        _say(f"tts-kit convert: the copy at {args.dst} is broken "
             f"({'; '.join(why) or 'see the table above'}); exit 1", file=sys.stderr)
        return 1
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from tts_kit.fidelity.verify import OFFICIAL, Tolerance, verify
    from tts_kit.precision.evaluate import verify_piper_copy

    bundle = _bundle(args)
    against = args.against
    if against != OFFICIAL and not Path(against).expanduser().is_dir():
        raise UserError(f"--against {against}: not a directory; give 'official' or a bundle "
                        "directory (an FP16/INT8 copy)")
    report: Any
    if bundle.capabilities.official_reference:  # stage by stage, as the official code runs
        report = verify(bundle, against, threads=args.threads,
                        tolerance=Tolerance(args.min_snr, args.max_abs_diff), floor=args.floor,
                        quality=args.floor and against != OFFICIAL)
    elif against == OFFICIAL:
        raise UserError(f"{bundle.label}: the official supertonic package runs "
                        "Supertonic bundles only; give --against DIR (a converted copy of "
                        "this voice) to compare the two")
    else:  # the waveforms of the same texts and noise, and the voice's floor
        report = verify_piper_copy(bundle, against, min_snr_db=args.min_snr, floor=args.floor)
    _say(report.table())
    if against != OFFICIAL and not args.floor and not report.passed:
        _say("(a lossy copy, FP16 or INT8, is not float rounding: add --floor for the verdict "
             "a listener would agree with)")
    if args.json:
        _write_json(args.json, report.to_dict())
    # Like `diff`: 0 within the tolerance (or the floor), 1 outside it, 2 bad input.
    if args.floor:
        ok = ("within the floor", "transparent", "acceptable")  # floor; listener's verdicts
        return 0 if report.verdict and report.verdict[0] in ok else 1
    return 0 if report.passed else 1


def register(add: AddCommand) -> None:
    """Register convert and verify.

    Example:
        >>> from tts_kit.cli import _parser
        >>> _parser().parse_args(["verify"]).against
        'official'
    """
    sp = add("convert", cmd_convert, "convert a bundle, a Piper voice (piper:joe-us or its "
             "directory) or an .onnx file to FP16 or INT8; exit 1 when the copy is broken "
             "against the source's noise floor", model=False)
    sp.add_argument("src", type=in_path,
                    help="bundle directory, Piper voice or .onnx file (never modified)")
    sp.add_argument("dst", type=out_path, help="where to write the converted copy: a new "
                    "path, or an empty directory (such as a volume's mount point), filled in place")
    sp.add_argument("--to", default=None, choices=["fp16", "int8"],
                    help="target precision (or give --recipe)")
    sp.add_argument("--recipe", default=None, metavar="NAME",
                    help="a per-stage recipe instead of --to; the model says which it has. A "
                    "bundle's: " + "; ".join(
                        f"{k}: {v}" for k, v in sorted(contract.RECIPE_DESCRIPTIONS.items()))
                    + ". A one-graph voice's (Piper): " + "; ".join(
                        f"{k}: {v}" for k, v in sorted(contract.VOICE_RECIPE_DESCRIPTIONS.items())))
    sp.add_argument("--stages", default=None,
                    help=f"comma-separated stages, of: {', '.join(contract.STAGES)} "
                    "(default: all)")
    sp.add_argument("--report", default=None, metavar="FILE", type=out_file,
                    help="write the conversion report JSON here")
    sp.add_argument("--no-measure", action="store_true",
                    help="only convert (skip memory, latency and fidelity measurements)")
    sp.add_argument("--fidelity-only", action="store_true",
                    help="measure fidelity against the source, not memory or latency")
    sp.add_argument("--no-floor", action="store_true",
                    help="skip the listener's verdict (PESQ/STOI/DNSMOS/WER against the "
                    "source's own takes) and the conformance against the source's measured "
                    "noise floor (threads, graph fusions, batch padding; about a minute at "
                    "full size)")

    sp = add("verify", cmd_verify,
             "synthesise the same texts (en, ko), voices, steps, speeds and noise through "
             "tts_kit and the official package (or a second bundle) and compare every stage "
             "and the audio; exit 0 within the tolerance, 1 outside it")
    sp.add_argument("--against", default="official", type=in_path,
                    help="'official' (the supertonic package on the same bundle) or "
                    "a bundle directory to compare with (e.g. an FP16 or INT8 copy)")
    sp.add_argument("--threads", type=int, default=1,
                    help="intra-op threads on both sides (default 1: reproducible)")
    sp.add_argument("--min-snr", type=float, default=60.0,
                    help="tolerance: lowest SNR of any stage or waveform, dB (default 60)")
    sp.add_argument("--max-abs-diff", type=float, default=1e-3,
                    help="tolerance: largest absolute difference of any output (default 1e-3)")
    sp.add_argument("--floor", action="store_true",
                    help="also measure the model's noise floor (threads, graph fusions, batch "
                    "padding; another noise draw) and read against it: within the floor, "
                    "beyond the floor or broken; against a copy (--against DIR) also the "
                    "listener's verdict, PESQ/STOI/DNSMOS/WER/MCD against the model's own takes "
                    "with other noise: transparent, acceptable, degraded or broken, which then "
                    "decides; exit 0 only within the floor, transparent or acceptable")
    sp.add_argument("--json", default=None, type=out_file, help="write the report as JSON here")
