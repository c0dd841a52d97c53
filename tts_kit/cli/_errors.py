"""The ``tts-kit`` error policy: a `TtsKitError` or an `OSError` of the user's environment
is one line, exit 2; anything else is a bug: one line and a log of its traceback, exit 70;
``--debug`` prints the traceback too (`exit_status`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence

from tts_kit.cli._common import _say
from tts_kit.core.errors import TtsKitError
from tts_kit.core.textsafe import term_safe
from tts_kit.core.version import __version__

#: A problem the user can fix (bad input, the environment): one line naming the fix.
EXIT_USER_ERROR = 2
#: A bug in tts_kit: an exception no check anticipated (``EX_SOFTWARE``).
EXIT_BUG = 70
#: Interrupted (Ctrl-C): what a shell reports for SIGINT (128 + 2).
EXIT_INTERRUPTED = 130
#: The reader of our output went away (``| head``): 128 + SIGPIPE.
EXIT_BROKEN_PIPE = 141

#: Ctrl-Cs that landed in a weakref's or finaliser's callback, kept for `interrupted`.
_LOST_INTERRUPTS: list[BaseException] = []


def unraisable(hook: object) -> object:
    """A `sys.unraisablehook` that keeps a KeyboardInterrupt (`interrupted`) and passes
    the rest to ``hook``.

    Example:
        >>> callable(unraisable(sys.unraisablehook))
        True
    """
    def keep(info: object) -> None:
        if isinstance(getattr(info, "exc_value", None), KeyboardInterrupt):
            _LOST_INTERRUPTS.append(info.exc_value)  # type: ignore[attr-defined]
        else:
            hook(info)  # type: ignore[operator]
    return keep


def interrupted() -> bool:
    """True once per Ctrl-C that a callback swallowed while the command ran.

    Example:
        >>> interrupted()
        False
    """
    lost = bool(_LOST_INTERRUPTS)
    _LOST_INTERRUPTS.clear()
    return lost


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


def exit_status(command: str, exc: Exception, *, debug: bool = False,
                shown: Sequence[str] = ()) -> int:
    """Say what went wrong in ``command`` on stderr; its exit status. ``shown``: the user's
    values (a path with a newline) to escape in the message, not cut at their newline.

    Example:
        >>> with contextlib.redirect_stderr(sys.stdout):
        ...     exit_status("info", FileNotFoundError(2, "No such file or directory", "/x"))
        tts-kit info: error: /x: No such file or directory; check the path
        2
    """
    if debug:
        _say("".join(traceback.format_exception(exc)).rstrip("\n"), file=sys.stderr)
    if isinstance(exc, TtsKitError):
        message = str(exc)
        for value in shown:
            message = message.replace(value, term_safe(value))
        text: str | None = _first_line(message) or type(exc).__name__
    else:
        text = _os_error_text(exc) if isinstance(exc, OSError) else None
    if text is None:
        return _bug(command, exc, debug)
    _say(term_safe(f"tts-kit {command}: error: {text}"), file=sys.stderr)
    return EXIT_USER_ERROR


def _first_line(exc: BaseException | str) -> str:
    """The message's first line that says something ("" for none)."""
    return next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")


def _bug(command: str, exc: BaseException, debug: bool) -> int:
    """A bug: one line naming the exception; without ``debug``, the traceback in a log."""
    log = ""
    if not debug:  # the disk may be what failed: the one line still goes out
        with contextlib.suppress(OSError):
            fd, name = tempfile.mkstemp(prefix="tts-kit-error-", suffix=".log")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(f"tts-kit {__version__} {command}\n")
                fh.write("".join(traceback.format_exception(exc)))
            log = f" (full log: {name})"
    where = ("the traceback is above" if debug else
             f"`tts-kit --debug {command} ...` prints the traceback")
    print(term_safe(f"tts-kit {command}: internal error: {type(exc).__name__}: "
                    f"{_first_line(exc)}"[:2000])
          + f"{log}; this is a bug in tts_kit, please report it; {where}", file=sys.stderr)
    return EXIT_BUG
