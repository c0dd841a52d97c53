"""``tts-kit``: a thin command line over the library.

Every subcommand parses its arguments, calls one library function and prints the
result. User errors (bad text, a broken model, a missing file, a full disk) exit with
status 2 and one line on stderr naming the problem and the fix; an error no check
anticipated exits 1 with one line and the path of a log holding the traceback. Never a
traceback on the terminal; strings are printed with control characters escaped.

One module per command group: `tts_kit.cli.model` (synth, info, standin, fetch,
doctor), `tts_kit.cli.text` (normalize), `tts_kit.cli.tuning` (tune, report),
`tts_kit.cli.precision` (convert, verify), `tts_kit.cli.serving` (serve, loadtest,
serve-sweep); `tts_kit.cli._common` holds what they share. This module assembles the
parser and runs a command (`main`).

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
import os
import sys
import warnings
from collections.abc import Sequence

from tts_kit import __version__
from tts_kit.cli import model, precision, serving, text, tuning
from tts_kit.cli._common import (
    DESCRIPTION,
    LOADING_HELP,
    SCHEDULER_HELP,
    Command,
    UserError,
    _bundle,
    _check_output_file,
    _HelpFormatter,
    _say,
    _warning_line,
    _write_json,
)
from tts_kit.cli.model import cmd_doctor, cmd_fetch, cmd_info, cmd_standin, cmd_synth
from tts_kit.cli.precision import cmd_convert, cmd_verify
from tts_kit.cli.serving import cmd_loadtest, cmd_serve, cmd_serve_sweep
from tts_kit.cli.text import cmd_normalize
from tts_kit.cli.tuning import cmd_report, cmd_tune
from tts_kit.core.textsafe import term_safe

EXIT_USER_ERROR = 2
#: An error tts-kit did not anticipate (a defect): one line and a log, not a traceback.
EXIT_INTERNAL_ERROR = 1


def _parser() -> argparse.ArgumentParser:
    """The ``tts-kit`` parser: the top level here, each command group's subcommands from
    its module (``register``), in the order ``--help`` lists them."""
    p = argparse.ArgumentParser(prog="tts-kit", description=DESCRIPTION,
                                formatter_class=_HelpFormatter)
    p.add_argument("--version", action="version", version=f"tts_kit {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, fn: Command, help: str, model: bool = True) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help, formatter_class=_HelpFormatter)
        sp.set_defaults(func=fn)
        if model:
            sp.add_argument("--model", metavar="DIR",
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


__all__ = [
    "DESCRIPTION", "EXIT_BROKEN_PIPE", "EXIT_INTERNAL_ERROR", "EXIT_USER_ERROR", "LOADING_HELP",
    "SCHEDULER_HELP", "UserError", "_bundle", "_check_output_file", "_parser", "_say",
    "_write_json", "cmd_convert", "cmd_doctor", "cmd_fetch", "cmd_info", "cmd_loadtest",
    "cmd_normalize", "cmd_report", "cmd_serve", "cmd_serve_sweep", "cmd_standin", "cmd_synth",
    "cmd_tune", "cmd_verify", "main",
]


if __name__ == "__main__":
    sys.exit(main())

