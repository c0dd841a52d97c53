"""What every figure of `tts_kit.notebook` shares: a `Figure` that shows itself as PNG,
the stage colours, the budget line, event spans and labels on a time axis.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

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
        >>> figure_png(_figure())[:4]
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


def _fresh(fig: Figure | None, width: float, height: float) -> Figure:
    """``fig`` cleared to draw into again, or a new figure of that size."""
    if fig is None:
        return _figure(width, height)
    fig.clear()
    return fig


def budget_line(ax: Any, budget_mb: float | None, data_max: float, *, vertical: bool) -> bool:
    """Draw the budget line when within 2.5x ``data_max``, else only name it in the legend;
    True if drawn.

    Example:
        >>> budget_line(_figure().subplots(), 200.0, 100.0, vertical=False)
        True
    """
    if not budget_mb:
        return False
    if budget_mb <= 2.5 * data_max:
        line = ax.axvline if vertical else ax.axhline
        line(budget_mb, color="red", ls="--", lw=1.4, label=f"budget {budget_mb:.0f} MB")
        return True
    ax.plot([], [], color="red", ls="--", lw=1.4,
            label=f"budget {budget_mb:.0f} MB (off the scale)")
    return False


def legend_right(ax: Any, *args: Any) -> None:
    """The legend outside the axes, on the right (``args``: handles and labels)."""
    ax.legend(*args, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


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
    """Turn ``(t, "load vocoder")`` marks into ``(start, end, verb, stage)`` spans, each
    lasting until the next mark (or ``end_s``).

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
    """A row (0 = top) for each label at axes fraction ``xs`` so that none covers another;
    None where all ``rows`` are taken.

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

