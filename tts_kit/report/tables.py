"""The report's tables: the sweep as a pandas table, and small escaped HTML fact tables."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from tts_kit.tuning import records as rk

#: The sweep table's columns (the rest stay in report.json).
TABLE_KEYS: tuple[str, ...] = ("preset", "cpus", "loading", "status", rk.LOAD_S, rk.FIRST_MS,
                               rk.P50_MS, rk.PEAK_RSS_MB, rk.IDLE_RSS_MB, rk.RTF, "core_share",
                               "pareto")


def sweep_table(records: Any, pick: Mapping[str, Any] | None = None) -> Any:
    """Records as a compact pandas table of `TABLE_KEYS`, with each figure's spread over the
    rounds (``±``) and, given ``pick``, what differs from the pick beyond both spreads.

    Example:
        >>> r = {"preset": "lean", "rounds": 2, rk.P50_MS: 12.0, "p50_min_ms": 11.0,
        ...      "p50_max_ms": 13.0}
        >>> sweep_table([r], pick=r)[["p50 ±", "vs pick"]].iloc[0].tolist()
        ['±1', 'pick']
    """
    from tts_kit.tuning.records import ROUNDS, frame
    from tts_kit.tuning.spread import half_range, versus

    records = list(records)
    df = frame(records, TABLE_KEYS)
    if not any((rk.to_number(r.get(ROUNDS)) or 1) > 1 for r in records):
        return df
    for key, name in ((rk.P50_MS, "p50 ±"), (rk.PEAK_RSS_MB, "peak ±")):
        if rk.heading(key) in df.columns:
            cells = [half_range(r, key) for r in records]
            df.insert(list(df.columns).index(rk.heading(key)) + 1, name,
                      ["" if h is None else f"±{h:,.0f}" for h in cells])
    if pick is not None:
        df["vs pick"] = [versus(r, pick, records) if r.get("status", "ok") == "ok" else ""
                         for r in records]
    return df


def rows_html(rows: list[tuple[str, str]]) -> str:
    """(name, value) rows as a small two-column HTML table, escaped.

    Example:
        >>> rows_html([("CPU", "<x>")])
        '<table class="tts-kit-facts"><tr><th style="text-align:left">CPU</th><td style="text-align:left">&lt;x&gt;</td></tr></table>'
    """  # noqa: E501
    cells = "".join(f'<tr><th style="text-align:left">{html.escape(str(name))}</th>'
                    f'<td style="text-align:left">{html.escape(str(value))}</td></tr>'
                    for name, value in rows)
    return f'<table class="tts-kit-facts">{cells}</table>'
