"""The one way a user's path is checked and a user's text or JSON file is read: what is
wrong (an unknown user's ``~``, not UTF-8, JSON nested too deep ...) is one `TtsKitError`
line naming the file and the fix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tts_kit.core.errors import TtsKitError


def check_path(value: str, flag: str) -> Path:
    """``value`` as a path with ``~`` expanded; one line for an empty one, a name that is
    not UTF-8 or an unknown user.

    Example:
        >>> check_path("", "--json")
        Traceback (most recent call last):
        ...
        tts_kit.TtsKitError: --json '': empty; give a path
    """
    if not value:
        raise TtsKitError(f"{flag} '': empty; give a path")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # bytes Python kept as surrogates: ONNX Runtime takes no such
        raise TtsKitError(f"{flag} {value!r}: not UTF-8 (the name holds other bytes); "
                          "rename it, or choose another path") from None
    if value.startswith("~") and os.path.expanduser(value) == value:
        user = value[1:].split("/", 1)[0]
        raise TtsKitError(f"{flag} {value!r}: no user {user!r} to find a home directory "
                          "for; write the path without ~ or with a user that exists")
    return Path(os.path.expanduser(value))


def read_text(path: str | os.PathLike[str], what: str, error: type[TtsKitError] = TtsKitError,
              ) -> str:
    """The UTF-8 text of the file at ``path``, else ``error`` starting ``what`` (the file as
    the user knows it: ``--texts t.txt``). OSErrors are left to the caller's policy.

    Example:
        >>> read_text(__file__, "this module").startswith(chr(34) * 3)
        True
    """
    raw = check_path(os.fspath(path), what).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{what}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at {exc.start}); "
                    "save it as UTF-8") from None


def read_json(path: str | os.PathLike[str], what: str, hint: str,
              error: type[TtsKitError] = TtsKitError) -> Any:
    """The JSON in the file at ``path``; ``error`` starting ``what`` and ending ``hint``
    (the fix) when it is not UTF-8, not JSON, too deep, or holds a number too long to read.

    Example:
        >>> read_json(__file__, "this module", "give a JSON file")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tts_kit.TtsKitError: this module: not valid JSON (Extra data: ...); give a JSON file
    """
    text = read_text(path, what, error)
    try:
        return json.loads(text)
    except RecursionError:  # json's decoder recurses per level: 200k '[' exhaust the stack
        raise error(f"{what}: JSON nested too deeply; {hint}") from None
    except json.JSONDecodeError as exc:
        raise error(f"{what}: not valid JSON ({exc}); {hint}") from None
    except ValueError:  # int() of a number longer than sys.get_int_max_str_digits()
        raise error(f"{what}: holds an integer of more than 4300 digits, which no real "
                    f"value has; {hint}") from None


__all__ = ["check_path", "read_json", "read_text"]
