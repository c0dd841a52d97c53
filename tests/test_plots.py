"""tts_kit.notebook.plots: every figure builds without widgets or pyplot and renders to PNG."""

from __future__ import annotations

import numpy as np
import pytest

from tts_kit.notebook import plots
from tts_kit.runtime.measure import Measurement
from tts_kit.tuning.records import pareto_front

PNG = b"\x89PNG"


def _labels(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_memory_timeline_spans_events_and_budget():
    m = Measurement(
        status="ok",
        timeline=[(0.0, 50.0), (1.2, 80.0), (1.4, 140.0), (1.6, 90.0), (1.8, 60.0)],
        events=[(1.1, "load vocoder"), (1.3, "run vocoder"), (1.5, "release vocoder"),
                (1.7, "custom phase")],
        baseline_rss_mb=50.0,
        peak_rss_mb=150.0,
        mem_budget_mb=200.0,
    )
    fig = plots.memory_timeline(m)
    ax = fig.axes[0]
    assert "custom phase" in _labels(ax)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "budget 200 MB" in legend and "vocoder" in legend and "peak (HWM) 150 MB" in legend
    # The y range leaves room for the budget line above every sample.
    assert ax.get_ylim()[1] >= 200
    # Shaded spans: load (hatched) and run of the vocoder, a dotted line at its release.
    spans = [p for p in ax.patches if p.get_hatch() or p.get_alpha()]
    assert len(spans) >= 2 and any(p.get_hatch() for p in spans)
    # The time axis starts just before the first event, not at the spawn.
    assert 0.9 < ax.get_xlim()[0] < 1.1
    assert plots.memory_timeline(m, zoom=False).axes[0].get_xlim()[0] == 0.0
    # A budget far above the data is named, not drawn (the curve keeps its shape).
    far = plots.memory_timeline(m, budget_mb=4000).axes[0]
    assert far.get_ylim()[1] < 400
    assert "budget 4000 MB (off the scale)" in [t.get_text() for t in far.get_legend().get_texts()]
    assert fig._repr_png_()[:4] == PNG


def test_event_spans_run_to_the_next_mark():
    spans = plots.event_spans(
        [(1.0, "run text_encoder"), (0.0, "load text_encoder"), (2.0, "other")], 3.0
    )
    assert spans == [(0.0, 1.0, "load", "text_encoder"), (1.0, 2.0, "run", "text_encoder")]


def test_stage_times_single_and_grouped():
    t = {"text": 0.001, "duration_predictor": 0.002, "vector_estimator": 0.05, "total": 0.06}
    fig = plots.stage_times(t)
    ax = fig.axes[0]
    assert [x.get_text() for x in ax.get_yticklabels()] == [
        "text", "duration_predictor", "vector_estimator"
    ]
    assert "total 60 ms" in ax.get_title()
    widths = sorted(round(p.get_width(), 3) for p in ax.patches)
    assert widths == [1.0, 2.0, 50.0]
    grouped = plots.stage_times({"fp32": t, "fp16": {**t, "vector_estimator": 0.04}})
    assert len(grouped.axes[0].patches) == 6
    assert plots.figure_png(grouped)[:4] == PNG


def test_stage_times_labels_seconds_long_stages_with_thousands_separators():
    # Notebook 01's chunked Korean text (72 s of synthesis) read '63751.2' beside its bar,
    # 'total 72686 ms' in the title and '60000' under the axis.
    t = {"text": 0.0117, "vector_estimator": 63.7512, "vocoder": 7.7257, "total": 72.686}
    fig = plots.stage_times(t)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert "total 72,686 ms" in ax.get_title()
    labels = [a.get_text() for a in ax.texts]
    assert labels == ["11.7", "63,751", "7,726"]
    ticks = [x.get_text() for x in ax.get_xticklabels()]
    assert "60,000" in ticks


def test_memory_timeline_legend_names_a_piper_voices_stage():
    # Notebook 00's trial of a Piper voice: its 'voice' spans were shaded (load hatched,
    # run solid) but the legend named neither the stage nor what the shading means.
    fig = plots.memory_timeline([(0.0, 50.0), (1.0, 150.0), (2.0, 250.0)],
                                events=[(0.2, "load voice"), (0.9, "trial: loaded"),
                                        (1.0, "run voice")])
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "voice" in labels and "trial: loaded" not in labels
    assert "hatched: load; solid: run; dotted: release" in labels


def test_pareto_front_and_recommendation():
    recs = [
        {"preset": "a", "cpus": 1, "status": "ok", "peak_rss_mb": 100, "p50_ms": 10},
        {"preset": "b", "cpus": 1, "status": "ok", "peak_rss_mb": 120, "p50_ms": 12},
        {"preset": "c", "cpus": 2, "status": "ok", "peak_rss_mb": 150, "p50_ms": 5},
        {"preset": "d", "cpus": 1, "status": "oom", "peak_rss_mb": None, "p50_ms": None},
    ]
    assert pareto_front(recs) == [0, 2]
    fig = plots.pareto(recs, recommended=recs[0], budget_mb=130)
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"a", "b", "c", "Pareto front", "recommended", "budget 130 MB", "2 vCPU"} <= set(legend)
    assert "d@1 (oom)" in ax.get_title()
    assert "pick: a @ 1 vCPU" in _labels(ax)
    # Both axes from zero: a few MB between neighbours stay a few MB, not a cliff.
    assert ax.get_xlim()[0] == 0 and ax.get_ylim()[0] == 0


def test_pareto_marks_paged_points_hollow_and_labels_the_default_on_a_given_ax():
    from matplotlib.figure import Figure

    recs = [
        {"preset": "ort-default", "cpus": 1, "loading": "resident", "status": "ok",
         "peak_rss_mb": 480, "p50_ms": 1200},
        {"preset": "lean", "cpus": 1, "loading": "paged", "status": "ok",
         "peak_rss_mb": 330, "p50_ms": 1900},
    ]
    fig = Figure()
    fig.add_subplot(1, 2, 1)
    ax = fig.add_subplot(1, 2, 2)
    assert plots.pareto(recs, recommended=recs[1], default=recs[0], ax=ax) is fig
    assert len(fig.axes) == 2  # drew on the given ax, left the other alone
    faces = [tuple(c.get_facecolor()[0]) for c in ax.collections if len(c.get_offsets())]
    assert (1.0, 1.0, 1.0, 0.9) in faces  # the paged point is hollow (white face)
    assert {"pick: lean @ 1 vCPU, paged", "default: ort-default @ 1 vCPU"} <= set(_labels(ax))
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"resident", "paged / budget"} <= set(legend)


def test_timeline_labels_never_overprint():
    # Two events a millisecond apart (loaded, first call) used to print over each other.
    rows = plots.label_rows([0.30, 0.3001, 0.31, 0.9], ["trial: loaded", "trial: first call",
                                                        "trial: steady calls", "end"], 9 * 0.72)
    assert rows[:3] == [0, 1, 2] and rows[3] == 0
    assert plots.label_rows([0.5] * 6, ["x"] * 6, 6.0, rows=4)[4:] == [None, None]


def test_pareto_uses_the_records_flags_when_given():
    recs = [
        {"preset": "a", "cpus": 1, "status": "ok", "peak_rss_mb": 100, "p50_ms": 10,
         "pareto": False},
        {"preset": "b", "cpus": 1, "status": "ok", "peak_rss_mb": 120, "p50_ms": 12,
         "pareto": True},
    ]
    ax = plots.pareto(recs).axes[0]
    (line,) = [ln for ln in ax.lines if ln.get_label() == "Pareto front"]
    assert list(line.get_xdata()) == [120]


def test_stage_costs_shows_measured_split_beside_the_article():
    costs = {
        "duration_predictor": {"load_mb": 5.0, "run_mb": 1.0},
        "vector_estimator": {"load_mb": 60.0, "run_mb": 30.0},
        "vocoder": 20.0,
    }
    fig = plots.stage_cost_bars(costs, runtime_mb=40.0)
    ax, ax2 = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "duration_predictor", "vector_estimator", "vocoder"
    ]
    assert [t.get_text() for t in ax2.get_yticklabels()] == ["measured", "article (claimed)"]
    texts = _labels(ax2)
    # 65+31+20 = 116 MB of sessions, 40 MB runtime: 85 MB load of 156 -> 54 %.
    assert any(t.endswith("54%") and t.startswith("weights") for t in texts)
    assert "weights\n40%" in texts
    no_article = plots.stage_cost_bars(costs, article_split=None)
    assert len(no_article.axes[1].get_yticklabels()) == 1


def test_stage_costs_takes_what_paged_measures():
    from tts_kit.runtime.loading import StageCost, StageCosts

    measured = StageCosts(
        {"vocoder": StageCost("vocoder", 10.0, 12.0, 14.0, 6.0, 0.5, 0.1, 0.2)}, runtime_mb=42.0
    )
    fig = plots.stage_cost_bars(measured)
    texts = _labels(fig.axes[1])
    # 12 load + 6 run + 42 runtime = 60: the runtime share is 70 %.
    assert "runtime\n70%" in texts
    assert "weights\n40%" in texts  # the claimed split recorded by tts_kit.runtime.loading


def test_ab_compare_two_columns():
    sr = 44100
    a = np.sin(np.linspace(0, 3000, sr)).astype(np.float32)
    fig = plots.ab_compare((a, sr), (0.5 * a[: sr // 2], sr), labels=("FP32", "FP16"),
                           title="A/B")
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[:2] == ["FP32: 1.00 s", "FP16: 0.50 s"]
    assert fig._repr_png_()[:4] == PNG


@pytest.mark.parametrize("fn", [plots.memory_timeline, plots.stage_times])
def test_redraw_into_an_existing_figure(fn):
    arg = [(0, 1.0), (1, 2.0)] if fn is plots.memory_timeline else {"vocoder": 0.01}
    fig = fn(arg)
    again = fn(arg, fig=fig)
    assert again is fig and len(fig.axes) == 1


def test_ab_spectrograms_share_one_colour_scale():
    """A quieter B must look quieter: both panels map the same dB to the same colour."""
    x = np.sin(np.linspace(0, 4000, 44100)).astype("float32")
    fig = plots.ab_compare((x, 44100), (x * 0.01, 44100))
    images = [im for ax in fig.axes[:4] for im in ax.get_images()]
    assert len(images) == 2
    assert images[0].get_clim() == images[1].get_clim()
    assert fig.axes[4].get_ylabel() == "dB"  # one colour bar for both


def _crowded_sweep() -> list[dict]:
    """The shape of a real sweep: five presets x 1-2 vCPUs x resident/paged, many points
    within a few MB and ms of each other, most of them on the front."""
    recs = []
    for i, preset in enumerate(["ort-default", "supertonic-default", "lean", "low-memory",
                                "seed-2vcpu"]):
        for cpus in (1, 2):
            for loading, mb in (("resident", 480.0), ("paged", 330.0)):
                recs.append({"preset": preset, "cpus": cpus, "loading": loading,
                             "status": "ok", "peak_rss_mb": mb - 3 * i + 2 * cpus,
                             "p50_ms": 1800.0 / cpus + 25 * i + (60 if loading == "paged" else 0)})
    return recs


def test_pareto_labels_never_overlap_each_other_or_leave_the_axes():
    from matplotlib.text import Annotation

    recs = _crowded_sweep()
    fig = plots.pareto(recs, recommended=recs[3], default=recs[2], budget_mb=500)
    plots.figure_png(fig)  # laid out and drawn as a report draws it
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.texts if isinstance(t, Annotation) and t.get_text()]
    assert {"pick: ort-default @ 2 vCPU, paged", "default: ort-default @ 2 vCPU"} <= {
        t.get_text() for t in labels}
    boxes = [t.get_window_extent(renderer) for t in labels]
    frame = ax.get_window_extent(renderer)
    for i, a in enumerate(boxes):
        assert frame.x0 - 1 <= a.x0 and a.x1 <= frame.x1 + 1, labels[i].get_text()
        for j, b in enumerate(boxes[:i]):
            assert not a.overlaps(b), (labels[i].get_text(), labels[j].get_text())


def test_the_legend_tells_cores_and_load_policy_apart():
    ax = plots.pareto(_crowded_sweep()).axes[0]
    legend = ax.get_legend()
    handles = dict(zip([t.get_text() for t in legend.get_texts()], legend.legend_handles))
    one, resident, paged, preset = (handles["1 vCPU"], handles["resident"],
                                    handles["paged / budget"], handles["lean"])
    # Cores: a marker; load policy: a box, filled or hollow; preset: a bar of its colour.
    assert one.get_marker() == "o" and not hasattr(resident, "get_marker")
    assert type(resident).__name__ == type(paged).__name__ == "Rectangle"
    assert resident.get_facecolor() != paged.get_facecolor()
    assert preset.get_marker() in ("None", "", None) and preset.get_linewidth() >= 4


def test_a_load_level_where_no_request_finished_says_so_on_the_latency_panel():
    """On a machine too busy for the client's deadline (the browser walk of notebook 07 at
    load 23), a level whose every request timed out drew an empty column that read as no
    data; it now names what happened to its requests."""
    done = {"mode": "closed", "concurrency": 1, "p50_ms": 52409.0, "p95_ms": 56564.0,
            "ok": 12, "timeouts": 0, "timeline": [[0, 1100, 1000]], "wall_s": 600.0}
    lost = {"mode": "closed", "concurrency": 2, "p50_ms": None, "p95_ms": None, "ok": 0,
            "timeouts": 12, "errors": 0, "timeline": [[0, 1200, 1100]], "wall_s": 360.0}
    left = plots.load_levels([done, lost]).axes[0]
    notes = [t.get_text() for t in left.texts]
    assert notes == ["no request finished:\n12 timed out"]


def test_latency_story_tick_labels_do_not_run_into_each_other():
    """Seconds-long calls on a busy machine (the browser walk of notebook 06: 13,032 ms)
    printed '10000120001400' under the bars."""
    fig = plots.latency_story([
        {"label": "sweep trial (fresh process, 1 vCPU)", "session_s": 13.032,
         "first_ms": 8487, "p50_ms": 7948},
        {"label": "measured again (another fresh process, 1 vCPU)", "session_s": 11.330,
         "first_ms": 7894, "p50_ms": 7350},
        {"label": "this kernel (not pinned)", "session_s": 8.957, "first_ms": 6562}])
    plots.figure_png(fig)  # laid out as the notebook shows it
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].get_xticklabels()
             if t.get_text() and t.get_visible()]
    assert len(boxes) >= 2
    # A gap of at least a character's width between neighbours (they touched, 0.5 px).
    assert all(a.x1 + 6 < b.x0 for a, b in zip(boxes, boxes[1:])), [b.bounds for b in boxes]
