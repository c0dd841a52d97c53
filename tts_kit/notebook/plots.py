"""Plain matplotlib figures for measurements: memory timelines, stage times, Pareto, A/B.

Every function returns a `matplotlib.figure.Figure` built without ``pyplot`` (no global
state, safe from threads, no duplicate display in notebooks). The figures carry a PNG
representation, so a notebook cell that ends with one shows it, a report embeds it
as ``data:image/png;base64`` and a script can call ``fig.savefig(path)``. Widgets
(`tts_kit.notebook.widgets`) draw with these same functions.

Example:
    >>> from tts_kit.notebook import plots
    >>> fig = plots.memory_timeline([(0.0, 100.0), (0.5, 180.0), (1.0, 120.0)],
    ...                             events=[(0.1, "load vocoder"), (0.4, "run vocoder")],
    ...                             budget_mb=200)
    >>> len(fig.axes)
    1
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from tts_kit.core import contract
from tts_kit.experiments.records import (
    FIRST_MS,
    MEM_BUDGET_MB,
    P50_MS,
    P95_MS,
    P99_MS,
    PARETO_X,
    PARETO_Y,
    PEAK_RSS_MB,
    POOL_PSS_MB,
    RPS,
    TTFA_P50_MS,
    TTFA_P95_MS,
    WALL_S,
    pareto_front,
    to_number,
)
from tts_kit.experiments.records import label as axis_label

#: One colour per pipeline stage (and for text processing), reused by every figure.
STAGE_COLORS: dict[str, str] = {
    "text": "#9e9e9e",
    "duration_predictor": "#1f77b4",
    "text_encoder": "#2ca02c",
    "vector_estimator": "#d62728",
    "vocoder": "#9467bd",
}
_VERBS = ("load", "run", "release")


class ReportFigure(Figure):
    """A `Figure` that shows itself as PNG in Jupyter even without the inline backend."""

    def _repr_png_(self) -> bytes:
        return figure_png(self)


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    """Render a figure to PNG bytes (Agg, no display needed).

    Example:
        >>> figure_png(memory_timeline([(0, 1), (1, 2)]))[:4]
        b'\\x89PNG'
    """
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def _figure(width: float = 8.0, height: float = 3.5, **kw: Any) -> ReportFigure:
    fig = ReportFigure(figsize=(width, height), layout="constrained", **kw)
    FigureCanvasAgg(fig)
    return fig


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _stage_of(event: str) -> tuple[str | None, str]:
    verb, _, rest = event.partition(" ")
    return (verb, rest) if verb in _VERBS and rest else (None, event)


def event_spans(
    events: Iterable[tuple[float, str]], end_s: float
) -> list[tuple[float, float, str, str]]:
    """Turn ``(t, "load vocoder")`` marks into ``(start, end, verb, stage)`` spans.

    A span lasts until the next event (or ``end_s``): the engine marks where each load,
    run and release starts, and the next mark is where the work moved on.

    Example:
        >>> event_spans([(0.0, "load vocoder"), (1.0, "run vocoder")], 1.5)
        [(0.0, 1.0, 'load', 'vocoder'), (1.0, 1.5, 'run', 'vocoder')]
    """
    evs = sorted((float(t), str(n)) for t, n in events)
    spans = []
    for i, (t, name) in enumerate(evs):
        verb, stage = _stage_of(name)
        if verb is None:
            continue
        nxt = evs[i + 1][0] if i + 1 < len(evs) else max(end_s, t)
        spans.append((t, nxt, verb, stage))
    return spans


def label_rows(xs: Sequence[float], names: Sequence[str], width_in: float,
               rows: int = 4, fontsize: float = 7.0) -> list[int | None]:
    """A row (0 = top) for each label at axes fraction ``xs`` so that none overprints
    another; None where all ``rows`` are taken (the label is left out).

    Widths are estimated from the text (0.6 em per character), which is what a plot
    needs: labels that may touch but never cover each other.

    Example:
        >>> label_rows([0.1, 0.1, 0.5], ["trial: loaded", "trial: first call", "x"], 8.0)
        [0, 1, 0]
    """
    char_frac = 0.6 * fontsize / 72 / max(width_in, 1e-3)
    ends = [-1.0] * rows  # where the last label of each row ends (axes fraction)
    out: list[int | None] = []
    for x, name in zip(xs, names):
        w = (len(name) + 1) * char_frac
        right = x > 0.7
        lo, hi = (x - w, x) if right else (x, x + w)
        row = next((r for r in range(rows) if lo > ends[r]), None)
        if row is not None:
            ends[row] = hi
        out.append(row)
    return out


def memory_timeline(
    timeline: Any,
    events: Iterable[tuple[float, str]] | None = None,
    budget_mb: float | None = None,
    baseline_mb: float | None = None,
    peak_mb: float | None = None,
    title: str | None = None,
    fig: Figure | None = None,
    zoom: bool = True,
) -> Figure:
    """RSS over time with the stage events shaded and annotated, and the budget line.

    Args:
        timeline: ``[(t_s, rss_mb), ...]``, or a `tts_kit.runtime.measure.Measurement` (or its
            dict) whose ``timeline``, ``events``, ``baseline_rss_mb``, ``peak_rss_mb``
            and ``mem_budget_mb`` are used unless given here.
        events: ``[(t_s, name), ...]``; ``load X`` / ``run X`` / ``release X`` become
            shaded spans coloured by stage, any other name a labelled vertical line.
        budget_mb: draws a red dashed budget line.
        baseline_mb: draws the RSS after imports (what the work started from).
        peak_mb: the kernel's high-water mark (can exceed every sample of a short spike).
        title: figure title.
        fig: draw into this figure (cleared first) instead of a new one.
        zoom: start the time axis just before the first event (the spawn and imports
            before it are a flat line); False: from the process start.

    Example:
        >>> fig = memory_timeline([(0, 50), (1, 60)], budget_mb=100, title="demo")
        >>> fig.axes[0].get_ylabel()
        'RSS (MB)'
    """
    if not isinstance(timeline, (list, tuple, np.ndarray)):
        m = timeline
        timeline = _get(m, "timeline", []) or []
        events = _get(m, "events", []) if events is None else events
        budget_mb = _get(m, MEM_BUDGET_MB) if budget_mb is None else budget_mb
        baseline_mb = _get(m, "baseline_rss_mb") if baseline_mb is None else baseline_mb
        peak_mb = _get(m, PEAK_RSS_MB) if peak_mb is None else peak_mb
        if title is None and _get(m, "status") not in (None, "ok"):
            title = f"status: {_get(m, 'status')} {_get(m, 'error', '')}".strip()
    events = list(events or [])
    if fig is None:
        fig = _figure(9, 3.6)
    else:
        fig.clear()
    ax = fig.add_subplot()
    ts = np.asarray([p[0] for p in timeline], float)
    rss = np.asarray([p[1] for p in timeline], float)
    end = float(ts.max()) if ts.size else max((t for t, _ in events), default=1.0)
    # Start where the work starts: spawning and imports are the flat line before it,
    # and they would squeeze the stages into a sliver at the right.
    t_first = min((t for t, _ in events), default=0.0)
    x0 = max(0.0, t_first - 0.15 * max(end - t_first, 1e-3)) if zoom and events else 0.0
    for start, stop, verb, stage in event_spans(events, end):
        color = STAGE_COLORS.get(stage, "#ff7f0e")
        if verb == "release":
            ax.axvline(start, color=color, ls=":", lw=1.2)
            continue
        ax.axvspan(start, stop, facecolor=color, alpha=0.15 if verb == "load" else 0.32, lw=0,
                   hatch="///" if verb == "load" else None, edgecolor=color)
    others = sorted((float(t), str(n)) for t, n in events if _stage_of(n)[0] is None)
    span = max(end - x0, 1e-9)
    width_in = fig.get_figwidth() * 0.72  # the axes' share of the figure (legend right)
    for (t, name), row in zip(others, label_rows([(t - x0) / span for t, _ in others],
                                                 [n for _, n in others], width_in)):
        ax.axvline(t, color="#555", ls="--", lw=0.8)
        if row is None:  # no free row: the line stays, the legend's note says so
            continue
        right = (t - x0) > 0.7 * span  # near the right edge a label grows leftwards
        ax.annotate(name, (t, 0.97 - 0.085 * row), xycoords=("data", "axes fraction"),
                    va="top", ha="right" if right else "left", fontsize=7, color="#333",
                    xytext=(-2 if right else 2, 0), textcoords="offset points",
                    bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                          "alpha": 0.8})
    if ts.size:
        ax.plot(ts, rss, color="black", lw=1.4, label="RSS (sampled)")
    if to_number(baseline_mb) is not None:
        ax.axhline(baseline_mb, color="#777", ls="-.", lw=1,
                   label=f"after imports {baseline_mb:.0f} MB")
    if to_number(peak_mb) is not None:
        ax.axhline(peak_mb, color="black", ls=":", lw=1, label=f"peak (HWM) {peak_mb:.0f} MB")
    data_top = max([v for v in (*rss.tolist(), peak_mb, baseline_mb)
                    if to_number(v) is not None], default=1.0)
    top = data_top * 1.15
    if budget_mb:
        if budget_mb <= data_top * 2.5:
            ax.axhline(budget_mb, color="red", ls="--", lw=1.5,
                       label=f"budget {budget_mb:.0f} MB")
            top = max(top, budget_mb * 1.08)
        else:
            # Far above the data: name it instead of flattening the curve to the floor.
            ax.plot([], [], color="red", ls="--", lw=1.5,
                    label=f"budget {budget_mb:.0f} MB (off the scale)")
    # One legend entry per stage that appears, and what the shading means.
    stages = [s for s in STAGE_COLORS if any(_stage_of(n)[1] == s for _, n in events)]
    for s in stages:
        ax.fill_between([], [], color=STAGE_COLORS[s], alpha=0.4, label=s)
    if stages:
        ax.fill_between([], [], facecolor="white", edgecolor="#555", hatch="///",
                        label="hatched: load; solid: run; dotted: release")
    ax.set_xlabel("time since the process started (s)")
    ax.set_ylabel("RSS (MB)")
    ax.set_ylim(0, top)
    ax.set_xlim(x0, end if end > x0 else x0 + 1)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def _timings_of(obj: Any) -> dict[str, float]:
    t = _get(obj, "timings", obj)
    return {k: float(v) for k, v in dict(t).items()}


def stage_times(
    results: Any, title: str | None = "time per stage", fig: Figure | None = None
) -> Figure:
    """Per-stage wall time as horizontal bars (ms); several results side by side.

    Args:
        results: a `SynthesisResult`, a ``timings`` dict (seconds per stage), or a
            mapping ``label -> result or timings`` for grouped bars.

    Example:
        >>> fig = stage_times({"text": 0.001, "vocoder": 0.02, "total": 0.03})
        >>> fig.axes[0].get_xlabel()
        'milliseconds'
    """
    if isinstance(results, Mapping) and results and all(
        not isinstance(v, (int, float)) for v in results.values()
    ):
        groups = {str(k): _timings_of(v) for k, v in results.items()}
    else:
        groups = {"": _timings_of(results)}
    order = ["text", *contract.STAGES]
    stages = [s for s in order if any(s in g for g in groups.values())]
    if fig is None:
        fig = _figure(7, 0.5 + 0.45 * len(stages) * max(1, len(groups)) ** 0.5)
    else:
        fig.clear()
    ax = fig.add_subplot()
    n = len(groups)
    height = 0.8 / n
    for gi, (label, timings) in enumerate(groups.items()):
        ys = np.arange(len(stages)) + gi * height - 0.4 + height / 2
        ms = [timings.get(s, 0.0) * 1000 for s in stages]
        colors = [STAGE_COLORS.get(s, "#777") for s in stages]
        bars = ax.barh(ys, ms, height=height * 0.9, color=colors,
                       alpha=1.0 - 0.5 * gi / max(n, 1), label=label or None)
        for bar, v in zip(bars, ms):
            ax.annotate(f"{v:.1f}", (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                        xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
        if label:
            for y in ys:
                ax.annotate(label, (0, y), xytext=(-2, 0), textcoords="offset points",
                            ha="right", va="center", fontsize=6, color="#555")
    ax.set_yticks(np.arange(len(stages)), stages)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds")
    total = [g.get("total") for g in groups.values() if g.get("total")]
    if title:
        suffix = "" if not total else "  (total " + ", ".join(f"{t * 1000:.0f}" for t in total)
        ax.set_title(title + (suffix + " ms)" if suffix else ""), fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return fig


def pareto(
    records: Sequence[Mapping[str, Any]],
    recommended: Mapping[str, Any] | None = None,
    budget_mb: float | None = None,
    x: str = PARETO_X,
    y: str = PARETO_Y,
    title: str | None = "latency against peak memory",
    fig: Figure | None = None,
    ax: Any = None,
    default: Mapping[str, Any] | None = None,
) -> Figure:
    """Latency vs peak RSS for every trial, the Pareto front, the budget and the pick.

    Filled markers are resident loading, hollow ones paged (or a budget): the policy that
    moves memory most. The pick, the ``default`` record (an untuned deployment) and the
    front's points are labelled; both axes start at zero, so a few MB or ms between
    neighbours look as small as they are. Draws on ``ax`` when given (its figure is
    returned), else on ``fig`` (cleared) or a new figure.

    Records use the keys of `tts_kit.experiments.records` (``preset``, ``cpus``, ``status``, ``x``,
    ``y`` ...); the axes are labelled with `tts_kit.experiments.records.label`. A record's
    ``pareto``
    flag is used when present, else `tts_kit.experiments.records.pareto_front` gives the front.
    Trials that did not finish are listed in the title.

    Example:
        >>> recs = [{"preset": "a", "cpus": 1, "status": "ok", PEAK_RSS_MB: 100, P50_MS: 9},
        ...         {"preset": "b", "cpus": 1, "status": "ok", PEAK_RSS_MB: 90, P50_MS: 12}]
        >>> len(pareto(recs, recommended=recs[0], budget_mb=120).axes)
        1
    """
    records = list(records)
    if ax is not None:
        fig = ax.figure
    elif fig is None:
        fig = _figure(8, 4.6)
        ax = fig.add_subplot()
    else:
        fig.clear()
        ax = fig.add_subplot()
    ok = [r for r in records if r.get("status", "ok") == "ok" and r.get(x) is not None]
    if any("pareto" in r for r in records):
        front_idx = [i for i, r in enumerate(records) if r.get("pareto") and r in ok]
    else:
        front_idx = pareto_front(records, x, y)
    presets = sorted({str(r.get("preset")) for r in ok})
    cmap = {p: f"C{i % 10}" for i, p in enumerate(presets)}
    cpu_markers = {1: "o", 2: "s", 4: "^", 8: "D"}
    def resident(r: Mapping[str, Any]) -> bool:
        return str(r.get("loading", "resident")) == "resident"

    for r in ok:
        color = cmap[str(r.get("preset"))]
        ax.scatter(r[x], r[y], marker=cpu_markers.get(r.get("cpus"), "P"), s=46, alpha=0.9,
                   zorder=3, facecolor=color if resident(r) else "white", edgecolor=color,
                   linewidths=1.6)
    for p in presets:
        ax.scatter([], [], color=cmap[p], marker="o", label=p)
    for c in sorted({r.get("cpus") for r in ok if r.get("cpus") is not None}):
        ax.scatter([], [], color="#777", marker=cpu_markers.get(c, "P"), label=f"{c} vCPU")
    if any(not resident(r) for r in ok):
        ax.scatter([], [], facecolor="#777", edgecolor="#777", marker="o", label="resident")
        ax.scatter([], [], facecolor="white", edgecolor="#777", marker="o", linewidths=1.6,
                   label="paged / budget")
    front = sorted((records[i] for i in front_idx), key=lambda r: r[x])
    if front:
        ax.step([r[x] for r in front], [r[y] for r in front], where="post", color="black",
                lw=1, ls="-", alpha=0.7, label="Pareto front", zorder=2)
    if budget_mb:
        xmax = max((r[x] for r in ok), default=budget_mb)
        if budget_mb <= 2.5 * xmax:
            ax.axvline(budget_mb, color="red", ls="--", lw=1.3,
                       label=f"budget {budget_mb:.0f} MB")
        else:  # far to the right: name it rather than squeeze every point to the left
            ax.plot([], [], color="red", ls="--", lw=1.3,
                    label=f"budget {budget_mb:.0f} MB (off the scale)")
    if recommended is not None and recommended.get(x) is not None:
        ax.scatter(recommended[x], recommended[y], marker="*", s=320, facecolor="gold",
                   edgecolor="black", zorder=4, label="recommended")
    # Labels for the points that matter: the pick, the default, the front (no repeats).
    def short(r: Mapping[str, Any]) -> str:
        ld = r.get("loading")
        return f"{r.get('preset')} @ {r.get('cpus')} vCPU" + (
            "" if ld in (None, "resident") else f", {ld}")

    labelled: list[tuple[Mapping[str, Any], str]] = []
    if recommended is not None and recommended.get(x) is not None:
        labelled.append((recommended, "pick: " + short(recommended)))
    if default is not None and default.get(x) is not None:
        labelled.append((default, "default: " + short(default)))
    labelled += [(r, short(r)) for r in front]
    seen: set[tuple[Any, Any]] = set()
    for i, (r, text) in enumerate(labelled):
        at = (r[x], r[y])
        if at in seen:
            continue
        seen.add(at)
        bold = text.startswith(("pick", "default"))
        ax.annotate(text, at, xytext=(8, 6 - 11 * (i % 2)), textcoords="offset points",
                    fontsize=8 if bold else 7, fontweight="bold" if bold else "normal",
                    bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                          "alpha": 0.75}, zorder=5)
    if ok:
        # From zero: a 5 MB gap between 480 and 485 MB is 1 %, and should look it.
        xmax = max(r[x] for r in ok)
        if budget_mb and budget_mb <= 2.5 * xmax:  # the budget line is drawn: keep it in
            xmax = max(xmax, budget_mb)
        ax.set_xlim(0, xmax * 1.12)
        ax.set_ylim(0, max(r[y] for r in ok) * 1.15)
    failed = [r for r in records if r.get("status", "ok") != "ok"]
    ax.set_xlabel(axis_label(x))
    ax.set_ylabel(axis_label(y))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title:
        extra = ""
        if failed:
            extra = "\nnot finished: " + ", ".join(
                f"{r.get('preset')}@{r.get('cpus')} ({r.get('status')})" for r in failed[:6]
            )
        ax.set_title(title + extra, fontsize=10)
    return fig


#: The bars of `latency_story`, in the order a request meets them.
LATENCY_PARTS: tuple[tuple[str, str], ...] = (
    ("session_s", "session creation (load)"),
    (FIRST_MS, "first call"),
    (P50_MS, "steady call (p50)"),
)


def latency_story(
    rows: Sequence[Mapping[str, Any]],
    title: str | None = "one configuration, measured in three places",
    ax: Any = None,
) -> Figure:
    """Session creation, first call and steady p50 of one configuration, side by side
    for each place it was measured (the sweep's trial, the re-measured trial, this
    kernel), each bar labelled with its value; missing figures are left out.

    Each row: ``label`` and any of ``session_s`` (seconds), ``first_ms``, ``p50_ms``
    (`tts_kit.report.answer.latency_rows` builds them). Seconds are drawn in ms.

    Example:
        >>> fig = latency_story([{"label": "sweep", "session_s": 1.5, FIRST_MS: 900,
        ...                        P50_MS: 700}, {"label": "kernel", FIRST_MS: 950}])
        >>> fig.axes[0].get_xlabel()
        'milliseconds'
    """
    rows = list(rows)
    if ax is None:
        fig = _figure(8, 0.9 + 0.75 * max(1, len(rows)))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    colors = {"session_s": "#8c6d31", FIRST_MS: "#e6550d", P50_MS: "#3182bd"}
    n = len(LATENCY_PARTS)
    height = 0.8 / n
    top = 0.0
    for ri, row in enumerate(rows):
        for pi, (key, name) in enumerate(LATENCY_PARTS):
            value = to_number(row.get(key))
            if value is None:
                continue
            ms = value * 1000 if key.endswith("_s") else value
            top = max(top, ms)
            y = ri + pi * height - 0.4 + height / 2
            ax.barh(y, ms, height=height * 0.9, color=colors[key],
                    label=name if ri == 0 or not ax.get_legend_handles_labels()[1].count(name)
                    else None)
            ax.annotate(f"{ms:,.0f} ms", (ms, y), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [str(r.get("label", "")) for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(top, 1.0) * 1.18)
    ax.set_xlabel("milliseconds")
    ax.grid(axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        uniq = dict(zip(labels, handles))
        ax.legend(uniq.values(), uniq.keys(), fontsize=7, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def stage_costs(
    costs: Any,
    runtime_mb: float | None = None,
    article_split: Mapping[str, float] | None | str = "claimed",
    title: str | None = "memory per stage",
    fig: Figure | None = None,
) -> Figure:
    """Measured memory per stage (load and run) next to the article's estimated split.

    Args:
        costs: a `tts_kit.runtime.loading.StageCosts` (what
        `tts_kit.experiments.stage_costs.stage_costs` measured),
            or a mapping ``stage -> cost`` where a cost has ``load_mb`` and ``run_mb``
            (or is a plain number of MB).
        runtime_mb: RSS of the process before any session (interpreter + ONNX Runtime),
            the measured counterpart of the article's "runtime" share; taken from a
            `StageCosts` when not given.
        article_split: the percentages to show beside the measurement: ``"claimed"``
            (default) for the memory article's estimate as `tts_kit.runtime.loading` records it
            (``StageCosts.claimed_split``), a mapping of your own, or None to leave it out.

    Example:
        >>> fig = stage_costs({"vocoder": {"load_mb": 30, "run_mb": 12}}, runtime_mb=60)
        >>> len(fig.axes)
        2
    """
    if hasattr(costs, "stages") and not isinstance(costs, Mapping):
        if runtime_mb is None and to_number(getattr(costs, "runtime_mb", None)) is not None:
            runtime_mb = costs.runtime_mb
        if article_split == "claimed":
            article_split = getattr(costs, "claimed_split", None) or "claimed"
        costs = costs.stages
    from tts_kit.runtime.loading import ARTICLE_SPLIT_CLAIMED, cost_parts, memory_split

    if article_split == "claimed":
        article_split = ARTICLE_SPLIT_CLAIMED
    stages = [s for s in contract.STAGES if s in costs] + [
        s for s in costs if s not in contract.STAGES
    ]
    parts = {s: cost_parts(costs[s]) for s in stages}
    if fig is None:
        fig = _figure(10, 3.8)
    else:
        fig.clear()
    ax, ax2 = fig.subplots(1, 2, width_ratios=[3, 2])
    ys = np.arange(len(stages))
    load = np.array([parts[s][0] for s in stages])
    run = np.array([parts[s][1] for s in stages])
    ax.barh(ys, load, color=[STAGE_COLORS.get(s, "#777") for s in stages], label="load")
    ax.barh(ys, run, left=load, color=[STAGE_COLORS.get(s, "#777") for s in stages],
            alpha=0.45, hatch="//", label="run")
    for y, a, b in zip(ys, load, run):
        fmt = ".1f" if max(a, b) < 10 else ".0f"
        ax.annotate(f"{a:{fmt}} + {b:{fmt}} MB", (a + b, y), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(ys, stages)
    ax.invert_yaxis()
    ax.set_xlabel("RSS added (MB)")
    ax.set_xlim(0, max(float((load + run).max(initial=0)), 1e-3) * 1.3)  # room for the labels
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    # Right: the measured split in the article's vocabulary, as far as it maps.
    bars = [("measured", memory_split(costs, runtime_mb))]
    if article_split:
        bars.append(("article (claimed)", dict(article_split)))
    palette = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"]
    for i, (label, split) in enumerate(bars):
        left = 0.0
        for j, (name, pct) in enumerate(split.items()):
            color = palette[j % len(palette)] if label == "measured" else f"C{(j + 5) % 10}"
            # Every segment is named in the legend; wide ones also inside the bar.
            ax2.barh(i, pct, left=left, color=color, edgecolor="white",
                     label=f"{label.split()[0]}: {name} {pct:.0f}%")
            if pct >= 18:
                ax2.annotate(f"{name}\n{pct:.0f}%", (left + pct / 2, i), ha="center",
                             va="center", fontsize=6, color="white")
            left += pct
    ax2.set_yticks(range(len(bars)), [b[0] for b in bars])
    ax2.set_xlim(0, 100)
    ax2.invert_yaxis()
    ax2.set_xlabel("% of total")
    ax2.set_title("split", fontsize=10)
    ax2.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
               frameon=False)
    return fig


def _wave_of(obj: Any) -> tuple[np.ndarray, int]:
    if isinstance(obj, tuple):
        return np.asarray(obj[0], np.float32), int(obj[1])
    return np.asarray(_get(obj, "wav"), np.float32), int(_get(obj, "sample_rate"))


def _spec_kw(n: int) -> dict[str, int]:
    return {"NFFT": 1024 if n >= 1024 else 256, "noverlap": 512 if n >= 1024 else 128}


def spectrogram_range(waves: Sequence[tuple[np.ndarray, int]],
                      floor_db: float = 80.0) -> tuple[float, float]:
    """The dB range one colour scale should span for these waveforms' spectrograms: up to
    the loudest bin of any of them, ``floor_db`` below it.

    Example:
        >>> x = np.sin(np.linspace(0, 2000, 4410)).astype("float32")
        >>> lo, hi = spectrogram_range([(x, 44100), (x * 0.1, 44100)])
        >>> round(hi - lo)
        80
    """
    from matplotlib import mlab

    top = -np.inf
    for w, sr in waves:
        if len(w) < 256:
            continue
        spec, _, _ = mlab.specgram(np.asarray(w, float), Fs=sr, **_spec_kw(len(w)))
        top = max(top, float(10 * np.log10(spec.max() + 1e-20)))
    if not np.isfinite(top):
        return (-floor_db, 0.0)
    return (top - floor_db, top)


def ab_compare(
    a: Any, b: Any, labels: Sequence[str] = ("A", "B"), title: str | None = None,
    fig: Figure | None = None,
) -> Figure:
    """Two waveforms and their spectrograms, one column each, on shared scales.

    ``a`` and ``b`` are `SynthesisResult` objects or ``(wav, sample_rate)`` pairs.

    Example:
        >>> import numpy as np
        >>> x = np.sin(np.linspace(0, 2000, 44100)).astype("float32")
        >>> len(ab_compare((x, 44100), (x * 0.5, 44100)).axes)  # 4 panels and the dB bar
        5
    """
    (wa, sra), (wb, srb) = _wave_of(a), _wave_of(b)
    if fig is None:
        fig = _figure(10, 4.5)
    else:
        fig.clear()
    axes = fig.subplots(2, 2, sharey="row")
    lim = max(float(np.abs(wa).max(initial=0)), float(np.abs(wb).max(initial=0)), 1e-3)
    vmin, vmax = spectrogram_range([(wa, sra), (wb, srb)])
    image = None
    for col, (w, sr, label) in enumerate(((wa, sra, labels[0]), (wb, srb, labels[1]))):
        t = np.arange(len(w)) / sr
        axes[0, col].plot(t, w, lw=0.4, color=f"C{col}")
        axes[0, col].set_ylim(-lim * 1.05, lim * 1.05)
        axes[0, col].set_title(f"{label}: {len(w) / sr:.2f} s", fontsize=9)
        if len(w) >= 256:
            # One colour scale for both panels: the same colour is the same dB in each.
            *_, image = axes[1, col].specgram(w, **_spec_kw(len(w)), Fs=sr, cmap="magma",
                                              vmin=vmin, vmax=vmax)
        axes[1, col].set_xlabel("seconds")
    if image is not None:
        fig.colorbar(image, ax=axes[1, :], label="dB", fraction=0.04, pad=0.01)
    axes[0, 0].set_ylabel("amplitude")
    axes[1, 0].set_ylabel("Hz")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def load_levels(
    records: Sequence[Mapping[str, Any]],
    title: str | None = "load test",
    fig: Figure | None = None,
) -> Figure:
    """A load test level by level: latency and time-to-first-audio percentiles (left),
    the pool's memory over time with the levels marked (right).

    Records are `tts_kit.serve.loadtest` levels (``concurrency`` or ``rate``, ``p50_ms``
    ... ``ttfa_p95_ms``, ``timeline`` of ``[t, RSS MB, PSS MB]``, ``wall_s``).

    Example:
        >>> recs = [{"mode": "closed", "concurrency": c, P50_MS: 100 * c, P95_MS: 150 * c,
        ...          P99_MS: 160 * c, TTFA_P50_MS: 40 * c, TTFA_P95_MS: 60 * c,
        ...          RPS: 2.0, "timeline": [[0, 300, 200], [1, 320, 210]], WALL_S: 1.0}
        ...         for c in (1, 2, 4)]
        >>> len(load_levels(recs).axes)
        2
    """
    records = list(records)
    if fig is None:
        fig = _figure(10, 3.8)
    else:
        fig.clear()
    left, right = fig.subplots(1, 2)
    names = [f"c={r['concurrency']}" if r.get("concurrency") else f"{r.get('rate', 0):g}/s"
             for r in records]
    x = np.arange(len(records))
    for key, style in ((P50_MS, "-o"), (P95_MS, "-s"), (P99_MS, ":^"),
                       (TTFA_P50_MS, "--o"), (TTFA_P95_MS, "--s")):
        ys = [to_number(r.get(key)) for r in records]
        if any(y is not None for y in ys):
            left.plot(x, [np.nan if y is None else y for y in ys], style,
                      label=axis_label(key).replace(" (ms)", ""))
    left.set_xticks(x, names)
    left.set_ylabel("ms")
    left.set_xlabel("load level")
    left.grid(alpha=0.3)
    left.legend(fontsize=7)
    offset = 0.0
    for i, r in enumerate(records):
        tl = np.asarray(r.get("timeline") or [], float).reshape(-1, 3)
        if len(tl):
            right.plot(tl[:, 0] + offset, tl[:, 1], color="C0", lw=1.2,
                       label="pool RSS" if i == 0 else None)
            right.plot(tl[:, 0] + offset, tl[:, 2], color="C1", lw=1.2,
                       label="pool PSS" if i == 0 else None)
        right.axvline(offset, color="#999", lw=0.8, ls=":")
        right.annotate(names[i], (offset, 0), xytext=(2, 2), textcoords="offset points",
                       fontsize=7, xycoords=("data", "axes fraction"))
        offset += float(r.get(WALL_S) or (tl[-1, 0] if len(tl) else 0.0))
    right.set_xlabel("seconds")
    right.set_ylabel("MB")
    right.grid(alpha=0.3)
    if right.lines:
        right.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def architectures(
    records: Sequence[Mapping[str, Any]],
    keys: Sequence[str] = (RPS, P95_MS, TTFA_P95_MS, POOL_PSS_MB),
    title: str | None = "serving architectures",
) -> Figure:
    """One panel per figure in ``keys`` against concurrency, one line per configuration
    (`tts_kit.serve.sweep` records: ``architecture``, ``workers``, ``threads``,
    ``loading``, ``concurrency``).

    Example:
        >>> recs = [{"architecture": a, "workers": 2, "threads": 1, "loading": "resident",
        ...          "concurrency": c, "status": "ok", RPS: 1.0 * c, P95_MS: 100.0,
        ...          TTFA_P95_MS: 50.0, POOL_PSS_MB: 300.0}
        ...         for a in ("workers", "article") for c in (1, 2)]
        >>> len(architectures(recs).axes)
        4
    """
    records = [r for r in records if r.get("status", "ok") == "ok" and r.get("concurrency")]
    fig = _figure(3.0 * len(keys), 3.4)
    axes = fig.subplots(1, len(keys))
    axes = [axes] if len(keys) == 1 else list(axes)

    def name(r: Mapping[str, Any]) -> str:
        extra = "" if r.get("loading") in (None, "resident") else f", {r['loading']}"
        th = r.get("threads")
        return f"{r['architecture']} x{r['workers']}" + (f" ({th}t)" if th else "") + extra

    configs = list(dict.fromkeys(name(r) for r in records))
    for ax, key in zip(axes, keys):
        for i, cfg in enumerate(configs):
            rows = sorted((r for r in records if name(r) == cfg), key=lambda r: r["concurrency"])
            ys = [to_number(r.get(key)) for r in rows]
            ax.plot([r["concurrency"] for r in rows], [np.nan if y is None else y for y in ys],
                    "-o", color=f"C{i % 10}", label=cfg, ms=4)
        ax.set_xlabel("concurrency")
        ax.set_title(axis_label(key), fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
