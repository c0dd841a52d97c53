"""The stand-in beside the seed articles' tables, as ratios (stand-in / seed): research
on how realistic the stand-in is (bench/instance_table.py, bench/standin_realism.py; not
in the package).

Seed 000's instance table and seed 004's memory split (claims, never measurements) come
from the seed files or the packaged ``seed_claims.json``; `seed_check` measures the
stand-in's rows and split and sets each beside the seed's.

Example:
    >>> claims = seed_claims()
    >>> [r["instance"] for r in claims.instances], claims.split["weights"]
    (['1 vCPU / 1 GB', '2 vCPU / 2 GB', '4 vCPU / 4 GB'], 40.0)
    >>> check = seed_check("standin-dir", Workload(repeats=1))  # doctest: +SKIP
    >>> print(check.table())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tts_kit.core.errors import TtsKitError
from tts_kit.core.textsafe import display_path
from tts_kit.tuning.records import IDLE_RSS_MB, PEAK_RSS_MB, RTF, heading
from tts_kit.tuning.workload import Workload

#: A copy of the seeds' tables (used when the seed files are absent).
CLAIMS_FILE = Path(__file__).with_name("seed_claims.json")
#: Where the seed files lie in a checkout: ``../shared/seeds`` beside the project's root.
SEEDS_DIR = Path(__file__).resolve().parents[3] / "shared" / "seeds"
#: The seed 000 figures set beside the stand-in's, in table order.
COMPARED: tuple[str, ...] = (IDLE_RSS_MB, PEAK_RSS_MB, RTF)
#: Seed 004's components (as its table names them) in the project's words.
SPLIT_NAMES: dict[str, str] = {"模型权重": "weights", "推理缓存": "inference cache",
                               "输入预处理": "preprocessing", "批处理缓冲区": "batch buffers",
                               "运行时开销": "runtime"}
#: The measured split's parts (`tts_kit.runtime.loading.memory_split`) and the seed's
#: components each one covers: a stage's run memory holds its caches, its text tensors
#: and, at batch 1, its only buffers.
SPLIT_MAP: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("weights and sessions (load)", ("weights",)),
    ("working memory (run)", ("inference cache", "preprocessing", "batch buffers")),
    ("runtime", ("runtime",)),
)


@dataclass(frozen=True)
class SeedClaims:
    """The seeds' tables: seed 000's instance rows and seed 004's split (percent)."""

    instances: list[dict[str, Any]]
    """One row per instance: ``instance``, ``cpus``, ``mem_mb``, ``idle_rss_mb``,
    ``peak_rss_mb``, ``cpu_percent``, ``rtf``."""
    split: dict[str, float]
    """Component -> percent of memory."""
    sources: dict[str, str] = field(default_factory=dict)
    """Where each table came from (``instances``, ``split``)."""


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Every ``|``-delimited table in ``text``: rows of stripped cells, separator rows left out.

    Example:
        >>> markdown_tables("x\\n| a | b |\\n|---|---|\\n| 1 | 2 |\\ny")
        [[['a', 'b'], ['1', '2']]]
    """
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        s = line.strip()
        if s.startswith("|") and s.endswith("|") and len(s) > 1:
            cells = [c.strip() for c in s[1:-1].split("|")]
            if not all(re.fullmatch(r":?-{3,}:?", c) for c in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def _number(cell: str) -> float:
    m = re.search(r"\d+(?:\.\d+)?", cell)
    if m is None:
        raise TtsKitError(f"no number in the seed's cell {cell!r}")
    return float(m.group())


def parse_instances(text: str) -> list[dict[str, Any]]:
    """Seed 000's instance table (the one whose header names RTF), parsed.

    Example:
        >>> t = ("| spec | idle | peak | CPU | RTF |\\n|---|---|---|---|---|\\n"
        ...      "| 2 vCPU / 2GB RAM | 320 MB | 920 MB | 48% | 0.28 (...) |")
        >>> parse_instances(t)[0]["instance"], parse_instances(t)[0]["rtf"]
        ('2 vCPU / 2 GB', 0.28)
    """
    for table in markdown_tables(text):
        if len(table) > 1 and len(table[0]) >= 5 and "RTF" in table[0][4]:
            rows = []
            for cells in table[1:]:
                m = re.search(r"(\d+)\s*vCPU\s*/\s*(\d+)\s*GB", cells[0])
                if m is None:
                    raise TtsKitError(f"seed 000: not an instance: {cells[0]!r}")
                cpus, gb = int(m.group(1)), int(m.group(2))
                rows.append({"instance": f"{cpus} vCPU / {gb} GB", "cpus": cpus,
                             "mem_mb": 1024 * gb, IDLE_RSS_MB: _number(cells[1]),
                             PEAK_RSS_MB: _number(cells[2]), "cpu_percent": _number(cells[3]),
                             RTF: _number(cells[4])})
            return rows
    raise TtsKitError("seed 000: no table with an RTF column")


def parse_split(text: str) -> dict[str, float]:
    """Seed 004's memory split (component -> percent), named as `SPLIT_NAMES` says.

    Example:
        >>> parse_split("| 组件 | 占比 |\\n|---|---|\\n| 模型权重 | ~40% |\\n| 运行时开销 | ~5% |")
        {'weights': 40.0, 'runtime': 5.0}
    """
    for table in markdown_tables(text):
        names = [r[0] for r in table[1:] if r]
        if names and all(n in SPLIT_NAMES for n in names):
            return {SPLIT_NAMES[r[0]]: _number(r[1]) for r in table[1:]}
    raise TtsKitError("seed 004: no memory-split table")


def seed_claims(seeds_dir: str | Path | None = None) -> SeedClaims:
    """The seeds' tables, from ``seeds_dir`` when there, else the packaged `CLAIMS_FILE`.

    Example:
        >>> seed_claims("/nowhere").sources["split"].startswith("packaged copy")
        True
    """
    where = Path(seeds_dir) if seeds_dir is not None else SEEDS_DIR
    f000, f004 = (sorted(where.glob(f"{n}_*.txt")) if where.is_dir() else []
                  for n in ("000", "004"))
    if f000 and f004:
        return SeedClaims(parse_instances(f000[0].read_text(encoding="utf-8")),
                          parse_split(f004[0].read_text(encoding="utf-8")),
                          {"instances": f"parsed from {display_path(f000[0])}",
                           "split": f"parsed from {display_path(f004[0])}"})
    data = json.loads(CLAIMS_FILE.read_text(encoding="utf-8"))
    return SeedClaims(data["instances"]["rows"], data["split"]["percent"],
                      {k: f"packaged copy of {data[k]['source']}"
                       for k in ("instances", "split")})


def _ratio(ours: Any, seed: Any) -> float | None:
    if ours is None or seed in (None, 0) or not math.isfinite(float(ours)):
        return None
    return float(ours) / float(seed)


def instance_ratios(rows: Sequence[Mapping[str, Any]], claims: SeedClaims) -> list[dict[str, Any]]:
    """Per seed instance: the stand-in's idle RSS, peak RSS and RTF beside the seed's, and
    their ratio (``rows``: `instance_table` rows); ``status`` says why one has no figures.

    Example:
        >>> ratios = instance_ratios([{"instance": "2 vCPU / 2 GB", "measured": True,
        ...     "status": "ok", IDLE_RSS_MB: 160.0, PEAK_RSS_MB: 460.0, RTF: 0.56}],
        ...     seed_claims("/nowhere"))
        >>> ratios[1][f"{RTF} ratio"], ratios[2]["status"]
        (2.0, 'not measured')
    """
    by_name = {r.get("instance"): r for r in rows}
    out = []
    for seed in claims.instances:
        got = by_name.get(seed["instance"], {})
        ok = bool(got.get("measured", bool(got))) and got.get("status") == "ok"
        status = ("not measurable here" if got.get("measured") is False
                  else got.get("status") or "not measured")
        row: dict[str, Any] = {"instance": seed["instance"], "cpus": seed["cpus"],
                               "status": status,
                               "note": got.get("error") or ""}
        for k in COMPARED:
            ours = got.get(k) if ok else None
            row[k], row[f"seed {k}"], row[f"{k} ratio"] = ours, seed[k], _ratio(ours, seed[k])
        out.append(row)
    return out


def split_ratios(measured: Mapping[str, float], claims: SeedClaims) -> list[dict[str, Any]]:
    """The stand-in's memory split beside the seed's, as `SPLIT_MAP` pairs them, with the ratio.

    Example:
        >>> rows = split_ratios({"weights and sessions (load)": 60.0,
        ...     "working memory (run)": 30.0, "runtime": 10.0}, seed_claims("/nowhere"))
        >>> [(r["seed components"], round(r["ratio"], 2)) for r in rows][0]
        ('weights', 1.5)
    """
    out = []
    for part, covers in SPLIT_MAP:
        seed = sum(claims.split.get(c, 0.0) for c in covers)
        ours = measured.get(part)
        out.append({"stand-in part": part, "stand-in %": ours,
                    "seed components": " + ".join(covers), "seed %": seed,
                    "ratio": _ratio(ours, seed)})
    return out


def _cell(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


@dataclass
class SeedCheck:
    """The stand-in beside both seeds: `instance_ratios` and `split_ratios` rows."""

    instances: list[dict[str, Any]]
    split: list[dict[str, Any]]
    sources: dict[str, str]
    preset: str = ""
    cores: int = 0
    """Cores this machine let the trials use."""

    def table(self) -> str:
        """Both comparisons as aligned text (``-``: not measured; the status says why).

        Example:
            >>> c = seed_claims("/nowhere")
            >>> line = SeedCheck(instance_ratios([], c), [], c.sources).table().splitlines()[2]
            >>> line.split()[5:]
            ['-', '280', '-', '-', '890', '-', '-', '0.85', '-', 'not', 'measured']
        """
        lines = [f"{'instance':<14}{'idle':>7}{'seed':>7}{'ratio':>6}{'peak':>9}{'seed':>7}"
                 f"{'ratio':>6}{'RTF':>8}{'seed':>7}{'ratio':>6}  status",
                 "-" * 88]
        for r in self.instances:
            figs = "".join(
                f"{_cell(r[k], f):>{w}}{_cell(r[f'seed {k}'], f):>7}"
                f"{_cell(r[f'{k} ratio'], '.2f'):>6}"
                for k, f, w in ((IDLE_RSS_MB, ".0f", 7), (PEAK_RSS_MB, ".0f", 9),
                                (RTF, ".2f", 8)))
            note = f" ({r['note']})" if r["note"] else ""
            lines.append(f"{r['instance']:<14}{figs}  {r['status']}{note}")
        if self.split:
            lines += ["", f"{'memory split':<30}{'stand-in %':>11}{'seed %':>8}{'ratio':>7}"
                      "  seed components"]
            for r in self.split:
                lines.append(f"{r['stand-in part']:<30}{_cell(r['stand-in %'], '.1f'):>11}"
                             f"{r['seed %']:>8.1f}{_cell(r['ratio'], '.2f'):>7}"
                             f"  {r['seed components']}")
        lines += [f"seed {k}: {v}" for k, v in self.sources.items()]
        return "\n".join(lines)

    def dataframes(self) -> tuple[Any, Any]:
        """(instances, split) as pandas DataFrames, as compact as `table`: per figure the
        stand-in, the seed and their ratio under one heading, rounded.

        Example:
            >>> c = seed_claims("/nowhere")
            >>> inst, split = SeedCheck(instance_ratios([], c), [], c.sources).dataframes()
            >>> list(inst.columns)[:2], len(split)
            ([('idle MB', 'stand-in'), ('idle MB', 'seed')], 0)
        """
        import pandas as pd

        digits = {IDLE_RSS_MB: 0, PEAK_RSS_MB: 0, RTF: 2}
        inst = pd.DataFrame(
            {(heading(k), part): [None if r[col] is None else round(r[col], n)
                                  for r in self.instances]
             for k in COMPARED
             for part, col, n in (("stand-in", k, digits.get(k, 2)),
                                  ("seed", f"seed {k}", digits.get(k, 2)),
                                  ("ratio", f"{k} ratio", 2))},
            index=pd.Index([r["instance"] for r in self.instances], name="instance"))
        inst[("", "status")] = [r["status"] + (f" ({r['note']})" if r["note"] else "")
                                for r in self.instances]
        inst.columns = pd.MultiIndex.from_tuples(inst.columns)
        # Without a split (``seed_check(split=False)``) an empty table, not a KeyError.
        split_cols = ["stand-in part", "stand-in %", "seed components", "seed %", "ratio"]
        split = pd.DataFrame(self.split, columns=split_cols).set_index("stand-in part")
        return inst, split.round({"stand-in %": 1, "seed %": 1, "ratio": 2})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"instances": self.instances, "split": self.split, "sources": self.sources,
                "preset": self.preset, "cores": self.cores}


def seed_check(model: Any, workload: Workload | None = None, *,
               preset: str = "supertonic-default", seeds_dir: str | Path | None = None,
               split: bool = True, progress: bool = False) -> SeedCheck:
    """Measure the stand-in (or any Supertonic bundle) on the seed's instances and, with
    ``split``, its memory split; set both beside the seeds' tables.

    Example:
        >>> print(seed_check("standin-dir", Workload(repeats=1)).table())  # doctest: +SKIP
    """
    from lab.instances import Instance, instance_table
    from tts_kit.core import procfacts
    from tts_kit.tuning.stage_costs import stage_costs

    claims = seed_claims(seeds_dir)
    insts = [Instance(r["instance"], int(r["cpus"]), float(r["mem_mb"]),
                      {k: r[k] for k in (*COMPARED, "cpu_percent")})
             for r in claims.instances]
    rows = instance_table(model, [preset], workload, insts, progress=progress)
    split_rows: list[dict[str, Any]] = []
    if split:
        costs = stage_costs(model, preset, workload)
        split_rows = split_ratios(costs.split(), claims)
    return SeedCheck(instance_ratios(rows, claims), split_rows, claims.sources, preset,
                     procfacts.usable_cores())
