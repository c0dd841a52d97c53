"""A report's processes import jsonschema without its optional IRI grammars (seconds of
CPU at import in every report, rerun and report kernel), and lose nothing else."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

CHECK = """
import json, sys
from tts_kit.report.document import validate_report
from tts_kit.report.spec import ReportError
try:
    validate_report({"schema": "tts_kit.report/1"})
except ReportError as exc:
    refused = str(exc)
hidden = "rfc3987_syntax" not in sys.modules
import nbformat  # what render imports next: it must find the same jsonschema
nb = nbformat.v4.new_notebook()
nbformat.validate(nb)
out = {"hidden": hidden, "refused": refused}
try:
    import rfc3987_syntax  # noqa: F401
    out["importable_after"] = True
except ImportError:
    out["importable_after"] = False
print(json.dumps(out))
"""


def test_validating_a_report_skips_the_iri_grammars_and_leaves_them_importable():
    pytest.importorskip("jsonschema")
    pytest.importorskip("nbformat")
    run = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["hidden"], "jsonschema imported rfc3987_syntax's grammars"
    assert "does not follow the schema" in out["refused"]  # validation still works
    installed = importlib.util.find_spec("rfc3987_syntax") is not None
    assert out["importable_after"] is installed  # hidden for that import only


def test_a_process_that_imported_jsonschema_first_keeps_it():
    from tts_kit.report._jsonschema import import_jsonschema

    jsonschema = pytest.importorskip("jsonschema")
    assert import_jsonschema() is jsonschema
    assert sys.modules.get("rfc3987_syntax", ...) is not None  # never left hidden
