"""``tts-kit``: a thin command line over the library.

Every subcommand parses its arguments, calls one library function and prints the
result. User errors (bad text, a broken model, a missing file, a full disk) exit with
status 2 and one line on stderr naming the problem and the fix; an error no check
anticipated exits 1 with one line and the path of a log holding the traceback. Never a
traceback on the terminal; strings are printed with control characters escaped.

Example:
    $ tts-kit synth "Hello there." -o hello.wav
    $ tts-kit info
    $ tts-kit normalize "2026년 8월 24일 10:30" --lang ko --trace
    $ tts-kit tune --scheduler tcp://10.0.0.5:8786   # trials on Dask workers (tts_kit.cluster)
    $ tts-kit doctor
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from . import __version__, contract
from .textsafe import term_safe

EXIT_USER_ERROR = 2
#: An error tts-kit did not anticipate (a defect): one line and a log, not a traceback.
EXIT_INTERNAL_ERROR = 1


def _say(text: object = "", file: Any = None) -> None:
    """Print ``text`` with its control characters shown as escapes (`term_safe`).

    Every line the CLI prints goes through here: voice names, report fields, normalised
    text and error messages come from files and users, and a raw ESC in them would drive
    the terminal (clear it, retitle it). Newlines and tabs of the block itself are kept.
    """
    print(term_safe(text, keep="\n\t"), file=file if file is not None else sys.stdout)


class UserError(Exception):
    """An error the user can fix; printed as one line."""


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    # A library warning (what normalisation dropped) is for the user, like errors: one
    # line, without the library's file and source line.
    _say(f"tts-kit: warning: {term_safe(message)}", file=sys.stderr)


def _bundle(args: argparse.Namespace):
    from .bundle import Bundle, resolve_model_dir

    path, source = resolve_model_dir(args.model)
    bundle = Bundle(path)
    if bundle.is_standin:
        from .standin import NOTE

        _say(f"note: using a stand-in model ({source}): {NOTE}", file=sys.stderr)
    return bundle


def _audio_output(path: str) -> tuple[Path, str]:
    """Check ``-o`` before any synthesis: (path, soundfile format) or a one-line UserError."""
    import soundfile as sf

    from .atomic import check_destination

    out = Path(path).expanduser()
    fmt = out.suffix[1:].upper()
    if not out.is_dir() and (fmt not in sf.available_formats()
                             or not sf.check_format(fmt, "PCM_16")):
        raise UserError(f"-o {path}: unknown audio file type "
                        f"({out.suffix or 'no extension'}); end it with .wav (or .flac, .aiff)")
    try:
        return check_destination(out), fmt
    except ValueError as exc:
        raise UserError(f"-o {exc}".replace("choose another path", "choose another -o")) from None


def cmd_synth(args: argparse.Namespace) -> int:
    import soundfile as sf

    from .atomic import atomic_file
    from .engine import Engine
    from .records import format_timings

    out, fmt = _audio_output(args.output)  # before the model loads: a bad -o costs nothing
    _check_language(args.text, args.lang)
    engine = Engine(_bundle(args), normalize=not args.no_normalize, loading=args.loading)
    t0 = time.perf_counter()
    # Checked (text, voice, ranges) here, before the output file is touched.
    parts = engine.stream(
        args.text, lang=args.lang, voice=args.voice or engine.bundle.default_voice,
        steps=args.steps, speed=args.speed, seed=args.seed, order=args.order,
    )
    timings: dict[str, float] = {}
    frames = 0
    # Written chunk by chunk (memory holds one chunk, not the text's audio) into a file
    # beside the output, renamed into place at the end: a full disk, an error or a kill
    # leaves an existing file as it was and no partial one.
    try:
        with parts, atomic_file(out) as tmp, sf.SoundFile(
                str(tmp), "w", engine.bundle.sample_rate, 1, subtype="PCM_16",
                format=fmt) as fh:
            for part in parts:
                fh.write(part.samples)
                frames += len(part.samples)
                for k, v in part.timings.items():
                    timings[k] = timings.get(k, 0.0) + v
    except (OSError, sf.SoundFileError) as exc:
        why = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
        raise UserError(f"{out}: could not write the audio ({why}); nothing was changed; "
                        "free some space or choose another -o") from None
    timings["total"] = time.perf_counter() - t0
    sr = engine.bundle.sample_rate
    _say(f"wrote {out} ({frames / sr:.2f} s of audio at {sr} Hz)")
    if parts.text != " ".join(args.text.split()):
        # What normalisation made of it (dropped characters too), on one line.
        _say(f"read: {term_safe(parts.text)}")
    rtf = timings["total"] / max(frames / sr, 1e-9)
    _say(f"RTF {rtf:.3f}  (synthesis {timings['total'] * 1000:.0f} ms)")
    for stage, ms in format_timings(timings):
        _say(f"  {stage:<20} {ms:8.1f} ms")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from .loading import check_loads

    bundle = _bundle(args)
    info = bundle.describe()
    # The file checks cannot see an operator ORT lacks: unless told not to, load each
    # graph, so "info" passing means "synth" can load the bundle too.
    loads = None if args.no_load else check_loads(bundle) == list(contract.STAGES)
    info["runtime"] = {"onnxruntime": _ort_version(), "graphs_load": loads}
    if args.json:
        _say(json.dumps(info, indent=2))
        return 0
    _say(f"bundle   {info['path']}")
    kind = f"stand-in {info['standin']}" if info["standin"] else "real model"
    _say(f"kind     {kind}")
    _say(f"voices   {', '.join(term_safe(v) for v in info['voices'])}")
    _say(f"params   {info['params'] / 1e6:.2f} M")
    if loads:
        _say(f"runtime  onnxruntime {_ort_version()} loads all four graphs (CPU)")
    else:
        _say("runtime  not checked (--no-load): whether onnxruntime can load the graphs")
    _say(f"{'stage':<20} {'params':>12} {'MB':>9} {'precision':>9}  sha256")
    for stage, s in info["stages"].items():
        _say(
            f"{stage:<20} {s['params']:>12,} {s['size_bytes'] / 2**20:>9.2f} "
            f"{s['precision']:>9}  {s['sha256'][:16]}"
        )
    return 0


def _ort_version() -> str:
    import onnxruntime

    return str(onnxruntime.__version__)


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


_LANGUAGE_NAMES = {"en": "English", "ko": "Korean"}


def _check_language(text: str, lang: str) -> None:
    """One line on stderr when the text is clearly in the other language than ``lang``."""
    from .text import other_language

    other = other_language(text, lang)
    if other:
        _say(f"tts-kit: warning: the text looks {_LANGUAGE_NAMES[other]} but --lang is "
             f"{lang}; pass --lang {other} to read it as {_LANGUAGE_NAMES[other]}",
             file=sys.stderr)


def cmd_normalize(args: argparse.Namespace) -> int:
    from .text import Normalizer

    _check_language(args.text, args.lang)
    norm = Normalizer(args.lang)
    _say(norm.normalize(args.text))
    if args.trace:
        for step in norm.trace(args.text):
            _say(f"  {step.rule:<18} {step.before!r} -> {step.after!r}")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from .tune import default_cpus, format_table, sweep
    from .workload import Workload

    bundle = _bundle(args)
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    try:
        # The default follows the cores this process can use (a CPU quota included).
        cpus = default_cpus((1, 2)) if args.cpus is None else tuple(
            int(c) for c in args.cpus.split(","))
    except ValueError:
        raise UserError(f"--cpus takes core counts like 1,2; got {args.cpus!r}") from None
    loadings = tuple(x.strip() for x in args.loading.split(",") if x.strip())
    costs: Any = None if args.stage_costs == "estimate" else args.stage_costs
    if costs not in (None, "measure"):
        try:
            costs = json.loads(Path(costs).read_text())
        except (OSError, ValueError, RecursionError) as exc:
            raise UserError(f"--stage-costs {args.stage_costs}: cannot read it as JSON "
                            f"({exc}); give measure, estimate or a JSON file "
                            '{"stage": MB, ...}') from None
    if not loadings:
        raise UserError(f"--loading {args.loading!r} names no load policy; give e.g. "
                        "resident,paged,budget:300")
    if args.repeats < 1:  # tune compares the p50 of timed calls: it needs at least one
        raise UserError(f"--repeats must be >= 1 (timed calls after the first), got "
                        f"{args.repeats}")
    workload = Workload(steps=args.steps, repeats=args.repeats)
    if args.json:
        _check_output_file(args.json, "--json")  # now, not after minutes of measuring
    with _cluster(args.scheduler) as executor:
        result = sweep(
            bundle, presets, workload, cpus=cpus, loadings=loadings,
            mem_budget_mb=args.mem_budget, progress=not args.quiet, stage_costs_mb=costs,
            executor=executor,
        )
    _say(format_table(result.records))
    rec, reason = result.recommend(args.mem_budget)
    _say(f"recommendation: {reason}")
    machines = result.by_machine()
    if len(machines) > 1:  # one recommendation per instance type, each on its own front
        for label, part in machines.items():
            _say(f"\non {label}:")
            _say(format_table(part.records))
            _say(f"recommendation: {part.recommend(args.mem_budget)[1]}")
    if args.json:
        drop = () if args.timelines else ("timeline", "events")
        records = [{k: v for k, v in r.items() if k not in drop} for r in result.records]
        Path(args.json).write_text(json.dumps({"records": records}, indent=2) + "\n")
        _say(f"wrote {args.json}")
    if not any(r.get("status") == "ok" for r in result.records):
        # Nothing measured is a failure a script must see, not a result; the table's
        # "not finished" lines above say why each trial stopped.
        _say("tts-kit tune: no trial finished; see the reasons above", file=sys.stderr)
        return 1
    return 0


@contextlib.contextmanager
def _cluster(address: str | None) -> Iterator[Any]:
    """A `tts_kit.cluster.TrialExecutor` on the scheduler at ``address`` (None: no executor).

    Connects before any trial runs, so an unreachable scheduler or a missing Dask fails
    in one line (exit 2); closes the client afterwards.
    """
    if not address:
        yield None
        return
    from .cluster import TrialExecutor, connect

    client = connect(address)
    try:
        yield TrialExecutor(client)
    finally:
        client.close()


def _check_output_file(path: str, flag: str) -> Path:
    """Fail now, in one line, when ``path`` cannot be written as a file (checked before work).

    Example:
        >>> _check_output_file("/", "--json")
        Traceback (most recent call last):
        ...
        tts_kit.cli.UserError: --json /: is a directory; give a file path such as /out.json
    """
    p = Path(path).expanduser()
    if p.is_dir():
        raise UserError(f"{flag} {path}: is a directory; give a file path such as "
                        f"{p / 'out.json'}")
    if not p.parent.is_dir():
        raise UserError(f"{flag} {path}: directory {p.parent} does not exist; create it or "
                        "choose another path")
    if not os.access(p.parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UserError(f"{flag} {path}: not writable; choose another path")
    return p


def cmd_convert(args: argparse.Namespace) -> int:
    from .precision import convert

    stages = [s.strip() for s in args.stages.split(",")] if args.stages else None
    measure = False if args.no_measure else ("fidelity" if args.fidelity_only else True)
    if args.report:
        _check_output_file(args.report, "--report")
    try:
        report = convert(args.src, args.dst, to=args.to, stages=stages, measure=measure)
    except RuntimeError as exc:  # the source changed while converting: nothing written
        raise UserError(str(exc)) from None
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        # The writes fail deep in onnx's serialiser, which names no file: say which output
        # it was, and that the conversion left nothing behind (it builds aside).
        raise UserError(f"{args.dst}: {exc.strerror or exc} while converting; nothing was "
                        "written; free some space (or raise ulimit -f) or choose another "
                        "place, and retry") from None
    _say(report.table())
    if args.report:
        report.save(args.report)
        _say(f"wrote {args.report}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report import make_report, rerun_report

    if args.rerun:
        if args.scheduler:
            raise UserError("--scheduler with --rerun: a rerun repeats the sweep on this "
                            "machine; run `tts-kit report --scheduler ADDRESS --out DIR` for "
                            "a new report on the cluster")
        verdict = rerun_report(args.rerun, model=args.model, out=args.out,
                               confirm_rounds=args.confirm_rounds, full_paths=args.full_paths)
        _say(verdict.summary())
        # Like `diff`: 0 the recommendation holds, 1 it does not (scripts can gate on it),
        # 2 bad input (UserError).
        return 0 if verdict.holds else 1
    if not args.out:
        raise UserError("give --out DIR for the report (or --rerun report.json)")
    with _cluster(args.scheduler) as executor:
        paths = make_report(out=args.out, model=args.model, sweep=args.sweep, executor=executor,
                            full_paths=args.full_paths)
    for p in paths:
        _say(f"wrote {p}")
    return 0


SCHEDULER_HELP = ("run the trials on the Dask workers of this scheduler (tcp://HOST:PORT), "
                  "one per worker at a time; workers need --resources trial=1 and "
                  "pip install 'tts_kit[dask]'")
def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import failed, format_checks, run_checks

    checks = run_checks(model=args.model, load=not args.no_load)
    if args.json:
        _say(json.dumps({"ok": not failed(checks), "checks": [c.to_dict() for c in checks]},
                        indent=2))
    else:
        _say(format_checks(checks))
    # Like a test run: 1 when something breaks a deployment, so scripts and CI can gate.
    return 1 if failed(checks) else 0


def cmd_serve(args: argparse.Namespace) -> int:
    from .serve.app import ServeConfig, run_server

    cfg = ServeConfig(
        model=args.model, preset=args.preset, loading=args.loading, threads=args.threads,
        workers=args.workers, architecture=args.architecture, max_queue=args.max_queue,
        timeout_s=args.timeout, fallback_wav=args.fallback_wav, max_requests=args.max_requests,
        max_rss_mb=args.max_rss_mb, api_key=args.api_key, host=args.host, port=args.port,
        max_chars=args.max_chars, first_chunk_chars=args.first_chunk_chars or None,
        max_chunk_chars=args.max_chunk_chars,
        order=args.order,
    )
    cfg.check()  # one line, exit 2, before anything starts
    if args.model:
        _bundle(args)  # a bad --model fails here, in one line
    run_server(cfg)
    return 0


def _int_list(text: str, flag: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"{flag} takes whole numbers like 1,2,4; got {text!r}") from None
    if not values or min(values) < 1:
        raise UserError(f"{flag} takes whole numbers >= 1 like 1,2,4; got {text!r}")
    return values


def _texts(path: str | None) -> list[str]:
    from .serve.loadtest import DEFAULT_TEXT

    if not path:
        return [DEFAULT_TEXT]
    lines = [ln.strip() for ln in Path(path).read_text(encoding="utf-8").splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        raise UserError(f"--texts {path}: no text in it; give one request text per line")
    return lines


def _load_body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"steps": args.steps, "lang": args.lang}
    if args.voice:
        body["voice"] = args.voice
    if args.seed is not None:
        body["seed"] = args.seed
    return body


def cmd_loadtest(args: argparse.Namespace) -> int:
    from .serve.loadtest import run_load

    if not args.url.startswith(("http://", "https://")):
        raise UserError(f"URL {args.url!r}: give the server's address, such as "
                        "http://127.0.0.1:8000")
    conc = _int_list(args.concurrency, "--concurrency") if args.concurrency else []
    try:
        rates = [float(x) for x in args.rate.split(",") if x.strip()] if args.rate else []
    except ValueError:
        raise UserError(f"--rate takes arrivals per second like 0.5,1,2; got {args.rate!r}"
                        ) from None
    if args.json:
        _check_output_file(args.json, "--json")
    import httpx

    try:
        httpx.get(f"{args.url.rstrip('/')}/health", timeout=5.0)
    except httpx.HTTPError as exc:
        raise UserError(f"{args.url}: no server answers ({exc}); start one with "
                        "`tts-kit serve`") from None
    res = run_load(args.url, concurrency=conc, requests=args.requests,
                   duration_s=args.duration, rates=rates, texts=_texts(args.texts),
                   body=_load_body(args), timeout_s=args.timeout,
                   api_key=args.api_key or os.environ.get("TTS_KIT_API_KEY"),
                   progress=not args.quiet)
    _say(res.table())
    if args.json:
        Path(args.json).write_text(json.dumps(res.to_dict(), indent=2) + "\n")
        _say(f"wrote {args.json}")
    return 0


def cmd_serve_sweep(args: argparse.Namespace) -> int:
    from .serve.sweep import serving_sweep

    if args.json:
        _check_output_file(args.json, "--json")
    threads = [None] if not args.threads else _int_list(args.threads, "--threads")
    res = serving_sweep(
        args.model, architectures=[a.strip() for a in args.architectures.split(",")],
        workers=_int_list(args.workers, "--workers"), threads=threads,
        presets=[p.strip() for p in args.presets.split(",") if p.strip()],
        loadings=[x.strip() for x in args.loading.split(",") if x.strip()],
        concurrency=_int_list(args.concurrency, "--concurrency"), requests=args.requests,
        duration_s=args.duration, texts=_texts(args.texts), body=_load_body(args),
        timeout_s=args.timeout, p95_target_ms=args.p95_target_ms,
        mem_budget_mb=args.mem_budget, progress=not args.quiet,
    )
    _say(res.table())
    _say(f"recommendation: {res.recommend(args.p95_target_ms, args.mem_budget)[1]}")
    if args.json:
        Path(args.json).write_text(json.dumps(res.to_dict(), indent=2) + "\n")
        _say(f"wrote {args.json}")
    return 0 if any(r.get("status") == "ok" for r in res.records) else 1


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
    sp.add_argument("--lang", default=contract.DEFAULT_LANG,
                    help=f"language code (en, ko, ... or na; default {contract.DEFAULT_LANG})")
    sp.add_argument("--voice", default=None, help="voice style (default: M1, else the "
                    "bundle's first voice)")
    sp.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    sp.add_argument("--speed", type=float, default=contract.DEFAULT_SPEED)
    sp.add_argument("--seed", type=int, default=None)
    sp.add_argument("--loading", default="resident", help="resident, paged or budget:MB")
    sp.add_argument("--order", default="chunk", choices=["chunk", "stage"],
                    help="chunk: each chunk through all stages (default); stage: each stage "
                    "over all chunks, so paged loading loads each graph once")
    sp.add_argument("--no-normalize", action="store_true", help="skip text normalisation")

    sp = add("info", cmd_info, "show what the bundle contains (stages, sizes, SHA-256)")
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--no-load", action="store_true",
                    help="skip loading each graph in onnxruntime (then only the files "
                    "are checked, not that ORT knows every operator)")

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
    sp.add_argument("--lang", default=contract.DEFAULT_LANG,
                    help=f"en or ko (default {contract.DEFAULT_LANG}, as for synth)")
    sp.add_argument("--trace", action="store_true", help="list the rules that changed the text")

    sp = add("tune", cmd_tune, "measure session presets and load policies in isolation")
    sp.add_argument("--presets", default="supertonic-default,seed-2vcpu,low-memory,lean")
    sp.add_argument("--cpus", default=None,
                    help="core counts to emulate, e.g. 1,2 (default: 1,2 as far as the "
                    "cores this process can use allow: affinity and cgroup CPU quota)")
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
    sp.add_argument("--scheduler", default=None, metavar="ADDRESS", help=SCHEDULER_HELP)

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
    sp.add_argument("--scheduler", default=None, metavar="ADDRESS", help=SCHEDULER_HELP)

    sp = add("serve", cmd_serve, "serve speech over HTTP (OpenAI-compatible POST "
             "/v1/audio/speech, /health, /voices, /metrics) from warmed-up worker processes")
    sp.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    sp.add_argument("--threads", type=int, default=None,
                    help="intra-op threads per worker (default: the preset's)")
    sp.add_argument("--preset", default="supertonic-default", help="session preset")
    sp.add_argument("--loading", default="resident",
                    help="resident, paged, budget:MB, with options (resident+mmap shares "
                    "the weights' pages between workers)")
    sp.add_argument("--architecture", default="workers",
                    choices=["workers", "threads", "blocking", "article"],
                    help="workers (default); threads, blocking and article exist to be "
                    "measured against it")
    sp.add_argument("--max-queue", type=int, default=8,
                    help="requests that may wait for a worker; more get 429 (default 8)")
    sp.add_argument("--timeout", type=float, default=None,
                    help="seconds per request; a late worker is killed and replaced")
    sp.add_argument("--fallback-wav", default=None,
                    help="WAV sent when a request times out (default: 503 with a reason)")
    sp.add_argument("--max-requests", type=int, default=None,
                    help="recycle a worker after this many requests")
    sp.add_argument("--max-rss-mb", type=float, default=None,
                    help="recycle a worker whose RSS passes this")
    sp.add_argument("--api-key", default=None,
                    help="require Authorization: Bearer KEY (default: $TTS_KIT_API_KEY)")
    sp.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    sp.add_argument("--port", type=int, default=8000)
    sp.add_argument("--max-chars", type=int, default=4096, help="longest input accepted")
    sp.add_argument("--first-chunk-chars", type=int, default=50,
                    help="cut the first chunk at a clause to this length, for earlier first "
                    "audio (0: no cut)")
    sp.add_argument("--max-chunk-chars", type=int, default=None,
                    help="chunk limit (default: the model's, 300; 120 for Korean): longer "
                    "chunks, fewer runs, later first audio")
    sp.add_argument("--order", default="chunk", choices=["chunk", "stage"],
                    help="chunk-major (default) or stage-major synthesis")

    def load_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--requests", type=int, default=20, help="most requests per level")
        sp.add_argument("--duration", type=float, default=None,
                        help="most seconds per level (default: until --requests)")
        sp.add_argument("--texts", default=None, help="file with one request text per line")
        sp.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
        sp.add_argument("--lang", default="en")
        sp.add_argument("--voice", default=None)
        sp.add_argument("--seed", type=int, default=None)
        sp.add_argument("--timeout", type=float, default=120.0,
                        help="client deadline per request, seconds")
        sp.add_argument("--json", default=None, help="write the records as JSON here")
        sp.add_argument("--quiet", action="store_true", help="no progress bar")

    sp = add("loadtest", cmd_loadtest, "load a speech server: time to first audio and "
             "latency percentiles, throughput, errors, server CPU and memory", model=False)
    sp.add_argument("url", help="the server, e.g. http://127.0.0.1:8000")
    sp.add_argument("--concurrency", default="1,2,4",
                    help="closed-loop levels: clients at once (default 1,2,4; '' for none)")
    sp.add_argument("--rate", default=None,
                    help="open-loop levels: arrivals per second, e.g. 0.5,1,2")
    sp.add_argument("--api-key", default=None, help="default: $TTS_KIT_API_KEY")
    load_args(sp)

    sp = add("serve-sweep", cmd_serve_sweep,
             "start a fresh server per configuration, load each, and recommend the one "
             "that meets a p95 target inside a memory budget")
    sp.add_argument("--architectures", default="workers,threads,article",
                    help="workers, threads, blocking, article")
    sp.add_argument("--workers", default="1,2")
    sp.add_argument("--threads", default=None, help="intra-op threads, e.g. 1,2")
    sp.add_argument("--presets", default="supertonic-default")
    sp.add_argument("--loading", default="resident")
    sp.add_argument("--concurrency", default="1,2,4")
    sp.add_argument("--p95-target-ms", type=float, default=None)
    sp.add_argument("--mem-budget", type=float, default=None, help="pool PSS budget in MB")
    load_args(sp)

    sp = add("doctor", cmd_doctor,
             "check what breaks deployments here (onnxruntime, libgomp, CPU features, cgroup "
             "CPU quota and memory limit, providers, the model), each with the fix; exit 1 "
             "when a check fails")
    sp.add_argument("--json", action="store_true", help="print the checks as JSON")
    sp.add_argument("--no-load", action="store_true",
                    help="do not load the model's graphs in onnxruntime (faster)")
    return p


#: OSErrors that are the user's environment, not a defect: errno -> what to do about it.
_OS_HINTS: dict[int, str] = {
    errno.ENOENT: "check the path",
    errno.EACCES: "check the permissions, or choose another place",
    errno.EPERM: "check the permissions, or choose another place",
    errno.EROFS: "the file system is read-only; choose another place",
    errno.ENOSPC: "free some space there, or choose another place",
    errno.EDQUOT: "free some space there, or choose another place",
    errno.EFBIG: "free some space, raise the file-size limit (ulimit -f), or choose another place",
    errno.EISDIR: "give a file path, not a directory",
    errno.ENOTDIR: "a part of the path is a file, not a directory; check the path",
    errno.EEXIST: "choose a new path, or remove what is there",
    errno.ENOTEMPTY: "choose a new path, or remove what is there",
    errno.ELOOP: "the path is a symlink loop; check the path",
    errno.ENAMETOOLONG: "choose a shorter path",
}


#: The same, for OSErrors raised by hand without an errno (``PermissionError("...")``).
_OS_CLASSES: dict[type[OSError], int] = {
    FileNotFoundError: errno.ENOENT, PermissionError: errno.EACCES,
    IsADirectoryError: errno.EISDIR, NotADirectoryError: errno.ENOTDIR,
    FileExistsError: errno.EEXIST,
}


def _os_error_text(exc: OSError) -> str | None:
    """One line for an OSError of the user's environment; None for any other."""
    code = exc.errno if exc.errno is not None else next(
        (e for cls, e in _OS_CLASSES.items() if isinstance(exc, cls)), None)
    if code not in _OS_HINTS:
        return None
    if exc.errno is None:  # raised by hand: its message is the whole story
        return f"{exc}; {_OS_HINTS[code]}"
    where = str(exc.filename) if exc.filename is not None else ""
    if exc.filename2 is not None:
        where = f"{where} -> {exc.filename2}"
    what = exc.strerror or type(exc).__name__
    return f"{where}: {what}; {_OS_HINTS[code]}" if where else f"{what}; {_OS_HINTS[code]}"


def _last_resort(command: str, exc: BaseException) -> int:
    """An error no check anticipated: one line, the full traceback in a log file, exit 1."""
    import tempfile
    import traceback

    log = ""
    try:
        fd, name = tempfile.mkstemp(prefix="tts-kit-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"tts-kit {__version__} {command}\n")
            fh.write("".join(traceback.format_exception(exc)))
        log = f" (full log: {name})"
    except OSError:  # the disk may be what failed; the one line still goes out
        pass
    msg = str(exc).splitlines()[0] if str(exc).strip() else ""
    print(term_safe(f"tts-kit {command}: internal error: {type(exc).__name__}: {msg}"[:2000])
          + f"{log}; please report it", file=sys.stderr)
    return EXIT_INTERNAL_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tts-kit`` console script.

    Returns 0 on success, 2 for an error the user can fix (one line on stderr), 1 for an
    unexpected one (one line, and the path of a log with the traceback), 130 when
    interrupted. ``tts-kit report --rerun``, ``tts-kit tune`` and ``tts-kit doctor`` also
    return 1 for a verdict (see there).

    Example:
        >>> main(["normalize", "3개", "--lang", "ko"])
        세 개
        0
    """
    args = _parser().parse_args(argv)
    from .bundle import BundleError

    warnings.showwarning = _warning_line

    try:
        return args.func(args)
    except (UserError, BundleError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        _say(term_safe(f"tts-kit {args.command}: error: {msg}"), file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as exc:
        text = _os_error_text(exc)
        if text is None:
            return _last_resort(args.command, exc)
        _say(term_safe(f"tts-kit {args.command}: error: {text}"), file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        _say(f"tts-kit {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # last resort: never a traceback on the terminal
        return _last_resort(args.command, exc)


if __name__ == "__main__":
    sys.exit(main())
