"""Reproducible tuning reports: run a sweep, write report.html / report.json / the notebook.

`make_report` executes ``notebooks/05_tuning_report.ipynb`` headless with papermill in
a fresh kernel (the sweep and model injected as parameters), then exports the executed
notebook to a standalone ``report.html`` (nbconvert; plots as ``data:image/png;base64``,
audio as ``data:audio/wav;base64``: it opens offline). The notebook itself calls
`run_tuning` and `TuningReport.save`, so ``report.json`` holds every measured record,
the recommendation and the environment fingerprint (CPU model and count, OS, Python,
onnxruntime and numpy versions, providers, model SHA-256s, presets). The file follows
``report_schema.json`` (shipped with the package; `validate_report`).

`rerun_report` repeats the sweep of an earlier ``report.json`` on this machine and says
which figures moved by more than the noise and whether the recommendation holds.

What counts as noise (`Noise`): a figure "moved" when the old and new values of the same
configuration differ by more than

* latency (``first_ms``, ``p50_ms``, ``p95_ms``, ``load_s``, ``rtf``): the largest of
  ``latency_rel`` (25 %) of the old value, ``latency_abs_ms`` (2 ms; for ``load_s``
  the same in seconds / 1000) and the trial's own uncertainty as a fraction of the old
  value: its repeat spread ``(p95 - p50) / p50`` plus its CPU starvation
  ``100 / cpu_percent - 1`` (`Noise.starvation`: a trial that got a third of a core ran
  up to three times slower than alone), the larger of either run. Short runs on shared
  cores jitter by tens of percent; below that nothing can be claimed.
* memory (``idle_rss_mb``, ``after_rss_mb``, ``peak_rss_mb``): ``memory_rel`` (10 %) of
  the old value or ``memory_abs_mb`` (8 MB), whichever is larger (RSS repeats to a few
  MB; allocator and page-cache effects make the rest).
* ``cpu_percent``: ``cpu_abs`` (15) points.
* ``status``: any change (ok -> oom) is a move.

The recommendation *holds* when the rerun recommends the same configuration, or when
the old pick still finishes within the budget and is not slower than the new pick by
more than the latency noise (two configurations within noise are the same choice).
When the rerun finds the old pick slower by more than that, one trial each is not
enough to say so on a shared machine: `rerun_report` then measures the two head to head
(`head_to_head`: alternating trials, A B A B ..., so that the machine's drift hits both
alike) and decides on the medians of those rounds.

Example:
    >>> from tts_kit.report import make_report, rerun_report
    >>> paths = make_report("reports/standin")  # doctest: +SKIP
    >>> print(rerun_report("reports/standin/report.json").summary())  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__, contract
from .bundle import Bundle, resolve_model_dir

SCHEMA_ID = "tts_kit.report/1"
NOTEBOOK_NAME = "05_tuning_report.ipynb"
#: Environment variable naming another report notebook (for installs without the repo).
NOTEBOOK_ENV = "TTS_KIT_REPORT_NOTEBOOK"

_DEFAULT_TEXTS = [
    "The meeting starts at 10:30 in room 4, and the slides are already online.",
]


class ReportError(ValueError):
    """A report could not be produced or read (one line: what and where to look)."""


@dataclass
class SweepSpec:
    """What a report measures: the grid, the workload, the budget. JSON in and out."""

    presets: list[str] = field(
        default_factory=lambda: ["ort-default", "supertonic-default", "seed-2vcpu",
                                 "low-memory", "lean"]
    )
    """Session presets (names from `tts_kit.sessions.PRESETS`)."""
    cpus: list[int] = field(default_factory=lambda: [1, 2])
    """vCPU counts to emulate (capped at the cores this machine has; see `effective`)."""
    loadings: list[str] = field(default_factory=lambda: ["resident", "paged"])
    """Load policies: ``resident``, ``paged``, ``budget:MB``."""
    steps: list[int] = field(default_factory=lambda: [contract.DEFAULT_STEPS])
    """Flow-matching steps."""
    batch_sizes: list[int] = field(default_factory=lambda: [1])
    """Texts per request."""
    repeats: int = 3
    """Timed calls per trial after the first (p50/p95 come from these). The default
    keeps the default sweep (20 trials) to a few minutes on the tiny stand-in and under
    ten on the full one; raise it for tighter percentiles."""
    mem_budget_mb: float | None = 1024.0
    """The budget the recommendation must fit (1024: the article's 1 vCPU / 1 GB box);
    trials are also killed past it. None: no budget."""
    texts: list[str] = field(default_factory=lambda: list(_DEFAULT_TEXTS))
    """The workload (normalised before synthesis)."""
    lang: str = "en"
    """Language of ``texts``."""
    voice: str = "M1"
    """Voice style (falls back to the bundle's first voice when it has no such voice)."""
    seed: int = 0
    """Noise seed, so every trial synthesises the same audio."""

    @classmethod
    def quick(cls) -> SweepSpec:
        """The smallest useful sweep (two presets, one vCPU, 2 repeats, 2 steps): CI's.

        Example:
            >>> SweepSpec.quick().cpus
            [1]
        """
        return cls(presets=["supertonic-default", "low-memory"], cpus=[1],
                   loadings=["resident"], steps=[2], repeats=2)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepSpec:
        """Build from a dict; unknown keys raise ``ValueError`` naming them.

        Example:
            >>> SweepSpec.from_dict({"presets": ["lean"], "cpus": [1]}).presets
            ['lean']
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"sweep spec: unknown key(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        spec = cls(**dict(data))
        spec.check()
        return spec

    @classmethod
    def load(cls, source: str | os.PathLike[str] | Mapping[str, Any] | SweepSpec | None,
             quick: bool = False) -> SweepSpec:
        """A spec from a JSON file, a dict, a spec, or None (the default, or `quick`).

        Example:
            >>> SweepSpec.load(None, quick=True).repeats
            2
        """
        if isinstance(source, SweepSpec):
            return source
        if source is None:
            return cls.quick() if quick else cls()
        if isinstance(source, Mapping):
            return cls.from_dict(source)
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"sweep spec {path}: no such file; give a JSON file of SweepSpec keys")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"sweep spec {path}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"sweep spec {path}: expected a JSON object of SweepSpec keys")
        return cls.from_dict(data)

    def check(self) -> None:
        """Raise ``ValueError`` for an empty grid or impossible values."""
        for name in ("presets", "cpus", "loadings", "steps", "batch_sizes", "texts"):
            value = getattr(self, name)
            if isinstance(value, (str, bytes)) or not list(value):
                raise ValueError(f"sweep spec: '{name}' must be a non-empty list")
            setattr(self, name, list(value))
        if any(int(c) < 1 for c in self.cpus):
            raise ValueError(f"sweep spec: cpus must be >= 1, got {self.cpus}")
        if int(self.repeats) < 1:
            raise ValueError(f"sweep spec: repeats must be >= 1, got {self.repeats}")
        if self.mem_budget_mb is not None and not self.mem_budget_mb > 0:
            raise ValueError(f"sweep spec: mem_budget_mb must be > 0, got {self.mem_budget_mb}")

    def effective(self) -> SweepSpec:
        """This spec with ``cpus`` limited to the cores this process may use.

        Example:
            >>> max(SweepSpec(cpus=[1, 2, 512]).effective().cpus) <= os.cpu_count()
            True
        """
        from .measure import available_cpus

        n = len(available_cpus())
        cpus = sorted({min(int(c), n) for c in self.cpus})
        return dataclasses.replace(self, cpus=cpus)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return dataclasses.asdict(self)


@dataclass
class Noise:
    """Thresholds below which a rerun's change is noise (see the module docstring)."""

    latency_rel: float = 0.25
    """Relative change of a latency figure that is always noise."""
    latency_abs_ms: float = 2.0
    """Absolute latency change that is always noise (ms)."""
    memory_rel: float = 0.10
    """Relative change of an RSS figure that is noise."""
    memory_abs_mb: float = 8.0
    """Absolute RSS change that is noise (MB)."""
    cpu_abs: float = 15.0
    """Change of ``cpu_percent`` that is noise (percentage points)."""
    max_starvation: float = 10.0
    """Cap on the CPU-starvation widening of latency noise (see `starvation`)."""

    def threshold(self, metric: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> float:
        """The largest change of ``metric`` between ``old`` and ``new`` that is noise.

        Example:
            >>> Noise().threshold("peak_rss_mb", {"peak_rss_mb": 200.0}, {})
            20.0
        """
        base = abs(float(old.get(metric) or 0.0))
        if metric in _MEMORY:
            return max(self.memory_rel * base, self.memory_abs_mb)
        if metric == "cpu_percent":
            return self.cpu_abs
        spread = max(_spread(old), _spread(new))
        spread += max(self.starvation(old), self.starvation(new))
        floor = self.latency_abs_ms / 1000 if metric == "load_s" else self.latency_abs_ms
        if metric == "rtf":
            p50 = float(old.get("p50_ms") or 0.0)
            floor = base * self.latency_abs_ms / p50 if p50 > 0 else 0.0
        return max(self.latency_rel * base, spread * base, floor)

    def starvation(self, rec: Mapping[str, Any]) -> float:
        """How much slower than alone a trial ran because it waited for the CPU.

        A synthesis keeps at least one core busy, so a trial at ``cpu_percent`` p < 100
        spent only p % of its wall time computing: its latency is up to 100/p times what
        it would be alone, and that much (``100/p - 1``, relative) is uncertainty, not
        configuration. Zero for trials that had their core (100 or more).

        Example:
            >>> Noise().starvation({"cpu_percent": 50.0}), Noise().starvation({"cpu_percent": 100})
            (1.0, 0.0)
        """
        cpu = rec.get("cpu_percent")
        if not _finite(cpu) or cpu <= 0:
            return 0.0
        return min(self.max_starvation, max(0.0, 100.0 / float(cpu) - 1.0))

    def to_dict(self) -> dict[str, float]:
        """Plain-JSON form."""
        return dataclasses.asdict(self)


_LATENCY = ("load_s", "first_ms", "p50_ms", "p95_ms", "rtf")
_MEMORY = ("idle_rss_mb", "after_rss_mb", "peak_rss_mb")
METRICS: tuple[str, ...] = (*_LATENCY, *_MEMORY, "cpu_percent")


def _spread(rec: Mapping[str, Any]) -> float:
    p50, p95 = rec.get("p50_ms"), rec.get("p95_ms")
    if not p50 or p95 is None or not _finite(p50) or not _finite(p95):
        return 0.0
    return max(0.0, (float(p95) - float(p50)) / float(p50))


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# -- environment ------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        import subprocess

        try:
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"],
                                 capture_output=True, text=True, timeout=5, check=False)
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown"


def environment() -> dict[str, Any]:
    """The fingerprint of this machine and software stack, as the report records it.

    Example:
        >>> sorted(environment())[:3]
        ['cpu_count', 'cpu_model', 'cpus_available']
    """
    import numpy
    import onnxruntime
    import psutil

    from .measure import available_cpus

    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count() or 1,
        "cpus_available": len(available_cpus()),
        "os": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "numpy": numpy.__version__,
        "providers": list(onnxruntime.get_available_providers()),
        "memory_total_mb": round(psutil.virtual_memory().total / 2**20, 1),
    }


def model_fingerprint(bundle: Bundle) -> dict[str, Any]:
    """Path, stand-in marker, parameters and SHA-256 of every graph.

    Example:
        >>> model_fingerprint(Bundle.discover())["sha256"].keys()  # doctest: +SKIP
        dict_keys(['duration_predictor', 'text_encoder', 'vector_estimator', 'vocoder'])
    """
    return {
        "path": str(bundle.path),
        "standin": bundle.standin_info,
        "params": int(bundle.params),
        "sha256": bundle.fingerprint(),
        "precision": {s: i.precision for s, i in bundle.stages.items()},
    }


# -- the report -------------------------------------------------------------------------


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
        >>> record_key({"preset": "lean", "cpus": 1, "loading": "paged", "p50_ms": 3})
        ('lean', 1, 'paged', None, None)
    """
    batch = rec.get("batch_size", rec.get("batch"))
    return (rec.get("preset"), rec.get("cpus"), rec.get("loading"), rec.get("steps"), batch)


def key_text(key: Sequence[Any]) -> str:
    """``lean @ 1 vCPU, paged, 5 steps`` for a `record_key`."""
    preset, cpus, loading, steps, batch = (list(key) + [None] * 5)[:5]
    parts = [f"{preset} @ {cpus} vCPU", str(loading)]
    if steps is not None:
        parts.append(f"{steps} steps")
    if batch not in (None, 1):
        parts.append(f"batch {batch}")
    return ", ".join(parts)


@dataclass
class TuningReport:
    """A finished sweep with everything needed to reproduce and judge it."""

    spec: SweepSpec
    """The sweep that was run (``cpus`` as effective on this machine)."""
    records: list[dict[str, Any]]
    """One record per trial (`tts_kit.tune.trial` keys, plus ``pareto``)."""
    recommended: dict[str, Any] | None
    """The recommended record for ``spec.mem_budget_mb`` (None: nothing fits)."""
    reason: str
    """Why it was recommended (or why nothing was)."""
    environment: dict[str, Any]
    """`environment` of the machine that ran it."""
    model: dict[str, Any]
    """`model_fingerprint` of the bundle."""
    presets: dict[str, dict[str, Any]]
    """Every preset of the sweep, in full (`SessionPreset.to_dict`)."""
    created: str = ""
    """ISO 8601 time the sweep finished."""
    noise: Noise = field(default_factory=Noise)
    """The noise model a rerun compares with."""
    extras: dict[str, Any] = field(default_factory=dict)
    """Anything else the notebook measured (e.g. the recommended trial's timeline)."""

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
            "records": [_clean_record(r) for r in self.records],
            "recommendation": {
                "budget_mb": self.spec.mem_budget_mb,
                "record": None if self.recommended is None else _clean_record(self.recommended),
                "reason": self.reason,
            },
            "noise": self.noise.to_dict(),
            "extras": self.extras,
        })

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Validate against the schema and write ``path`` (a directory gets report.json)."""
        out = Path(path)
        if out.is_dir():
            out = out / "report.json"
        data = self.to_dict()
        validate_report(data)
        out.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
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
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TuningReport:
        """Read and validate a report.json file."""
        p = Path(path)
        if not p.is_file():
            raise ReportError(f"{p}: no such report; write one with `tts-kit report --out DIR`")
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ReportError(f"{p}: not valid JSON ({exc})") from None
        return cls.from_dict(data)

    def dataframe(self) -> Any:
        """The records as a pandas DataFrame (pandas is part of the notebooks extra)."""
        import pandas as pd

        cols = ["preset", "cpus", "loading", "steps", "status", "load_s", "idle_rss_mb",
                "peak_rss_mb", "first_ms", "p50_ms", "p95_ms", "rtf", "cpu_percent", "pareto"]
        df = pd.DataFrame(self.records)
        df = df[[c for c in cols if c in df.columns]]
        # Shown to a reader: the precision the measurement has, not float noise.
        digits = {"load_s": 3, "idle_rss_mb": 1, "peak_rss_mb": 1, "first_ms": 1,
                  "p50_ms": 1, "p95_ms": 1, "rtf": 4, "cpu_percent": 0}
        return df.round({k: v for k, v in digits.items() if k in df.columns})

    def pareto_figure(self) -> Any:
        """`tts_kit.plots.pareto` of the records, the budget and the recommendation."""
        from . import plots

        return plots.pareto(self.records, recommended=self.recommended,
                            budget_mb=self.spec.mem_budget_mb)

    def preset_of(self, record: Mapping[str, Any]) -> Any:
        """The full `SessionPreset` a record was measured with (as the report saved it)."""
        from .sessions import SessionPreset

        return SessionPreset.from_dict(self.presets[record["preset"]])

    def recommended_preset(self) -> Any:
        """The `SessionPreset` of the recommendation (None when nothing fits)."""
        return None if self.recommended is None else self.preset_of(self.recommended)


def _clean_record(rec: Mapping[str, Any]) -> dict[str, Any]:
    # Timelines belong in extras (they are large); a record stays one row of the table.
    return {k: v for k, v in rec.items() if k not in ("timeline", "events", "measurement")}


def _schema() -> dict[str, Any]:
    from importlib import resources

    text = resources.files("tts_kit").joinpath("report_schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def validate_report(data: Mapping[str, Any]) -> None:
    """Raise `ReportError` (one line: where and what) unless ``data`` follows the schema.

    Example:
        >>> validate_report({"schema": "tts_kit.report/1"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tts_kit.report.ReportError: report.json does not follow the schema at (root): ...
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        raise ReportError(f"report.json does not follow the schema at {where}: {err.message}")


def run_tuning(
    bundle: Bundle,
    spec: SweepSpec | Mapping[str, Any] | str | None = None,
    progress: bool = False,
    executor: Any = None,
) -> TuningReport:
    """Run the spec's sweep (isolated trials, `tts_kit.tune.sweep`) and assemble the report.

    Example:
        >>> rep = run_tuning(Bundle.discover(), SweepSpec.quick())  # doctest: +SKIP
        >>> rep.recommended["preset"]  # doctest: +SKIP
        'low-memory'
    """
    from . import tune
    from .sessions import get_preset

    spec = SweepSpec.load(spec).effective()
    voice = spec.voice if spec.voice in bundle.voices else bundle.voices[0]
    spec = dataclasses.replace(spec, voice=voice)
    result = tune.sweep(
        bundle, spec.presets, cpus=tuple(spec.cpus), loadings=tuple(spec.loadings),
        mem_budget_mb=spec.mem_budget_mb, steps=tuple(spec.steps),
        batch_sizes=tuple(spec.batch_sizes), repeats=spec.repeats, texts=list(spec.texts),
        lang=spec.lang, voice=spec.voice, seed=spec.seed, progress=progress, executor=executor,
    )
    records = [dict(r) for r in result.records]
    if spec.mem_budget_mb is not None:
        recommended, reason = result.recommend(spec.mem_budget_mb)
    else:
        recommended, reason = result.recommend(None)
    return TuningReport(
        spec=spec,
        records=records,
        recommended=None if recommended is None else dict(recommended),
        reason=str(reason),
        environment=environment(),
        model=model_fingerprint(bundle),
        presets={n: get_preset(n).to_dict() for n in spec.presets},
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    )


# -- the notebook run -------------------------------------------------------------------


def report_notebook() -> Path:
    """The report notebook: ``$TTS_KIT_REPORT_NOTEBOOK``, else the checkout's
    ``notebooks/``, else the copy installed with the package (``tts_kit/_data/notebooks``).

    Example:
        >>> report_notebook().name
        '05_tuning_report.ipynb'
    """
    from importlib import resources

    env = os.environ.get(NOTEBOOK_ENV)
    if env:
        if Path(env).is_file():
            return Path(env)
        raise ReportError(f"${NOTEBOOK_ENV} names {env}, which is not a file; fix or unset it")
    candidates = [Path(__file__).resolve().parent.parent / "notebooks" / NOTEBOOK_NAME,
                  Path(str(resources.files("tts_kit") / "_data" / "notebooks" / NOTEBOOK_NAME))]
    for c in candidates:
        if c.is_file():
            return c
    raise ReportError(
        f"{NOTEBOOK_NAME} not found (looked at {', '.join(map(str, candidates))}); "
        f"reinstall tts_kit or set ${NOTEBOOK_ENV} to the notebook"
    )


def _kernel_env() -> dict[str, str]:
    """Make this tts_kit importable in the kernel, also when it is not installed."""
    root = str(Path(__file__).resolve().parent.parent)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {"PYTHONPATH": os.pathsep.join([root, *[p for p in parts if p != root]])}


def execute_notebook(
    notebook: str | os.PathLike[str],
    output: str | os.PathLike[str],
    parameters: Mapping[str, Any] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout_s: float | None = None,
    progress: bool = False,
) -> Path:
    """Run a notebook headless with papermill in a fresh kernel of this Python.

    Raises `ReportError` naming the failing cell's error and the saved partial notebook.

    Example:
        >>> execute_notebook("notebooks/00_quickstart.ipynb", "out/quickstart.ipynb",
        ...                  {"quick": True})  # doctest: +SKIP
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "MPLBACKEND")}
    os.environ.update(_kernel_env())
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    try:
        papermill.execute_notebook(
            str(notebook), str(output), parameters=dict(parameters or {}),
            kernel_name=_kernel_name(), cwd=str(cwd) if cwd else None,
            execution_timeout=timeout_s, progress_bar=progress, log_output=False,
            request_save_on_cell_execute=False,
        )
    except PapermillExecutionError as exc:
        msg = " ".join(f"{exc.ename}: {exc.evalue}".split())
        raise ReportError(
            f"{Path(notebook).name} failed in cell {exc.exec_count}: {msg} "
            f"(partial notebook: {output})"
        ) from None
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Path(output)


def _kernel_name() -> str:
    """``python3``, which jupyter_client maps to this interpreter unless a user kernelspec
    of that name points elsewhere (then we still get a kernel that can import tts_kit
    through PYTHONPATH, if it has the dependencies)."""
    return "python3"


def export_html(notebook: str | os.PathLike[str], output: str | os.PathLike[str],
                exclude_input: bool = True) -> Path:
    """Write a standalone HTML page of an executed notebook (images and audio inline).

    Example:
        >>> export_html("out/report.ipynb", "out/report.html")  # doctest: +SKIP
    """
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    # Widget views need the live kernel (or a CDN); a standalone page shows the figures.
    nb.metadata.pop("widgets", None)
    exporter = HTMLExporter(template_name="lab", exclude_input=exclude_input,
                            exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    body = _strip_remote(body)
    Path(output).write_text(body, encoding="utf-8")
    return Path(output)


def _strip_remote(body: str) -> str:
    # The lab template links require.js and MathJax from a CDN; the report needs neither,
    # and a page that stands alone must not wait on the network.
    return re.sub(r"<script[^>]+src=\"https?://[^\"]+\"[^>]*>\s*</script>", "", body)


def make_report(
    out: str | os.PathLike[str],
    model: str | os.PathLike[str] | None = None,
    sweep: str | os.PathLike[str] | Mapping[str, Any] | SweepSpec | None = None,
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


# -- reruns -----------------------------------------------------------------------------


@dataclass
class Move:
    """One figure that changed by more than the noise."""

    key: tuple[Any, ...]
    """The configuration (`record_key`)."""
    metric: str
    """Which figure (``p50_ms``, ``peak_rss_mb``, ``status`` ...)."""
    old: Any
    """Value in the earlier report."""
    new: Any
    """Value now."""
    noise: float | None
    """The threshold it passed (None for status changes)."""

    def text(self) -> str:
        """One line, e.g. ``lean @ 1 vCPU, resident: p50_ms 12.0 -> 18.5 (+54%, noise 3.0)``."""
        if self.noise is None:
            return f"{key_text(self.key)}: {self.metric} {self.old} -> {self.new}"
        rel = (self.new - self.old) / self.old * 100 if self.old else math.inf
        return (f"{key_text(self.key)}: {self.metric} {self.old:.4g} -> {self.new:.4g} "
                f"({rel:+.0f}%, noise {self.noise:.3g})")


@dataclass
class RerunVerdict:
    """What a rerun found: the figures that moved, and whether the recommendation holds."""

    old: TuningReport
    """The earlier report."""
    new: TuningReport
    """The rerun."""
    moved: list[Move]
    """Figures that moved by more than the noise."""
    compared: int
    """How many (configuration, figure) pairs were compared."""
    holds: bool
    """True when the recommendation holds (see the module docstring)."""
    verdict: str
    """Why it holds or not, one sentence."""
    missing: list[tuple[Any, ...]] = field(default_factory=list)
    """Configurations in only one of the two runs."""
    environment_changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Fingerprint fields that differ (another machine, another onnxruntime ...)."""
    model_changed: bool = False
    """True when the graphs' SHA-256s differ from the report's."""
    contention: list[str] = field(default_factory=list)
    """Runs whose trials got much less than one core (other load on the machine): their
    latency moves may be the neighbours', not the configuration's."""
    contested: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None
    """(the report's pick, this run's pick) when the verdict rests on their latency gap
    alone: what `head_to_head` should settle."""
    head_to_head: dict[tuple[Any, ...], list[float]] | None = None
    """p50 (ms) of each contested configuration in the alternating rounds, when run."""

    def summary(self) -> str:
        """The text `tts-kit report --rerun` prints."""
        lines = [f"rerun of the report of {self.old.created} on this machine: "
                 f"{len(self.new.records)} trials, {self.compared} figures compared"]
        if self.model_changed:
            lines.append("warning: the model's SHA-256s differ from the report's")
        for k, (a, b) in self.environment_changes.items():
            lines.append(f"environment: {k} was {a!r}, now {b!r}")
        if self.moved:
            lines.append(f"{len(self.moved)} figure(s) moved by more than the noise:")
            lines += [f"  {m.text()}" for m in self.moved]
        else:
            lines.append("no figure moved by more than the noise")
        for key in self.missing:
            lines.append(f"  only in one run: {key_text(key)}")
        lines += [f"note: {c}" for c in self.contention]
        lines.append(("recommendation holds: " if self.holds else
                      "recommendation does NOT hold: ") + self.verdict)
        return "\n".join(lines)


def compare_reports(old: TuningReport, new: TuningReport, noise: Noise | None = None,
                    head_to_head: Mapping[tuple[Any, ...], Sequence[float]] | None = None,
                    ) -> RerunVerdict:
    """Compare two reports of the same sweep figure by figure (see the module docstring).

    Example:
        >>> v = compare_reports(TuningReport.load("a/report.json"),
        ...                     TuningReport.load("b/report.json"))  # doctest: +SKIP
        >>> v.holds  # doctest: +SKIP
        True

    ``head_to_head`` (configuration key -> p50s of alternating rounds, from
    `head_to_head`) settles a verdict that rests on the latency gap of the two picks.
    """
    noise = noise or old.noise
    old_by = {record_key(r): r for r in old.records}
    new_by = {record_key(r): r for r in new.records}
    moved: list[Move] = []
    compared = 0
    for key in (k for k in old_by if k in new_by):
        a, b = old_by[key], new_by[key]
        compared += 1
        if a.get("status") != b.get("status"):
            moved.append(Move(key, "status", a.get("status"), b.get("status"), None))
            continue
        if a.get("status") != "ok":
            continue
        for metric in METRICS:
            va, vb = a.get(metric), b.get(metric)
            if not (_finite(va) and _finite(vb)):
                continue
            compared += 1
            limit = noise.threshold(metric, a, b)
            if abs(vb - va) > limit:
                moved.append(Move(key, metric, float(va), float(vb), limit))
    missing = sorted(set(old_by) ^ set(new_by), key=str)
    holds, verdict, contested = _recommendation_holds(old, new, noise)
    if contested is not None and head_to_head:
        holds, verdict = _settle(contested, head_to_head, noise)
    env_changes = {
        k: (old.environment.get(k), new.environment.get(k))
        for k in sorted(set(old.environment) | set(new.environment))
        if old.environment.get(k) != new.environment.get(k)
    }
    return RerunVerdict(
        old=old, new=new, moved=moved, compared=compared, holds=holds, verdict=verdict,
        missing=missing, environment_changes=env_changes,
        model_changed=old.model.get("sha256") != new.model.get("sha256"),
        contention=[c for c in (_contention("the report", old), _contention("this run", new))
                    if c],
        contested=contested,
        head_to_head={k: list(v) for k, v in head_to_head.items()} if head_to_head else None,
    )


#: A synthesis keeps at least one core busy; a trial that got less than this share of
#: one core (``cpu_percent``) was waiting for the CPU, not computing.
CONTENTION_CPU_PERCENT = 60.0


def _contention(label: str, rep: TuningReport) -> str:
    starved = [r for r in rep.records if r.get("status") == "ok"
               and _finite(r.get("cpu_percent")) and r["cpu_percent"] < CONTENTION_CPU_PERCENT]
    if not starved:
        return ""
    lo = min(r["cpu_percent"] for r in starved)
    hi = max(r["cpu_percent"] for r in starved)
    return (f"in {label}, {len(starved)} of {len(rep.records)} trials got only {lo:.0f}-{hi:.0f} %"
            " of a core (other load on the machine?); their latency is the neighbours' as much"
            " as the configuration's")


def _recommendation_holds(
    old: TuningReport, new: TuningReport, noise: Noise,
) -> tuple[bool, str, tuple[tuple[Any, ...], tuple[Any, ...]] | None]:
    a, b = old.recommended, new.recommended
    if a is None and b is None:
        return True, "nothing fits the budget, then and now", None
    if a is None or b is None:
        then = "nothing" if a is None else key_text(record_key(a))
        now = "nothing" if b is None else key_text(record_key(b))
        return False, f"the report recommended {then}, this machine recommends {now}", None
    ka, kb = record_key(a), record_key(b)
    if ka == kb:
        return True, f"the same configuration is recommended: {key_text(ka)}", None
    again = next((r for r in new.records if record_key(r) == ka), None)
    if again is None or again.get("status") != "ok":
        return False, (f"the report's pick {key_text(ka)} did not finish now; "
                       f"this machine recommends {key_text(kb)}"), None
    budget = new.spec.mem_budget_mb
    if budget is not None and _finite(again.get("peak_rss_mb")) and again["peak_rss_mb"] > budget:
        return False, (f"the report's pick {key_text(ka)} now peaks at "
                       f"{again['peak_rss_mb']:.0f} MB, over the {budget:.0f} MB budget"), None
    limit = noise.threshold("p50_ms", b, again)
    gap = float(again.get("p50_ms") or 0) - float(b.get("p50_ms") or 0)
    if gap <= limit:
        return True, (f"this machine prefers {key_text(kb)}, but the report's pick "
                      f"{key_text(ka)} is within noise of it (p50 {gap:+.1f} ms, noise "
                      f"{limit:.1f} ms) and fits the budget"), None
    return False, (f"this machine recommends {key_text(kb)}; the report's pick {key_text(ka)} "
                   f"is {gap:.1f} ms slower at p50, more than the {limit:.1f} ms noise"), (ka, kb)


def _settle(contested: tuple[tuple[Any, ...], tuple[Any, ...]],
            rounds: Mapping[tuple[Any, ...], Sequence[float]], noise: Noise) -> tuple[bool, str]:
    """The verdict on the medians of alternating rounds (see `head_to_head`)."""
    import statistics

    ka, kb = contested
    pa = [x for x in rounds.get(ka, ()) if _finite(x)]
    pb = [x for x in rounds.get(kb, ()) if _finite(x)]
    if not pa or not pb:
        return False, (f"this machine recommends {key_text(kb)}; the head-to-head rounds of the "
                       f"report's pick {key_text(ka)} did not finish")
    ma, mb = statistics.median(pa), statistics.median(pb)
    limit = max(noise.latency_rel * mb, noise.latency_abs_ms)
    gap = ma - mb
    how = (f"head to head over {min(len(pa), len(pb))} alternating round(s): the report's pick "
           f"{key_text(ka)} p50 {ma:.1f} ms, {key_text(kb)} {mb:.1f} ms")
    if gap <= limit:
        return True, (f"{how}; within noise ({gap:+.1f} ms, noise {limit:.1f} ms): the single "
                      "trials' gap was the machine's, not the configurations'")
    return False, (f"{how}; the report's pick is {gap:.1f} ms slower, more than the "
                   f"{limit:.1f} ms noise, in rounds that alternate: this machine recommends "
                   f"{key_text(kb)}")


def head_to_head(
    bundle: Bundle | str | os.PathLike[str],
    spec: SweepSpec,
    keys: Sequence[tuple[Any, ...]],
    rounds: int = 3,
    progress: bool = False,
) -> dict[tuple[Any, ...], list[float]]:
    """Measure configurations in alternating isolated trials: A B A B ... ``rounds`` times.

    Each trial is `tts_kit.tune.trial` with the spec's workload; slow drift of a shared
    machine (other load, clocks, caches) then falls on every configuration alike, which
    one trial each, minutes apart, cannot promise. Returns key -> the p50 (ms) of each
    round (NaN for a round that did not finish).

    Example:
        >>> p = head_to_head("standin-dir", SweepSpec.quick(),
        ...                  [("lean", 1, "resident", 2, 1)])  # doctest: +SKIP
        >>> len(p[("lean", 1, "resident", 2, 1)])  # doctest: +SKIP
        3
    """
    from tqdm.auto import tqdm

    from .tune import trial

    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    out: dict[tuple[Any, ...], list[float]] = {tuple(k): [] for k in keys}
    bar = tqdm(total=rounds * len(out), desc="head to head", disable=not progress, leave=False)
    try:
        for _ in range(rounds):
            for key in out:
                preset, cpus, loading, steps, batch = (list(key) + [None] * 5)[:5]
                rec = trial(bundle, preset, texts=list(spec.texts), cpus=cpus,
                            mem_budget_mb=spec.mem_budget_mb, loading=loading or "resident",
                            steps=steps or contract.DEFAULT_STEPS, batch_size=batch or 1,
                            repeats=spec.repeats, seed=spec.seed, lang=spec.lang,
                            voice=spec.voice)
                ok = rec["status"] == "ok" and _finite(rec.get("p50_ms"))
                out[key].append(float(rec["p50_ms"]) if ok else math.nan)
                bar.update()
    finally:
        bar.close()
    return out


def rerun_report(
    report: str | os.PathLike[str],
    model: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    progress: bool = True,
    confirm_rounds: int = 3,
) -> RerunVerdict:
    """Repeat the sweep of an earlier ``report.json`` here and compare figure by figure.

    Args:
        report: the earlier report.json.
        model: bundle to use (default: the report's model path when it still exists and
            has the same SHA-256s, else discovery).
        out: also write a full new report (html, json, notebook) there; without it the
            sweep runs in this process (isolated trials all the same) and nothing is written.
        progress: show a progress bar.
        confirm_rounds: when the verdict rests on the two picks' latency gap alone,
            measure them in this many alternating rounds (`head_to_head`) and decide on
            those; 0: decide on the sweep's single trials.

    Example:
        >>> print(rerun_report("reports/standin/report.json").summary())  # doctest: +SKIP
    """
    old = TuningReport.load(report)
    if model is None and Path(old.model["path"]).is_dir():
        model = old.model["path"]
    where, _ = resolve_model_dir(model)
    bundle = Bundle(where)
    if out is not None:
        paths = make_report(out, model=bundle.path, sweep=old.spec, progress=progress)
        new = TuningReport.load(paths[1])
    else:
        new = run_tuning(bundle, old.spec, progress=progress)
    verdict = compare_reports(old, new)
    if verdict.contested is None or confirm_rounds < 1:
        return verdict
    rounds = head_to_head(bundle, new.spec, list(verdict.contested), rounds=confirm_rounds,
                          progress=progress)
    return compare_reports(old, new, head_to_head=rounds)
