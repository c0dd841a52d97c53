"""Every notebook runs top to bottom against the tiny stand-in, each in a fresh kernel.

The notebooks take their model from the ``model_dir`` parameter (injected here as
papermill would) and ``quick=True`` keeps each one to seconds of work. A cell that
raises, or any error output, fails the test with the cell's source and traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tts_kit.standin import NOTE

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
papermill = pytest.importorskip("papermill")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXPECTED = [
    "00_quickstart", "01_text_normalization", "02_session_tuning", "03_fp16_conversion",
    "04_paged_loading", "05_tuning_report",
]


def test_all_notebooks_exist_and_are_committed_without_outputs():
    assert [p.stem for p in NOTEBOOKS] == EXPECTED
    for path in NOTEBOOKS:
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.outputs == [] and c.execution_count is None for c in code), path.name
        params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1, f"{path.name}: needs exactly one 'parameters' cell"
        assert "model_dir = None" in params[0].source and "quick = False" in params[0].source
        # The model is picked in one cell near the top, and the stand-in is announced.
        first = "\n".join(c.source for c in code[:3])
        assert "resolve_model_dir(model_dir)" in first and "banner(" in first, path.name


def test_notebooks_are_up_to_date_with_the_generator():
    """notebooks/_build.py writes the notebooks; the committed files must match it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("nb_build", ROOT / "notebooks" / "_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name, nb in mod.notebooks().items():
        committed = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
        assert json.loads(nbformat.writes(nb)) == committed, (
            f"{name}.ipynb is stale: run `python notebooks/_build.py`"
        )


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
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_on_the_tiny_standin(path, tiny_bundle_dir, tmp_path, monkeypatch):
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = load_notebook_node(str(path))  # as papermill reads it (every cell gets tags)
    params = {"model_dir": str(tiny_bundle_dir), "quick": True}
    if path.stem == "05_tuning_report":
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
    assert NOTE in html
    pngs = [o for o in outputs if "image/png" in o.get("data", {})]
    assert pngs, f"{path.name} shows no figure"
    if path.stem == "05_tuning_report":
        assert (tmp_path / "report.json").is_file()
