"""One check for every number a user gives, from a flag or a file: finite, in range, with
units (`check_number`; `Rule` holds one range, so a table of them reads like documentation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tts_kit.core.errors import TtsKitError


class InvalidNumber(TtsKitError):
    """A number out of its range, not finite, or not a number: one line naming all three.

    Example:
        >>> str(InvalidNumber("--port 99999: give a whole number from 0 to 65535"))
        '--port 99999: give a whole number from 0 to 65535'
    """


@dataclass(frozen=True)
class Rule:
    """The range of one number: ``low``/``high`` (None: open), whether ``low`` itself is
    refused, whether it must be whole, and its unit (``s``, ``MB``, ``ms``; for messages).

    Example:
        >>> Rule(low=0, low_open=True, unit="s").describe()
        'a finite number > 0 s'
        >>> Rule(low=0, high=65535, integer=True).check(80, "--port")
        80
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    integer: bool = False
    unit: str = ""

    def describe(self) -> str:
        """What a valid value is, in words (the second half of the error message)."""
        kind = "a whole number" if self.integer else "a finite number"
        unit = f" {self.unit}" if self.unit else ""
        if self.low is not None and self.high is not None and not self.low_open:
            return f"{kind} from {_show(self.low)} to {_show(self.high)}{unit}"
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {_show(self.low)}{unit}")
        if self.high is not None:
            parts.append(f"<= {_show(self.high)}{unit}")
        return f"{kind} {' and '.join(parts)}".rstrip() if parts else f"{kind}{unit}"

    def check(self, value: Any, name: str) -> Any:
        """``value`` (a number or its text) as an int or float in range; else `InvalidNumber`
        naming ``name``, the value and `describe` (booleans are not numbers; ``2.0`` is whole).
        """
        shown = str(value) if isinstance(value, (int, float, str)) else repr(value)
        fail = InvalidNumber(f"{name} {shown[:40]}: give {self.describe()}")
        if isinstance(value, str):
            try:
                value = int(value) if self.integer and value.strip().lstrip("+-").isdigit() \
                    else float(value)
            except ValueError:
                raise fail from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail
        if isinstance(value, float) and not math.isfinite(value):
            raise fail
        if self.integer and isinstance(value, float):
            if not value.is_integer():
                raise fail
            value = int(value)
        below = self.low is not None and (value < self.low or (self.low_open and value == self.low))
        if below or (self.high is not None and value > self.high):
            raise fail
        return value


def _show(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def check_number(value: Any, name: str, *, low: float | None = None,
                 high: float | None = None, low_open: bool = False, integer: bool = False,
                 unit: str = "") -> Any:
    """``value`` checked against ``Rule(low, high, low_open, integer, unit)`` (`Rule.check`).

    Example:
        >>> check_number("1e3", "--mem-budget", low=0, low_open=True, unit="MB")
        1000.0
    """
    return Rule(low, high, low_open, integer, unit).check(value, name)


def check_fields(data: dict[str, Any], rules: dict[str, Rule], where: str) -> dict[str, Any]:
    """Each field of ``data`` that ``rules`` names (and is not None) checked in place;
    ``where`` prefixes the field's name in the message.

    Example:
        >>> check_fields({"intra_op_num_threads": 100000}, THREAD_FIELDS, "preset 'x'")
        Traceback (most recent call last):
        ...
        tts_kit.core.validate.InvalidNumber: preset 'x' intra_op_num_threads 100000: give ...
    """
    for key, rule in rules.items():
        if data.get(key) is not None:
            data[key] = rule.check(data[key], f"{where} {key}")
    return data


#: The most threads a session, a trial or a server worker may be given (more is a typo).
MAX_THREADS = 1024
#: A preset's thread fields (0: ONNX Runtime's own default).
THREAD_FIELDS = {
    "intra_op_num_threads": Rule(0, MAX_THREADS, integer=True),
    "inter_op_num_threads": Rule(0, MAX_THREADS, integer=True),
}
_SECONDS = Rule(0, 7 * 86400, low_open=True, unit="s")
#: `tts_kit.serve.ServeConfig`'s numbers: the one table ``tts-kit serve``'s flags and a
#: ``--config-json`` file are checked against.
SERVE_FIELDS: dict[str, Rule] = dict(
    workers=Rule(1, 1024, integer=True), threads=Rule(1, MAX_THREADS, integer=True),
    max_queue=Rule(0, 10**6, integer=True), max_requests=Rule(1, 10**12, integer=True),
    timeout_s=_SECONDS, header_timeout_s=_SECONDS, body_timeout_s=_SECONDS,
    max_rss_mb=Rule(0, 1 << 30, low_open=True, unit="MB"), port=Rule(0, 65535, integer=True),
    max_chars=Rule(1, 10**7, integer=True), first_chunk_chars=Rule(0, 10**7, integer=True),
    max_chunk_chars=Rule(0, 10**7, integer=True), limit_concurrency=Rule(0, 10**6, integer=True),
    max_body_bytes=Rule(1, 1 << 30, integer=True, unit="bytes"))


def serve_flag(field: str) -> str | None:
    """The ``tts-kit serve`` option's ``dest`` for `ServeConfig` field ``field`` (None: no flag).

    Example:
        >>> serve_flag("timeout_s"), serve_flag("max_rss_mb"), serve_flag("max_body_bytes")
        ('timeout', 'max_rss_mb', None)
    """
    return None if field in ("max_body_bytes", "lang") else field.removesuffix("_s")
