"""A sweep's records as text: the table `tts-kit tune` prints, with ``±`` (half the rounds'
range) beside p50 and peak RSS, a ``vs pick`` column and the one-time preparation below."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tts_kit.tuning import records as rk
from tts_kit.tuning.contention import _span
from tts_kit.tuning.spread import SPREAD_KEYS, half_range, span

SPREAD_HEADING, VERSUS_HEADING = "±", "vs pick"
_SHORT = {rk.P50_MS: "p50", rk.PEAK_RSS_MB: "peak"}


def _spread_cell(record: Mapping[str, Any], key: str) -> str:
    h = half_range(record, key)
    return "" if h is None else f"±{format(h, rk.COLUMNS[key].fmt)}"


def versus(record: Mapping[str, Any], pick: Mapping[str, Any],
           among: Sequence[Mapping[str, Any]] = ()) -> str:
    """How ``record`` differs from ``pick`` where the verdict (with the band and noise of
    ``among``) is not *tied*: ``"p50 +14%, peak -9%"``, ``"tied"``, or ``"pick"``.

    Example:
        >>> pick = {rk.P50_MS: 100.0, rk.PEAK_RSS_MB: 500.0}
        >>> versus({rk.P50_MS: 120.0, rk.PEAK_RSS_MB: 490.0}, pick), versus(pick, pick)
        ('p50 +20%', 'pick')
    """
    from tts_kit.tuning.verdict import band, compare, noise

    if record is pick:
        return "pick"
    if record.get("status", "ok") != "ok":
        return ""
    ok = [r for r in among if r.get("status", "ok") == "ok"]
    width = band(ok)
    found = {key: compare(record, pick, key, width, noise(ok, key)) for key in SPREAD_KEYS}
    return ", ".join(f"{_SHORT[k]} {v.ratio - 1:+.0%}" for k, v in found.items()
                     if v is not None and v.word != "tied") or "tied"


def prep_footnote(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """The one-time preparation of each loading that needed one (not in the trials).

    Example:
        >>> prep_footnote([{"loading": "paged", "prep_s": 35.2, "prep_peak_rss_mb": 588.0},
        ...                {"loading": "paged", "prep_s": 2.0, "prep_peak_rss_mb": 90.0}])[1]
        '  paged: 35.2 s the first time (peak 588 MB), then 2.0 s (cached)'
    """
    by_loading: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        if rk.to_number(r.get(rk.PREP_S)) is not None:
            by_loading.setdefault(str(r.get(rk.LOADING)), []).append(r)
    if not by_loading:
        return []
    lines = ["one-time preparation (external-data copies, made before the trials in a "
             "process of its own; not in the figures above):"]
    for loading, recs in by_loading.items():
        first, rest = recs[0], recs[1:]
        peak = rk.to_number(first.get(rk.PREP_PEAK_RSS_MB))
        text = f"  {loading}: {first[rk.PREP_S]:.1f} s"
        if rest:
            text += " the first time"
        if peak is not None:
            text += f" (peak {peak:.0f} MB)"
        if rest:
            text += f", then {_span([float(r[rk.PREP_S]) for r in rest], '.1f')} s (cached)"
        lines.append(text)
    return lines


def format_table(records: Iterable[dict[str, Any]],
                 pick: Mapping[str, Any] | None = None) -> str:
    """The records as an aligned text table, with ``±`` spreads where a record has rounds,
    ``vs pick`` when ``pick`` (one of the records) is given, and the preparation footnote.

    Example:
        >>> table = format_table([{"preset": "lean", "cpus": 1, "status": "ok", rk.P50_MS: 12.3}])
        >>> row = dict(zip(table.splitlines()[0].split("  "), table.splitlines()[1].split()))
        >>> row["preset"], row["status"]
        ('lean', 'ok')
    """
    records = list(records)
    keys = [k for k in rk.TABLE_KEYS if k != "pareto" or any("pareto" in r for r in records)]
    spread = {k for k in SPREAD_KEYS if any(half_range(r, k) is not None for r in records)}
    cols: list[tuple[str, Any]] = []  # (heading, cell of a record)
    for k in keys:
        cols.append((rk.heading(k), lambda r, k=k: rk.format_value(k, r.get(k))))
        if k in spread:
            cols.append((SPREAD_HEADING, lambda r, k=k: _spread_cell(r, k)))
    if pick is not None:
        cols.append((VERSUS_HEADING, lambda r: versus(r, pick, records)))
    rows = [[h for h, _ in cols]] + [[cell(r) for _, cell in cols] for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(cols))]
    left = {rk.heading(k) for k in keys if rk.COLUMNS.get(k) and rk.COLUMNS[k].align == "<"}
    left.add(VERSUS_HEADING)
    lines = ["  ".join(f"{c:{'<' if h in left else '>'}{w}}"
                       for c, (h, _), w in zip(row, cols, widths)).rstrip() for row in rows]
    errors = [f"  {r.get('preset')} cpus={r.get('cpus')}: {r.get('status')}: {r['error']}"
              for r in records if r.get("status") != "ok" and r.get("error")]
    lines += (["not finished:", *errors] if errors else [])
    return "\n".join(lines + prep_footnote(records))


def figures(r: Mapping[str, Any]) -> str:
    """A recommendation's p50 and peak RSS, with its rounds' range.

    Example:
        >>> figures({rk.P50_MS: 1187.0, rk.PEAK_RSS_MB: 554.0, "rounds": 2,
        ...          rk.PEAK_RSS_MIN_MB: 493.0, rk.PEAK_RSS_MAX_MB: 554.0})
        'p50 1187 ms, peak 554 MB (rounds 493-554)'
    """
    out = []
    for key, name, unit in ((rk.P50_MS, "p50", "ms"), (rk.PEAK_RSS_MB, "peak", "MB")):
        text = f"{name} {r[key]:.0f} {unit}"
        lo, hi = span(r, key) or (r[key], r[key])
        if (r.get(rk.ROUNDS) or 1) > 1 and half_range(r, key) is not None:
            text += f" (rounds {lo:.0f}-{hi:.0f})"
        out.append(text)
    return ", ".join(out)


def describe(r: Mapping[str, Any]) -> str:
    """A record's configuration in words.

    Example:
        >>> describe({"preset": "lean", "cpus": 2, "loading": "paged", "batch_size": 1,
        ...           "steps": 8})
        'lean on 2 cpu(s), paged, batch 1, 8 steps'
    """
    cpus = "all cores" if r.get("cpus") is None else f"{r['cpus']} cpu(s)"
    return (f"{r.get('preset')} on {cpus}, {r.get('loading')}, batch {r.get('batch_size')}, "
            f"{r.get('steps')} steps")
