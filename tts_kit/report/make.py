"""Making a report: run the sweep (`run_tuning`), write report.json (`write_report`), render
it (`make_report`). A previous report stays until the new one is complete (built aside,
moved in one rename per file).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tts_kit.core import atomic
from tts_kit.core.textsafe import hide_home
from tts_kit.models.resolve import resolve_model
from tts_kit.models.supertonic.bundle import Bundle
from tts_kit.report.document import TuningReport, environment, model_fingerprint
from tts_kit.report.render import FAILED_NOTEBOOK, render_report
from tts_kit.report.spec import ReportError, SweepSpec
from tts_kit.tuning.records import P50_MS, PEAK_RSS_MB, STAGE_COSTS_MB

#: What `make_report` writes into its output directory.
REPORT_FILES = ("report.html", "report.json", "report.ipynb")

#: A `SweepSpec`, its dict, a JSON file of it, or None.
SweepLike = str | os.PathLike[str] | Mapping[str, Any] | SweepSpec | None


@dataclass(frozen=True)
class ReportOptions:
    """How a report is made (what it measures is the `SweepSpec`); its fields may also be
    given as keywords (``make_report(out, render=False)``).

    Example:
        >>> ReportOptions(render=False).full_paths
        False
    """

    quick: bool = False  # with ``sweep=None``: `SweepSpec.quick`
    timeout_s: float | None = None  # per notebook cell
    progress: bool = False
    render: bool = True  # False: only report.json
    #: Preset definitions by name instead of today's shipped ones (a rerun's saved ones).
    presets: Mapping[str, Any] | None = None
    full_paths: bool = False  # False: ``~/...`` under the home directory
    #: A `tts_kit.tuning.cluster.TrialExecutor`: trials on Dask workers, machines compared.
    executor: Any = None


def _options(options: ReportOptions | None, changes: Mapping[str, Any],
             **defaults: Any) -> ReportOptions:
    return dataclasses.replace(options or ReportOptions(**defaults), **changes)


def _hide_error(rec: dict[str, Any], full_paths: bool) -> None:
    """A trial's error quotes whatever the child raised, paths under the home included."""
    if not full_paths and isinstance(rec.get("error"), str):
        rec["error"] = hide_home(rec["error"])


def _preset(name: str, given: Any) -> Any:
    """``given`` (a `SessionPreset` or its dict), or the shipped preset ``name``."""
    from tts_kit.runtime.sessions import SessionPreset, get_preset

    if given is None:
        return get_preset(name)  # an unknown name fails here, before any trial
    return given if isinstance(given, SessionPreset) else SessionPreset.from_dict(dict(given))


def run_tuning(bundle: Bundle, spec: SweepLike = None, options: ReportOptions | None = None,
               **changes: Any) -> TuningReport:
    """Run the spec's sweep in isolated trials and assemble the report.

    Example:
        >>> run_tuning(Bundle.discover(), SweepSpec.quick()).recommended["preset"]  # doctest: +SKIP
        'low-memory'
    """
    from tts_kit.tuning import tune, verdict

    opts = _options(options, changes)
    spec = SweepSpec.load(spec).effective()
    objs = [_preset(name, (opts.presets or {}).get(name)) for name in spec.presets]
    # The report names the voice it measured, not "the default": a rerun elsewhere reads it.
    workload = spec.workload.replace(voice=spec.workload.voice_for(bundle))
    spec = dataclasses.replace(spec, workload=workload)
    result = tune.sweep(
        bundle, objs, spec.workload, cpus=tuple(spec.cpus),
        loadings=tuple(spec.loadings), mem_budget_mb=spec.mem_budget_mb,
        steps=tuple(spec.steps), batch_sizes=tuple(spec.batch_sizes), progress=opts.progress,
        executor=opts.executor, rounds=spec.rounds,
    )
    recommended, reason = result.recommend(spec.mem_budget_mb)
    records = [dict(r) for r in result.records]
    for r in records:
        _hide_error(r, opts.full_paths)
    extras: dict[str, Any] = {}
    machines = result.by_machine()
    if machines:  # trials ran on a cluster: each machine gets its own recommendation
        from tts_kit.report.document import _machine_pick, clean_record

        extras["machines"] = []
        for label, part in machines.items():
            rec, why, env = _machine_pick(part, spec.mem_budget_mb)
            extras["machines"].append({
                "label": label, "environment": env, "trials": len(part.records),
                "recommendation": {"record": None if rec is None else clean_record(rec),
                                   "reason": why}})
    return TuningReport(
        spec=spec,
        records=records,
        recommended=None if recommended is None else dict(recommended),
        reason=str(reason),
        environment=environment(),
        model=model_fingerprint(bundle, full_paths=opts.full_paths),
        presets={p.name: p.to_dict() for p in objs},
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        extras=extras,
        verdicts=verdict.summary(result.records, spec.mem_budget_mb),
    )


def measure_recommended(bundle: Bundle, tuning: TuningReport,
                        executor: Any = None) -> dict[str, Any]:
    """The pick (else the first record) measured again in one isolated trial, keeping the
    RSS timeline and stage events the sweep's records leave out.

    Example:
        >>> again = measure_recommended(bundle, tuning)  # doctest: +SKIP
        >>> again["status"], len(again["timeline"]) > 0  # doctest: +SKIP
        ('ok', True)
    """
    from tts_kit.tuning import tune

    spec = tuning.spec
    pick = tuning.recommended or tuning.records[0]
    workload = spec.workload.replace(steps=pick["steps"], batch_size=pick["batch_size"])
    args = (bundle.path, tuning.preset_of(pick), workload)
    kwargs = dict(cpus=pick["cpus"], loading=pick["loading"], mem_budget_mb=spec.mem_budget_mb,
                  stage_costs_mb=pick.get(STAGE_COSTS_MB))
    if executor is not None:
        return executor.submit(tune.trial, *args, **kwargs).result()
    return tune.trial(*args, **kwargs)


def write_report(out: str | os.PathLike[str],
                 model: Bundle | str | os.PathLike[str] | None = None, sweep: SweepLike = None,
                 options: ReportOptions | None = None, **changes: Any) -> Path:
    """Run the sweep, measure the pick again, save and return ``out/report.json``.

    Example:
        >>> write_report("reports/standin", quick=True).name  # doctest: +SKIP
        'report.json'
    """
    opts = _options(options, changes)
    spec = SweepSpec.load(sweep, quick=opts.quick)
    bundle = resolve_model(model)[0]  # either family (`tts_kit.models.family`)
    tuning = run_tuning(bundle, spec, opts)
    again = measure_recommended(bundle, tuning, opts.executor)
    _hide_error(again, opts.full_paths)
    tuning.extras["recommended_trial"] = again
    from tts_kit.tuning.verdict import compare, noise

    if tuning.recommended and again.get("status") == "ok":  # A/A: one configuration, twice
        ok = [r for r in tuning.records if r.get("status") == "ok"]
        aa = {m: compare(again, tuning.recommended, m, tuning.verdicts["band"], noise(ok, m))
              for m in (P50_MS, PEAK_RSS_MB)}
        tuning.verdicts["aa"] = {m: v.to_dict() for m, v in aa.items() if v is not None}
    from tts_kit.report.answer import contention
    from tts_kit.report.cost_section import measure_costs

    tuning.extras["contention"] = contention(tuning).to_dict()
    tuning.extras["costs"] = measure_costs(bundle, tuning)
    out_dir = Path(out).expanduser()
    out_dir.mkdir(parents=True, exist_ok=True)
    return tuning.save(out_dir / "report.json")


def make_report(out: str | os.PathLike[str], model: str | os.PathLike[str] | None = None,
                sweep: SweepLike = None, options: ReportOptions | None = None,
                **changes: Any) -> list[Path]:
    """Measure ``sweep`` on ``model``, write report.json, render it; the paths written.

    A failed render keeps its partial notebook in ``out`` as ``report.failed.ipynb``.

    Example:
        >>> [p.name for p in make_report("reports/standin")]  # doctest: +SKIP
        ['report.html', 'report.json', 'report.ipynb']
    """
    opts = _options(options, changes, progress=True)
    out_dir = Path(out).expanduser()
    if (out_dir.exists() or out_dir.is_symlink()) and not out_dir.is_dir():  # before any trial
        raise ReportError(f"{out}: exists and is not a directory; give a new directory, or "
                          "one that holds a previous report")
    spec = SweepSpec.load(sweep, quick=opts.quick)
    bundle, source = resolve_model(model)  # fails early, in one line, before any trial runs
    out_dir = out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with atomic.scratch_dir(out_dir) as tmp:
        names = ["report.json"]
        write_report(tmp, bundle, spec, opts)
        if opts.render:
            render_report(tmp / "report.json", tmp, model_dir=bundle.path,
                          model_source=source, timeout_s=opts.timeout_s,
                          progress=opts.progress, full_paths=opts.full_paths,
                          failed_to=out_dir / FAILED_NOTEBOOK)
            names += ["report.ipynb", "report.html"]
        out_dir.mkdir(exist_ok=True)
        atomic.install_files(tmp, out_dir, names)
    (out_dir / FAILED_NOTEBOOK).unlink(missing_ok=True)  # an older failure's: this one worked
    if not opts.render:  # renders of the previous report.json would no longer match it
        for name in ("report.ipynb", "report.html"):
            (out_dir / name).unlink(missing_ok=True)
        return [out_dir / "report.json"]
    return [out_dir / name for name in REPORT_FILES]
