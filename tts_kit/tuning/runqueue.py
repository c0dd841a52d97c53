"""How long a process's threads waited for a core (``cpu_wait_percent``), from Linux's
``/proc/self/task/*/schedstat``: near zero alone on its cores, tens of percent beside work.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def thread_run_queue_ns() -> dict[str, tuple[int, int]] | None:
    """Thread id -> (on-CPU ns, waiting ns) of this process's live threads, or None."""
    base = "/proc/self/task"
    try:
        tids = os.listdir(base)
    except OSError:
        return None
    out: dict[str, tuple[int, int]] = {}
    for tid in tids:
        try:
            with open(f"{base}/{tid}/schedstat", encoding="ascii") as f:
                run, wait = f.read().split()[:2]
            out[tid] = (int(run), int(wait))
        except (OSError, ValueError):
            continue  # the thread ended between the listing and the read
    return out or None


def wait_percent(before: Mapping[str, tuple[int, int]] | None,
                 after: Mapping[str, tuple[int, int]] | None) -> float | None:
    """The share (%) of their ready time the threads waited for a core between two
    `thread_run_queue_ns` readings; None without readings.

    Example:
        >>> round(wait_percent({"1": (100, 0)}, {"1": (400, 100), "2": (100, 100)}), 1)
        33.3
    """
    if not before or not after:
        return None
    run = wait = 0
    for tid, (r1, w1) in after.items():
        r0, w0 = before.get(tid, (0, 0))
        run, wait = run + max(0, r1 - r0), wait + max(0, w1 - w0)
    return 100.0 * wait / (run + wait) if run + wait > 0 else None


def loadavg() -> float | None:
    """The machine's 1-minute load average (None where the OS has none).

    Example:
        >>> value = loadavg()
        >>> value is None or value >= 0
        True
    """
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None
