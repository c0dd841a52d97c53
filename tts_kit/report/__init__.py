"""Reproducible tuning reports: `make_report` measures a `SweepSpec` into report.json and
renders it into report.html; `rerun_report` repeats one here and judges it
(docs/guide.md, "How a report is made and judged").
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
    "answer", "CONTENTION_CPU_PERCENT", "METRICS", "NOTEBOOK_ENV", "NOTEBOOK_NAME", "SCHEMA_ID",
    "Move", "Noise", "ReportError", "ReportOptions", "RerunVerdict", "SweepSpec", "TuningReport",
    "compare_reports", "environment", "execute_notebook", "export_html", "head_to_head",
    "key_text", "load_notebook", "make_report", "measure_recommended", "model_fingerprint",
    "preset_changes", "record_key", "render_report", "report_notebook", "rerun_report",
    "run_tuning", "validate_report", "write_report",
]
