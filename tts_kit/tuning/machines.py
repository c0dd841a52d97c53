"""Records grouped by the machine they ran on: a sweep on several machines
(`tts_kit.tuning.cluster`) is compared machine by machine, never across them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tts_kit.tuning.records import machine_label

#: `by_machine`'s group for records without ``machine`` (their worker was lost).
UNKNOWN_MACHINE = "unknown machine (worker lost)"


def by_machine(records: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The records grouped by `machine_label` of their ``machine``; {} when none has one.

    Example:
        >>> env = {"cpu_model": "A", "cpus_available": 1, "memory_total_mb": 1024}
        >>> groups = by_machine([{"preset": "a", "machine": env}, {"preset": "b"}])
        >>> {k: [r["preset"] for r in v] for k, v in groups.items()}
        {'A, 1 core, 1024 MB': ['a'], 'unknown machine (worker lost)': ['b']}
        >>> by_machine([{"preset": "a"}])
        {}
    """
    records = [dict(r) for r in records]
    if not any(isinstance(r.get("machine"), Mapping) for r in records):
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        env = r.get("machine")
        key = machine_label(env) if isinstance(env, Mapping) else UNKNOWN_MACHINE
        out.setdefault(key, []).append(r)
    return out
