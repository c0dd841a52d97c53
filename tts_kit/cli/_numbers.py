"""Every numeric flag's range, in one table, checked before any command runs (the library
checks ``--steps``, ``--speed`` and ``--repeats`` itself).

Example:
    >>> import argparse
    >>> check_flags(argparse.Namespace(command="serve", timeout=float("nan")))
    Traceback (most recent call last):
    ...
    tts_kit.core.validate.InvalidNumber: --timeout nan: give a finite number > 0 s and <= 604800 s
"""

from __future__ import annotations

import argparse

from tts_kit.core.validate import MAX_THREADS, SERVE_FIELDS, Rule, serve_flag

_SECONDS = Rule(0, 7 * 86400, low_open=True, unit="s")
_MB = Rule(0, 1 << 30, low_open=True, unit="MB")
_THREADS = Rule(1, MAX_THREADS, integer=True)
#: A noise or weight seed: 32 bits, as numpy's legacy seeding takes.
_SEED = Rule(0, 2**32 - 1, integer=True)
#: A Piper voice's noise scale (``noise_scale``, ``noise_w``; 0: no noise), as the engine checks.
_NOISE = Rule(0, 2)
_LOAD = {"requests": Rule(1, 10**7, integer=True), "duration": _SECONDS,
         "timeout": _SECONDS, "seed": _SEED}

#: command -> argparse ``dest`` -> its range (None values are defaults: not checked).
NUMERIC_FLAGS: dict[str, dict[str, Rule]] = {
    # ServeConfig's own table, as a --config-json file is checked.
    "serve": {serve_flag(f): rule for f, rule in SERVE_FIELDS.items() if serve_flag(f)},
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
    """Check ``args``' numeric flags against `NUMERIC_FLAGS` (the flags not given: skipped)."""
    for dest, rule in NUMERIC_FLAGS.get(getattr(args, "command", ""), {}).items():
        value = getattr(args, dest, None)
        if value is not None:
            setattr(args, dest, rule.check(value, f"--{dest.replace('_', '-')}"))
