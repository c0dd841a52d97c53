"""The report's cost section: how far each stage of the pick runs from the MatMul floor,
measured while the report is made (``extras["costs"]``), only shown at render time.
"""

from __future__ import annotations

import datetime as _dt
import html
import math
from collections.abc import Mapping
from typing import Any

from tts_kit.core.errors import TtsKitError
from tts_kit.tuning.roofline import Roofline

#: Repeats of the measured chunk (best per stage, the first call's one-time work left out).
REPEATS = 2


def measure_costs(bundle: Any, tuning: Any) -> dict[str, Any]:
    """``extras["costs"]``: the roofline of the pick (else the first record), or
    ``{"error": why}``.

    Example:
        >>> measure_costs(bundle, tuning)["roofline"]["threads"]  # doctest: +SKIP
        2
    """
    from tts_kit.tuning.roofline import measure_roofline

    pick = tuning.recommended or (tuning.records[0] if tuning.records else None)
    if pick is None:
        return {"error": "no trial to measure"}
    cpus = int(pick.get("cpus") or 1)
    threads = int(pick.get("threads") or cpus)
    steps = int(pick.get("steps") or tuning.spec.workload.steps)
    when = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    try:
        r = measure_roofline(bundle, threads=threads, cpus=cpus, steps=steps, repeats=REPEATS)
    except TtsKitError as exc:
        return {"error": str(exc), "measured_at": when}
    return {"roofline": r.to_dict(), "measured_at": when, "preset": pick.get("preset"),
            "cpus": cpus}


def _fmt(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return format(value, spec)


_COLUMNS = (("params (M)", ".2f"), ("GFLOP / audio s", ".2f"), ("GFLOP / chunk", ".1f"),
            ("s / chunk", ".3f"), ("GFLOP/s", ".1f"), ("of peak", ".2f"), ("floor s", ".3f"),
            ("x floor", ".2f"))


def costs_html(entry: Mapping[str, Any] | None) -> str:
    """The section as escaped HTML: a row per stage, the sentence, how it was measured.

    Example:
        >>> r = Roofline([], steps=8, threads=1, peak_gflops=40.0, audio_s=8.0)
        >>> "MatMul peak" in costs_html({"roofline": r.to_dict(), "measured_at": "now"})
        True
    """
    head = "<h3>What the work costs</h3>"
    if not entry or "roofline" not in entry:
        why = (entry or {}).get("error", "this report predates the cost section")
        return f"{head}<p>Not measured: {html.escape(str(why))}</p>"
    r = Roofline.from_dict(entry["roofline"])
    cells = "".join(f"<th>{html.escape(name)}</th>" for name, _ in _COLUMNS)
    rows = "".join(f"<tr><th style='text-align:left'>{html.escape(row['stage'])}</th>"
                   + "".join(f"<td>{_fmt(row[name], spec)}</td>" for name, spec in _COLUMNS)
                   + "</tr>" for row in r.rows())
    peaks = ", ".join(f"{t} thread{'s' if t != 1 else ''} {p:.1f}" for t, p in r.peaks.items())
    load = (f"; load average {r.loadavg[0]:.1f} before, {r.loadavg[1]:.1f} after"
            if r.loadavg else "")
    how = (f"Measured {entry.get('measured_at', '')} on this machine: one "
           f"{r.audio_s:.1f} s chunk at {r.steps} steps with {r.threads} intra-op "
           f"thread{'s' if r.threads != 1 else ''} on {entry.get('cpus', r.threads)} vCPU, "
           f"best of {r.repeats} per stage after a warm-up{load}. MatMul peak (ONNX Runtime, "
           f"GFLOP/s): {peaks}. FLOPs counted from the graphs (MatMul, Gemm, Conv).")
    return (f'{head}<table class="tts-kit-costs"><tr><th>stage</th>{cells}</tr>{rows}</table>'
            + f"<p><b>{html.escape(r.sentence())}</b></p>"
            + f"<p><small>{html.escape(how)}</small></p>")


def costs_figure(entry: Mapping[str, Any] | None) -> Any:
    """The section's figure (`tts_kit.notebook.tuning_plots.roofline_figure`), or None.

    Example:
        >>> costs_figure({"error": "x"}) is None
        True
    """
    if not entry or "roofline" not in entry:
        return None
    from tts_kit.notebook.tuning_plots import roofline_figure

    return roofline_figure(Roofline.from_dict(entry["roofline"]))
