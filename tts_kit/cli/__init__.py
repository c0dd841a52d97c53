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
    $ tts-kit tune --scheduler tcp://10.0.0.5:8786   # trials on Dask workers
    (tts_kit.experiments.cluster)
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

from tts_kit import __version__
from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.core.textsafe import term_safe

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


class UserError(TtsKitError):
    """An error the user can fix; printed as one line."""


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    # A library warning (what normalisation dropped) is for the user, like errors: one
    # line, without the library's file and source line.
    _say(f"tts-kit: warning: {term_safe(message)}", file=sys.stderr)


def _bundle(args: argparse.Namespace):
    from tts_kit.models.family import is_piper, open_model
    from tts_kit.models.supertonic.bundle import Bundle, resolve_model_dir

    if is_piper(args.model):  # piper:NAME, a Piper voice directory or .onnx file
        return open_model(args.model)
    path, source = resolve_model_dir(args.model)
    bundle = Bundle(path)
    _standin_note(bundle, source)
    return bundle


def _standin_note(bundle: Any, source: str) -> None:
    """Say on stderr that a stand-in runs, its scale, and whether its costs are realistic."""
    if bundle.is_standin:
        from tts_kit.models.supertonic.standin import scale_note

        scale = str((bundle.standin_info or {}).get("scale", "?"))
        _say(f"note: using a stand-in model ({source}, {bundle.params / 1e6:.0f} M "
             f"parameters): {scale_note(scale)}", file=sys.stderr)


def _audio_output(path: str) -> tuple[Path, str]:
    """Check ``-o`` before any synthesis: (path, soundfile format) or a one-line UserError."""
    import soundfile as sf

    from tts_kit.core.atomic import check_destination

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

    from tts_kit.core.atomic import atomic_file
    from tts_kit.experiments.records import format_timings
    from tts_kit.models.family import make_engine, model_label

    out, fmt = _audio_output(args.output)  # before the model loads: a bad -o costs nothing
    _check_language(args.text, args.lang)
    bundle = _bundle(args)
    piper = bundle.family == "piper"
    if not piper and (args.noise_scale is not None or args.noise_w is not None):
        raise UserError("--noise-scale and --noise-w apply to Piper voices only (--model "
                        "piper:joe-us); a Supertonic bundle's noise is its --seed")
    extra = {"noise_scale": args.noise_scale, "noise_w": args.noise_w} if piper else {}
    engine = make_engine(bundle, normalize=not args.no_normalize, loading=args.loading, **extra)
    speed = args.speed if args.speed is not None else (1.0 if piper else contract.DEFAULT_SPEED)
    t0 = time.perf_counter()
    # Checked (text, voice, ranges) here, before the output file is touched.
    parts = engine.stream(
        args.text, lang=args.lang, voice=args.voice or engine.bundle.default_voice,
        steps=args.steps, speed=speed, seed=args.seed, order=args.order,
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
    _say(f"wrote {out} ({frames / sr:.2f} s of audio at {sr} Hz; "
         f"spoken by {term_safe(model_label(bundle))})")
    if parts.text != " ".join(args.text.split()):
        # What normalisation made of it (dropped characters too), on one line.
        _say(f"read: {term_safe(parts.text)}")
    rtf = timings["total"] / max(frames / sr, 1e-9)
    _say(f"RTF {rtf:.3f}  (synthesis {timings['total'] * 1000:.0f} ms)")
    for stage, ms in format_timings(timings):
        _say(f"  {stage:<20} {ms:8.1f} ms")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from tts_kit.runtime.loading import check_loads

    bundle = _bundle(args)
    info = bundle.describe()
    # The file checks cannot see an operator ORT lacks: unless told not to, load each
    # graph, so "info" passing means "synth" can load the bundle too.
    from tts_kit.models.family import model_label

    loads = None if args.no_load else check_loads(bundle) == list(bundle.stages)
    info["runtime"] = {"onnxruntime": _ort_version(), "graphs_load": loads}
    info.setdefault("family", bundle.family)
    info.setdefault("model", model_label(bundle))
    if args.json:
        _say(json.dumps(info, indent=2))
        return 0
    standin = info["standin"]
    if isinstance(standin, dict):
        from tts_kit.models.supertonic.standin import scale_note

        scale = str(standin.get("scale", "?"))
        kind = f"stand-in, {scale} scale, seed {standin.get('seed', '?')} ({scale_note(scale)})"
    else:
        kind = "real model"
    n = len(info["stages"])
    if loads:
        what = "the graph" if n == 1 else f"all {'four' if n == 4 else n} graphs"
        runtime = f"onnxruntime {_ort_version()} loads {what} (CPU)"
    elif loads is None:
        runtime = "not checked (--no-load): whether onnxruntime can load the graphs"
    else:
        runtime = f"onnxruntime {_ort_version()} could NOT load every graph"
    rows = [("model", term_safe(info["model"])), ("bundle", str(info["path"])), ("kind", kind),
            ("voices", ", ".join(term_safe(v) for v in info["voices"])),
            ("params", f"{info['params'] / 1e6:.2f} M"), ("runtime", runtime)]
    _say("\n".join(f"{k:<9}{v}" for k, v in rows))
    _say("")
    # The same columns and units as `tts-kit standin` prints (MB = 10^6 bytes).
    _say(f"{'stage':<20}{'params':>10}{'MB':>9}  {'precision':<9}  sha256")
    total_p = total_b = 0
    for stage, st in info["stages"].items():
        total_p += st["params"]
        total_b += st["size_bytes"]
        _say(f"{stage:<20}{st['params'] / 1e6:>9.2f}M{st['size_bytes'] / 1e6:>9.1f}  "
             f"{st['precision']:<9}  {st['sha256'][:16]}")
    _say(f"{'total':<20}{total_p / 1e6:>9.2f}M{total_b / 1e6:>9.1f}")
    return 0


def _ort_version() -> str:
    import onnxruntime

    return str(onnxruntime.__version__)


def cmd_standin(args: argparse.Namespace) -> int:
    from tts_kit.models.supertonic.standin import build_standin, scale_note

    summary = build_standin(args.dir, scale=args.scale, seed=args.seed)
    _say(summary.table())
    _say(f"built {args.dir} in {summary.build_s:.1f} s ({scale_note(args.scale)})")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from tts_kit.models.supertonic.fetch import FetchError, fetch_model

    try:
        path = fetch_model(args.model_name, args.dir)
    except FetchError as exc:
        raise UserError(str(exc)) from None
    _say(f"downloaded {args.model_name} to {path}")
    return 0


_LANGUAGE_NAMES = {"en": "English", "ko": "Korean"}


def _check_language(text: str, lang: str) -> None:
    """One line on stderr when the text is clearly in the other language than ``lang``."""
    from tts_kit.text import other_language

    other = other_language(text, lang)
    if other:
        _say(f"tts-kit: warning: the text looks {_LANGUAGE_NAMES[other]} but --lang is "
             f"{lang}; pass --lang {other} to read it as {_LANGUAGE_NAMES[other]}",
             file=sys.stderr)


def cmd_normalize(args: argparse.Namespace) -> int:
    from tts_kit.text import Normalizer

    _check_language(args.text, args.lang)
    norm = Normalizer(args.lang)
    _say(norm.normalize(args.text))
    if args.trace:
        for step in norm.trace(args.text):
            _say(f"  {step.rule:<18} {step.before!r} -> {step.after!r}")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from tts_kit.experiments.tune import default_cpus, format_table, sweep
    from tts_kit.experiments.workload import Workload

    bundle = _bundle(args)
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    try:
        # The default follows the cores this process can use (a CPU quota included).
        cpus = default_cpus((1, 2)) if args.cpus is None else tuple(
            int(c) for c in args.cpus.split(","))
    except ValueError:
        raise UserError(f"--cpus takes core counts like 1,2; got {args.cpus!r}") from None
    from tts_kit.core.procfacts import usable_cores

    usable = usable_cores()
    pinnable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else usable
    # Above the affinity the trial refuses (one-line error); between the quota and the
    # affinity it runs, pinned to cores the quota throttles: say what its figures mean.
    over = sorted({c for c in cpus if usable < c <= pinnable})
    if over:
        _say(f"tts-kit tune: warning: --cpus {','.join(map(str, over))}: this process can use "
             f"only {usable} core(s) (its cgroup CPU quota), so those trials are throttled "
             f"to {usable} and their figures are not {over[0]}-core figures; give --cpus up "
             f"to {usable}", file=sys.stderr)
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
    from tts_kit.models.family import model_label

    _say(f"model: {term_safe(model_label(bundle))}")  # which model the figures are of
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
        _write_json(args.json, {"records": records})
    if not any(r.get("status") == "ok" for r in result.records):
        # Nothing measured is a failure a script must see, not a result; the table's
        # "not finished" lines above say why each trial stopped.
        _say("tts-kit tune: no trial finished; see the reasons above", file=sys.stderr)
        return 1
    return 0


@contextlib.contextmanager
def _cluster(address: str | None) -> Iterator[Any]:
    """A `tts_kit.experiments.cluster.TrialExecutor` on the scheduler at ``address`` (None: no
    executor).

    Connects before any trial runs, so an unreachable scheduler or a missing Dask fails
    in one line (exit 2); closes the client afterwards.
    """
    if not address:
        yield None
        return
    from tts_kit.experiments.cluster import TrialExecutor, connect

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


def _write_json(path: str, data: Any) -> None:
    """Write ``data`` as JSON to ``path``, whole or not at all (built beside, renamed into
    place: an interrupted or failed write leaves an existing file as it was)."""
    from tts_kit.core.atomic import atomic_file

    with atomic_file(path) as tmp:
        Path(tmp).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    _say(f"wrote {path}")


def cmd_convert(args: argparse.Namespace) -> int:
    from tts_kit.precision import convert

    stages = [s.strip() for s in args.stages.split(",")] if args.stages else None
    measure = False if args.no_measure else ("fidelity" if args.fidelity_only else True)
    if (args.to is None) == (args.recipe is None):
        raise UserError("give --to fp16|int8 or --recipe NAME (one of them)")
    if args.recipe and stages:
        raise UserError("--recipe says what each stage becomes; leave out --stages")
    if args.report:
        _check_output_file(args.report, "--report")
    try:
        report = convert(args.src, args.dst, to=args.to or "fp16", stages=stages,
                         measure=measure, recipe=args.recipe,
                         floor=False if args.no_floor else None)
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


def cmd_verify(args: argparse.Namespace) -> int:
    from tts_kit.experiments.verify import OFFICIAL, verify

    if args.json:
        _check_output_file(args.json, "--json")
    if not 1 <= args.threads <= 1024:
        raise UserError(f"--threads {args.threads}: give a number of threads from 1 to 1024")
    for flag, v in (("--min-snr", args.min_snr), ("--max-abs-diff", args.max_abs_diff)):
        if v != v or v in (float("inf"), float("-inf")):
            raise UserError(f"{flag} {v}: give a finite number")
    bundle = _bundle(args)
    against = args.against
    if against != OFFICIAL and not Path(against).expanduser().is_dir():
        raise UserError(f"--against {against}: not a directory; give 'official' or a bundle "
                        "directory (an FP16/INT8 copy)")
    if bundle.family == "piper":
        return _verify_piper(args, bundle)
    report = verify(bundle, against, threads=args.threads, min_snr_db=args.min_snr,
                    max_abs_diff=args.max_abs_diff, floor=args.floor)
    _say(report.table())
    if args.json:
        _write_json(args.json, report.to_dict())
    # Like `diff`: 0 within the tolerance (with --floor: within the floor), 1 outside it,
    # 2 bad input.
    if args.floor:
        return 0 if report.verdict and report.verdict[0] == "within the floor" else 1
    return 0 if report.passed else 1


def _verify_piper(args: argparse.Namespace, bundle: Any) -> int:
    """`verify` for a Piper voice: a converted copy against it (the official package runs
    Supertonic bundles only), on the same texts and noise; with --floor, the verdict."""
    from dataclasses import asdict

    from tts_kit.experiments.verify import _json_safe
    from tts_kit.models.family import model_label
    from tts_kit.precision.measure import PIPER_TEXTS, judgement, piper_distances, piper_floor

    if args.against == "official":
        raise UserError(f"{model_label(bundle)}: the official supertonic package runs "
                        "Supertonic bundles only; give --against DIR (a converted copy of "
                        "this voice) to compare the two")
    d = piper_distances(str(bundle.path), args.against)
    problems = []
    if not d.snr_db >= args.min_snr:
        problems.append(f"waveform SNR {d.snr_db:.1f} dB < {args.min_snr:g} dB")
    if d.duration_change_s > 0:
        problems.append(f"length changed by {d.duration_change_s * 1000:.1f} ms")
    _say(f"{model_label(bundle)} against {args.against} (same texts, same noise): "
         f"SNR {d.snr_db:.1f} dB, log-mel {d.log_mel_db:.3g} dB, MCD {d.mcd_db:.3g} dB, "
         f"length change {d.duration_change_s * 1000:.1f} ms")
    out: dict[str, Any] = {"model": model_label(bundle), "against": args.against,
                           "distances": asdict(d), "problems": problems}
    if args.floor:
        # The same distances, judged on the voice's floor (measured on the same texts).
        j = judgement(piper_floor(str(bundle.path), PIPER_TEXTS), d,
                      f"{len(PIPER_TEXTS)} text(s)")
        out["judgement"] = j
        _say(f"verdict against the voice's measured floor: {j['verdict']}")
        for reason in j["reasons"]:
            _say(f"  {reason}")
    _say("PASS: within the tolerance" if not problems else
         "FAIL: " + "; ".join(problems))
    if args.json:
        _write_json(args.json, _json_safe(out))
    if args.floor:
        return 0 if out["judgement"]["verdict"] == "within the floor" else 1
    return 0 if not problems else 1


def cmd_report(args: argparse.Namespace) -> int:
    from tts_kit.report import make_report, rerun_report

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
    from tts_kit.models.supertonic.bundle import Bundle, resolve_model_dir

    # Say what it runs on before minutes of trials (discovery builds the stand-in once).
    where, source = resolve_model_dir(args.model)
    _standin_note(Bundle(where), source)
    with _cluster(args.scheduler) as executor:
        paths = make_report(out=args.out, model=args.model, sweep=args.sweep, executor=executor,
                            full_paths=args.full_paths)
    for p in paths:
        _say(f"wrote {p}")
    _say_answer(paths)
    return 0


def _say_answer(paths: list[Path]) -> None:
    """The report's answer on the terminal too: its computed conclusions and the
    `tts-kit serve` line for the pick (the HTML starts with the same)."""
    from tts_kit.report import TuningReport
    from tts_kit.report.answer import conclusions, serve_command

    js = next((p for p in paths if p.name == "report.json"), None)
    if js is None:
        return
    rep = TuningReport.load(js)
    _say("\nthe answer (report.html starts with it):")
    for line in conclusions(rep):
        _say(f"  {line}")
    command = serve_command(rep)
    if command:
        _say(f"  serve it: {command}")


SCHEDULER_HELP = ("run the trials on the Dask workers of this scheduler (tcp://HOST:PORT), "
                  "one per worker at a time; workers need --resources trial=1 and "
                  "pip install 'tts_kit[dask]'")
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


def cmd_serve(args: argparse.Namespace) -> int:
    from tts_kit.serve.app import ServeConfig, run_server
    from tts_kit.serve.launch import read_config

    if args.config_json:  # the whole configuration as data (tts_kit.serve.launch sends it)
        cfg = read_config(args.config_json)
        args.model, args.preset = cfg.model, cfg.preset
    # Here, in one line, not as a worker that fails to start after the server is up.
    if args.preset not in contract.PRESET_NAMES:
        raise UserError(f"--preset {args.preset!r}: unknown session preset; choose one of: "
                        f"{', '.join(contract.PRESET_NAMES)}")
    cfg = cfg if args.config_json else ServeConfig(
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
    from tts_kit.serve.loadtest import DEFAULT_TEXT

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
    from tts_kit.serve.loadtest import run_load

    if not args.url.startswith(("http://", "https://")):
        raise UserError(f"URL {args.url!r}: give the server's address, such as "
                        "http://127.0.0.1:8000")
    if args.json:
        _check_output_file(args.json, "--json")  # now, not after the load test
    conc = _int_list(args.concurrency, "--concurrency") if args.concurrency else []
    rates = _rates(args.rate)
    if not conc and not rates:
        raise UserError("give at least one --concurrency level or --rate")
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
        _write_json(args.json, res.to_dict())
    return 0


def _rates(text: str | None) -> list[float]:
    """``--rate``'s arrivals per second (``0.5,1,2``), each above 0."""
    try:
        rates = [float(x) for x in text.split(",") if x.strip()] if text else []
    except ValueError:
        raise UserError(f"--rate takes arrivals per second like 0.5,1,2; got {text!r}"
                        ) from None
    if any(not (r > 0 and r < float("inf")) for r in rates):
        raise UserError(f"--rate {text}: every rate must be a number of arrivals per second "
                        "above 0")
    return rates


def cmd_serve_sweep(args: argparse.Namespace) -> int:
    from tts_kit.serve.sweep import serving_sweep

    if args.json:
        _check_output_file(args.json, "--json")
    threads = [None] if not args.threads else _int_list(args.threads, "--threads")
    res = serving_sweep(
        args.model, architectures=[a.strip() for a in args.architectures.split(",")],
        workers=_int_list(args.workers, "--workers"), threads=threads,
        presets=[p.strip() for p in args.presets.split(",") if p.strip()],
        loadings=[x.strip() for x in args.loading.split(",") if x.strip()],
        concurrency=_int_list(args.concurrency, "--concurrency") if args.concurrency else [],
        rates=_rates(args.rate), requests=args.requests,
        duration_s=args.duration, texts=_texts(args.texts), body=_load_body(args),
        timeout_s=args.timeout, p95_target_ms=args.p95_target_ms,
        mem_budget_mb=args.mem_budget, progress=not args.quiet,
    )
    _say(res.table())
    _say(f"recommendation: {res.recommend(args.p95_target_ms, args.mem_budget)[1]}")
    if args.json:
        _write_json(args.json, res.to_dict())
    return 0 if any(r.get("status") == "ok" for r in res.records) else 1


#: The top-level ``--help`` text (plain: argparse prints it as is).
DESCRIPTION = ("tts-kit: measure, tune and explain on-device Supertonic text-to-speech "
               "(synthesis, normalisation, session tuning in isolated processes, FP16/INT8, "
               "reports). Without --model every command discovers the model: "
               "$TTS_KIT_MODEL_DIR, the official cache, else the full-scale stand-in.")
LOADING_HELP = ("load policy: resident (all four graphs stay loaded), paged (each loads "
                "before its stage and is released after) or budget:MB (keep what fits in "
                "MB, least recently used out)")


class _HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default (when it has a meaningful one)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("%(default)" in text or "(default" in text or not action.option_strings
                or default is None
                or isinstance(default, bool) or default is argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


def _parser() -> argparse.ArgumentParser:
    from tts_kit.core.contract import (  # not sessions: no onnxruntime here
        PRESET_NAMES,
        SWEEP_PRESETS,
    )
    from tts_kit.text import LANGS

    p = argparse.ArgumentParser(prog="tts-kit", description=DESCRIPTION,
                                formatter_class=_HelpFormatter)
    p.add_argument("--version", action="version", version=f"tts_kit {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    preset_names = ", ".join(PRESET_NAMES)

    def add(name: str, fn: Callable[[argparse.Namespace], int], help: str, model: bool = True):
        sp = sub.add_parser(name, help=help, description=help, formatter_class=_HelpFormatter)
        sp.set_defaults(func=fn)
        if model:
            sp.add_argument("--model", metavar="DIR",
                            help="bundle directory, a Piper voice (its directory or .onnx "
                            "file) or piper:joe-us (default: discovered: $TTS_KIT_MODEL_DIR, "
                            "the official cache, else the full-scale stand-in)")
        return sp

    sp = add("synth", cmd_synth, "synthesise TEXT into a mono WAV file (44.1 kHz for "
             "Supertonic, the voice's rate for Piper)")
    sp.add_argument("text", help="the text to speak")
    sp.add_argument("-o", "--output", required=True, help="output .wav (or .flac, .aiff) path")
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

    sp = add("standin", cmd_standin, "build a synthetic stand-in bundle in DIR", model=False)
    sp.add_argument("dir", help="where to build it (a new or empty directory)")
    sp.add_argument("--scale", default=contract.DEFAULT_STANDIN_SCALE,
                    choices=contract.STANDIN_SCALES,
                    help="full: the published size, realistic costs (~400 MB); medium: a "
                    "quarter; tiny: a few MB, for tests")
    sp.add_argument("--seed", type=int, default=0, help="weight seed")

    sp = add("fetch", cmd_fetch, "download the real model (needs the model hub)", model=False)
    sp.add_argument("--model", dest="model_name", default="supertonic-3",
                    choices=["supertonic-3", "supertonic-2"], help="which model")
    sp.add_argument("--dir", default=None,
                    help="target directory (default: the official cache)")

    sp = add("normalize", cmd_normalize, "spell out numbers, dates, acronyms in TEXT",
             model=False)
    sp.add_argument("text", help="the text to normalise")
    sp.add_argument("--lang", default=contract.DEFAULT_LANG, metavar="LANG",
                    help=f"language, {' or '.join(LANGS)} (as for synth)")
    sp.add_argument("--trace", action="store_true", help="list the rules that changed the text")

    sp = add("tune", cmd_tune, "measure session presets and load policies in isolation")
    sp.add_argument("--presets", default=",".join(SWEEP_PRESETS), metavar="NAMES",
                    help=f"comma-separated presets, of: {preset_names}")
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
    sp.add_argument("--stage-costs", default="measure",
                    help="per-stage MB for budget:MB loadings: measure (one isolated run "
                    "per preset), estimate (from file sizes) or a JSON file")
    sp.add_argument("--json", default=None, metavar="FILE",
                    help="write the records as JSON here")
    sp.add_argument("--timelines", action="store_true",
                    help="keep each trial's RSS timeline and stage events in --json")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    sp.add_argument("--scheduler", default=None, metavar="ADDRESS", help=SCHEDULER_HELP)

    sp = add("convert", cmd_convert, "convert a bundle, a Piper voice (piper:joe-us or its "
             "directory) or an .onnx file to FP16 or INT8", model=False)
    sp.add_argument("src", help="bundle directory, Piper voice or .onnx file (never modified)")
    sp.add_argument("dst", help="where to write the converted copy")
    sp.add_argument("--to", default=None, choices=["fp16", "int8"],
                    help="target precision (or give --recipe)")
    sp.add_argument("--recipe", default=None, choices=sorted(contract.RECIPE_DESCRIPTIONS),
                    help="a per-stage recipe instead of --to: " + "; ".join(
                        f"{k}: {v}" for k, v in sorted(contract.RECIPE_DESCRIPTIONS.items())))
    sp.add_argument("--stages", default=None,
                    help=f"comma-separated stages, of: {', '.join(contract.STAGES)} "
                    "(default: all)")
    sp.add_argument("--report", default=None, metavar="FILE",
                    help="write the conversion report JSON here")
    sp.add_argument("--no-measure", action="store_true",
                    help="only convert (skip memory, latency and fidelity measurements)")
    sp.add_argument("--fidelity-only", action="store_true",
                    help="measure fidelity against the source, not memory or latency")
    sp.add_argument("--no-floor", action="store_true",
                    help="skip judging the result against the source's measured noise floor "
                    "(threads, graph fusions, batch padding, another noise draw: within the "
                    "floor, audible risk or broken; about a minute at full size)")

    sp = add("verify", cmd_verify,
             "synthesise the same texts (en, ko), voices, steps, speeds and noise through "
             "tts_kit and the official package (or a second bundle) and compare every stage "
             "and the audio; exit 0 within the tolerance, 1 outside it")
    sp.add_argument("--against", default="official",
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
                    "padding; another noise draw) and judge against it: within the floor, "
                    "audible risk or broken; exit 0 only within the floor")
    sp.add_argument("--json", default=None, help="write the report as JSON here")

    sp = add("report", cmd_report,
             "run a tuning sweep, write report.json, and render it as HTML and a notebook")
    sp.add_argument("--out", default=None, metavar="DIR", help="output directory")
    sp.add_argument("--sweep", default=None, metavar="FILE",
                    help="sweep spec JSON (SweepSpec keys; default: presets "
                    f"{', '.join(SWEEP_PRESETS)} x 1,2 vCPUs x resident,paged, 3 timed calls)")
    sp.add_argument("--rerun", default=None, metavar="REPORT_JSON",
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
    sp.add_argument("--workers", type=int, default=1, help="worker processes")
    sp.add_argument("--threads", type=int, default=None,
                    help="intra-op threads per worker (default: the preset's)")
    sp.add_argument("--preset", default="supertonic-default", metavar="PRESET",
                    help=f"session preset, one of {preset_names}")
    sp.add_argument("--loading", default="resident", metavar="POLICY",
                    help=LOADING_HELP + "; +mmap maps the weights so workers share their "
                    "pages (e.g. resident+mmap)")
    sp.add_argument("--architecture", default="workers",
                    choices=["workers", "threads", "blocking", "article"],
                    help="workers: tts_kit's worker processes; threads, blocking and "
                    "article exist to be measured against it")
    sp.add_argument("--max-queue", type=int, default=8,
                    help="requests that may wait for a worker; more get 429")
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
    sp.add_argument("--host", default="127.0.0.1",
                    help="address to bind (127.0.0.1: this machine only)")
    sp.add_argument("--port", type=int, default=8000, help="TCP port")
    sp.add_argument("--max-chars", type=int, default=4096, help="longest input accepted")
    sp.add_argument("--first-chunk-chars", type=int, default=50,
                    help="cut the first chunk at a clause to this length, for earlier first "
                    "audio (0: no cut)")
    sp.add_argument("--max-chunk-chars", type=int, default=None,
                    help="chunk limit in model (NFKD) characters (default 300, every "
                    "language): longer chunks, fewer runs, later first audio")
    sp.add_argument("--order", default="chunk", choices=["chunk", "stage"],
                    help="chunk-major (first audio soonest) or stage-major synthesis")
    sp.add_argument("--config-json", default=None, metavar="FILE",
                    help="the whole configuration as ServeConfig JSON (- reads stdin); "
                    "replaces the other flags")

    def load_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--requests", type=int, default=20, help="most requests per level")
        sp.add_argument("--duration", type=float, default=None,
                        help="most seconds per level (default: until --requests)")
        sp.add_argument("--texts", default=None, help="file with one request text per line")
        sp.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS,
                        help="flow-matching steps per request")
        sp.add_argument("--lang", default=contract.DEFAULT_LANG, metavar="LANG",
                        help=f"language code, one of {', '.join(contract.LANGUAGES)}")
        sp.add_argument("--voice", default=None, help="voice (default: the server's)")
        sp.add_argument("--seed", type=int, default=None,
                        help="noise seed per request (default: random)")
        sp.add_argument("--timeout", type=float, default=120.0,
                        help="client deadline per request, seconds")
        sp.add_argument("--json", default=None, help="write the records as JSON here")
        sp.add_argument("--quiet", action="store_true", help="no progress bar")

    sp = add("loadtest", cmd_loadtest, "load a speech server: time to first audio and "
             "latency percentiles, throughput, errors, server CPU and memory", model=False)
    sp.add_argument("url", help="the server, e.g. http://127.0.0.1:8000")
    sp.add_argument("--concurrency", default="1,2,4",
                    help="closed-loop levels: clients at once ('' for none)")
    sp.add_argument("--rate", default=None,
                    help="open-loop levels: arrivals per second, e.g. 0.5,1,2")
    sp.add_argument("--api-key", default=None, help="default: $TTS_KIT_API_KEY")
    load_args(sp)

    sp = add("serve-sweep", cmd_serve_sweep,
             "start a fresh server per configuration, load each, and recommend the one "
             "that meets a p95 target inside a memory budget")
    sp.add_argument("--architectures", default="workers,threads,article",
                    help="comma-separated, of: workers, threads, blocking, article")
    sp.add_argument("--workers", default="1,2", help="worker counts to try")
    sp.add_argument("--threads", default=None, help="intra-op threads, e.g. 1,2")
    sp.add_argument("--presets", default="supertonic-default",
                    help=f"comma-separated, of: {preset_names}")
    sp.add_argument("--loading", default="resident", metavar="POLICIES",
                    help="comma-separated load policies (resident, paged, budget:MB, +mmap)")
    sp.add_argument("--concurrency", default="1,2,4",
                    help="closed-loop levels to load each with ('' for none); the "
                    "recommendation is made at the highest")
    sp.add_argument("--rate", default=None,
                    help="open-loop levels too: arrivals per second, e.g. 0.5,1,2 (measured "
                    "and tabled; the recommendation reads the closed-loop levels)")
    sp.add_argument("--p95-target-ms", type=float, default=None,
                    help="the total-latency p95 to meet (default: none; the fastest wins)")
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


#: Exit status when the reader of our output went away (``tts-kit ... | head``): what a
#: shell reports for a process ended by SIGPIPE (128 + 13).
EXIT_BROKEN_PIPE = 141


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
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # here, where a closed pipe can still be caught
    except BrokenPipeError:
        # The reader stopped reading (`| head`): nothing is wrong and there is nobody to
        # tell. Point stdout at /dev/null so the interpreter's own flush at exit is quiet.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    from tts_kit.models.supertonic.bundle import BundleError

    warnings.showwarning = _warning_line

    try:
        return args.func(args)
    except (UserError, BundleError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        _say(term_safe(f"tts-kit {args.command}: error: {msg}"), file=sys.stderr)
        return EXIT_USER_ERROR
    except BrokenPipeError:
        raise  # not an error: `main` ends quietly
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
