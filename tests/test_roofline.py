"""The cost model against the floor (`tts_kit.tuning.roofline`), its plot
(`tts_kit.notebook.tuning_plots.roofline_figure`) and the report's cost section
(`tts_kit.report.cost_section`)."""

from __future__ import annotations

import pytest

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.report.cost_section import costs_figure, costs_html
from tts_kit.tuning import flops
from tts_kit.tuning.roofline import (
    Roofline,
    StageRate,
    measure_roofline,
    roofline_of,
    time_stages,
)


def _roofline() -> Roofline:
    # vocoder: 30 GFLOP in 1.0 s at a 40 GFLOP/s peak: floor 0.75 s (75 % of peak);
    # text encoder: 1 GFLOP in 0.5 s: floor 0.025 s; duration predictor past the peak.
    return Roofline([StageRate("duration_predictor", 1, 0.1, 0.002, 40.0, 0.01),
                     StageRate("text_encoder", 1, 1.0, 0.5, 40.0, 0.1),
                     StageRate("vocoder", 1, 30.0, 1.0, 40.0, 3.0)],
                    steps=8, threads=2, peak_gflops=40.0, audio_s=8.0, peaks={1: 25.0, 2: 40.0},
                    loadavg=(1.0, 2.0))


def test_floor_and_what_tuning_can_win_are_computed_from_the_figures():
    r = _roofline()
    dp, te, voc = r.stages
    assert voc.of_peak == pytest.approx(0.75) and voc.floor_s == pytest.approx(0.75)
    assert te.above_floor_s == pytest.approx(0.475)
    assert dp.of_peak > 1 and dp.above_floor_s == 0  # past the peak: no time to win
    assert r.floor_s == pytest.approx(0.002 + 0.025 + 0.75)  # a stage past the peak: as measured
    s = r.sentence()
    won = r.total_s - r.floor_s
    assert f"{r.total_s:.2f} s" in s and f"{r.floor_s:.2f} s" in s and f"{won:.2f} s" in s
    assert f"{100 * won / r.total_s:.0f} %" in s and "most of it in the text encoder" in s
    assert "fewer steps or lower precision" in s
    total = r.rows()[-1]
    assert total["stage"] == "total" and total["s / chunk"] == pytest.approx(r.total_s)
    assert Roofline.from_dict(r.to_dict()) == r


def test_time_stages_reads_each_stage_dims_off_its_inputs(tiny_bundle_dir):
    from tts_kit import Engine

    sec, dims, audio_s = time_stages(Engine(tiny_bundle_dir), "Hello there, world.", steps=2,
                                     repeats=1)
    assert set(sec) == set(contract.STAGES) and all(v > 0 for v in sec.values())
    assert dims["vector_estimator"]["L"] == dims["vocoder"]["L"]
    assert dims["text_encoder"]["T"] == dims["vector_estimator"]["T"] > 1
    frames = dims["vocoder"]["L"]  # the audio is cut to the predicted duration, in the last frame
    assert (frames - 1) * flops.SECONDS_PER_FRAME < audio_s <= frames * flops.SECONDS_PER_FRAME
    r = roofline_of(_open(tiny_bundle_dir), sec, dims, audio_s=audio_s, peaks={1: 10.0},
                    steps=2, threads=1)
    ve = next(s for s in r.stages if s.stage == "vector_estimator")
    one = flops.graph_flops(tiny_bundle_dir / contract.GRAPHS["vector_estimator"].path,
                            dims["vector_estimator"])
    assert ve.gflop == pytest.approx(2 * one / 1e9)  # every flow step counted
    assert ve.seconds == sec["vector_estimator"] and ve.peak_gflops == 10.0


def _open(path):
    from tts_kit.models.resolve import open_model

    return open_model(path)


def test_bad_input_is_one_line_error(tiny_bundle_dir):
    with pytest.raises(TtsKitError, match="^threads must be a positive integer, got 0$"):
        measure_roofline(tiny_bundle_dir, threads=0)
    with pytest.raises(TtsKitError, match="^steps must be in"):
        measure_roofline(tiny_bundle_dir, steps=0)
    with pytest.raises(TtsKitError, match="no MatMul peak measured at 2"):
        roofline_of(_open(tiny_bundle_dir), {}, {}, audio_s=1.0, peaks={1: 1.0}, steps=2,
                    threads=2)


def test_the_report_section_shows_the_saved_figures_escaped():
    r = _roofline()
    page = costs_html({"roofline": r.to_dict(), "measured_at": "2026-01-01T00:00:00+00:00",
                       "cpus": 2})
    assert "What the work costs" in page and "2026-01-01T00:00:00+00:00" in page
    assert "load average 1.0 before, 2.0 after" in page and "2 threads 40.0" in page
    assert r.sentence().replace("'", "&#x27;") in page
    broken = costs_html({"error": "<b>broken</b>"})
    assert broken.endswith("Not measured: &lt;b&gt;broken&lt;/b&gt;</p>")
    assert "predates" in costs_html(None)
    fig = costs_figure({"roofline": r.to_dict()})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["duration predictor", "text encoder",
                                                             "vocoder"]
    assert any("75 % of peak" in t.get_text() for t in ax.texts)


@pytest.mark.slow
def test_measure_roofline_in_a_pinned_process(tiny_bundle_dir):
    r = measure_roofline(tiny_bundle_dir, threads=1, steps=2, repeats=1)
    assert [s.stage for s in r.stages] == list(contract.STAGES)
    assert set(r.peaks) == {1} and r.peak_gflops > 0 and r.loadavg is not None
    assert all(s.gflop > 0 and s.seconds > 0 for s in r.stages)
    assert r.stages[2].gflop / r.stages[2].gflops_per_audio_s == pytest.approx(r.audio_s)
