"""Reproducible tuning reports: the library measures and writes report.json; a notebook renders it.

`make_report` runs the sweep of a `SweepSpec` in isolated trials (`run_tuning`), measures
the recommended configuration again with its memory timeline and saves ``report.json``
(`write_report`): every measured record, the recommendation and the environment
fingerprint (CPU model and count, OS, Python, onnxruntime and numpy versions, providers,
model SHA-256s, presets), following ``report_schema.json`` (`validate_report`). Only then
does it render: papermill executes ``notebooks/06_tuning_report.py`` headless on that
file (`render_report`), and the executed notebook is exported to a standalone
``report.html`` that opens offline. `rerun_report` repeats the sweep of an earlier
report.json on this machine and says which figures moved by more than the noise (`Noise`)
and whether the recommendation holds (`RerunVerdict`).

The modules, each one concern, bottom to top:

- `tts_kit.report.spec`: `SweepSpec` (what is measured) and `ReportError`;
- `tts_kit.report.document`: `TuningReport` (report.json), the schema, `Noise`,
  `record_key`, the environment and model fingerprints;
- `tts_kit.report.answer`: what the report starts with: the pick against the default
  (ratios), the ``SessionOptions`` snippet, the preset JSON, the spec and machine tables;
- `tts_kit.report.render`: papermill execution of the report notebook, HTML export;
- `tts_kit.report.make`: run the sweep, write report.json, then render (`make_report`);
- `tts_kit.report.rerun`: `compare_reports`, `head_to_head`, `rerun_report`.

Example:
    >>> from tts_kit.report import make_report, rerun_report
    >>> paths = make_report("reports/standin")  # doctest: +SKIP
    >>> print(rerun_report("reports/standin/report.json").summary())  # doctest: +SKIP
"""

from __future__ import annotations

from tts_kit.report import answer
from tts_kit.report.document import (
    METRICS,
    SCHEMA_ID,
    Noise,
    TuningReport,
    environment,
    key_text,
    model_fingerprint,
    record_key,
    validate_report,
)
from tts_kit.report.make import (
    ReportOptions,
    make_report,
    measure_recommended,
    run_tuning,
    write_report,
)
from tts_kit.report.render import (
    NOTEBOOK_ENV,
    NOTEBOOK_NAME,
    execute_notebook,
    export_html,
    load_notebook,
    render_report,
    report_notebook,
)
from tts_kit.report.rerun import (
    CONTENTION_CPU_PERCENT,
    Move,
    RerunVerdict,
    compare_reports,
    head_to_head,
    preset_changes,
    rerun_report,
)
from tts_kit.report.spec import ReportError, SweepSpec

__all__ = [
    "answer",
    "CONTENTION_CPU_PERCENT",
    "METRICS",
    "NOTEBOOK_ENV",
    "NOTEBOOK_NAME",
    "SCHEMA_ID",
    "Move",
    "Noise",
    "ReportError",
    "ReportOptions",
    "RerunVerdict",
    "SweepSpec",
    "TuningReport",
    "compare_reports",
    "environment",
    "execute_notebook",
    "export_html",
    "head_to_head",
    "key_text",
    "load_notebook",
    "make_report",
    "measure_recommended",
    "model_fingerprint",
    "preset_changes",
    "record_key",
    "render_report",
    "report_notebook",
    "rerun_report",
    "run_tuning",
    "validate_report",
    "write_report",
]
