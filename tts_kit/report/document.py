"""The report document: `TuningReport` (report.json), its schema, the noise model, the
fingerprints; `Noise` says when a figure moved (docs/guide.md, "What counts as noise").
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tts_kit.core import atomic
from tts_kit.core.textsafe import display_path
from tts_kit.core.userfiles import read_json
from tts_kit.core.version import __version__
from tts_kit.report.spec import ReportError, SweepSpec
from tts_kit.runtime.devices import environment as environment  # the fingerprint
from tts_kit.tuning import records as rk

if TYPE_CHECKING:
    from tts_kit.models.supertonic.bundle import Bundle

SCHEMA_ID = "tts_kit.report/1"


@dataclass
class Noise:
    """Thresholds below which a rerun's change is noise (docs/guide.md).

    Example:
        >>> Noise(memory_abs_mb=4).threshold(rk.IDLE_RSS_MB, {rk.IDLE_RSS_MB: 20.0}, {})
        4
    """

    latency_rel: float = 0.25  # relative latency change that is always noise
    latency_abs_ms: float = 2.0  # absolute latency change that is always noise (ms)
    memory_rel: float = 0.10  # relative RSS change that is noise
    memory_abs_mb: float = 8.0  # absolute RSS change that is noise (MB)
    cpu_abs: float = 15.0  # change of cpu_percent that is noise (points)
    max_starvation: float = 10.0  # cap on the starvation widening (`starvation`)

    def threshold(self, metric: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> float:
        """The largest change of ``metric`` between ``old`` and ``new`` that is noise.

        Example:
            >>> Noise().threshold(rk.PEAK_RSS_MB, {rk.PEAK_RSS_MB: 200.0}, {})
            20.0
        """
        base = abs(float(old.get(metric) or 0.0))
        if metric in rk.MEMORY_KEYS:
            return max(self.memory_rel * base, self.memory_abs_mb)
        if metric == rk.CPU_PERCENT:
            return self.cpu_abs
        spread = max(_spread(old), _spread(new))
        spread += max(self.starvation(old), self.starvation(new))
        floor = self.latency_abs_ms / 1000 if metric == rk.LOAD_S else self.latency_abs_ms
        if metric == rk.RTF:
            p50 = float(old.get(rk.P50_MS) or 0.0)
            floor = base * self.latency_abs_ms / p50 if p50 > 0 else 0.0
        return max(self.latency_rel * base, spread * base, floor)

    def starvation(self, rec: Mapping[str, Any]) -> float:
        """How much slower than alone a trial ran waiting for the CPU: ``100/p - 1`` at
        ``cpu_percent`` p < 100, else zero.

        Example:
            >>> Noise().starvation({"cpu_percent": 50.0}), Noise().starvation({"cpu_percent": 100})
            (1.0, 0.0)
        """
        cpu = rec.get(rk.CPU_PERCENT)
        if rk.to_number(cpu) is None or cpu <= 0:
            return 0.0
        return min(self.max_starvation, max(0.0, 100.0 / float(cpu) - 1.0))


#: The figures a rerun compares: latency, memory (RSS) and CPU use.
METRICS: tuple[str, ...] = (*rk.LATENCY_KEYS, *rk.MEMORY_KEYS, rk.CPU_PERCENT)


def _spread(rec: Mapping[str, Any]) -> float:
    p50, p95 = rec.get(rk.P50_MS), rec.get(rk.P95_MS)
    if not p50 or rk.to_number(p50) is None or rk.to_number(p95) is None:
        return 0.0
    return max(0.0, (float(p95) - float(p50)) / float(p50))


def model_fingerprint(bundle: Bundle, full_paths: bool = False) -> dict[str, Any]:
    """Path (``~/...`` unless ``full_paths``), stand-in marker, parameters and SHA-256 of
    every graph.

    Example:
        >>> model_fingerprint(Bundle.discover())["sha256"].keys()  # doctest: +SKIP
        dict_keys(['duration_predictor', 'text_encoder', 'vector_estimator', 'vocoder'])
    """
    from tts_kit.models.family import model_label
    from tts_kit.models.supertonic.standin import scale_note
    from tts_kit.precision.verdict_file import read_verdict

    standin = dict(bundle.standin_info) if bundle.standin_info else None
    if standin:  # the marker's own note is the full scale's: say what this scale is
        standin["note"] = scale_note(str(standin.get("scale", "?")))
    # A converted copy: the listener's verdict saved beside the bundle or one of its graphs.
    places = (bundle.path, *(info.path for info in bundle.stages.values()))
    verdicts = (read_verdict(place) for place in places)
    return {
        "path": display_path(bundle.path, full=full_paths),
        "family": bundle.family,
        "label": model_label(bundle),
        "standin": standin,
        "params": int(bundle.params),
        "sha256": bundle.fingerprint(),
        "precision": {s: i.precision for s, i in bundle.stages.items()},
        "conversion": next((v for v in verdicts if v is not None), None),
    }


def _jsonable(value: Any) -> Any:
    """NaN/inf -> None, numpy scalars -> Python, tuples -> lists (JSON has no NaN)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return repr(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def record_key(rec: Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies a configuration in a sweep (preset, cpus, loading, steps, batch).

    Example:
        >>> record_key({"preset": "lean", "cpus": 1, "loading": "paged", rk.P50_MS: 3})
        ('lean', 1, 'paged', None, None)
    """
    batch = rec.get("batch_size", rec.get("batch"))
    return (rec.get("preset"), rec.get("cpus"), rec.get("loading"), rec.get("steps"), batch)


def key_text(key: Sequence[Any]) -> str:
    """``lean @ 1 vCPU, paged, 5 steps`` for a `record_key`.

    Example:
        >>> key_text(("lean", 1, "paged", 5, 1))
        'lean @ 1 vCPU, paged, 5 steps'
    """
    preset, cpus, loading, steps, batch = (list(key) + [None] * 5)[:5]
    parts = [f"{preset} @ {cpus} vCPU", str(loading)]
    if steps is not None:
        parts.append(f"{steps} steps")
    if batch not in (None, 1):
        parts.append(f"batch {batch}")
    return ", ".join(parts)


@dataclass
class TuningReport:
    """A finished sweep with everything needed to reproduce and judge it (report.json).

    Example:
        >>> rep = TuningReport.load("reports/standin/report.json")  # doctest: +SKIP
        >>> rep.recommended["preset"], rep.reason  # doctest: +SKIP
        ('low-memory', 'lowest p50 within the budget ...')
    """

    spec: SweepSpec  # ``cpus`` as effective on this machine
    records: list[dict[str, Any]]  # one per trial, plus ``pareto``
    recommended: dict[str, Any] | None  # None: nothing fits the budget
    reason: str
    environment: dict[str, Any]  # `environment` of the machine that ran it
    model: dict[str, Any]  # `model_fingerprint`
    presets: dict[str, dict[str, Any]]  # every preset of the sweep, in full
    created: str = ""  # ISO 8601
    noise: Noise = field(default_factory=Noise)
    #: ``recommended_trial``, ``contention``, ``costs``, ``machines`` (`write_report`).
    extras: dict[str, Any] = field(default_factory=dict)
    #: The pick's tie set, band, effects and A/A check, under ``recommendation`` in the file.
    verdicts: dict[str, Any] = field(default_factory=dict)
    #: The file `load` read ("" when built in memory): what a rerun hint names.
    source: str = field(default="", compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The report.json document (JSON-safe: NaN becomes null)."""
        return _jsonable({
            "schema": SCHEMA_ID,
            "created": self.created,
            "tts_kit_version": __version__,
            "environment": self.environment,
            "model": self.model,
            "presets": self.presets,
            "sweep": self.spec.to_dict(),
            "records": [clean_record(r) for r in self.records],
            "recommendation": {
                "budget_mb": self.spec.mem_budget_mb,
                "record": None if self.recommended is None else clean_record(self.recommended),
                "reason": self.reason,
                **self.verdicts,
            },
            "noise": dataclasses.asdict(self.noise),
            "extras": self.extras,
        })

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Validate against the schema and write ``path`` (a directory gets report.json)."""
        out = Path(path)
        if out.is_dir():
            out = out / "report.json"
        data = self.to_dict()
        validate_report(data)
        text = json.dumps(data, indent=2, allow_nan=False) + "\n"
        with atomic.atomic_file(out) as tmp:  # the previous file stays until this one is whole
            tmp.write_text(text, encoding="utf-8")
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TuningReport:
        """Read a report.json document (validated first)."""
        validate_report(data)
        rec = data["recommendation"]
        return cls(
            spec=SweepSpec.from_dict(data["sweep"]),
            records=[dict(r) for r in data["records"]],
            recommended=None if rec["record"] is None else dict(rec["record"]),
            reason=rec["reason"],
            environment=dict(data["environment"]),
            model=dict(data["model"]),
            presets={k: dict(v) for k, v in data["presets"].items()},
            created=data["created"],
            noise=Noise(**data["noise"]),
            extras=dict(data.get("extras") or {}),
            verdicts={k: v for k, v in rec.items() if k not in ("budget_mb", "record", "reason")},
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TuningReport:
        """Read and validate a report.json file."""
        p = Path(path).expanduser()
        if not p.is_file():
            raise ReportError(f"{p}: no such report; write one with `tts-kit report --out DIR`")
        data = read_json(p, str(p), "write one with `tts-kit report --out DIR`", ReportError)
        return dataclasses.replace(cls.from_dict(data), source=str(path))

    def recommendation_html(self) -> str:
        """The budget and the reason for the recommendation, as an (escaped) HTML paragraph.

        Example:
            >>> rep = TuningReport(SweepSpec(presets=["lean"], cpus=[1]), [], None,
            ...                    "nothing fits <b>", {}, {}, {})
            >>> rep.recommendation_html()
            '<p><b>Budget 1024 MB.</b> nothing fits &lt;b&gt;</p>'
        """
        budget = self.spec.mem_budget_mb
        head = "No budget." if budget is None else f"Budget {budget:g} MB."
        return f"<p><b>{head}</b> {html.escape(str(self.reason))}</p>"

    def pareto_figure(self) -> Any:
        """`tts_kit.notebook.plots.pareto` of the records, the budget and the recommendation."""
        from tts_kit.notebook import plots

        return plots.pareto(self.records, recommended=self.recommended,
                            budget_mb=self.spec.mem_budget_mb)

    def machines(self) -> dict[str, TuningReport]:
        """One report per machine the trials ran on ({} for one machine).

        Example:
            >>> rep = TuningReport.load("reports/cluster/report.json")  # doctest: +SKIP
            >>> {m: part.reason for m, part in rep.machines().items()}  # doctest: +SKIP
        """
        from tts_kit.tuning.tune import SweepResult

        out: dict[str, TuningReport] = {}
        for label, part in SweepResult(self.records).by_machine().items():
            rec, why, env = _machine_pick(part, self.spec.mem_budget_mb)
            out[label] = dataclasses.replace(
                self, records=part.records, recommended=rec, reason=why, environment=env or {},
                extras={})
        return out

    def machines_dataframe(self) -> Any:
        """The machines side by side: one row each, with its pick's figures.

        Example:
            >>> rep = TuningReport.load("reports/cluster/report.json")  # doctest: +SKIP
            >>> rep.machines_dataframe()[["machine", "preset", rk.P50_MS]]  # doctest: +SKIP
        """
        import pandas as pd

        keys = ("preset", "cpus", "loading", rk.P50_MS, rk.PEAK_RSS_MB, rk.RTF)
        rows = [{"machine": label, "trials": len(part.records),
                 "ok": sum(r.get("status") == "ok" for r in part.records),
                 **{k: (part.recommended or {}).get(k) for k in keys}}
                for label, part in self.machines().items()]
        df = pd.DataFrame(rows)  # each figure to the precision its measurement has
        return df.round({k: rk.COLUMNS[k].digits for k in df.columns
                         if k in rk.COLUMNS and rk.COLUMNS[k].digits is not None})

    def preset_of(self, record: Mapping[str, Any]) -> Any:
        """The full `SessionPreset` a record was measured with, as the report saved it."""
        from tts_kit.runtime.sessions import SessionPreset

        return SessionPreset.from_dict(self.presets[record["preset"]])

    def recommended_preset(self) -> Any:
        """The `SessionPreset` of the recommendation (None when nothing fits)."""
        return None if self.recommended is None else self.preset_of(self.recommended)


def _machine_pick(part: Any, budget_mb: float | None) -> tuple[Any, str, dict[str, Any] | None]:
    """One machine's pick, why, and environment (`tts_kit.tuning.tune.SweepResult` part)."""
    rec, why = part.recommend(budget_mb)
    env = next((dict(r["machine"]) for r in part.records
                if isinstance(r.get("machine"), Mapping)), None)
    return rec, why, env


def clean_record(rec: Mapping[str, Any]) -> dict[str, Any]:
    """A record as one row: its timeline, events and measurement (large) belong in extras.

    Example:
        >>> clean_record({"preset": "lean", "timeline": [[0, 1]]})
        {'preset': 'lean'}
    """
    return {k: v for k, v in rec.items() if k not in ("timeline", "events", "measurement")}


def _schema() -> dict[str, Any]:
    from importlib import resources

    text = resources.files(__package__).joinpath("report_schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def validate_report(data: Mapping[str, Any]) -> None:
    """Raise `ReportError` (one line: where and what) unless ``data`` follows the schema.

    Example:
        >>> validate_report({"schema": "tts_kit.report/1"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tts_kit.report.spec.ReportError: report.json does not follow the schema at (root): ...
    """
    from tts_kit.report._jsonschema import import_jsonschema

    validator = import_jsonschema().Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        raise ReportError(f"report.json does not follow the schema at {where}: {err.message}")
    _check_numbers(data)


def _check_numbers(data: Mapping[str, Any]) -> None:
    """What the schema cannot say: every figure finite, noise >= 0, threads in range."""
    from tts_kit.core.validate import THREAD_FIELDS, InvalidNumber, check_fields, check_number

    parts = {"records": data["records"], "recommendation": data["recommendation"],
             "extras": data.get("extras")}
    try:
        for where, value in _floats(parts, ""):
            check_number(value, f"report.json {where}")
        for key, value in data["noise"].items():
            check_number(value, f"report.json noise/{key}", low=0)
        for name, preset in data["presets"].items():
            fields = {k: v for k, v in preset.items() if k in THREAD_FIELDS and v != "cores"}
            check_fields(fields, THREAD_FIELDS, f"report.json presets/{name}")
    except InvalidNumber as exc:
        raise ReportError(f"{exc}; make the report again with `tts-kit report --out DIR`") \
            from None


def _floats(data: Any, where: str) -> Iterator[tuple[str, float]]:
    """Every float in ``data`` (lists and mappings walked) with its path."""
    items = data.items() if isinstance(data, Mapping) else enumerate(data) \
        if isinstance(data, list) else ()
    for key, value in items:
        if isinstance(value, float):
            yield f"{where}{key}", value
        yield from _floats(value, f"{where}{key}/")

