"""The cost model drawn: each stage's measured time against its floor at the MatMul peak.

Example:
    >>> from tts_kit.tuning.roofline import Roofline, StageRate
    >>> r = Roofline([StageRate("vocoder", 10**6, 20.0, 1.0, 40.0, 2.5)], steps=8,
    ...              threads=1, peak_gflops=40.0, audio_s=8.0)
    >>> roofline_figure(r).axes[0].get_title()
    'one 8.0 s chunk at 8 steps, 1 thread: time against the floor'
"""

from __future__ import annotations

from typing import Any

from tts_kit.notebook._figures import STAGE_COLORS, _figure


def roofline(ax: Any, r: Any) -> Any:
    """Draw a `tts_kit.tuning.roofline.Roofline` on ``ax``: per stage, its measured seconds
    (light: what tuning can win) over its floor at the MatMul peak (dark); returns ``ax``.

    Example:
        >>> from tts_kit.tuning.roofline import Roofline, StageRate
        >>> r = Roofline([StageRate("text_encoder", 1, 1.0, 0.5, 40.0, 0.1)], steps=8,
        ...              threads=2, peak_gflops=40.0, audio_s=8.0)
        >>> ax = roofline(_figure().subplots(), r)
        >>> [t.get_text() for t in ax.texts]
        ['5 % of peak, 20.0x the floor']
    """
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
    return ax


def roofline_figure(r: Any) -> Any:
    """`roofline` on a figure of its own (shown as PNG in a notebook).

    Example:
        >>> from tts_kit.tuning.roofline import Roofline, StageRate
        >>> r = Roofline([StageRate("vocoder", 1, 20.0, 1.0, 40.0, 2.5)], steps=8,
        ...              threads=1, peak_gflops=40.0, audio_s=8.0)
        >>> len(roofline_figure(r).axes)
        1
    """
    fig = _figure(9.0, 3.2)
    roofline(fig.subplots(), r)
    return fig
