"""Figures that repeat: each configuration measured in fresh trials round by round (A B C,
A B C: a drift hits every one alike), merged into one record with its spread, and the table
`tts-kit tune` prints with ``±`` spreads and ``vs pick`` (docs/benchmarks.md)."""

from __future__ import annotations

import concurrent.futures as cf
import statistics
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tts_kit.core.errors import TtsKitError
from tts_kit.tuning import records as rk

#: Rounds a sweep measures each configuration in, by default.
DEFAULT_ROUNDS = 2
#: The figures that carry a spread: key -> (its lowest round's key, its highest round's).
SPREAD_KEYS: dict[str, tuple[str, str]] = {
    rk.P50_MS: (rk.P50_MIN_MS, rk.P50_MAX_MS),
    rk.PEAK_RSS_MB: (rk.PEAK_RSS_MIN_MB, rk.PEAK_RSS_MAX_MB),
}
#: Merged as the highest round's (a budget must hold for the hungriest round).
_HIGHEST = (rk.PEAK_RSS_MB, rk.LOAD_PEAK_RSS_MB, rk.RUN_PEAK_RSS_MB)
#: Taken from the first round as they are; ``loadavg_after`` comes from the last.
_FIRST = ("prep_s", "prep_peak_rss_mb", "threads", "stage_load_s", "stage_costs_mb",
          "timeline", "events", "machine", "worker", "loadavg_before")


def split_repeats(repeats: int, rounds: int) -> list[int]:
    """The timed calls of each round: ``repeats`` shared out, every round at least one.

    Example:
        >>> split_repeats(3, 2), split_repeats(1, 2), split_repeats(0, 2)
        ([2, 1], [1, 1], [0, 0])
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise TtsKitError(f"rounds must be an integer >= 1, got {rounds!r}")
    if repeats <= 0:
        return [0] * rounds
    base, extra = divmod(repeats, rounds)
    return [max(1, base + (1 if i < extra else 0)) for i in range(rounds)]


def merge_rounds(rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One record of a configuration's trial records, with ``rounds`` and `SPREAD_KEYS`:
    p50/p95 of all calls pooled, peaks the highest round's, the rest the rounds' median. A
    round that did not finish is the merged record (the configuration did not hold).

    Example:
        >>> merge_rounds([{"status": "ok", rk.P50_MS: 5.0}, {"status": "oom"}])["status"]
        'oom'
    """
    import numpy as np

    if not rounds:
        raise TtsKitError("merge_rounds needs at least one round")
    failed = next((r for r in rounds if r.get(rk.STATUS) != "ok"), None)
    if failed is not None or len(rounds) == 1:
        return {**(failed if failed is not None else rounds[0]), rk.ROUNDS: len(rounds)}
    out = dict(rounds[0])
    for key, value in rounds[0].items():
        if key in _FIRST or key in rk.CONFIG_KEYS or rk.to_number(value) is None:
            continue
        nums = [v for v in (rk.to_number(r.get(key)) for r in rounds) if v is not None]
        if key in _HIGHEST:
            out[key] = max(nums)
        elif key in (rk.REPEATS, rk.WALL_S):
            out[key] = sum(nums) if key == rk.WALL_S else int(sum(nums))
        else:
            out[key] = statistics.median(nums)
    out[rk.LOADAVG_AFTER] = rounds[-1].get(rk.LOADAVG_AFTER)
    lat = [x for r in rounds for x in (r.get(rk.LATENCIES_MS) or [])]
    out[rk.LATENCIES_MS] = lat
    if lat:
        out[rk.P50_MS] = float(statistics.median(lat))
        out[rk.P95_MS] = float(np.percentile(lat, 95))
        audio = rk.to_number(out.get(rk.AUDIO_S))
        out[rk.RTF] = out[rk.P50_MS] / 1000 / audio if audio else out.get(rk.RTF)
    # Each fresh process's own figures: what `tts_kit.tuning.verdict` resamples.
    out[rk.ROUND_LATENCIES_MS] = [list(r.get(rk.LATENCIES_MS) or []) for r in rounds]
    out[rk.ROUND_PEAK_RSS_MB] = [rk.to_number(r.get(rk.PEAK_RSS_MB)) for r in rounds]
    for key, (lo, hi) in SPREAD_KEYS.items():
        nums = [v for v in (rk.to_number(r.get(key)) for r in rounds) if v is not None]
        out[lo], out[hi] = (min(nums), max(nums)) if nums else (None, None)
    out[rk.ROUNDS] = len(rounds)
    return out


def span(record: Mapping[str, Any], key: str) -> tuple[float, float] | None:
    """The (lowest, highest) round of ``key`` (a `SPREAD_KEYS` figure); None when missing.

    Example:
        >>> span({rk.P50_MS: 10.0, rk.P50_MIN_MS: 9.0, rk.P50_MAX_MS: 12.0}, rk.P50_MS)
        (9.0, 12.0)
        >>> span({rk.P50_MS: 10.0}, rk.P50_MS)
        (10.0, 10.0)
    """
    value = rk.to_number(record.get(key))
    if value is None:
        return None
    lo_key, hi_key = SPREAD_KEYS[key]
    lo, hi = rk.to_number(record.get(lo_key)), rk.to_number(record.get(hi_key))
    if lo is None or hi is None:
        return value, value
    return min(lo, value), max(hi, value)


def half_range(record: Mapping[str, Any], key: str) -> float | None:
    """Half the rounds' range of ``key``: the ± a table shows (None: one round or missing).

    Example:
        >>> half_range({rk.PEAK_RSS_MB: 540.0, rk.PEAK_RSS_MIN_MB: 500.0,
        ...             rk.PEAK_RSS_MAX_MB: 540.0}, rk.PEAK_RSS_MB)
        20.0
    """
    lo_key, hi_key = SPREAD_KEYS[key]
    lo, hi = rk.to_number(record.get(lo_key)), rk.to_number(record.get(hi_key))
    return None if lo is None or hi is None else (hi - lo) / 2


def run_rounds(
    trial: Callable[..., dict[str, Any]],
    runs: Sequence[tuple[int, int]],
    submit: Callable[[int, int], tuple[tuple[Any, ...], dict[str, Any], str]],
    executor: cf.Executor | None,
    bar: Any,
) -> dict[tuple[int, int], dict[str, Any]]:
    """Run a sweep's trials in ``runs`` order, one at a time here or all on ``executor`` (a
    trial it loses: an `error_record`); ``submit(k, i)``: (args, kwargs, label).

    Example:
        >>> got = run_rounds(tune.trial, [(0, 0), (0, 1)], submit, None, bar)  # doctest: +SKIP
    """
    got: dict[tuple[int, int], dict[str, Any]] = {}
    if executor is None:
        for k, i in runs:
            args, kwargs, label = submit(k, i)
            bar.set_postfix_str(label)
            got[k, i] = trial(*args, **kwargs)
            bar.update()
        return got
    check_executor(executor)
    futures = {executor.submit(trial, *a, **kw): (k, i, a, kw)
               for k, i in runs for a, kw, _ in [submit(k, i)]}
    for fut in cf.as_completed(futures):
        k, i, args, kwargs = futures[fut]
        try:
            got[k, i] = fut.result()
        except Exception as exc:  # the executor itself failed (lost worker, ...)
            why = " ".join(str(exc).split()) or "no message"
            got[k, i] = error_record(*args[1:3], f"executor: {type(exc).__name__}: {why}",
                                     **kwargs)
        bar.update()
    return got


def error_record(preset: Any, workload: Any, error: str, **config: Any) -> dict[str, Any]:
    """The record of a trial that never ran (its executor or worker lost it): status
    ``error``, the configuration filled in from `tts_kit.tuning.tune.trial`'s arguments.

    Example:
        >>> from tts_kit.tuning.workload import Workload
        >>> rec = error_record("lean", Workload(steps=2), "worker x: no model", cpus=1)
        >>> rec["status"], rec["preset"], rec["steps"], rec["cpus"]
        ('error', 'lean', 2, 1)
    """
    loading = config.get("loading", "resident")
    return {k: None for k in rk.RECORD_KEYS} | dict(
        preset=getattr(preset, "name", preset), steps=workload.steps,
        batch_size=workload.batch_size, repeats=workload.repeats, status="error", error=error,
        timeline=[], events=[], cpus=config.get("cpus"),
        mem_budget_mb=config.get("mem_budget_mb"),
        loading=loading if isinstance(loading, str) else getattr(loading, "spec", loading))


def check_executor(executor: cf.Executor) -> None:
    """Warn when a local executor would run trials at the same time on the same cores.

    Example:
        >>> check_executor(cf.ThreadPoolExecutor(max_workers=1))
    """
    workers = getattr(executor, "_max_workers", 1)
    if isinstance(executor, (cf.ThreadPoolExecutor, cf.ProcessPoolExecutor)) and workers > 1:
        warnings.warn(
            f"sweep: a local executor with {workers} workers runs trials at the same time on "
            "the same cores, so they measure each other; use max_workers=1, or an executor "
            "that runs one trial per machine",
            stacklevel=4,  # sweep's caller (sweep -> run_rounds -> here)
        )


def _span(values: Sequence[float], fmt: str = ".0f") -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if format(lo, fmt) == format(hi, fmt) else f"{lo:{fmt}}-{hi:{fmt}}"


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
        text = f"  {loading}: {first[rk.PREP_S]:.1f} s" + (" the first time" if rest else "")
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
