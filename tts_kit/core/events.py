"""Named events a process marks while it works ("load vocoder"), recorded beside RSS samples
for a memory timeline (`tts_kit.runtime.measure`); cheap while nobody records.

Example:
    >>> from tts_kit.core import events
    >>> with events.recording() as log:
    ...     events.mark("load vocoder")
    >>> [name for _, name in log]
    ['load vocoder']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_recorders: list[list[tuple[float, str]]] = []
_listeners: list[Callable[[float, str], None]] = []


def mark(name: str) -> None:
    """Record that ``name`` happened now (wall clock, ``time.time()``)."""
    t = time.time()
    for log in _recorders:
        log.append((t, name))
    for fn in list(_listeners):
        fn(t, name)


@contextmanager
def recording() -> Iterator[list[tuple[float, str]]]:
    """Collect every event marked inside the block as ``(time, name)`` pairs."""
    log: list[tuple[float, str]] = []
    _recorders.append(log)
    try:
        yield log
    finally:
        _recorders.remove(log)


def add_listener(fn: Callable[[float, str], None]) -> None:
    """Call ``fn(time, name)`` on every event (the harness uses this in its child)."""
    _listeners.append(fn)


def remove_listener(fn: Callable[[float, str], None]) -> None:
    """Stop calling ``fn``."""
    if fn in _listeners:
        _listeners.remove(fn)
