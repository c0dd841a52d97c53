"""``tts-kit``: a thin command line over the library, one module per command group; this
one assembles the parser and runs a command (`main`). Errors: `tts_kit.cli._errors`."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Sequence

from tts_kit.cli import model, precision, serving, text, tuning
from tts_kit.cli._common import (
    DESCRIPTION,
    Command,
    UserError,
    _check_paths,
    _HelpFormatter,
    _say,
    _warning_line,
    _write_json,
    check_flags,
    in_path,
)
from tts_kit.cli._errors import (
    EXIT_BROKEN_PIPE,
    EXIT_BUG,
    EXIT_INTERRUPTED,
    EXIT_USER_ERROR,
    exit_status,
    interrupted,
    unraisable,
)
from tts_kit.cli.model import cmd_doctor, cmd_fetch, cmd_info, cmd_standin, cmd_synth
from tts_kit.cli.precision import cmd_convert, cmd_verify
from tts_kit.cli.serving import cmd_loadtest, cmd_serve, cmd_serve_sweep
from tts_kit.cli.text import cmd_normalize
from tts_kit.cli.tuning import cmd_report, cmd_tune
from tts_kit.core.version import __version__


def _parser() -> argparse.ArgumentParser:
    """The ``tts-kit`` parser; each command group registers its subcommands."""
    p = argparse.ArgumentParser(prog="tts-kit", description=DESCRIPTION,
                                formatter_class=_HelpFormatter)
    p.add_argument("--version", action="version", version=f"tts_kit {__version__}")
    p.add_argument("--debug", action="store_true",
                   help="on an error, print its full traceback too (give it before COMMAND)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn: Command, help: str, model: bool = True) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help, formatter_class=_HelpFormatter)
        sp.set_defaults(func=fn)
        if model:
            sp.add_argument("--model", metavar="DIR", type=in_path,
                            help="bundle directory, a Piper voice (its directory or .onnx "
                            "file) or piper:joe-us (default: discovered: $TTS_KIT_MODEL_DIR, "
                            "the official cache, else the full-scale stand-in)")
        return sp

    model.register(add)
    text.register(add)
    tuning.register_tune(add)
    precision.register(add)
    tuning.register_report(add)
    serving.register(add)
    model.register_doctor(add)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tts-kit``: 0 on success, 1 for a negative verdict, else the
    statuses of `tts_kit.cli._errors`.

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
        # The reader stopped reading (`| head`): stdout to /dev/null, for a quiet exit.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    # A value with a newline (a path may hold one) is shown escaped in the one-line error.
    shown = [v for k, v in vars(args).items() if k != "text" and isinstance(v, str) and "\n" in v]
    # A library warning is one line for the user while this command runs.
    hook, sys.unraisablehook = sys.unraisablehook, unraisable(sys.unraisablehook)
    with warnings.catch_warnings():
        warnings.showwarning = _warning_line
        try:
            _check_paths(args, sub.choices[args.command])
            check_flags(args)  # every numeric flag, by one validator
            status = args.func(args)
            if interrupted():  # a Ctrl-C a callback swallowed (it printed nothing)
                raise KeyboardInterrupt
            return status
        except BrokenPipeError:
            raise  # not an error: `main` ends quietly
        except KeyboardInterrupt:
            _say(f"tts-kit {args.command}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except Exception as exc:  # the user's (one line, exit 2) or a bug (exit 70)
            return exit_status(args.command, exc, debug=getattr(args, "debug", False),
                               shown=shown)
        finally:
            sys.unraisablehook = hook


__all__ = [
    "DESCRIPTION", "EXIT_BROKEN_PIPE", "EXIT_BUG", "EXIT_INTERRUPTED", "EXIT_USER_ERROR",
    "UserError", "_parser", "_write_json", "cmd_convert", "cmd_doctor", "cmd_fetch",
    "cmd_info", "cmd_loadtest", "cmd_normalize", "cmd_report", "cmd_serve", "cmd_serve_sweep",
    "cmd_standin", "cmd_synth", "cmd_tune", "cmd_verify", "main",
]


if __name__ == "__main__":
    sys.exit(main())

