"""Strings from bundles, reports and users, made safe to show: control characters as
visible escapes (`term_safe`), the home directory as ``~`` (`display_path`, `hide_home`).
"""

from __future__ import annotations

import os
import re

# C0, DEL and C1 controls (8-bit CSI, OSC), the bidirectional marks, overrides and isolates
# ("Trojan Source") and lone surrogates (a file name's non-UTF-8 bytes, unprintable).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                      r"\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def term_safe(text: object, keep: str = "") -> str:
    """``text`` as a string whose control characters, but those in ``keep`` (``"\\n\\t"``),
    are visible escapes (``\\x1b``): for eyes, not for parsing back.

    Example:
        >>> term_safe("one\\ntwo"), term_safe("one\\ntwo", keep="\\n")
        ('one\\\\x0atwo', 'one\\ntwo')
        >>> term_safe("evil\\u202egnp.exe")  # a right-to-left override
        'evil\\\\u202egnp.exe'
    """
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else _escape(m), str(text))


def display_path(path: str | os.PathLike[str], full: bool = False) -> str:
    """``path`` as a shared document records it: ``~/...`` under the home directory, unless
    ``full``.

    Example:
        >>> display_path(os.path.expanduser("~/m/x")), display_path("/opt/m/x", full=True)
        ('~/m/x', '/opt/m/x')
    """
    text = os.fspath(path)
    return text if full else hide_home(text)


def hide_home(text: str) -> str:
    """Every mention of the home directory in ``text`` (a message, a log) as ``~``.

    Example:
        >>> hide_home("no such file: " + os.path.expanduser("~/m/x.onnx"))
        'no such file: ~/m/x.onnx'
        >>> hide_home(os.path.expanduser("~") + "2/x") == os.path.expanduser("~") + "2/x"
        True
    """
    home = os.path.expanduser("~")
    # As written and as resolved (bundle paths are resolved), the longer first.
    homes = {h.rstrip("/") for h in (home, os.path.realpath(home))} - {"", "~"}
    for home in sorted(homes, key=len, reverse=True):
        if home in text:
            # Only the directory itself, not /home/anna2 for /home/anna.
            text = re.sub(re.escape(home) + r"(?=/|$|[^\w.-])", "~", text)
    return text
