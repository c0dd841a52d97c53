"""The one vocabulary of trial records: keys (`P50_MS`, ...), the names, units and formats
every face shows (`COLUMNS`; docs/guide.md, "Record keys"), the Pareto front, machines."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tts_kit.core import contract

# Code elsewhere spells a key through these: a misspelt key fails at import.
PRESET, CPUS, LOADING, STEPS, BATCH_SIZE = "preset", "cpus", "loading", "steps", "batch_size"
MEM_BUDGET_MB, STATUS, ERROR, LOAD_S = "mem_budget_mb", "status", "error", "load_s"
IDLE_RSS_MB, AFTER_RSS_MB, PEAK_RSS_MB = "idle_rss_mb", "after_rss_mb", "peak_rss_mb"
FIRST_MS, P50_MS, P95_MS, P99_MS = "first_ms", "p50_ms", "p95_ms", "p99_ms"
RTF, CPU_PERCENT, CPU_MS, THREADS = "rtf", "cpu_percent", "cpu_ms", "threads"
LOAD_PEAK_RSS_MB, RUN_PEAK_RSS_MB = "load_peak_rss_mb", "run_peak_rss_mb"
AUDIO_S, REPEATS, WALL_S, STAGE_COSTS_MB = "audio_s", "repeats", "wall_s", "stage_costs_mb"
PARETO, TIMELINE, EVENTS, LATENCIES_MS = "pareto", "timeline", "events", "latencies_ms"
STAGE_LOAD_S, MACHINE, WORKER = "stage_load_s", "machine", "worker"
PREP_S, PREP_PEAK_RSS_MB = "prep_s", "prep_peak_rss_mb"
ARCHITECTURE, WORKERS, MODE, CONCURRENCY = "architecture", "workers", "mode", "concurrency"
RATE, REQUESTS, OK, ERRORS, TIMEOUTS = "rate", "requests", "ok", "errors", "timeouts"
REJECTED, RPS, AUDIO_RATE = "rejected", "rps", "audio_rate"
AUDIO_PER_CPU_S = "audio_per_cpu_s"
TTFA_P50_MS, TTFA_P95_MS, TTFA_P99_MS = "ttfa_p50_ms", "ttfa_p95_ms", "ttfa_p99_ms"
POOL_RSS_MB, POOL_PSS_MB, TTFA_MS, MEETS = "pool_rss_mb", "pool_pss_mb", "ttfa_ms", "meets"
CORE_SHARE, CPU_WAIT_PERCENT = "core_share", "cpu_wait_percent"
LOADAVG_BEFORE, LOADAVG_AFTER = "loadavg_before", "loadavg_after"
ROUNDS, P50_MIN_MS, P50_MAX_MS = "rounds", "p50_min_ms", "p50_max_ms"
PEAK_RSS_MIN_MB, PEAK_RSS_MAX_MB = "peak_rss_min_mb", "peak_rss_max_mb"
ROUND_LATENCIES_MS, ROUND_PEAK_RSS_MB = "round_latencies_ms", "round_peak_rss_mb"

#: Keys every trial record has (plus ``timeline``/``events``, and ``pareto`` in sweeps).
RECORD_KEYS: tuple[str, ...] = (
    "preset", "cpus", "loading", "steps", "batch_size", "mem_budget_mb", "status", "error",
    "load_s", "idle_rss_mb", "after_rss_mb", "peak_rss_mb", "first_ms", "p50_ms", "p95_ms", "rtf",
    "cpu_percent", "cpu_ms", "load_peak_rss_mb", "run_peak_rss_mb", "threads", "audio_s",
    "repeats", "wall_s", "stage_costs_mb", "core_share", "cpu_wait_percent", "loadavg_before",
    "loadavg_after", "prep_s", "prep_peak_rss_mb", "rounds", "p50_min_ms", "p50_max_ms",
    "peak_rss_min_mb", "peak_rss_max_mb",
)

#: Record keys that are not table columns: free text and nested data.
NON_COLUMN_KEYS: tuple[str, ...] = ("error", "stage_costs_mb", "timeline", "events",
                                    "latencies_ms", "stage_load_s", "machine", "worker",
                                    "ttfa_ms", ROUND_LATENCIES_MS, ROUND_PEAK_RSS_MB)


@dataclass(frozen=True)
class Column:
    """How one record key is named and shown.

    Example:
        >>> c = COLUMNS["idle_rss_mb"]
        >>> c.unit, c.short, format(812.4, c.fmt)
        ('MB', 'idle', '812')
    """

    key: str
    label: str  #: on an axis or in prose, without the unit (``"peak RSS"``)
    unit: str  #: ``ms``, ``s``, ``MB``, ``%`` or ``""``
    fmt: str  #: format spec of a table cell (``""``: ``str``)
    short: str = ""  #: table heading without the unit (default: the label)
    digits: int | None = None  #: decimals a data frame keeps (None: as is)
    missing: str = "-"  #: shown for None or NaN
    align: str = ">"  #: ``<`` for the configuration, ``>`` for figures


#: One `Column` per configuration or numeric key, in table order.
COLUMNS: dict[str, Column] = {c.key: c for c in (
    Column("preset", "preset", "", "", align="<"),
    Column("cpus", "cpus", "", "", missing="all", align="<"),
    Column("loading", "loading", "", "", align="<"),
    Column("batch_size", "batch size", "", "", short="bs", align="<"),
    Column("steps", "steps", "", "", align="<"),
    Column("mem_budget_mb", "memory budget", "MB", ".0f", short="budget", align="<"),
    Column("status", "status", "", "", align="<"),
    Column("load_s", "load time", "s", ".2f", short="load", digits=3),
    Column("idle_rss_mb", "idle RSS", "MB", ".0f", short="idle", digits=1),
    Column("after_rss_mb", "RSS after the requests", "MB", ".0f", short="after", digits=1),
    Column("peak_rss_mb", "peak RSS", "MB", ".0f", short="peak", digits=1),
    Column("first_ms", "first-call latency", "ms", ".0f", short="first", digits=1),
    Column("p50_ms", "p50 latency", "ms", ".0f", short="p50", digits=1),
    Column("p95_ms", "p95 latency", "ms", ".0f", short="p95", digits=1),
    Column("rtf", "RTF", "", ".3f", digits=4),
    Column("cpu_percent", "CPU", "%", ".0f", digits=0),
    Column("cpu_ms", "CPU time per call", "ms", ".0f", short="CPU", digits=1),
    Column("core_share", "share of its cores", "%", ".0f", short="cores", digits=0),
    Column("cpu_wait_percent", "waiting for a core", "%", ".0f", short="wait", digits=0),
    Column("loadavg_before", "load average before", "", ".1f", short="load", digits=2),
    Column("loadavg_after", "load average after", "", ".1f", short="load after", digits=2),
    Column("load_peak_rss_mb", "peak RSS while loading", "MB", ".0f", short="ld-peak", digits=1),
    Column("run_peak_rss_mb", "peak RSS while serving", "MB", ".0f", short="run-peak", digits=1),
    Column("threads", "threads", "", ""),
    Column("prep_s", "one-time preparation", "s", ".1f", short="prep", digits=2),
    Column("prep_peak_rss_mb", "peak RSS of the preparation", "MB", ".0f",
           short="prep-peak", digits=1),
    Column("rounds", "rounds", "", ""),
    Column("p50_min_ms", "lowest round's p50", "ms", ".0f", short="p50 min", digits=1),
    Column("p50_max_ms", "highest round's p50", "ms", ".0f", short="p50 max", digits=1),
    Column("peak_rss_min_mb", "lowest round's peak RSS", "MB", ".0f", short="peak min", digits=1),
    Column("peak_rss_max_mb", "highest round's peak RSS", "MB", ".0f", short="peak max", digits=1),
    Column("audio_s", "audio", "s", ".2f", digits=3),
    Column("repeats", "repeats", "", ""),
    Column("wall_s", "trial wall time", "s", ".1f", short="wall", digits=2),
    Column("pareto", "Pareto front", "", "", short="pareto", missing=""),
    # serving (tts_kit.serve)
    Column("architecture", "architecture", "", "", short="arch", align="<"),
    Column("workers", "workers", "", "", short="wk", align="<"),
    Column("mode", "load mode", "", "", short="mode", align="<"),
    Column("concurrency", "concurrency", "", "", short="conc", align="<"),
    Column("rate", "arrival rate", "/s", ".1f", short="rate", align="<"),
    Column("requests", "requests", "", "", short="sent"),
    Column("ok", "successful requests", "", "", short="ok"),
    Column("errors", "errors", "", "", short="err"),
    Column("timeouts", "timeouts", "", "", short="tmo"),
    Column("rejected", "rejected", "", "", short="429"),
    Column("rps", "throughput", "req/s", ".2f", short="rps", digits=3),
    Column("audio_rate", "audio throughput", "s/s", ".1f", short="audio", digits=2),
    Column("audio_per_cpu_s", "audio per CPU-second", "s/s", ".2f", short="audio/cpu", digits=3),
    Column("ttfa_p50_ms", "p50 time to first audio", "ms", ".0f", short="ttfa50", digits=1),
    Column("ttfa_p95_ms", "p95 time to first audio", "ms", ".0f", short="ttfa95", digits=1),
    Column("ttfa_p99_ms", "p99 time to first audio", "ms", ".0f", short="ttfa99", digits=1),
    Column("p99_ms", "p99 latency", "ms", ".0f", short="p99", digits=1),
    Column("pool_rss_mb", "pool RSS", "MB", ".0f", short="RSS", digits=1),
    Column("pool_pss_mb", "pool PSS", "MB", ".0f", short="PSS", digits=1),
    Column("meets", "meets the target", "", "", short="meets", missing=""),
)}

#: The configuration a record was measured with (left-aligned in tables).
CONFIG_KEYS: tuple[str, ...] = ("preset", "cpus", "loading", "steps", "batch_size",
                                "mem_budget_mb")
#: Latency figures (a rerun's noise is relative to them; see `tts_kit.report.Noise`).
LATENCY_KEYS: tuple[str, ...] = ("load_s", "first_ms", "p50_ms", "p95_ms", "rtf")
#: Memory figures (RSS).
MEMORY_KEYS: tuple[str, ...] = ("idle_rss_mb", "after_rss_mb", "peak_rss_mb")
#: The columns of `tts_kit.tuning.tune.format_table` (``pareto`` only where a record has it).
TABLE_KEYS: tuple[str, ...] = (
    "preset", "cpus", "loading", "batch_size", "steps", "status", "load_s", "idle_rss_mb",
    "after_rss_mb", "peak_rss_mb", "first_ms", "p50_ms", "p95_ms", "rtf", "cpu_percent",
    "cpu_ms", "pareto",
)
#: A record at a glance: the report's and the tuner widget's table, the notebooks' rows.
SUMMARY_KEYS: tuple[str, ...] = (
    "preset", "cpus", "loading", "steps", "status", "load_s", "idle_rss_mb", "after_rss_mb",
    "peak_rss_mb", "first_ms", "p50_ms", "p95_ms", "rtf", "cpu_percent", "pareto",
)
#: Costs two configurations are compared on (lower is better), e.g. as ratios.
COST_KEYS: tuple[str, ...] = ("p50_ms", "p95_ms", "first_ms", "cpu_ms", "load_s",
                              "idle_rss_mb", "load_peak_rss_mb", "run_peak_rss_mb",
                              "peak_rss_mb")
#: The axes of the Pareto front: latency against peak memory.
PARETO_X, PARETO_Y = "peak_rss_mb", "p50_ms"


def label(key: str) -> str:
    """The axis label of ``key``: its name and unit (unknown keys: the key itself).

    Example:
        >>> label("peak_rss_mb"), label("rtf"), label("snr_db")
        ('peak RSS (MB)', 'RTF', 'snr_db')
    """
    c = COLUMNS.get(key)
    return key if c is None else f"{c.label} ({c.unit})" if c.unit else c.label


def heading(key: str) -> str:
    """The table heading of ``key``: short name and unit (``"p50 ms"``, ``"CPU %"``).

    Example:
        >>> heading("cpu_percent"), heading("batch_size"), heading("other")
        ('CPU %', 'bs', 'other')
    """
    c = COLUMNS.get(key)
    return key if c is None else " ".join(filter(None, (c.short or c.label, c.unit)))


def to_number(value: Any) -> float | None:
    """A finite number as ``float``; None for None, NaN, infinities, booleans, non-numbers
    (JSON has no NaN: a missing figure is None everywhere).

    Example:
        >>> to_number(3), to_number(float("nan")), to_number(None), to_number("x")
        (3.0, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def format_value(key: str, value: Any) -> str:
    """One table cell: the key's format; ``-`` for None/NaN (``all`` for ``cpus``);
    booleans as ``*`` or blank.

    Example:
        >>> format_value("p50_ms", 12.34), format_value("cpus", None), format_value("pareto", True)
        ('12', 'all', '*')
    """
    c = COLUMNS.get(key)
    if isinstance(value, bool):
        return "*" if value else ""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return c.missing if c else "-"
    if c is None or not c.fmt or to_number(value) is None:
        return str(value)
    return format(value, c.fmt)


def table(records: Iterable[Mapping[str, Any]], keys: Sequence[str] = TABLE_KEYS) -> str:
    """The records as an aligned text table of ``keys`` (`heading`, `format_value`).

    Example:
        >>> print(table([{"preset": "lean", "p50_ms": 12.3}, {"preset": "a"}],
        ...             ["preset", "p50_ms"]))
        preset  p50 ms
        lean        12
        a            -
    """
    rows = [[heading(k) for k in keys]]
    rows += [[format_value(k, r.get(k)) for k in keys] for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(keys))]
    aligns = [COLUMNS[k].align if k in COLUMNS else "<" for k in keys]
    return "\n".join(
        "  ".join(f"{c:{a}{w}}" for c, a, w in zip(row, aligns, widths)).rstrip()
        for row in rows
    )


#: A compact table's columns (`frame`): the configuration and the figures that decide.
FRAME_KEYS: tuple[str, ...] = ("preset", "cpus", "loading", "status", "load_s", "first_ms",
                               "p50_ms", "peak_rss_mb", "idle_rss_mb", "rtf")


def frame(records: Iterable[Mapping[str, Any]], keys: Sequence[str] = FRAME_KEYS) -> Any:
    """Records as a compact pandas table, headed and rounded as shown, the front ``*``.

    Example:
        >>> df = frame([{"preset": "lean", "cpus": 1, "p50_ms": 1210.4, "pareto": True}],
        ...            ("preset", "cpus", "p50_ms", "pareto"))
        >>> list(df.columns), int(df.iloc[0]["p50 ms"]), df.iloc[0]["pareto"]
        (['preset', 'cpus', 'p50 ms', 'pareto'], 1210, '*')
    """
    import pandas as pd

    records = list(records)
    data: dict[str, Any] = {}
    for key in keys:
        values = [r.get(key) for r in records]
        fmt = COLUMNS[key].fmt if key in COLUMNS else ""
        if key == "pareto":
            data[heading(key)] = ["*" if v else "" for v in values]
        elif fmt.endswith("f"):  # rounded as shown: ".0f" as whole numbers
            digits = int(fmt[1:-1])
            rounded = [None if to_number(v) is None else round(float(v), digits or None)
                       for v in values]
            data[heading(key)] = pd.array(rounded, dtype="Float64" if digits else "Int64")
        else:
            data[heading(key)] = values
    return pd.DataFrame(data)


class Record(dict):
    """One trial's record, a plain dict that shows itself as one line (a table row in a
    notebook) instead of every field and timeline.

    Example:
        >>> Record({"preset": "lean", "cpus": 1, "loading": "paged", "status": "ok",
        ...         "p50_ms": 1210.4, "peak_rss_mb": 331.2, "timeline": [(0, 1)] * 500})
        Record(lean @ 1 vCPU, paged: ok, p50 1210 ms, peak 331 MB; 7 fields)
    """

    def summary(self) -> str:
        """The one-line form: configuration, status, p50 and peak RSS."""
        head = f"{self.get('preset')} @ {format_value('cpus', self.get('cpus'))} vCPU"
        if self.get("loading") not in (None, "resident"):
            head += f", {self.get('loading')}"
        figures = [str(self.get("status", "?"))]
        for key, name in (("p50_ms", "p50"), ("peak_rss_mb", "peak")):
            if to_number(self.get(key)) is not None:
                figures.append(f"{name} {format_value(key, self[key])} {COLUMNS[key].unit}")
        return f"{head}: {', '.join(figures)}; {len(self)} fields"

    def __repr__(self) -> str:
        return f"Record({self.summary()})"

    def _repr_html_(self) -> str:
        return frame([self]).to_html(index=False)


def select(records: Iterable[Mapping[str, Any]],
           keys: Sequence[str] = SUMMARY_KEYS) -> list[dict[str, Any]]:
    """Rows of ``keys`` (those some record has, in order), e.g. for a pandas DataFrame.

    Example:
        >>> select([{"preset": "lean", "p50_ms": 12.3, "timeline": []}])
        [{'preset': 'lean', 'p50_ms': 12.3}]
    """
    records = list(records)
    present = [k for k in keys if any(k in r for r in records)]
    return [{k: r.get(k) for k in present} for r in records]


def pareto_front(records: Sequence[Mapping[str, Any]], x: str = PARETO_X,
                 y: str = PARETO_Y) -> list[int]:
    """Indices of the finished records no other finished record beats on both ``x`` and
    ``y`` (lower is better); no ``status`` counts as finished, no ``x`` or ``y`` as off it.

    Example:
        >>> pareto_front([{"peak_rss_mb": 1, "p50_ms": 5}, {"peak_rss_mb": 2, "p50_ms": 6},
        ...               {"peak_rss_mb": 3, "p50_ms": 1}])
        [0, 2]
    """
    pts = [(i, r[x], r[y]) for i, r in enumerate(records)
           if r.get("status", "ok") == "ok" and r.get(x) is not None and r.get(y) is not None]
    return [i for i, xi, yi in pts
            if not any(xj <= xi and yj <= yi and (xj < xi or yj < yi) for _, xj, yj in pts)]


def format_timings(timings: Mapping[str, float]) -> list[tuple[str, float]]:
    """``(stage, ms)`` for text processing and each stage a synthesis timed, in pipeline order.

    Example:
        >>> format_timings({"vocoder": 0.02, "text": 0.001, "total": 0.03})
        [('text', 1.0), ('vocoder', 20.0)]
        >>> format_timings({"voice": 0.05, "text": 0.001, "total": 0.06})  # a Piper voice
        [('text', 1.0), ('voice', 50.0)]
    """
    known = ("text", *contract.STAGES)  # another family's stages follow, as timed
    order = [*known, *(s for s in timings if s not in known and s != "total")]
    return [(s, 1000 * float(timings[s])) for s in order if s in timings]


def machine_label(env: Mapping[str, Any]) -> str:
    """One line naming a machine by what decides its figures: CPU, usable cores (capped by
    the CPU quota), memory (the cgroup limit where lower); one instance type reads the same.

    Example:
        >>> machine_label({"cpu_model": "Xeon E5", "cpus_available": 4, "cpu_count": 4,
        ...                "cgroup_cpu_quota": 2.0, "memory_total_mb": 7812.5,
        ...                "cgroup_memory_limit_mb": 2048.0, "onnxruntime": "1.20.1"})
        'Xeon E5, 2 of 4 cores (quota 2), 2048 MB (cgroup limit), ORT 1.20.1'
    """
    cores = int(env.get("cpus_available") or env.get("cpu_count") or 0)
    quota = to_number(env.get("cgroup_cpu_quota"))
    usable = min(cores, max(1, int(quota))) if quota is not None else cores
    parts = [str(env.get("cpu_model") or "unknown CPU")]
    total = env.get("cpu_count")
    noun = "core" if usable == 1 else "cores"
    cpu_txt = f"{usable} of {total} {noun}" if total and total != usable else f"{usable} {noun}"
    parts.append(cpu_txt + (f" (quota {quota:g})" if quota is not None else ""))
    limit = to_number(env.get("cgroup_memory_limit_mb"))
    total_mb = to_number(env.get("memory_total_mb"))
    if limit is not None and (total_mb is None or limit < total_mb):
        parts.append(f"{limit:.0f} MB (cgroup limit)")
    elif total_mb is not None:
        parts.append(f"{total_mb:.0f} MB")
    if env.get("onnxruntime"):
        parts.append(f"ORT {env['onnxruntime']}")
    return ", ".join(parts)


def by_machine(records: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The records grouped by `machine_label` of their ``machine`` (without one: their worker
    was lost); {} when none has one.

    Example:
        >>> env = {"cpu_model": "A", "cpus_available": 1, "memory_total_mb": 1024}
        >>> groups = by_machine([{"preset": "a", "machine": env}, {"preset": "b"}])
        >>> {k: [r["preset"] for r in v] for k, v in groups.items()}
        {'A, 1 core, 1024 MB': ['a'], 'unknown machine (worker lost)': ['b']}
    """
    records = [dict(r) for r in records]
    if not any(isinstance(r.get("machine"), Mapping) for r in records):
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        env = r.get("machine")
        key = machine_label(env) if isinstance(env, Mapping) else "unknown machine (worker lost)"
        out.setdefault(key, []).append(r)
    return out
