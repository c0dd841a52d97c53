"""Figures of tuning results: the Pareto front, one configuration's latency in several
places, the stages' memory costs, the cost model against its floor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, MaxNLocator

from tts_kit.core import contract
from tts_kit.notebook._figures import STAGE_COLORS, _figure, budget_line, legend_right
from tts_kit.tuning import records as rk

X, Y = rk.PARETO_X, rk.PARETO_Y  # peak RSS against p50


def pareto(
    records: Sequence[Mapping[str, Any]],
    recommended: Mapping[str, Any] | None = None,
    budget_mb: float | None = None,
    title: str | None = "latency against peak memory",
    ax: Any = None,
    default: Mapping[str, Any] | None = None,
) -> Figure:
    """Latency vs peak RSS for every trial, the Pareto front, the budget and the pick;
    the pick, ``default`` and the front labelled, unfinished trials named in the title.

    Example:
        >>> rec = {"preset": "a", "cpus": 1, rk.PEAK_RSS_MB: 100, rk.P50_MS: 9}
        >>> len(pareto([rec], recommended=rec, budget_mb=120).axes)
        1
    """
    records = list(records)
    ax = ax if ax is not None else _figure(8, 4.6).add_subplot()
    ok = [r for r in records if r.get("status", "ok") == "ok" and r.get(X) is not None]
    if any("pareto" in r for r in records):
        front_idx = [i for i, r in enumerate(records) if r.get("pareto") and r in ok]
    else:
        front_idx = rk.pareto_front(records, X, Y)
    _draw_points(ax, ok)
    front = sorted((records[i] for i in front_idx), key=lambda r: r[X])
    if front:
        ax.step([r[X] for r in front], [r[Y] for r in front], where="post", color="black",
                lw=1, ls="-", alpha=0.7, label="Pareto front", zorder=2)
    budget_line(ax, budget_mb, max((r[X] for r in ok), default=budget_mb or 0), vertical=True)
    if recommended is not None and recommended.get(X) is not None:
        ax.scatter(recommended[X], recommended[Y], marker="*", s=320, facecolor="gold",
                   edgecolor="black", zorder=4, label="recommended")
    _pareto_axes(ax, records, ok, budget_mb, title)
    _label_points(ax, recommended, default, front, ok)
    return ax.figure


def _pareto_axes(ax: Any, records: list[Mapping[str, Any]], ok: list[Mapping[str, Any]],
                 budget_mb: float | None, title: str | None) -> None:
    """`pareto`'s axes from zero, labels, legend, and a title naming unfinished trials."""
    if ok:
        # From zero: a 5 MB gap between 480 and 485 MB is 1 %, and should look it.
        xmax = max(r[X] for r in ok)
        if budget_mb and budget_mb <= 2.5 * xmax:  # the budget line is drawn: keep it in
            xmax = max(xmax, budget_mb)
        ax.set_xlim(0, xmax * 1.12)
        ax.set_ylim(0, max(r[Y] for r in ok) * 1.15)
    failed = [r for r in records if r.get("status", "ok") != "ok"]
    ax.set_xlabel(rk.label(X))
    ax.set_ylabel(rk.label(Y))
    ax.grid(alpha=0.3)
    legend_right(ax)
    if title and failed:
        title += "\nnot finished: " + ", ".join(
            f"{r.get('preset')}@{r.get('cpus')} ({r.get('status')})" for r in failed[:6])
    if title:
        ax.set_title(title, fontsize=10)


def _draw_points(ax: Any, ok: list[Mapping[str, Any]]) -> None:
    """`pareto`'s markers: colour by preset, shape by cores, filled when resident."""
    presets = sorted({str(r.get("preset")) for r in ok})
    cmap = {p: f"C{i % 10}" for i, p in enumerate(presets)}
    cpu_markers = {1: "o", 2: "s", 4: "^", 8: "D"}

    def resident(r: Mapping[str, Any]) -> bool:
        return str(r.get("loading", "resident")) == "resident"

    for r in ok:
        color = cmap[str(r.get("preset"))]
        ax.scatter(r[X], r[Y], marker=cpu_markers.get(r.get("cpus"), "P"), s=46, alpha=0.9,
                   zorder=3, facecolor=color if resident(r) else "white", edgecolor=color,
                   linewidths=1.6)
    # Legend: a colour bar for the preset, a grey marker for the cores, a box for the loading.
    for p in presets:
        ax.add_line(Line2D([], [], color=cmap[p], lw=5, solid_capstyle="butt", label=p))
    for c in sorted({r.get("cpus") for r in ok if r.get("cpus") is not None}):
        ax.add_line(Line2D([], [], ls="none", marker=cpu_markers.get(c, "P"), markersize=7,
                           markerfacecolor="#555", markeredgecolor="#555", label=f"{c} vCPU"))
    if any(not resident(r) for r in ok):
        ax.add_patch(Rectangle((0, 0), 0, 0, facecolor="#999", edgecolor="#333", lw=1,
                               label="resident"))
        ax.add_patch(Rectangle((0, 0), 0, 0, facecolor="white", edgecolor="#333", lw=1.4,
                               label="paged / budget"))


#: Where a label may go around its point, in order of preference, at growing distances
#: (points); a far label gets a leader line.
_LABEL_DIRS = ((1, 0.6), (1, -0.6), (-1, 0.6), (-1, -0.6), (0, 1.2), (0, -1.2), (1, 0), (-1, 0))
_LABEL_STEPS = (8.0, 18.0, 30.0, 44.0)


def _label_points(ax: Any, recommended: Mapping[str, Any] | None,
                  default: Mapping[str, Any] | None, front: list[Mapping[str, Any]],
                  ok: list[Mapping[str, Any]]) -> None:
    """Labels for the pick, the default and the front, each where it covers nothing."""
    def short(r: Mapping[str, Any]) -> str:
        ld = r.get("loading")
        return f"{r.get('preset')} @ {r.get('cpus')} vCPU" + (
            "" if ld in (None, "resident") else f", {ld}")

    labelled: list[tuple[Mapping[str, Any], str]] = []
    if recommended is not None and recommended.get(X) is not None:
        labelled.append((recommended, "pick: " + short(recommended)))
    if default is not None and default.get(X) is not None:
        labelled.append((default, "default: " + short(default)))
    labelled += [(r, short(r)) for r in front]
    fig = ax.figure
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.draw_without_rendering()  # the layout (legend outside, title) settles first
    renderer = fig.canvas.get_renderer()
    points = [ax.transData.transform((r[X], r[Y])) for r in ok]
    taken: list[Any] = []
    seen: set[tuple[Any, Any]] = set()
    for r, text in labelled:
        at = (r[X], r[Y])
        if at in seen:
            continue
        seen.add(at)
        bold = text.startswith(("pick", "default"))
        _place_label(ax, renderer, text, at, points, taken, must=bold)


def _place_label(ax: Any, renderer: Any, text: str, at: tuple[float, float],
                 points: list[Any], taken: list[Any], *, must: bool) -> None:
    """Annotate ``at`` at the first free spot around it, else a ``must`` one where it
    overlaps least."""
    from matplotlib.transforms import Bbox

    own = ax.transData.transform(at)
    frame = ax.get_window_extent(renderer)
    blocked = [Bbox.from_extents(px - 5, py - 5, px + 5, py + 5) for px, py in points
               if abs(px - own[0]) > 0.5 or abs(py - own[1]) > 0.5]
    style = {"fontsize": 8 if must else 7, "fontweight": "bold" if must else "normal",
             "bbox": {"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none",
                      "alpha": 0.8}, "zorder": 5, "annotation_clip": False}

    def put(dx: float, dy: float, step: float) -> Any:
        ann = ax.annotate(text, at, xytext=(dx * step, dy * step), textcoords="offset points",
                          **style, ha="left" if dx > 0 else "right" if dx < 0 else "center",
                          va="bottom" if dy > 0 else "top" if dy < 0 else "center")
        ann.set_in_layout(False)
        return ann

    def keep(ann: Any, dx: float, dy: float, step: float) -> None:
        taken.append(ann.get_window_extent(renderer).padded(2))
        if step > _LABEL_STEPS[0]:  # placed away from the point: a thin line leads to it
            ax.annotate("", at, xytext=(dx * step, dy * step), textcoords="offset points",
                        zorder=4, arrowprops={"arrowstyle": "-", "color": "#777", "lw": 0.7,
                                              "shrinkA": 0, "shrinkB": 4}).set_in_layout(False)

    best: tuple[int, float, float, float] | None = None
    for step in _LABEL_STEPS:
        for dx, dy in _LABEL_DIRS:
            ann = put(dx, dy, step)
            box = ann.get_window_extent(renderer).padded(2)
            clashes = sum(box.overlaps(b) for b in (*taken, *blocked))
            inside = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
            if clashes == 0 and inside:
                return keep(ann, dx, dy, step)
            ann.remove()
            score = clashes + (0 if inside else 100)
            if best is None or score < best[0]:
                best = (score, dx, dy, step)
    if must and best is not None:
        keep(put(*best[1:]), *best[1:])


#: The bars of `latency_story`, in the order a request meets them.
LATENCY_PARTS: tuple[tuple[str, str], ...] = (
    ("session_s", "session creation (load)"),
    (rk.FIRST_MS, "first call"),
    (rk.P50_MS, "steady call (p50)"),
)


def latency_story(rows: Sequence[Mapping[str, Any]],
                  title: str | None = "one configuration, measured in three places") -> Figure:
    """Session creation, first call and steady p50 of one configuration per place measured
    (`tts_kit.report.answer.latency_rows`), in ms.

    Example:
        >>> latency_story([{"label": "sweep", rk.P50_MS: 700}]).axes[0].get_xlabel()
        'milliseconds'
    """
    rows = list(rows)
    fig = _figure(8, 0.9 + 0.75 * max(1, len(rows)))
    ax = fig.add_subplot()
    colors = {"session_s": "#8c6d31", rk.FIRST_MS: "#e6550d", rk.P50_MS: "#3182bd"}
    n = len(LATENCY_PARTS)
    height = 0.8 / n
    top = 0.0
    for ri, row in enumerate(rows):
        for pi, (key, name) in enumerate(LATENCY_PARTS):
            value = rk.to_number(row.get(key))
            if value is None:
                continue
            ms = value * 1000 if key.endswith("_s") else value
            top = max(top, ms)
            y = ri + pi * height - 0.4 + height / 2
            ax.barh(y, ms, height=height * 0.9, color=colors[key], label=name)
            ax.annotate(f"{ms:,.0f} ms", (ms, y), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [str(r.get("label", "")) for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(top, 1.0) * 1.18)
    # Few ticks, with separators: five-digit values run into each other.
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    ax.set_xlabel("milliseconds")
    ax.grid(axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        uniq = dict(zip(labels, handles))  # one entry per figure, not per row
        legend_right(ax, uniq.values(), uniq.keys())
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def stage_cost_bars(
    costs: Any,
    runtime_mb: float | None = None,
    article_split: Mapping[str, float] | None | str = "claimed",
    title: str | None = "memory per stage",
) -> Figure:
    """Measured memory per stage (load and run) next to the article's estimated split.

    ``costs``: a `StageCosts` or ``stage -> cost``; ``article_split``: ``"claimed"`` (the
    article's estimate), a mapping, or None.

    Example:
        >>> fig = stage_cost_bars({"vocoder": {"load_mb": 30, "run_mb": 12}}, runtime_mb=60)
        >>> len(fig.axes)
        2
    """
    if hasattr(costs, "stages") and not isinstance(costs, Mapping):
        if runtime_mb is None and rk.to_number(getattr(costs, "runtime_mb", None)) is not None:
            runtime_mb = costs.runtime_mb
        if article_split == "claimed":
            article_split = getattr(costs, "claimed_split", None) or "claimed"
        costs = costs.stages
    from tts_kit.runtime.loading import ARTICLE_SPLIT_CLAIMED, cost_parts, memory_split

    if article_split == "claimed":
        article_split = ARTICLE_SPLIT_CLAIMED
    stages = [s for s in contract.STAGES if s in costs]
    stages += [s for s in costs if s not in contract.STAGES]
    load, run = np.array([cost_parts(costs[s]) for s in stages], float).reshape(-1, 2).T
    fig = _figure(10, 3.8)
    ax, ax2 = fig.subplots(1, 2, width_ratios=[3, 2])
    ys = np.arange(len(stages))
    colors = [STAGE_COLORS.get(s, "#777") for s in stages]
    ax.barh(ys, load, color=colors, label="load")
    ax.barh(ys, run, left=load, color=colors, alpha=0.45, hatch="//", label="run")
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
    _split_bars(ax2, memory_split(costs, runtime_mb), article_split)
    return fig


def _split_bars(ax2: Any, measured: Mapping[str, float], article_split: Any) -> None:
    """`stage_cost_bars`' right panel: the measured split beside the article's claimed one."""
    bars = [("measured", dict(measured))]
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


def roofline_figure(r: Any) -> Any:
    """A `tts_kit.tuning.roofline.Roofline` drawn: per stage, its measured seconds (light:
    what tuning can win) over its floor at the MatMul peak (dark).

    Example:
        >>> from tts_kit.tuning.roofline import Roofline, StageRate
        >>> r = Roofline([StageRate("text_encoder", 1, 1.0, 0.5, 40.0, 0.1)], steps=8,
        ...              threads=2, peak_gflops=40.0, audio_s=8.0)
        >>> [t.get_text() for t in roofline_figure(r).axes[0].texts]
        ['5 % of peak, 20.0x the floor']
    """
    fig = _figure(9.0, 3.2)
    ax = fig.subplots()
    names = [s.stage.replace("_", " ") for s in r.stages]
    ys = list(range(len(r.stages)))
    colors = [STAGE_COLORS.get(s.stage, "#777777") for s in r.stages]
    ax.barh(ys, [s.seconds for s in r.stages], color=colors, alpha=0.35,
            label="measured (tuning can win this part)")
    ax.barh(ys, [min(s.floor_s, s.seconds) for s in r.stages], color=colors,
            label=f"floor at the MatMul peak ({r.peak_gflops:.1f} GFLOP/s)")
    for y, s in zip(ys, r.stages):
        ax.annotate(f"{100 * s.of_peak:.0f} % of peak, {s.seconds / s.floor_s:.1f}x the floor",
                    (s.seconds, y), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(ys, names)
    ax.invert_yaxis()
    ax.set_xlabel("seconds per chunk")
    ax.set_xlim(0, 1.45 * max([s.seconds for s in r.stages] or [1.0]))
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"one {r.audio_s:.1f} s chunk at {r.steps} steps, {r.threads} "
                 f"thread{'s' if r.threads != 1 else ''}: time against the floor")
    return fig
