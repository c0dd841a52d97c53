"""The notebooks: their jupytext sources, and each one run top to bottom in a fresh kernel.

The sources are ``notebooks/NN_name.py`` in jupytext's percent format (committed, linted
by ruff); the paired ``.ipynb`` is generated (JupyterLab with jupytext saves both) and
git-ignored, so outputs are never committed. Each notebook is executed from its source
(jupytext reads it, papermill injects the parameters, nbclient runs it) against the tiny
stand-in, with ``quick=True``. A cell that raises, or any error output, fails the test
with the cell's source and traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tts_kit.models.supertonic.standin import scale_note

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
papermill = pytest.importorskip("papermill")
jupytext = pytest.importorskip("jupytext")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
SOURCES = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.py"))
EXPECTED = [
    "00_quickstart", "01_text_normalization", "02_sessions_and_presets",
    "03_sweeps_and_machines", "04_fp16_conversion",
    "05_paged_loading", "06_tuning_report", "07_serving_under_load",
]


def _config():
    from jupytext.config import load_jupytext_config

    return load_jupytext_config(str(NOTEBOOK_DIR))


def test_every_notebook_has_a_percent_format_source():
    assert [p.stem for p in SOURCES] == EXPECTED
    for path in SOURCES:
        nb = jupytext.read(path)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1, f"{path.name}: needs exactly one '# %% tags=[\"parameters\"]' cell"
        assert "model_dir = None" in params[0].source and "quick = False" in params[0].source
        # The model is picked in one cell near the top, and the stand-in is announced
        # (`resolve_model` also opens a Piper voice, the second family).
        first = "\n".join(c.source for c in code[:3])
        picks = "resolve_model(model_dir)" in first or "resolve_model_dir(model_dir)" in first
        assert picks and "banner(" in first, path.name


# Every notebook's model cell states what its lesson needs (`widgets.lesson`).
STATES_ITS_LESSON = list(EXPECTED)


def test_each_notebook_states_the_model_its_lesson_needs():
    """Under the banner, a lesson box says what the lesson needs and whether this run's
    model gives it (the tiny stand-in in quick mode: the figures are not the lesson)."""
    for path in SOURCES:
        if path.stem not in STATES_ITS_LESSON:
            continue
        code = [c for c in jupytext.read(path).cells if c.cell_type == "code"]
        first = "\n".join(c.source for c in code[:3])
        assert "lesson(" in first and "quick=quick" in first, path.name


def test_each_lesson_box_is_displayed():
    """A ``lesson(...)`` box shows only as its cell's last expression or inside
    ``display(...)``: 02_sweeps built one in the middle of its cell and the browser walk
    showed none."""
    import ast

    for path in SOURCES:
        for cell in jupytext.read(path).cells:
            if cell.cell_type != "code" or "lesson(" not in cell.source:
                continue
            body = ast.parse(cell.source).body
            shown = {id(body[-1].value)} if isinstance(body[-1], ast.Expr) else set()
            shown |= {id(a) for n in ast.walk(ast.Module(body, [])) if isinstance(n, ast.Call)
                      and getattr(n.func, "id", "") == "display" for a in n.args}
            calls = [n for n in ast.walk(ast.Module(body, [])) if isinstance(n, ast.Call)
                     and getattr(n.func, "id", "") == "lesson"]
            assert calls and all(id(c) in shown for c in calls), path.name


def test_05_warns_before_its_sweep_when_opened_on_its_own():
    """Opened on its own, 05 runs a sweep of many trials: it says how many and how long
    (one trial timed) before the sweep starts."""
    nb = jupytext.read(NOTEBOOK_DIR / "06_tuning_report.py")
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    warn = next(i for i, c in enumerate(code) if "A long sweep starts now" in c)
    sweep = next(i for i, c in enumerate(code) if "report.write_report(" in c)
    assert warn < sweep and "n_trials" in code[warn] and "one_s" in code[warn]


def test_the_sources_are_paired_with_generated_ipynb_that_git_ignores():
    """JupyterLab (with jupytext) opens a .py as a notebook and saves both files; the
    .ipynb, outputs and all, must never reach a commit."""
    assert _config().formats == ["ipynb,py:percent"]
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    ipynb = [f"notebooks/{name}.ipynb" for name in EXPECTED]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *ipynb], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    assert ignored == ipynb
    tracked = subprocess.run(["git", "ls-files", "notebooks"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    assert not [t for t in tracked if t.endswith(".ipynb")], tracked


def _lab_kernelspec() -> dict:
    """The ``kernelspec`` metadata JupyterLab writes into a notebook when it starts the
    ``python3`` kernel: the installed kernel spec's name, display name and language."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    return {"display_name": spec.display_name, "language": spec.language, "name": "python3"}


def test_saving_a_run_notebook_leaves_its_source_unchanged():
    """What JupyterLab's autosave writes back to the .py after a run (the kernelspec of the
    kernel it started, outputs, execution counts and timings, widget state) is the committed
    source, byte for byte: running a notebook never makes the source dirty (the old
    generated .ipynb went "stale"; a header saying ``Python 3`` became ``Python 3
    (ipykernel)``)."""
    config = _config()
    kernelspec = _lab_kernelspec()
    for path in SOURCES:
        nb = jupytext.read(path)
        nb.metadata["kernelspec"] = dict(kernelspec)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = [nbformat.v4.new_output("stream", text="ran\n")]
                cell.execution_count = 1
                cell.metadata["execution"] = {"iopub.status.idle": "2026-01-01T00:00:00Z"}
        nb.metadata["language_info"] = {"name": "python", "version": "3.11.2"}
        nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
        saved = jupytext.writes(nb, fmt="py:percent", config=config)
        assert saved == path.read_text(encoding="utf-8"), (
            f"{path.name}: not in the form jupytext saves; run `jupytext --sync {path}`")


def _errors(nb) -> list[str]:
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                found.append(f"{out.ename}: {out.evalue}\n--- cell ---\n{cell.source}")
            text = out.get("text", "") if out.output_type == "stream" else ""
            if "Traceback (most recent call last)" in text or "Error displaying widget" in text:
                found.append(f"stream: {text[-800:]}\n--- cell ---\n{cell.source}")
    return found


@pytest.mark.notebook
@pytest.mark.parametrize("path", SOURCES, ids=[p.stem for p in SOURCES])
def test_notebook_runs_on_the_tiny_standin(path, tiny_bundle_dir, tmp_path, monkeypatch):
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    from tts_kit.report import load_notebook

    # The .py source, read by jupytext, then as papermill reads a notebook.
    generated = tmp_path / f"{path.stem}.ipynb"
    nbformat.write(load_notebook(path), str(generated))
    nb = load_notebook_node(str(generated))
    params = {"model_dir": str(tiny_bundle_dir), "quick": True}
    if path.stem == "06_tuning_report":
        params["out_dir"] = str(tmp_path)
    nb = parameterize_notebook(nb, params)
    # The kernel imports this checkout of tts_kit, installed or not.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    client = nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=600, allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    errors = _errors(nb)
    assert not errors, f"{path.name}:\n" + "\n\n".join(errors)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    html = "".join(str(o.get("data", {}).get("text/html", "")) for o in outputs)
    assert scale_note("tiny") in html  # the banner: scale, and costs not realistic
    pngs = [o for o in outputs if "image/png" in o.get("data", {})]
    assert pngs, f"{path.name} shows no figure"
    if path.stem == "06_tuning_report":
        assert (tmp_path / "report.json").is_file()


@pytest.mark.notebook
def test_a_kernel_the_tests_start_freezes_its_heap_after_each_cell(tmp_path):
    """tests/conftest.py's IPython startup file: after each cell the kernel collects and
    freezes what is alive, so the library's collections walk only the next cell's objects
    (and a developer's own IPython profile stays out of the tests)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import gc"),
                                         nbformat.v4.new_code_cell("gc.get_freeze_count()")])
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=120,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert int(nb.cells[1].outputs[0]["data"]["text/plain"]) > 10_000


def _browser_check():
    """bench/browser_check.py as a module, or a skip when its browser is not installed."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("browser_check",
                                                  ROOT / "bench" / "browser_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # The driver (playwright-core) where bench/browser_check.py installed it: this test's
    # cache (conftest's), else the user's; linked into the test's cache, so nothing else
    # of the user's cache is used.
    here = module._cache()
    found = [d for d in (here, Path.home() / ".cache" / "tts_kit" / "browser_check")
             if (d / "node_modules" / "playwright-core").is_dir()]
    if not Path(module.CHROMIUM).is_file() or shutil.which("node") is None or not found:
        pytest.skip("no headless browser here: `apt-get install -y chromium` and "
                    "`python bench/browser_check.py` (installs playwright-core) first")
    if found[0] != here and not (here / "node_modules").exists():
        here.mkdir(parents=True, exist_ok=True)
        (here / "node_modules").symlink_to(found[0] / "node_modules")
    return module


@pytest.mark.notebook
def test_saving_in_jupyterlab_leaves_the_source_unchanged(tmp_path, monkeypatch):
    """The real thing: JupyterLab (with jupytext) in headless Chromium opens a ``.py``
    source as a notebook, runs every cell, saves through its own command, and the ``.py``
    it wrote is the one it opened, byte for byte (a ``display_name: Python 3`` header came
    back as ``Python 3 (ipykernel)``). Notebook 01: no trial processes, the quickest to run."""
    browser = _browser_check()
    monkeypatch.setenv("TTS_KIT_STANDIN_SCALE", "tiny")
    result = browser.check_save("notebooks/01_text_normalization.py", tmp_path, timeout=420)
    assert "error" not in result, result
    assert result["checks"] == {"saved": True, "no_error_output": True,
                                "source_unchanged": True}, result.get("diff") or result
