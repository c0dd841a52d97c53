"""Emulated small instances: the deployment article's instance table, measured here (lab:
the sweep's vCPU dimension and memory budget answer the product's question).

Each row is one isolated trial pinned to the instance's cores and killed past its memory
(``oom``); the article's figures travel alongside as `Instance.claimed`, never measured.

Example:
    >>> from lab.instances import (ARTICLE_INSTANCES, format_instance_table,
    ...     instance_table)
    >>> [i.name for i in ARTICLE_INSTANCES]
    ['1 vCPU / 1 GB', '2 vCPU / 2 GB', '4 vCPU / 4 GB']
    >>> from tts_kit.tuning.workload import Workload
    >>> rows = instance_table("standin-dir", ["lean"], Workload(repeats=1))  # doctest: +SKIP
    >>> print(format_instance_table(rows))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tts_kit.core import procfacts
from tts_kit.runtime.sessions import SessionPreset, get_preset
from tts_kit.tuning.records import (
    CPU_PERCENT,
    IDLE_RSS_MB,
    LOAD_S,
    P50_MS,
    PEAK_RSS_MB,
    RTF,
    format_value,
    heading,
)
from tts_kit.tuning.workload import Workload

#: The figures of an `Instance.claimed` row, in table order.
CLAIMED_KEYS: tuple[str, ...] = (IDLE_RSS_MB, PEAK_RSS_MB, CPU_PERCENT, RTF)


@dataclass(frozen=True)
class Instance:
    """One emulated machine: cores, memory, and what the article claims for it."""

    name: str
    """How the article names it, e.g. ``"2 vCPU / 2 GB"``."""
    cpus: int
    """Cores the trial is pinned to."""
    mem_mb: float
    """The trial is killed (status ``oom``) when its RSS passes this."""
    claimed: dict[str, Any] = field(default_factory=dict)
    """The article's row for the real model (`CLAIMED_KEYS`, plus ``outcome`` where it
    names one): quoted for comparison, not measured."""


#: The article's three instances and its table (seed 000, for the real model).
ARTICLE_INSTANCES: tuple[Instance, ...] = (
    Instance("1 vCPU / 1 GB", 1, 1024, {IDLE_RSS_MB: 280, PEAK_RSS_MB: 890,
                                        CPU_PERCENT: 98, RTF: 0.85,
                                        "outcome": "OOM-killed"}),
    Instance("2 vCPU / 2 GB", 2, 2048, {IDLE_RSS_MB: 320, PEAK_RSS_MB: 920,
                                        CPU_PERCENT: 48, RTF: 0.28}),
    Instance("4 vCPU / 4 GB", 4, 4096, {IDLE_RSS_MB: 350, PEAK_RSS_MB: 950,
                                        CPU_PERCENT: 25, RTF: 0.15}),
)

_ROW_KEYS = ("preset", "status", "error", LOAD_S, IDLE_RSS_MB, PEAK_RSS_MB, P50_MS,
             RTF, CPU_PERCENT, "threads", "steps", "repeats")


def instance_table(
    bundle: Any,
    presets: Sequence[str | SessionPreset] = ("supertonic-default",),
    workload: Workload | None = None,
    instances: Sequence[Instance] = ARTICLE_INSTANCES,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Measure each preset on each emulated instance; one row (a dict) per pair.

    A row has the instance, ``measured`` (False past this machine's cores), the trial's
    figures, ``cpu_share_percent`` (of the whole instance) and ``claimed`` (the article's).

    Example:
        >>> rows = instance_table("standin-dir", ["lean"], Workload(repeats=1))  # doctest: +SKIP
        >>> rows[0]["instance"], rows[0]["status"]  # doctest: +SKIP
        ('1 vCPU / 1 GB', 'ok')
    """
    from tqdm.auto import tqdm

    from tts_kit.tuning.tune import trial

    # 3 repeats keep the article's three rows to a few minutes on the full stand-in.
    workload = Workload(repeats=3) if workload is None else workload
    presets = [get_preset(p) for p in presets]  # unknown names fail before any trial
    # The affinity capped by the CPU quota: a 2-vCPU instance emulated in a 1.5-CPU
    # container would measure the quota's throttling, not the instance.
    cores = procfacts.usable_cores()
    pairs = [(inst, p) for inst in instances for p in presets]
    rows: list[dict[str, Any]] = []
    bar = tqdm(total=sum(inst.cpus <= cores for inst, _ in pairs), desc="instances",
               disable=not progress, leave=False)
    try:
        for inst, preset in pairs:
            row: dict[str, Any] = {"instance": inst.name, "instance_cpus": inst.cpus,
                                   "instance_mem_mb": inst.mem_mb, "claimed": dict(inst.claimed),
                                   "measured": inst.cpus <= cores}
            row.update({k: None for k in _ROW_KEYS})
            row["cpu_share_percent"] = None
            if not row["measured"]:
                row["preset"] = preset.name
                row["status"] = "not measured"
                row["error"] = f"needs {inst.cpus} cores, this process can use {cores}"
                rows.append(row)
                continue
            rec = trial(bundle, preset, workload, cpus=inst.cpus, mem_budget_mb=inst.mem_mb)
            row.update({k: rec.get(k) for k in _ROW_KEYS})
            if rec.get(CPU_PERCENT) is not None:
                row["cpu_share_percent"] = rec[CPU_PERCENT] / inst.cpus
            rows.append(row)
            bar.update()
    finally:
        bar.close()
    return rows


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_instance_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a text table, measured figures left, the article's claims right.

    Example:
        >>> row = {"instance": "1 vCPU / 1 GB", "preset": "lean", "status": "ok",
        ...        "measured": True, IDLE_RSS_MB: 60.0, PEAK_RSS_MB: 90.0,
        ...        "cpu_share_percent": 97.0, RTF: 0.01,
        ...        "claimed": ARTICLE_INSTANCES[0].claimed}
        >>> print(format_instance_table([row]).splitlines()[2][:75])
        1 vCPU / 1 GB  lean                ok             60       90     97  0.010
    """
    idle, peak, cpu, rtf = (heading(k) for k in (IDLE_RSS_MB, PEAK_RSS_MB, CPU_PERCENT,
                                                 RTF))
    head = (f"{'instance':<15}{'preset':<20}{'status':<8}{idle:>9}{peak:>9}{cpu:>7}{rtf:>7}"
            "   | claimed by the article: idle  peak  CPU %  RTF")
    lines = [head, "-" * len(head)]
    for r in rows:
        c = r.get("claimed") or {}
        # Right-aligned under the header's "idle  peak  CPU %  RTF".
        claimed = " " * 24 + " ".join(_fmt(c.get(k), f) for k, f in zip(
            CLAIMED_KEYS, (">5.0f", ">5.0f", ">6.0f", ">5.2f")))
        if not r.get("measured", True):
            cells = f"{r.get('preset') or '':<20}({r.get('error')})"
            lines.append(f"{r['instance']:<15}{cells:<63}|{claimed}")
            continue
        lines.append(
            f"{r['instance']:<15}{str(r.get('preset')):<20}{str(r.get('status')):<8}"
            f"{format_value('idle_rss_mb', r.get('idle_rss_mb')):>9}"
            f"{format_value('peak_rss_mb', r.get('peak_rss_mb')):>9}"
            f"{format_value('cpu_percent', r.get('cpu_share_percent')):>7}"
            f"{format_value('rtf', r.get('rtf')):>7}   |"
            f"{claimed}"
        )
    outcomes = [(i, i.claimed["outcome"]) for i in ARTICLE_INSTANCES if "outcome" in i.claimed]
    for inst, outcome in outcomes:
        measured = [f"{r.get('preset')} {r.get('status')}" for r in rows
                    if r["instance"] == inst.name and r.get("measured", True)]
        if measured:
            lines.append(f"claimed by the article for {inst.name}: {outcome}; measured: "
                         + ", ".join(measured))
    return "\n".join(lines)
