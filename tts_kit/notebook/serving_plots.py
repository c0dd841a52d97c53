"""Figures of serving load tests: each load level, and the architectures side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from tts_kit.notebook._figures import _figure
from tts_kit.tuning import records as rk


def _unfinished_note(rec: Mapping[str, Any]) -> str:
    """What a load level whose requests all failed says in place of its latency (else "")."""
    if rk.to_number(rec.get(rk.P50_MS)) is not None:
        return ""
    lost = [f"{int(rec[key])} {word}" for key, word in
            ((rk.TIMEOUTS, "timed out"), (rk.ERRORS, "failed"), (rk.REJECTED, "rejected"))
            if rk.to_number(rec.get(key))]
    return "no request finished" + (":\n" + ", ".join(lost) if lost else "")


def load_levels(records: Sequence[Mapping[str, Any]], title: str | None = "load test") -> Figure:
    """A load test level by level: latency and time-to-first-audio percentiles (left), the
    pool's memory over time (right).

    Example:
        >>> recs = [{"mode": "closed", "concurrency": c, rk.P50_MS: 100 * c, rk.P95_MS: 150 * c,
        ...          rk.P99_MS: 160 * c, rk.TTFA_P50_MS: 40 * c, rk.TTFA_P95_MS: 60 * c,
        ...          rk.RPS: 2.0, "timeline": [[0, 300, 200], [1, 320, 210]], rk.WALL_S: 1.0}
        ...         for c in (1, 2, 4)]
        >>> len(load_levels(recs).axes)
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
    for i, r in enumerate(records):
        note = _unfinished_note(r)
        if note:
            left.annotate(note, (x[i], 0.5), xycoords=("data", "axes fraction"), ha="center",
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
        >>> recs = [{"architecture": a, "workers": 2, "threads": 1, "loading": "resident",
        ...          "concurrency": c, "status": "ok", rk.RPS: 1.0 * c, rk.P95_MS: 100.0,
        ...          rk.TTFA_P95_MS: 50.0, rk.POOL_PSS_MB: 300.0}
        ...         for a in ("workers", "article") for c in (1, 2)]
        >>> len(architectures(recs).axes)
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
