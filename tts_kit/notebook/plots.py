"""Matplotlib figures of measurements: memory timelines, stage times, A/B audio (and the
tuning and serving figures). No ``pyplot`` (safe from threads); each shows itself as PNG.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from tts_kit.core import contract
from tts_kit.notebook._figures import (  # noqa: F401  (re-exported)
    STAGE_COLORS,
    _figure,
    _fresh,
    _get,
    _stage_of,
    budget_line,
    event_spans,
    figure_png,
    label_rows,
    legend_right,
)
from tts_kit.notebook.tuning_plots import latency_story, pareto, stage_cost_bars  # noqa: F401
from tts_kit.tuning import records as rk


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

    ``timeline``: ``[(t_s, rss_mb), ...]`` or a `Measurement` (or its dict), whose fields
    fill the arguments not given; ``events``: ``[(t_s, "load vocoder"), ...]``; ``fig``:
    draw into it (cleared); ``zoom``: start the time axis just before the first event.

    Example:
        >>> fig = memory_timeline([(0, 50), (1, 60)], budget_mb=100, title="demo")
        >>> fig.axes[0].get_ylabel()
        'RSS (MB)'
    """
    if not isinstance(timeline, (list, tuple, np.ndarray)):  # a measurement fills the gaps
        m, timeline = timeline, _get(timeline, "timeline", []) or []
        events = _get(m, "events", []) if events is None else events
        budget_mb = _get(m, rk.MEM_BUDGET_MB) if budget_mb is None else budget_mb
        baseline_mb = _get(m, "baseline_rss_mb") if baseline_mb is None else baseline_mb
        peak_mb = _get(m, rk.PEAK_RSS_MB) if peak_mb is None else peak_mb
        if title is None and _get(m, "status") not in (None, "ok"):
            title = f"status: {_get(m, 'status')} {_get(m, 'error', '')}".strip()
    events = list(events or [])
    fig = _fresh(fig, 9, 3.6)
    ax = fig.add_subplot()
    ts = np.asarray([p[0] for p in timeline], float)
    rss = np.asarray([p[1] for p in timeline], float)
    end = float(ts.max()) if ts.size else max((t for t, _ in events), default=1.0)
    t_first = min((t for t, _ in events), default=0.0)
    x0 = max(0.0, t_first - 0.15 * max(end - t_first, 1e-3)) if zoom and events else 0.0
    _shade_stages(ax, events, end)
    _mark_events(ax, events, x0, end, fig.get_figwidth() * 0.72)  # the axes' share
    if ts.size:
        ax.plot(ts, rss, color="black", lw=1.4, label="RSS (sampled)")
    top = _level_lines(ax, rss, baseline_mb, peak_mb, budget_mb)
    _stage_legend(ax, events)
    ax.set_xlabel("time since the process started (s)")
    ax.set_ylabel("RSS (MB)")
    ax.set_ylim(0, top)
    ax.set_xlim(x0, end if end > x0 else x0 + 1)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        legend_right(ax)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


_OTHER_STAGE = "#ff7f0e"  # a stage of another family (Piper's one ``voice`` graph)


def _shade_stages(ax: Any, events: list[tuple[float, str]], end: float) -> None:
    """Load and run spans shaded in their stage's colour; releases as dotted lines."""
    for start, stop, verb, stage in event_spans(events, end):
        color = STAGE_COLORS.get(stage, _OTHER_STAGE)
        if verb == "release":
            ax.axvline(start, color=color, ls=":", lw=1.2)
            continue
        ax.axvspan(start, stop, facecolor=color, alpha=0.15 if verb == "load" else 0.32, lw=0,
                   hatch="///" if verb == "load" else None, edgecolor=color)


def _mark_events(ax: Any, events: list[tuple[float, str]], x0: float, end: float,
                 width_in: float) -> None:
    """Any other event: a dashed line, labelled where a row is free (`label_rows`)."""
    others = sorted((float(t), str(n)) for t, n in events if _stage_of(n)[0] is None)
    span = max(end - x0, 1e-9)
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


def _level_lines(ax: Any, rss: np.ndarray, baseline_mb: Any, peak_mb: Any,
                 budget_mb: Any) -> float:
    """The baseline, peak and budget lines; returns the top of the y axis."""
    if rk.to_number(baseline_mb) is not None:
        ax.axhline(baseline_mb, color="#777", ls="-.", lw=1,
                   label=f"after imports {baseline_mb:.0f} MB")
    if rk.to_number(peak_mb) is not None:
        ax.axhline(peak_mb, color="black", ls=":", lw=1, label=f"peak (HWM) {peak_mb:.0f} MB")
    data_top = max([v for v in (*rss.tolist(), peak_mb, baseline_mb)
                    if rk.to_number(v) is not None], default=1.0)
    if budget_line(ax, budget_mb, data_top, vertical=False):
        return max(data_top * 1.15, budget_mb * 1.08)
    return data_top * 1.15


def _stage_legend(ax: Any, events: list[tuple[float, str]]) -> None:
    """One legend entry per stage the events name, and what the shading means."""
    named = [stage for _, n in events for verb, stage in [_stage_of(n)] if verb is not None]
    stages = [s for s in STAGE_COLORS if s in named]
    stages += [s for s in dict.fromkeys(named) if s not in STAGE_COLORS]
    for s in stages:
        ax.fill_between([], [], color=STAGE_COLORS.get(s, _OTHER_STAGE), alpha=0.4, label=s)
    if stages:
        ax.fill_between([], [], facecolor="white", edgecolor="#555", hatch="///",
                        label="hatched: load; solid: run; dotted: release")


def _timings_of(obj: Any) -> dict[str, float]:
    t = _get(obj, "timings", obj)
    return {k: float(v) for k, v in dict(t).items()}


def stage_times(results: Any, title: str | None = "time per stage",
                fig: Figure | None = None) -> Figure:
    """Per-stage wall time as horizontal bars (ms) of every stage the timings hold.

    ``results``: a `SynthesisResult`, a ``timings`` dict, or ``label -> either`` (grouped).

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
    found = dict.fromkeys(s for g in groups.values() for s in g if s != "total")
    stages = [s for s in ("text", *contract.STAGES) if s in found]  # pipeline order first,
    stages += [s for s in found if s not in stages]  # then other models' stages
    fig = _fresh(fig, 7, 0.5 + 0.45 * len(stages) * max(1, len(groups)) ** 0.5)
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
            text = f"{v:.1f}" if v < 100 else f"{v:,.0f}"  # 7.7 under 100 ms, 63,751 above
            ax.annotate(text, (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                        xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
        if label:
            for y in ys:
                ax.annotate(label, (0, y), xytext=(-2, 0), textcoords="offset points",
                            ha="right", va="center", fontsize=6, color="#555")
    ax.set_yticks(np.arange(len(stages)), stages)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    total = [g.get("total") for g in groups.values() if g.get("total")]
    if title:
        suffix = "" if not total else "  (total " + ", ".join(f"{t * 1000:,.0f}" for t in total)
        ax.set_title(title + (suffix + " ms)" if suffix else ""), fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return fig


def _wave_of(obj: Any) -> tuple[np.ndarray, int]:
    if isinstance(obj, tuple):
        return np.asarray(obj[0], np.float32), int(obj[1])
    return np.asarray(_get(obj, "wav"), np.float32), int(_get(obj, "sample_rate"))


def ab_compare(a: Any, b: Any, labels: Sequence[str] = ("A", "B"),
               title: str | None = None) -> Figure:
    """Two waveforms (`SynthesisResult` or ``(wav, sample_rate)``) and their spectrograms,
    one column each, on shared scales.

    Example:
        >>> import numpy as np
        >>> x = np.sin(np.linspace(0, 2000, 44100)).astype("float32")
        >>> len(ab_compare((x, 44100), (x * 0.5, 44100)).axes)  # 4 panels and the dB bar
        5
    """
    (wa, sra), (wb, srb) = _wave_of(a), _wave_of(b)
    fig = _figure(10, 4.5)
    axes = fig.subplots(2, 2, sharey="row")
    lim = max(float(np.abs(wa).max(initial=0)), float(np.abs(wb).max(initial=0)), 1e-3)
    images, top_db = [], -np.inf
    for col, (w, sr, label) in enumerate(((wa, sra, labels[0]), (wb, srb, labels[1]))):
        t = np.arange(len(w)) / sr
        axes[0, col].plot(t, w, lw=0.4, color=f"C{col}")
        axes[0, col].set_ylim(-lim * 1.05, lim * 1.05)
        axes[0, col].set_title(f"{label}: {len(w) / sr:.2f} s", fontsize=9)
        if len(w) >= 256:
            nfft = 1024 if len(w) >= 1024 else 256
            spec, *_, image = axes[1, col].specgram(w, NFFT=nfft, noverlap=nfft // 2, Fs=sr,
                                                    cmap="magma")
            images.append(image)
            top_db = max(top_db, float(10 * np.log10(spec.max() + 1e-20)))
        axes[1, col].set_xlabel("seconds")
    for image in images:  # one colour scale: the same colour is the same dB in each panel
        image.set_clim(top_db - 80.0, top_db)
    if images:
        fig.colorbar(images[-1], ax=axes[1, :], label="dB", fraction=0.04, pad=0.01)
    axes[0, 0].set_ylabel("amplitude")
    axes[1, 0].set_ylabel("Hz")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def load_levels(records: Sequence[Mapping[str, Any]], title: str | None = "load test") -> Figure:
    """A load test level by level: latency and time-to-first-audio percentiles (left), the
    pool's memory over time (right).

    Example:
        >>> len(load_levels([{"concurrency": 1, rk.P50_MS: 100.0, rk.WALL_S: 1.0}]).axes)
        2
    """
    records = list(records)
    fig = _figure(10, 3.8)
    left, right = fig.subplots(1, 2)
    names = [f"c={r['concurrency']}" if r.get("concurrency") else f"{r.get('rate', 0):g}/s"
             for r in records]
    x = np.arange(len(records))
    for key, style in ((rk.P50_MS, "-o"), (rk.P95_MS, "-s"), (rk.P99_MS, ":^"),
                       (rk.TTFA_P50_MS, "--o"), (rk.TTFA_P95_MS, "--s")):
        ys = [rk.to_number(r.get(key)) for r in records]
        if any(y is not None for y in ys):
            left.plot(x, [np.nan if y is None else y for y in ys], style,
                      label=rk.label(key).replace(" (ms)", ""))
    for i, r in enumerate(records):  # a level whose requests all failed: why, not a latency
        if rk.to_number(r.get(rk.P50_MS)) is not None:
            continue
        lost = [f"{int(r[key])} {word}" for key, word in
                ((rk.TIMEOUTS, "timed out"), (rk.ERRORS, "failed"), (rk.REJECTED, "rejected"))
                if rk.to_number(r.get(key))]
        left.annotate("no request finished" + (":\n" + ", ".join(lost) if lost else ""),
                      (x[i], 0.5), xycoords=("data", "axes fraction"), ha="center",
                      fontsize=7, color="#b00020")
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
        offset += float(r.get(rk.WALL_S) or (tl[-1, 0] if len(tl) else 0.0))
    right.set_xlabel("seconds")
    right.set_ylabel("MB")
    right.grid(alpha=0.3)
    if right.lines:
        right.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def architectures(records: Sequence[Mapping[str, Any]],
                  title: str | None = "serving architectures") -> Figure:
    """Throughput, p95, TTFA p95 and pool PSS against concurrency, one line per
    configuration of `tts_kit.serve.sweep` records.

    Example:
        >>> rec = {"architecture": "workers", "workers": 2, "concurrency": 1, rk.RPS: 1.0}
        >>> len(architectures([rec]).axes)
        4
    """
    records = [r for r in records if r.get("status", "ok") == "ok" and r.get("concurrency")]
    keys = (rk.RPS, rk.P95_MS, rk.TTFA_P95_MS, rk.POOL_PSS_MB)
    fig = _figure(3.0 * len(keys), 3.4)
    axes = fig.subplots(1, len(keys))

    def name(r: Mapping[str, Any]) -> str:
        extra = "" if r.get("loading") in (None, "resident") else f", {r['loading']}"
        th = r.get("threads")
        return f"{r['architecture']} x{r['workers']}" + (f" ({th}t)" if th else "") + extra

    configs = list(dict.fromkeys(name(r) for r in records))
    for ax, key in zip(axes, keys):
        for i, cfg in enumerate(configs):
            rows = sorted((r for r in records if name(r) == cfg), key=lambda r: r["concurrency"])
            ys = [rk.to_number(r.get(key)) for r in rows]
            ax.plot([r["concurrency"] for r in rows], [np.nan if y is None else y for y in ys],
                    "-o", color=f"C{i % 10}", label=cfg, ms=4)
        ax.set_xlabel("concurrency")
        ax.set_title(rk.label(key), fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
