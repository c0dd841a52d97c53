"""What a report.json says is checked before a rerun acts on it: presets' threads, figures
that are not finite, a model path that now holds other graphs. One real (tiny) report is
written once per run (conftest's `lean_report`); each test edits a copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tts_kit import report
from tts_kit.cli import main
from tts_kit.report.spec import ReportError


@pytest.fixture
def written(lean_report) -> tuple[Path, Path]:
    """(report.json, the model it measured: a private copy of the tiny stand-in), written
    once per run (conftest's `lean_report`); read-only, each test edits a copy."""
    return lean_report


def _edited(written, tmp_path, edit) -> Path:
    data = json.loads(written[0].read_text())
    edit(data)
    out = tmp_path / "report.json"
    out.write_text(json.dumps(data).replace('"INF"', "1e400"))
    return out


def _rerun_refused(path: Path, capsys) -> str:
    code = main(["report", "--rerun", str(path)])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.slow  # its report: trials in fresh processes
def test_a_saved_preset_with_absurd_threads_is_refused_like_a_flag(written, tmp_path, capsys):
    path = _edited(written, tmp_path,
                   lambda d: d["presets"]["lean"].update(intra_op_num_threads=100000))
    line = _rerun_refused(path, capsys)
    assert "presets/lean intra_op_num_threads 100000: give a whole number from 0 to 1024" \
        in line, line


@pytest.mark.slow  # its report: trials in fresh processes
def test_a_figure_of_1e400_is_one_line_not_an_overflow(written, tmp_path, capsys):
    path = _edited(written, tmp_path, lambda d: d["records"][0].update(peak_rss_mb="INF"))
    line = _rerun_refused(path, capsys)
    assert "records/0/peak_rss_mb inf: give a finite number" in line, line
    with pytest.raises(ReportError):
        report.TuningReport.load(path)


@pytest.mark.slow  # its report: trials in fresh processes
def test_a_model_path_now_holding_other_graphs_is_refused_not_measured(
        written, tmp_path, capsys):
    path, model = written
    moved = tmp_path / "model"
    shutil.copytree(model, moved)
    graph = next(moved.glob("onnx/vocoder*.onnx"))
    onnx = pytest.importorskip("onnx")
    proto = onnx.load(graph)
    proto.doc_string = "edited since the report"  # the same graph, another SHA-256
    onnx.save(proto, graph)
    data = json.loads(path.read_text())
    data["model"]["path"] = str(moved)
    (tmp_path / "report.json").write_text(json.dumps(data))
    line = _rerun_refused(tmp_path / "report.json", capsys)
    assert f"the model at {moved} now holds other graphs (SHA-256 of vocoder" in line, line


@pytest.mark.slow  # its report: trials in fresh processes
def test_the_tiny_standins_note_says_its_costs_are_not_realistic(written):
    model = json.loads(written[0].read_text())["model"]
    assert model["standin"]["scale"] == "tiny"
    assert "the costs are NOT realistic" in model["standin"]["note"], model["standin"]


_FAILING_NOTEBOOK = '''# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
model_dir = model_source = report_json = None

# %%
print("the first cell ran")

# %%
raise RuntimeError("the template broke")
'''


@pytest.mark.notebook
def test_a_failed_render_keeps_its_partial_notebook_where_it_says(
        written, tmp_path, monkeypatch, capsys):
    """Regression: `tts-kit report` named a partial notebook inside its temporary directory,
    removed before the message was read. It is kept beside the report (never over the good
    report.ipynb) as report.failed.ipynb, replaced by the next failure, removed by a success."""
    from tts_kit.core.settings import reset_settings

    template = tmp_path / "failing.py"
    template.write_text(_FAILING_NOTEBOOK)
    monkeypatch.setenv("TTS_KIT_REPORT_NOTEBOOK", str(template))
    monkeypatch.setattr(report.make, "write_report",  # the sweep is not what this is about
                        lambda out, *a, **k: shutil.copy(written[0], Path(out) / "report.json"))
    reset_settings()
    out = tmp_path / "report"
    out.mkdir()
    old = {n: f"previous {n}" for n in ("report.json", "report.ipynb", "report.html")}
    for name, text in old.items():
        (out / name).write_text(text)
    try:
        code = main(["report", "--model", str(written[1]), "--out", str(out)])
    finally:
        reset_settings()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "the template broke" in err, err
    kept = out / "report.failed.ipynb"
    assert f"(partial notebook: {kept})" in err, err
    assert "the first cell ran" in kept.read_text()
    assert {n: (out / n).read_text() for n in old} == old  # the good report is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["failing.py", "report"]
    # A template without jupytext's header (no kernel named): the same, not an internal error.
    template.write_text(_FAILING_NOTEBOOK.split("# ---\n\n", 1)[1])
    try:
        code = main(["report", "--model", str(written[1]), "--out", str(out)])
    finally:
        reset_settings()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "the template broke" in err and str(kept) in err, err
