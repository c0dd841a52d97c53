"""Live notebook widgets: an isolated trial's memory graph while it runs, the session tuner
built on it, a live load test (`tts_kit.notebook.widgets` re-exports them).
"""

from __future__ import annotations

import html
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as W
import psutil
from IPython.display import HTML

from tts_kit.core import procfacts
from tts_kit.models.supertonic.bundle import Bundle
from tts_kit.notebook import plots
from tts_kit.notebook._figures import _get
from tts_kit.tuning import records as rk
from tts_kit.tuning.workload import Workload


def _png(fig: Any) -> bytes:
    return plots.figure_png(fig, dpi=90)


#: The most of the trial's wall time the live redraws (0.1-0.4 s of CPU each) may take.
LIVE_DRAW_SHARE = 0.1


def _child_pids() -> set[int]:
    try:
        return {p.pid for p in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return set()


def _worker(pid: int) -> psutil.Process | None:
    """Process ``pid`` if `run_isolated` spawned it (not the resource tracker), else None."""
    try:
        proc = psutil.Process(pid)
        cmd = " ".join(proc.cmdline())
    except psutil.Error:
        return None
    return proc if "spawn_main" in cmd and "resource_tracker" not in cmd else None


class LiveMemoryGraph(W.VBox):
    """RSS of an isolated trial, redrawn while it runs (`watch`); at the end, the result's
    exact timeline with its stage events and the budget.

    Example:
        >>> from tts_kit.runtime.measure import run_isolated
        >>> g = LiveMemoryGraph(budget_mb=500)
        >>> m = g.watch(run_isolated, sum, [1, 2])  # doctest: +SKIP
    """

    def __init__(self, budget_mb: float | None = None, title: str = "memory",
                 interval_s: float = 0.3):
        self.budget_mb = budget_mb
        self.title = title
        self.interval_s = interval_s
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.status = W.HTML()
        self.live_samples: list[tuple[float, float]] = []
        self.fig = plots.memory_timeline([], budget_mb=budget_mb, title=title)
        self.image.value = _png(self.fig)
        super().__init__([self.image, self.status])
        self.add_class("tts-kit-memory-graph")

    def figure(self) -> Any:
        """The figure as last drawn (a plain matplotlib Figure)."""
        return self.fig

    def show(self, measured: Any, events: Sequence[tuple[float, str]] | None = None,
             title: str | None = None) -> None:
        """Draw a `Measurement`, a record with ``timeline``/``events``, or ``[(t, mb)]``."""
        self.fig = plots.memory_timeline(measured, events=events, budget_mb=self.budget_mb,
                                         title=title or self.title, fig=self.fig)
        self.image.value = _png(self.fig)

    def watch(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``fn(*args, **kwargs)`` on a worker thread and graph its child's RSS live;
        returns (or raises) what ``fn`` did."""
        before = _child_pids() | {os.getpid()}
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["result"] = fn(*args, **kwargs)
            except BaseException as exc:  # re-raised on the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=work, name="tts_kit-live-trial", daemon=True)
        self.live_samples = []
        t0 = time.time()
        worker.start()
        current: psutil.Process | None = None
        next_draw = 0.0
        n_children = 0
        while worker.is_alive():
            worker.join(0.05)
            if current is None or not current.is_running():
                found = (_worker(pid) for pid in sorted(_child_pids() - before))
                current = next((proc for proc in found if proc is not None), None)
                if current is not None:
                    n_children += 1
                    before.add(current.pid)
            if current is not None:
                rss = procfacts.rss_mb(current.pid)
                if rss is None:  # the child is gone
                    current = None
                else:
                    self.live_samples.append((time.time() - t0, rss))
            now = time.time()
            if now >= next_draw and self.live_samples:
                peak = max(r for _, r in self.live_samples)
                self.status.value = (f"<i>running ({now - t0:.1f} s, process {n_children}); "
                                     f"RSS {self.live_samples[-1][1]:.0f} MB, "
                                     f"max seen {peak:.0f} MB</i>")
                self.show(self.live_samples, events=[], title=f"{self.title} (live)")
                cost = time.time() - now
                next_draw = now + max(self.interval_s, cost / LIVE_DRAW_SHARE)
        if "error" in box:
            err = box["error"]
            self.status.value = (f"<span style='color:#b00'>{type(err).__name__}: "
                                 f"{html.escape(str(err))}</span>")
            raise box["error"]
        result = box.get("result")
        if _get(result, "timeline"):  # None gives None
            self.show(result)
        elif self.live_samples:
            self.show(self.live_samples)
        status = _get(result, "status", "ok")
        peak = _get(result, rk.PEAK_RSS_MB)
        peak_txt = "" if rk.to_number(peak) is None else f", peak RSS {peak:.0f} MB"
        self.status.value = (f"done in {time.time() - t0:.1f} s: status "
                             f"<b>{html.escape(str(status))}</b>{peak_txt}")
        return result


class SessionTuner(W.VBox):
    """Pick a preset, threads, vCPUs, budget and load policy; Run measures one isolated
    trial, graphed live, and keeps its record in `records`.

    Example:
        >>> SessionTuner(Bundle.discover(), Workload(steps=2)).run()["status"]  # doctest: +SKIP
        'ok'
    """

    def __init__(self, bundle: Bundle, workload: Workload | None = None):
        from tts_kit.runtime.sessions import PRESETS

        self.bundle = bundle
        self.workload = Workload(repeats=3) if workload is None else workload
        names = list(PRESETS)
        self.preset = W.Dropdown(options=names, value=names[0], description="preset")
        self.explain = W.HTML()
        cores = procfacts.usable_cores()
        self.threads = W.IntSlider(value=0, min=0, max=max(8, cores),
                                   description="threads", tooltip="0: as the preset says")
        self.cpus = W.Dropdown(options=list(range(1, cores + 1)),
                               value=cores, description="vCPUs")
        self.budget = W.BoundedFloatText(value=0, min=0, max=1e6, step=64,
                                         description="budget MB (0: none)",
                                         style={"description_width": "initial"})
        self.loading = W.Text(value="resident", description="loading",
                              tooltip="resident, paged or budget:MB")
        self.steps = W.IntSlider(value=self.workload.steps, min=1, max=32, description="steps")
        self.repeats = W.IntSlider(value=self.workload.repeats, min=1, max=20,
                                   description="repeats")
        self.button = W.Button(description="Run", button_style="primary", icon="play")
        self.graph = LiveMemoryGraph(title="isolated trial")
        self.table = W.HTML()
        self.records: list[dict[str, Any]] = []
        self.preset.observe(lambda _: self._explain(), names="value")
        self.button.on_click(lambda _: self.run())
        super().__init__([
            W.HBox([self.preset, self.cpus, self.threads]),
            self.explain,
            W.HBox([self.budget, self.loading]),
            W.HBox([self.steps, self.repeats, self.button]),
            self.graph,
            self.table,
        ])
        self.add_class("tts-kit-tuner")
        self._explain()

    def _explain(self) -> None:
        from tts_kit.runtime.sessions import get_preset

        lines = get_preset(self.preset.value).explain()
        self.explain.value = "<ul style='font-size:11px'>" + "".join(
            f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"

    def current_preset(self) -> Any:
        """The chosen preset, with the thread override applied."""
        from tts_kit.runtime.sessions import get_preset

        preset = get_preset(self.preset.value)
        if self.threads.value:
            preset = preset.replace(name=f"{preset.name}+t{self.threads.value}",
                                    intra_op_num_threads=int(self.threads.value))
        return preset

    def run(self) -> dict[str, Any]:
        """Measure the current settings in isolation; returns the record, also tabulated."""
        from tts_kit.tuning import tune

        budget = float(self.budget.value) or None
        self.graph.budget_mb = budget
        self.button.disabled = True
        try:
            workload = self.workload.replace(steps=int(self.steps.value),
                                             repeats=int(self.repeats.value))
            record = self.graph.watch(
                tune.trial, self.bundle, self.current_preset(), workload,
                cpus=int(self.cpus.value), mem_budget_mb=budget,
                loading=self.loading.value.strip() or "resident",
            )
        finally:
            self.button.disabled = False
        record = rk.Record(record)
        self.records.append(record)
        rows = rk.select(self.records, rk.SUMMARY_KEYS)
        head = "".join(f"<th>{html.escape(rk.heading(c))}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{html.escape(rk.format_value(c, v))}</td>"
                                        for c, v in r.items()) + "</tr>" for r in rows)
        self.table.value = f"<table style='font-size:11px'><tr>{head}</tr>{body}</table>"
        return record


def live_loadtest(url: str, title: str = "load test", **load: Any) -> Any:
    """`tts_kit.serve.loadtest.run_load` on ``url``, redrawing `plots.load_levels` after
    each level; returns the `LoadResult`.

    Example:
        >>> live_loadtest("http://127.0.0.1:8000", concurrency=[1, 2, 4])  # doctest: +SKIP
    """
    from IPython.display import display

    from tts_kit.serve.loadtest import run_load

    handle = display(HTML(f"<i>{html.escape(title)}: running the first level ...</i>"),
                     display_id=True)

    def redraw(result: Any) -> None:
        fig = plots.load_levels(result.records, title=title)
        if handle is not None:
            handle.update(fig)

    load.setdefault("progress", False)
    return run_load(url, on_level=redraw, **load)
