"""What every ``tts-kit`` command group shares: printing, opening the model, output files,
help texts, every numeric flag's range (`NUMERIC_FLAGS`), and how a group registers its
subcommands (`AddCommand`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tts_kit.core.errors import TtsKitError
from tts_kit.core.textsafe import term_safe
from tts_kit.core.validate import MAX_THREADS, Rule


def _say(text: object = "", file: Any = None) -> None:
    """Print ``text``, its control characters but newlines and tabs escaped (all CLI output)."""
    print(term_safe(text, keep="\n\t"), file=file if file is not None else sys.stdout)


class UserError(TtsKitError):
    """An error the user can fix; printed as one line."""

    __module__ = "tts_kit.cli"  # shown as ``tts_kit.cli.UserError``, where it is exported


def in_path(text: str) -> str:
    """The argparse ``type`` of an option naming a path read (`out_path`: written; `out_file`:
    a file written), checked once parsed (`_check_paths`).

    Example:
        >>> in_path("~/x.json"), out_path("out"), out_file("out.json")
        ('~/x.json', 'out', 'out.json')
    """
    return text


def out_path(text: str) -> str:
    """The argparse ``type`` of an option naming a file or directory written (`in_path`)."""
    return text


def out_file(text: str) -> str:
    """The argparse ``type`` of an option naming a file written, checked writable first."""
    return text


def _check_paths(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """No NUL but in the text; path options not empty, ``~`` known, `out_file`s writable."""
    from tts_kit.core.userfiles import check_path

    for dest, value in vars(args).items():
        if dest != "text" and isinstance(value, str) and "\x00" in value:
            raise UserError(f"{value!r} (the {dest.replace('_', '-')} argument): contains a "
                            "NUL character, which no path or name can hold")
    for a in parser._actions:
        value = getattr(args, a.dest, None)
        if a.type in (in_path, out_path, out_file) and isinstance(value, str):
            flag = a.option_strings[-1] if a.option_strings else a.dest.upper()
            check_path(value, flag)
            if a.type is out_file:  # now, not after minutes of measuring
                _check_output_file(value, flag)
    if getattr(args, "scheduler", None) == "":
        raise UserError("--scheduler '': empty; give tcp://HOST:PORT, or leave it out to "
                        "run here")


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    # One line, without the library's file and source line.
    _say(f"tts-kit: warning: {term_safe(message)}", file=sys.stderr)


def _bundle(args: argparse.Namespace):
    """The model ``--model`` names (None: discovery), with a note when it is a stand-in."""
    from tts_kit.models.resolve import resolve_model

    bundle, source = resolve_model(args.model)
    _standin_note(bundle, source)
    return bundle


def _standin_note(bundle: Any, source: str) -> None:
    """Say on stderr that a stand-in runs, its scale, and whether its costs are realistic."""
    if bundle.is_standin:
        from tts_kit.models.supertonic.standin import scale_note

        scale = str((bundle.standin_info or {}).get("scale", "?"))
        _say(f"note: using a stand-in model ({source}, {bundle.params / 1e6:.0f} M "
             f"parameters): {scale_note(scale)}", file=sys.stderr)


def _check_language(text: str, lang: str) -> None:
    """One line on stderr when the text is clearly in the other language than ``lang``."""
    from tts_kit.text import other_language

    if other := other_language(text, lang):
        name = {"en": "English", "ko": "Korean"}[other]
        _say(f"tts-kit: warning: the text looks {name} but --lang is {lang}; pass --lang "
             f"{other} to read it as {name}", file=sys.stderr)


@contextlib.contextmanager
def _cluster(address: str | None) -> Iterator[Any]:
    """A `TrialExecutor` on the Dask scheduler at ``address`` (None: none), connected first."""
    if not address:
        yield None
        return
    from tts_kit.tuning.cluster import TrialExecutor, connect

    client = connect(address)
    # A lost scheduler is said in one line by the command, not Dask's tracebacks.
    quiet = [logging.getLogger(n) for n in ("distributed.client", "distributed.comm")]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.CRITICAL)
    try:
        yield TrialExecutor(client)
    finally:
        client.close()
        for q, level in zip(quiet, levels):
            q.setLevel(level)


def _check_output_file(path: str, flag: str, example: str = "out.json") -> Path:
    """Fail now, in one line starting with ``flag``, when ``path`` cannot be written as a file
    (`tts_kit.core.atomic.check_destination`).

    Example:
        >>> _check_output_file("/", "--json")
        Traceback (most recent call last):
        ...
        tts_kit.cli.UserError: --json /: is a directory; give a file path (such as /out.json)
    """
    from tts_kit.core.atomic import check_destination

    try:
        return check_destination(path, example)
    except TtsKitError as exc:
        raise UserError(f"{flag} {exc}".replace("choose another path",
                                                f"choose another {flag}")) from None


def _write_json(path: str, data: Any) -> None:
    """Write ``data`` as JSON to ``path``, whole or not at all."""
    from tts_kit.core.atomic import atomic_file

    with atomic_file(path) as tmp:
        Path(tmp).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    _say(f"wrote {path}")


SCHEDULER_HELP = ("run the trials on the Dask workers of this scheduler (tcp://HOST:PORT), "
                  "one per worker at a time; workers need --resources trial=1 and "
                  "pip install 'tts_kit[dask]'")


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
        if ("(default" in text or not action.option_strings or default is None
                or isinstance(default, bool) or default is argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


#: What runs a subcommand: the parsed arguments in, the exit status out.
Command = Callable[[argparse.Namespace], int]


#: Registers one subcommand (with ``--model`` unless ``model=False``) and returns its parser:
#: ``add(name, fn, help, model=True)``; each command group's ``register`` takes one.
AddCommand = Callable[..., argparse.ArgumentParser]


_SECONDS = Rule(0, 7 * 86400, low_open=True, unit="s")
_MB = Rule(0, 1 << 30, low_open=True, unit="MB")
_THREADS = Rule(1, MAX_THREADS, integer=True)
#: A noise or weight seed: 32 bits, as numpy's legacy seeding takes.
_SEED = Rule(0, 2**32 - 1, integer=True)
#: A Piper voice's noise scale (``noise_scale``, ``noise_w``; 0: no noise), as the engine checks.
_NOISE = Rule(0, 2)
_LOAD = {"requests": Rule(1, 10**7, integer=True), "duration": _SECONDS,
         "timeout": _SECONDS, "seed": _SEED}

#: command -> argparse ``dest`` -> its range (None values are defaults: not checked); serve's
#: flags are `ServeConfig.check`'s, as a --config-json file's settings are.
NUMERIC_FLAGS: dict[str, dict[str, Rule]] = {
    "synth": {"seed": _SEED, "noise_scale": _NOISE, "noise_w": _NOISE},
    "standin": {"seed": _SEED},
    "info": {"threads": _THREADS},
    "loadtest": dict(_LOAD),
    "serve-sweep": {**_LOAD, "p95_target_ms": Rule(0, 10**9, low_open=True, unit="ms"),
                    "mem_budget": _MB},
    "tune": {"mem_budget": _MB, "rounds": Rule(1, 100, integer=True)},
    "report": {"confirm_rounds": Rule(0, 100, integer=True)},
    "verify": {"threads": _THREADS, "min_snr": Rule(-1000, 1000, unit="dB"),
               "max_abs_diff": Rule(0, 1e6)},
}


def check_flags(args: argparse.Namespace) -> None:
    """Check ``args``' numeric flags against `NUMERIC_FLAGS` (the flags not given: skipped;
    the library checks ``--steps``, ``--speed`` and ``--repeats`` itself).

    Example:
        >>> args = argparse.Namespace(command="loadtest", timeout=float("nan"))
        >>> check_flags(args)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tts_kit.core.validate.InvalidNumber: --timeout nan: give a finite number > 0 s ...
    """
    for dest, rule in NUMERIC_FLAGS.get(getattr(args, "command", ""), {}).items():
        value = getattr(args, dest, None)
        if value is not None:
            setattr(args, dest, rule.check(value, f"--{dest.replace('_', '-')}"))
