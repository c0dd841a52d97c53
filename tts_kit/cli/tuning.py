"""``tts-kit`` commands that measure and recommend session settings: tune and report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tts_kit.cli._common import (
    LOADING_HELP,
    SCHEDULER_HELP,
    AddCommand,
    UserError,
    _bundle,
    _cluster,
    _say,
    _standin_note,
    _write_json,
    in_path,
    out_file,
    out_path,
)
from tts_kit.cli._errors import EXIT_INTERRUPTED, interrupted
from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.core.textsafe import term_safe
from tts_kit.core.userfiles import read_json
from tts_kit.tuning.spread import DEFAULT_ROUNDS


def cmd_tune(args: argparse.Namespace) -> int:
    from tts_kit.core.procfacts import allowed_cpus, usable_cores
    from tts_kit.tuning.tune import SweepOptions, default_cpus, format_table, sweep
    from tts_kit.tuning.workload import Workload

    bundle = _bundle(args)
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    try:
        cpus = default_cpus((1, 2)) if args.cpus is None else tuple(
            int(c) for c in args.cpus.split(","))
    except ValueError:
        raise UserError(f"--cpus takes core counts like 1,2; got {args.cpus!r}") from None
    usable, pinnable = usable_cores(), len(allowed_cpus())
    # Between the CPU quota and the affinity a trial runs throttled: say what that means.
    over = sorted({c for c in cpus if usable < c <= pinnable})
    if over:
        _say(f"tts-kit tune: warning: --cpus {','.join(map(str, over))}: this process can use "
             f"only {usable} core(s) (its cgroup CPU quota), so those trials are throttled "
             f"to {usable} and their figures are not {over[0]}-core figures; give --cpus up "
             f"to {usable}", file=sys.stderr)
    loadings = tuple(x.strip() for x in args.loading.split(",") if x.strip())
    costs: Any = None if args.stage_costs == "estimate" else args.stage_costs
    if costs not in (None, "measure"):
        fix = 'give measure, estimate or a JSON file {"stage": MB, ...}'
        try:
            costs = read_json(costs, f"--stage-costs {costs}", fix)
        except OSError as exc:
            raise UserError(f"--stage-costs {costs}: cannot read it ({exc.strerror}); "
                            f"{fix}") from None
    if not loadings:
        raise UserError(f"--loading {args.loading!r} names no load policy; give e.g. "
                        "resident,paged,budget:300")
    if args.repeats < 1:  # tune compares the p50 of timed calls: it needs at least one
        raise UserError(f"--repeats must be >= 1 (timed calls after the first), got "
                        f"{args.repeats}")
    workload = Workload(steps=args.steps, repeats=args.repeats)
    options = SweepOptions(cpus=cpus, loadings=loadings, mem_budget_mb=args.mem_budget,
                           progress=not args.quiet, stage_costs_mb=costs, rounds=args.rounds)
    with _cluster(args.scheduler) as executor:
        result = sweep(bundle, presets, workload, options.replace(executor=executor))
        lost = getattr(executor, "lost", None)  # the scheduler went away mid-sweep
    _say(f"model: {term_safe(bundle.label)}")
    _say(format_table(result.records, pick=result.recommend(args.mem_budget)[0]))
    _say("\n".join(recommendation_lines(result, args, cores=usable)))
    machines = result.by_machine()
    if len(machines) > 1:  # one recommendation per instance type, each on its own front
        for label, part in machines.items():
            _say(f"\non {label}:")
            _say(format_table(part.records, pick=part.recommend(args.mem_budget)[0]))
            _say("\n".join(recommendation_lines(part, args)))
    if args.json:
        drop = () if args.timelines else ("timeline", "events")
        records = [{k: v for k, v in r.items() if k not in drop} for r in result.records]
        _write_json(args.json, {"records": records})
    if lost:  # what finished is above and in --json; the rest are marked lost
        return _say_lost("tune", lost)
    if not any(r.get("status") == "ok" for r in result.records):
        _say("tts-kit tune: no trial finished; see the reasons above", file=sys.stderr)
        return 1
    return 0


def tune_command(args: argparse.Namespace, repeats: int | None = None) -> str:
    """The ``tts-kit tune`` line that repeats this sweep, with ``repeats`` when given.

    Example:
        >>> from tts_kit.cli import _parser
        >>> tune_command(_parser().parse_args(["tune", "--presets", "lean", "--cpus", "2"]), 10)
        'tts-kit tune --presets lean --cpus 2 --repeats 10'
    """
    import shlex

    parser = argparse.ArgumentParser()
    register_tune(lambda name, fn, help, model=True: parser)
    defaults = vars(parser.parse_args([]))  # the flags' own: a copy here could drift
    parts = ["tts-kit", "tune"] + (["--model", str(args.model)] if args.model else [])
    for key in ("presets", "cpus", "loading", "mem_budget", "steps", "repeats", "rounds",
                "stage_costs", "scheduler"):
        value = repeats if key == "repeats" and repeats else getattr(args, key, defaults[key])
        if value != defaults[key]:
            parts += [f"--{key.replace('_', '-')}", format(value, "g")
                      if isinstance(value, float) else str(value)]
    return term_safe(shlex.join(parts))


def recommendation_lines(result: Any, args: argparse.Namespace,
                         cores: int | None = None) -> list[str]:
    """What ``tts-kit tune`` prints for a sweep's pick: what matters, the recommendation,
    and first, when the machine was busy, the line the report's answer starts with.

    Example:
        >>> recommendation_lines(result, args)[-1]  # doctest: +SKIP
        'recommendation: lean on 1 core(s) ...'
    """
    from tts_kit.tuning.contention import assess
    from tts_kit.tuning.verdict import band, effect_lines, effects

    pick, reason = result.recommend(args.mem_budget)
    more = max(10, 2 * args.repeats)
    warning = assess(result.records, cores=cores).headline(
        rerun=tune_command(args),
        more=f"`{tune_command(args, more)}` times {more} calls per trial") if pick else ""
    width = band(result.records)  # what matters, with its size, before the pick
    said = [f"what matters: {line}" for line in effect_lines(effects(result.records, width),
                                                              width)]
    if not warning:
        return [*said, f"recommendation: {reason}"]
    return [warning + ".", *said, f"recommendation (provisional): {reason}"]


def cmd_report(args: argparse.Namespace) -> int:
    from tts_kit.models.supertonic.bundle import Bundle, resolve_model_dir
    from tts_kit.report import make_report, rerun_report

    if args.compare:  # two reports, two runs or two machines: the same answer?
        from tts_kit.report import TuningReport, compare_reports

        found = compare_reports(*(TuningReport.load(p) for p in args.compare))
        _say(found.summary().replace("rerun of the report", "the second report against that")
             .replace(" on this machine:", ":"))
        return 0 if found.holds and all(w != "differs" for w, _ in found.dimensions) else 1
    if args.rerun:
        if args.scheduler:
            raise UserError("--scheduler with --rerun: a rerun repeats the sweep on this "
                            "machine; run `tts-kit report --scheduler ADDRESS --out DIR` for "
                            "a new report on the cluster")
        verdict = rerun_report(args.rerun, model=args.model, out=args.out,
                               confirm_rounds=args.confirm_rounds, full_paths=args.full_paths)
        _say(verdict.summary())
        return 0 if verdict.holds else 1  # like `diff`: 0 it holds, 1 not, 2 bad input
    if not args.out:
        raise UserError("give --out DIR for the report (or --rerun report.json)")
    # Say what it runs on before minutes of trials.
    where, source = resolve_model_dir(args.model)
    _standin_note(Bundle(where), source)
    with _cluster(args.scheduler) as executor:
        try:
            paths = make_report(out=args.out, model=args.model, sweep=args.sweep,
                                executor=executor, full_paths=args.full_paths)
        except TtsKitError as exc:
            if getattr(executor, "lost", None):  # it followed from the lost scheduler: say so
                return _say_lost("report", f"{executor.lost} ({exc})")
            raise
        lost = getattr(executor, "lost", None)
    try:
        for p in paths:
            _say(f"wrote {p}")
        _say_answer(paths)
        if interrupted():  # a Ctrl-C a callback swallowed during the work
            raise KeyboardInterrupt
    except KeyboardInterrupt:  # the report is in place, whole: say so
        _say(f"tts-kit report: interrupted after writing {paths[0].parent}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if lost:  # the report holds what finished; the trials that did not are marked lost
        return _say_lost("report", lost)
    return 0


def _say_lost(command: str, lost: str) -> int:
    """The one line (exit 1) a sweep ends with when its Dask scheduler went away."""
    _say(f"tts-kit {command}: error: {lost}", file=sys.stderr)
    return 1


def _say_answer(paths: list[Path]) -> None:
    """The report's answer on the terminal: its conclusions and the `tts-kit serve` line."""
    from tts_kit.report import TuningReport
    from tts_kit.report.answer import conclusions, serve_command

    if (js := next((p for p in paths if p.name == "report.json"), None)) is None:
        return
    rep = TuningReport.load(js)
    _say("\nthe answer (report.html starts with it):")
    for line in conclusions(rep):
        _say(f"  {line}")
    if command := serve_command(rep):
        _say(f"  serve it: {command}")


def register_tune(add: AddCommand) -> None:
    """Register tune (listed before convert in ``--help``).

    Example:
        >>> from tts_kit.cli import _parser
        >>> _parser().parse_args(["tune", "--cpus", "1"]).stage_costs
        'measure'
    """
    sp = add("tune", cmd_tune, "measure session presets and load policies in isolation")
    sp.add_argument("--presets", default=",".join(contract.SWEEP_PRESETS), metavar="NAMES",
                    help=f"comma-separated presets, of: {', '.join(contract.PRESET_NAMES)}")
    sp.add_argument("--cpus", default=None,
                    help="core counts to emulate, e.g. 1,2 (default: 1,2 as far as the "
                    "cores this process can use allow: affinity and cgroup CPU quota)")
    sp.add_argument("--loading", default="resident", metavar="POLICIES",
                    help="comma-separated, e.g. resident,paged,budget:300; " + LOADING_HELP)
    sp.add_argument("--mem-budget", type=float, default=None, metavar="MB",
                    help="memory budget in MB: trials past it are killed, and the "
                    "recommendation must fit (default: none)")
    sp.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS,
                    help="flow-matching steps per call")
    sp.add_argument("--repeats", type=int, default=5,
                    help="timed calls per trial, after one untimed first call")
    sp.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                    help="fresh trials per configuration, as a budget: one each, then the "
                    "rest to the configurations whose verdict is still open (racing); the "
                    "timed calls shared out between them (default: %(default)s)")
    sp.add_argument("--stage-costs", default="measure", type=in_path,
                    help="per-stage MB for budget:MB loadings: measure (one isolated run "
                    "per preset), estimate (from file sizes) or a JSON file")
    sp.add_argument("--json", default=None, metavar="FILE", type=out_file,
                    help="write the records as JSON here")
    sp.add_argument("--timelines", action="store_true",
                    help="keep each trial's RSS timeline and stage events in --json")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    sp.add_argument("--scheduler", default=None, metavar="ADDRESS", help=SCHEDULER_HELP)


def register_report(add: AddCommand) -> None:
    """Register report (listed after verify in ``--help``).

    Example:
        >>> from tts_kit.cli import _parser
        >>> _parser().parse_args(["report", "--out", "r"]).confirm_rounds
        3
    """
    sp = add("report", cmd_report,
             "run a tuning sweep, write report.json, and render it as HTML and a notebook")
    sp.add_argument("--out", default=None, metavar="DIR", type=out_path,
                    help="output directory (a failed render keeps its partial notebook there "
                    "as report.failed.ipynb; the previous report stays)")
    sp.add_argument("--sweep", default=None, metavar="FILE", type=in_path,
                    help="sweep spec JSON (SweepSpec keys; default: presets "
                    f"{', '.join(contract.SWEEP_PRESETS)} x 1,2 vCPUs x resident,paged, 3 "
                    "timed calls)")
    sp.add_argument("--rerun", default=None, metavar="REPORT_JSON", type=in_path,
                    help="repeat the sweep of an earlier report.json here; exit 0 when its "
                    "recommendation holds, 1 when it does not")
    sp.add_argument("--compare", nargs=2, default=None, metavar=("A_JSON", "B_JSON"),
                    help="say whether two report.json files give the same answer, and where "
                    "they differ beyond their intervals; exit 0 when they agree, 1 when not")
    sp.add_argument("--confirm-rounds", type=int, default=3,
                    help="with --rerun: when the two picks differ by more than the noise, "
                    "measure them in this many alternating rounds before deciding (0: off)")
    sp.add_argument("--full-paths", action="store_true",
                    help="write absolute paths into the report (default: ~/... under your "
                    "home directory, so a shared report does not name you)")
    sp.add_argument("--scheduler", default=None, metavar="ADDRESS", help=SCHEDULER_HELP)
