"""Figures that repeat: each configuration measured in fresh trials round by round (A B C,
A B C: a drift hits every one alike), merged into one record with its spread
(docs/benchmarks.md)."""

from __future__ import annotations

import concurrent.futures as cf
import statistics
import warnings
from collections.abc import Callable, Mapping, Sequence
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
        out = dict(failed if failed is not None else rounds[0])
        out[rk.ROUNDS] = len(rounds)
        return out
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
