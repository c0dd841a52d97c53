"""Trials and sweeps: a *trial* measures one configuration in a fresh process; a *sweep*
runs a grid of them, marks the Pareto front of p50 against peak RSS and recommends one
configuration for a memory budget."""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import gc
import itertools
import math
import os
import random
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tts_kit.core import events, procfacts
from tts_kit.core.errors import TtsKitError
from tts_kit.core.textsafe import term_safe
from tts_kit.runtime.loading import LoadPolicy, needs_preparation, prepare_loading
from tts_kit.runtime.measure import run_isolated
from tts_kit.runtime.sessions import SessionPreset, get_preset
from tts_kit.tuning import records as rk
from tts_kit.tuning import verdict
from tts_kit.tuning.spread import (
    DEFAULT_ROUNDS,
    describe,
    figures,
    format_table,
    merge_rounds,
    run_rounds,
    split_repeats,
)
from tts_kit.tuning.workload import Workload

_LOADED = "trial: loaded"
_NO_PREP = {rk.PREP_S: None, rk.PREP_PEAK_RSS_MB: None}


def _run_queue_ns() -> dict[str, tuple[int, int]] | None:
    """Thread id -> (on-CPU ns, ns waiting for a core) of live threads (Linux), or None."""
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


def _wait_percent(before: Mapping[str, tuple[int, int]] | None,
                 after: Mapping[str, tuple[int, int]] | None) -> float | None:
    """The share (%) of ready time spent waiting for a core between two readings, or None."""
    if not before or not after:
        return None
    run = wait = 0
    for tid, (r1, w1) in after.items():
        r0, w0 = before.get(tid, (0, 0))
        run, wait = run + max(0, r1 - r0), wait + max(0, w1 - w0)
    return 100.0 * wait / (run + wait) if run + wait > 0 else None


def _loadavg() -> float | None:
    """The machine's 1-minute load average (None where the OS has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _bundle_path(bundle: Any) -> str:
    """What reopens the model in a trial's child (`SpeechModel.ref`)."""
    from tts_kit.models.base import SpeechModel
    from tts_kit.models.resolve import open_model

    return (bundle if isinstance(bundle, SpeechModel) else open_model(bundle)).ref()


def _trial_child(bundle_path: str, preset: SessionPreset, workload: Workload,
                 loading: str | LoadPolicy, stage_costs_mb: dict[str, float] | None = None
                 ) -> dict[str, Any]:
    """The trial in the isolated child: load, idle RSS, a first call, the steady calls."""
    import numpy as np

    from tts_kit.models.family import make_engine
    from tts_kit.models.resolve import open_model

    t0 = time.perf_counter()
    bundle = open_model(bundle_path)
    engine = make_engine(bundle, preset=preset, loading=loading, stage_costs_mb=stage_costs_mb)
    load_s = time.perf_counter() - t0
    procfacts.release_memory()
    idle_rss = procfacts.rss_mb()
    load_peak = procfacts.peak_rss_mb()
    # From here the high-water mark is the requests' own (the trial keeps load_peak).
    separate = procfacts.reset_peak_rss()
    events.mark(_LOADED)
    voice = workload.voice_for(bundle)
    batch = workload.batch()

    def call() -> tuple[float, float]:
        start = time.perf_counter()
        results = engine.synthesize_batch(batch, lang=workload.lang, voices=voice,
                                          steps=workload.steps, speed=workload.speed,
                                          seed=workload.seed)
        return time.perf_counter() - start, sum(r.duration_s for r in results)

    events.mark("trial: first call")
    first_s, audio_s = call()
    events.mark("trial: steady calls")
    queue0 = _run_queue_ns()  # how long the threads wait for a core: contention
    cpu0, wall0 = procfacts.cpu_seconds(), time.perf_counter()
    lat = [call()[0] for _ in range(workload.repeats)]
    steady_wall = time.perf_counter() - wall0
    steady_cpu = procfacts.cpu_seconds() - cpu0
    waited = _wait_percent(queue0, _run_queue_ns())
    cores = procfacts.current_cpus() or procfacts.usable_cores()
    gc.collect()  # no extra malloc_trim: a serving process does not call one between requests
    after_rss = procfacts.rss_mb()
    cpu = 100.0 * steady_cpu / steady_wall if steady_wall > 0 else math.nan
    p50 = float(np.percentile(lat, 50)) if lat else first_s
    return {
        rk.LOAD_S: load_s,
        rk.IDLE_RSS_MB: idle_rss,
        rk.AFTER_RSS_MB: after_rss,
        rk.FIRST_MS: 1000 * first_s,
        rk.P50_MS: 1000 * p50 if lat else math.nan,
        rk.P95_MS: 1000 * float(np.percentile(lat, 95)) if lat else math.nan,
        rk.LATENCIES_MS: [1000 * x for x in lat],
        rk.RTF: p50 / audio_s if audio_s > 0 else math.nan,
        rk.AUDIO_S: audio_s,
        rk.CPU_PERCENT: cpu,
        rk.CPU_MS: 1000 * steady_cpu / len(lat) if lat else math.nan,
        rk.CORE_SHARE: cpu / cores if lat else math.nan,
        rk.CPU_WAIT_PERCENT: waited if lat and waited is not None else math.nan,
        rk.LOAD_PEAK_RSS_MB: load_peak,
        rk.RUN_PEAK_RSS_MB: procfacts.peak_rss_mb() if separate else math.nan,
        "threads": preset.threads(),
        rk.STAGE_LOAD_S: engine.load_s,
    }


def _prepare_child(bundle_path: str, loading: str | LoadPolicy) -> dict[str, Any]:
    """The one-time preparation (external-data copies) a trial's loading needs."""
    from tts_kit.models.resolve import open_model

    t0 = time.perf_counter()
    bundle = open_model(bundle_path)
    files = prepare_loading([st.path for st in bundle.stages.values()], loading)
    return {rk.PREP_S: time.perf_counter() - t0, "files": [str(f) for f in files]}


def _prepare(bundle_path: str, policy: LoadPolicy, cpus: int | None,
             timeout_s: float | None, sample_ms: float) -> dict[str, Any]:
    """Run `_prepare_child` isolated when ``policy`` needs it: ``prep_*`` fields."""
    if not needs_preparation(policy):
        return dict(_NO_PREP)
    m = run_isolated(_prepare_child, bundle_path, policy, cpus=cpus, timeout_s=timeout_s,
                     sample_ms=sample_ms)
    if not (m.ok and isinstance(m.result, dict)):  # not fatal: the trial does it itself
        warnings.warn(f"preparing {policy.spec} failed ({m.error}); the trial includes it",
                      stacklevel=3)
        return dict(_NO_PREP)
    return {rk.PREP_S: rk.to_number(m.result[rk.PREP_S]),
            rk.PREP_PEAK_RSS_MB: rk.to_number(m.peak_rss_mb)}


@dataclass(frozen=True)
class TrialOptions:
    """How `trial` runs a configuration: cores, limits, load policy, preparation.

    Example:
        >>> TrialOptions(cpus=1).replace(loading="paged")
        TrialOptions(cpus=1, mem_budget_mb=None, loading='paged', timeout_s=None, \
sample_ms=10, stage_costs_mb=None, prepare=True)
    """

    cpus: int | None = None  #: cores to pin the trial to (None: not pinned)
    mem_budget_mb: float | None = None  #: past this RSS the trial is killed (``oom``)
    loading: str | LoadPolicy = "resident"  #: recorded as given
    timeout_s: float | None = None  #: then the trial is killed (``timeout``)
    sample_ms: float = 10  #: RSS sampling period of the harness
    #: Resident MB per stage for ``budget:MB`` (None: estimated from the file sizes).
    stage_costs_mb: Mapping[str, float] | None = None
    #: Make the policy's one-time copies first, in a process of its own (``prep_*``).
    prepare: bool = True

    def replace(self, **changes: Any) -> TrialOptions:
        """A copy with ``changes``; an unknown name fails in one line."""
        return _replace(self, changes)


def _replace(options: Any, changes: Mapping[str, Any]) -> Any:
    known = {f.name for f in dataclasses.fields(options)}
    unknown = sorted(set(changes) - known)
    if unknown:
        raise TypeError(f"{type(options).__name__} has no option {', '.join(unknown)}; "
                        f"known: {', '.join(sorted(known))}")
    return dataclasses.replace(options, **changes) if changes else options


def trial(bundle: Any, preset: str | SessionPreset, workload: Workload | None = None,
          options: TrialOptions | None = None, **overrides: Any) -> dict[str, Any]:
    """Measure one configuration in a fresh process; returns a record (`RECORD_KEYS`).

    ``bundle``: a model, a bundle directory, or None to discover one. How it runs is
    ``options`` or its fields as keywords (``cpus=1``). A trial that did not finish still
    reports what it got to.

    Example:
        >>> trial("standin-dir", "lean", Workload(repeats=3), cpus=1)["status"]  # doctest: +SKIP
        'ok'
    """
    o = _replace(options or TrialOptions(), overrides)
    policy = LoadPolicy.parse(o.loading)  # a bad spec fails here, before any process
    label = o.loading if isinstance(o.loading, str) else policy.spec
    costs = dict(o.stage_costs_mb) if o.stage_costs_mb else None
    workload = Workload() if workload is None else workload
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a tts_kit.tuning.workload.Workload, got "
                        f"{type(workload).__name__}")
    preset = get_preset(preset)  # an unknown name fails here, before any process starts
    path = _bundle_path(bundle)
    prep = _prepare(path, policy, o.cpus, o.timeout_s, o.sample_ms) if o.prepare else _NO_PREP
    load_before = _loadavg()
    m = run_isolated(_trial_child, path, preset, workload, policy, costs, cpus=o.cpus,
                     mem_budget_mb=o.mem_budget_mb, timeout_s=o.timeout_s,
                     sample_ms=o.sample_ms)
    load_after = _loadavg()
    record: dict[str, Any] = {k: None for k in rk.RECORD_KEYS}
    record.update(
        preset=preset.name, cpus=o.cpus, loading=label, steps=workload.steps,
        batch_size=workload.batch_size, mem_budget_mb=o.mem_budget_mb, status=m.status,
        error=m.error, repeats=workload.repeats, peak_rss_mb=rk.to_number(m.peak_rss_mb),
        wall_s=rk.to_number(m.wall_s), stage_costs_mb=costs, loadavg_before=load_before,
        loadavg_after=load_after, **prep,
    )
    if m.ok and isinstance(m.result, dict):
        for k, v in m.result.items():
            record[k] = rk.to_number(v) if isinstance(v, float) else v
        # The child reset its high-water mark after loading: the harness saw the requests'.
        peaks = [p for p in (record[rk.PEAK_RSS_MB], record[rk.LOAD_PEAK_RSS_MB]) if p is not None]
        record[rk.PEAK_RSS_MB] = max(peaks) if peaks else None
    else:  # what the timeline shows of a trial that died: its load and idle RSS
        loaded = [t for t, name in m.events if name == _LOADED]
        if loaded and not math.isnan(m.work_start_s):
            record[rk.LOAD_S] = loaded[0] - m.work_start_s
            after = [rss for t, rss in m.timeline if t >= loaded[0]]
            record[rk.IDLE_RSS_MB] = after[0] if after else None
        record[rk.CPU_PERCENT] = rk.to_number(m.cpu_percent)
    record["timeline"] = [list(p) for p in m.timeline]
    record["events"] = [list(e) for e in m.events]
    return record


def mark_pareto(
    records: list[dict[str, Any]], x: str = rk.PARETO_X, y: str = rk.PARETO_Y
) -> list[dict[str, Any]]:
    """Set ``pareto`` on each record (`pareto_front`); unfinished trials are never on it.

    Example:
        >>> recs = mark_pareto([{"status": "ok", rk.PEAK_RSS_MB: 1, rk.P50_MS: 2},
        ...                     {"status": "ok", rk.PEAK_RSS_MB: 2, rk.P50_MS: 3}])
        >>> [r["pareto"] for r in recs]
        [True, False]
    """
    front = set(rk.pareto_front(records, x, y))
    for i, r in enumerate(records):
        r["pareto"] = i in front
    return records


@dataclass
class SweepResult:
    """The records of a sweep, with the Pareto front marked."""

    records: list[dict[str, Any]] = field(default_factory=list)  #: in grid order

    def dataframe(self) -> Any:
        """The records as a pandas DataFrame (without timelines); needs pandas.

        Example:
            >>> SweepResult([{"preset": "a", "status": "ok"}]).dataframe().shape  # doctest: +SKIP
            (1, 2)
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("SweepResult.dataframe() needs pandas: pip install pandas") from exc
        rows = [{k: v for k, v in r.items() if k not in ("timeline", "events")}
                for r in self.records]
        return pd.DataFrame(rows)

    def table(self) -> str:
        """`format_table` of the records."""
        return format_table(self.records)

    def recommend(self, budget_mb: float | None) -> tuple[dict[str, Any] | None, str]:
        """The configuration to use within ``budget_mb`` (None: no budget), and why
        (`tts_kit.tuning.verdict.pick`); ``(None, reason)`` when nothing fits.

        Example:
            >>> r = SweepResult([{"preset": p, "status": "ok", rk.PEAK_RSS_MB: mb, rk.P50_MS: ms}
            ...                  for p, mb, ms in (("a", 300, 90), ("b", 200, 120))])
            >>> r.recommend(250)[0]["preset"]
            'b'
        """
        finished = [r for r in self.records if r.get("status") == "ok"
                    and r.get(rk.P50_MS) is not None and r.get(rk.PEAK_RSS_MB) is not None]
        if not finished:
            states = sorted({f"{r.get('status')}" for r in self.records}) or ["none run"]
            return None, f"no trial finished ({', '.join(states)}); nothing to recommend"
        chosen = verdict.pick(finished, budget_mb)
        if chosen.record is None:
            low = min(finished, key=lambda r: r[rk.PEAK_RSS_MB])
            return None, (
                f"no configuration fits under {budget_mb:g} MB: the smallest peak was "
                f"{low[rk.PEAK_RSS_MB]:.0f} MB ({describe(low)}); raise the budget, or try "
                "loading='paged' or a lower-memory preset"
            )
        best = chosen.record
        budget_txt = (f"within the {budget_mb:g} MB budget" if budget_mb is not None
                      else "no budget")
        return best, (f"{describe(best)}: {figures(best)}, {budget_txt}; {chosen.reason} "
                      f"({len(self.records)} measured)")

    def by_machine(self) -> dict[str, SweepResult]:
        """The sweep split by the machine each trial ran on (`records.by_machine`).

        Example:
            >>> SweepResult([{"preset": "a", "status": "ok"}]).by_machine()
            {}
        """
        return {label: SweepResult(mark_pareto(recs))
                for label, recs in rk.by_machine(self.records).items()}

    def to_dict(self) -> dict[str, Any]:
        """``{"records": [...]}``, the JSON form the CLI writes."""
        return {"records": [dict(r) for r in self.records]}


@dataclass(frozen=True)
class SweepOptions:
    """The grid around the presets and how `sweep` runs it.

    Example:
        >>> SweepOptions(cpus=(1, 2)).replace(rounds=1).rounds
        1
    """

    cpus: Sequence[int | None] = (None,)  #: core counts (None: not pinned)
    batch_sizes: Sequence[int] | None = None  #: None: the workload's own
    steps: Sequence[int] | None = None  #: None: the workload's own
    loadings: Sequence[str] = ("resident",)
    mem_budget_mb: float | None = None  #: enforced on every trial (over it: ``oom``)
    #: Runs the trials, at most one per machine at a time (e.g. `cluster.TrialExecutor`);
    #: None: one at a time here.
    executor: cf.Executor | None = field(default=None, compare=False)
    progress: bool = True  #: a tqdm progress bar
    timeout_s: float | None = None  #: then a trial is killed (``timeout``)
    #: For ``budget:MB`` loadings: ``"measure"`` once per preset, a mapping, or None (the
    #: file-size estimate, also used when measuring fails).
    stage_costs_mb: Mapping[str, float] | str | None = "measure"
    warmup: bool = True  #: one throw-away trial first, for a cold machine
    #: Trials per configuration: a screening pass, then racing on the open verdicts
    #: (`tts_kit.tuning.verdict.undetermined`), the repeats shared out between them.
    rounds: int = DEFAULT_ROUNDS

    def replace(self, **changes: Any) -> SweepOptions:
        """A copy with ``changes``; an unknown name fails in one line."""
        return _replace(self, changes)


def sweep(bundle: Any, presets: Sequence[str | SessionPreset], workload: Workload | None = None,
          options: SweepOptions | None = None, **overrides: Any) -> SweepResult:
    """Run `trial` over presets x cpus x batch sizes x steps x loadings, on one workload.

    The grid is ``options`` or its fields as keywords; a configuration's record merges its
    trials (`tts_kit.tuning.spread.merge_rounds`).

    Example:
        >>> len(sweep("standin-dir", ["lean", "low-memory"], cpus=(1, 2)).records)  # doctest: +SKIP
        4
    """
    from tqdm.auto import tqdm

    o = _replace(options or SweepOptions(), overrides)
    cpus, loadings, executor, rounds = o.cpus, o.loadings, o.executor, o.rounds
    if isinstance(presets, (str, SessionPreset)):
        presets = [presets]
    if not presets:
        raise TtsKitError("presets is empty; name at least one "
                         "(see tts_kit.runtime.sessions.PRESETS)")
    objs = [get_preset(p) for p in presets]  # unknown names fail before any trial
    for name, values in (("cpus", cpus), ("loadings", loadings)):
        if not tuple(values):  # an empty grid "succeeded" with no trial at all
            raise TtsKitError(f"{name} is empty; give at least one (e.g. cpus=(1,), "
                             "loadings=('resident',))")
    workload = Workload() if workload is None else workload
    shares = split_repeats(workload.repeats, rounds)  # a bad ``rounds`` fails here
    steps = (workload.steps,) if o.steps is None else tuple(o.steps)
    batch_sizes = (workload.batch_size,) if o.batch_sizes is None else tuple(o.batch_sizes)
    # Each cell's workload, built (and so checked) before any measurement.
    cells = {(b, s): workload.replace(batch_size=b, steps=s)
             for b, s in itertools.product(batch_sizes, steps)}
    # Each spec parsed once, before any measurement; records keep the specs as given.
    policies = {lo: LoadPolicy.parse(lo) for lo in loadings}
    path = _bundle_path(bundle)
    grid = list(itertools.product(objs, cpus, batch_sizes, steps, loadings))
    costs = _sweep_stage_costs(path, objs, policies, o.stage_costs_mb,
                               workload.replace(steps=max(steps)))
    if o.warmup and executor is None:  # an executor's workers are other machines: theirs
        trial(path, objs[0], workload.replace(steps=min(steps), repeats=0, batch_size=1),
              cpus=cpus[0], timeout_s=o.timeout_s)
    common = dict(mem_budget_mb=o.mem_budget_mb, timeout_s=o.timeout_s)
    done: list[list[dict[str, Any]]] = [[] for _ in grid]

    def submit(k: int, i: int) -> tuple[tuple[Any, ...], dict[str, Any], str]:
        p, c, b, s, lo = grid[i]
        n = len(done[i])  # this cell's trials so far: its calls alternate the shares
        # Names may come from a report.json: no raw control characters on stderr.
        label = term_safe(f"{p.name} cpus={c} {lo} trial {n + 1}, pass {k + 1}")
        # Later trials here find what the first prepared (an executor's may not).
        return ((path, p, cells[b, s].replace(repeats=shares[n % rounds])),
                dict(cpus=c, loading=lo, stage_costs_mb=costs.get((p.name, lo)),
                     prepare=n == 0 or executor is not None, **common), label)

    # Racing: screen every cell, then the open verdicts (`verdict.undetermined`), each
    # pass shuffled, until ``rounds`` trials a cell are spent or the scheduler is lost.
    budget, todo, k = rounds * len(grid), list(range(len(grid))), 0
    with tqdm(total=budget, desc="tune", unit="trial", disable=not o.progress) as bar:
        while todo and budget > 0:
            todo = todo[:budget]
            random.Random(k).shuffle(todo)
            got = run_rounds(trial, [(k, i) for i in todo], submit, executor, bar)
            lost = getattr(executor, "lost", None) is not None  # measured cells keep theirs
            for (_, i), rec in sorted(got.items()):
                if not (lost and done[i] and rec.get("status") != "ok"):
                    done[i].append(rec)
            if lost:
                break
            budget, k = budget - len(todo), k + 1
            merged = [merge_rounds(r) if r and r[-1].get("status") == "ok" else None
                      for r in done]
            # Nothing open: the rest to the least measured, fastest first (same time).
            todo = verdict.undetermined(merged, o.mem_budget_mb) or sorted(
                (i for i, r in enumerate(merged) if r is not None),
                key=lambda i: (len(done[i]), rk.to_number(merged[i].get(rk.P50_MS)) or math.inf))
    records = [merge_rounds(r) for r in done if r]
    return SweepResult(mark_pareto(records))


def _sweep_stage_costs(
    path: str, presets: list[SessionPreset], policies: Mapping[str, LoadPolicy],
    given: Mapping[str, float] | str | None, workload: Workload,
) -> dict[tuple[str, str], dict[str, float]]:
    """(preset name, loading) -> stage costs, for the sweep's ``budget`` loadings only."""
    budgets = [lo for lo, policy in policies.items() if policy.policy == "budget"]
    if not budgets or given is None:
        return {}
    if isinstance(given, str):
        if given != "measure":
            raise TtsKitError(f"stage_costs_mb must be 'measure', a mapping or None, got {given!r}")
        from tts_kit.tuning.stage_costs import stage_costs

        # Its paged probe loads external-data copies: made first, not inside the figures.
        _prepare(path, LoadPolicy.parse("paged"), None, None, 10)
        out: dict[tuple[str, str], dict[str, float]] = {}
        for p in presets:
            try:
                measured = stage_costs(path, p, workload).costs_mb()
            except RuntimeError as exc:
                warnings.warn(f"sweep: stage costs for {p.name} could not be measured "
                              f"({exc}); its budget trials use the file-size estimate",
                              stacklevel=3)
                continue
            out.update({(p.name, lo): measured for lo in budgets})
        return out
    from tts_kit.models.resolve import open_model
    from tts_kit.runtime.loading import resident_costs_mb

    checked = resident_costs_mb(given, open_model(path))  # unknown stage or bad MB: fails here
    return {(p.name, lo): checked for p in presets for lo in budgets}


def default_cpus(candidates: Sequence[int] = (1, 2, 4)) -> tuple[int, ...]:
    """Core counts a sweep can emulate here (`procfacts.usable_cores`); never empty.

    Example:
        >>> 1 in default_cpus(), default_cpus((1,))
        (True, (1,))
    """
    n = procfacts.usable_cores()
    return tuple(c for c in candidates if c <= n) or (1,)
