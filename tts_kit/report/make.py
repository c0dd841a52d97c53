"""Making a report: run the sweep into a `TuningReport`; run the report notebook on it.

One concern: the order of work behind ``tts-kit report``. `run_tuning` runs the spec's
sweep (isolated trials, `tts_kit.tune.sweep`) and assembles the `TuningReport`;
`make_report` executes the report notebook, which calls `run_tuning` and saves
report.json, and exports it to HTML.

Example:
    >>> from tts_kit.report import make_report
    >>> [p.name for p in make_report("reports/standin")]  # doctest: +SKIP
    ['report.html', 'report.json', 'report.ipynb']
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..bundle import Bundle, resolve_model_dir
from .document import TuningReport, environment, model_fingerprint
from .render import execute_notebook, export_html, report_notebook
from .spec import ReportError, SweepSpec

SweepLike = str | os.PathLike[str] | Mapping[str, Any] | SweepSpec | None
"""What a sweep argument may be: a `SweepSpec`, its dict, a JSON file of it, or None."""


def run_tuning(
    bundle: Bundle,
    spec: SweepLike = None,
    progress: bool = False,
    executor: Any = None,
) -> TuningReport:
    """Run the spec's sweep (isolated trials, `tts_kit.tune.sweep`) and assemble the report.

    Example:
        >>> rep = run_tuning(Bundle.discover(), SweepSpec.quick())  # doctest: +SKIP
        >>> rep.recommended["preset"]  # doctest: +SKIP
        'low-memory'
    """
    from .. import tune
    from ..sessions import get_preset

    spec = SweepSpec.load(spec).effective()
    voice = spec.voice if spec.voice in bundle.voices else bundle.voices[0]
    spec = dataclasses.replace(spec, voice=voice)
    result = tune.sweep(
        bundle, spec.presets, cpus=tuple(spec.cpus), loadings=tuple(spec.loadings),
        mem_budget_mb=spec.mem_budget_mb, steps=tuple(spec.steps),
        batch_sizes=tuple(spec.batch_sizes), repeats=spec.repeats, texts=list(spec.texts),
        lang=spec.lang, voice=spec.voice, seed=spec.seed, progress=progress, executor=executor,
    )
    recommended, reason = result.recommend(spec.mem_budget_mb)
    return TuningReport(
        spec=spec,
        records=[dict(r) for r in result.records],
        recommended=None if recommended is None else dict(recommended),
        reason=str(reason),
        environment=environment(),
        model=model_fingerprint(bundle),
        presets={n: get_preset(n).to_dict() for n in spec.presets},
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )


def make_report(
    out: str | os.PathLike[str],
    model: str | os.PathLike[str] | None = None,
    sweep: SweepLike = None,
    quick: bool = False,
    timeout_s: float | None = None,
    progress: bool = True,
) -> list[Path]:
    """Run the report notebook on ``model`` with ``sweep`` and write the three files.

    Args:
        out: output directory (created; existing report files in it are replaced).
        model: bundle directory (default: discovered; the stand-in on a fresh machine).
        sweep: a `SweepSpec`, its dict, a JSON file of it, or None for the default.
        quick: with ``sweep=None``, the smallest sweep (`SweepSpec.quick`).
        timeout_s: per-cell time limit (None: none).
        progress: papermill's cell progress bar on stderr.

    Returns:
        ``[report.html, report.json, report.ipynb]`` inside ``out``.

    Example:
        >>> [p.name for p in make_report("reports/standin")]  # doctest: +SKIP
        ['report.html', 'report.json', 'report.ipynb']
    """
    spec = SweepSpec.load(sweep, quick=quick)
    where, source = resolve_model_dir(model)
    bundle = Bundle(where)  # fails early, in one line, before a kernel starts
    out_dir = Path(out).expanduser().resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "report.json"
    ipynb = out_dir / "report.ipynb"
    html_path = out_dir / "report.html"
    for p in (json_path, ipynb, html_path):
        p.unlink(missing_ok=True)
    execute_notebook(
        report_notebook(), ipynb,
        parameters={"model_dir": str(bundle.path), "model_source": source,
                    "sweep": spec.to_dict(), "out_dir": str(out_dir), "quick": quick},
        cwd=out_dir, timeout_s=timeout_s, progress=progress,
    )
    if not json_path.is_file():
        raise ReportError(f"{ipynb}: the notebook ran but wrote no report.json")
    TuningReport.load(json_path)  # validates
    export_html(ipynb, html_path)
    return [html_path, json_path, ipynb]
