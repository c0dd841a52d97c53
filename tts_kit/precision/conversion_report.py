"""The vocabulary of precision results: targets, fidelity thresholds and the report records
(`StageReport`, `RunRecord`, `Fidelity`, `ConversionReport`); data only (`evaluate` measures)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.fidelity.floor import conformance
from tts_kit.fidelity.listening import decide, quality_lines
from tts_kit.tuning.records import to_number

#: Conversion targets.
TARGETS: tuple[str, ...] = ("fp16", "int8")
#: Sanity thresholds per target (why these: docs/benchmarks.md): the converted waveform's
#: SNR against FP32 at least this (dB) ...
MIN_SNR_DB: dict[str, float] = {"fp16": 20.0, "int8": 15.0}
#: ... its log-mel distance (dB) at most this ...
MAX_LOG_MEL_DB: dict[str, float] = {"fp16": 2.0, "int8": 3.0}
#: ... and its total length within this relative change.
MAX_LENGTH_CHANGE = 0.01


def check_target(to: str) -> None:
    """Raise a one-line ValueError unless ``to`` is one of `TARGETS`.

    Example:
        >>> check_target("fp8")
        Traceback (most recent call last):
        ...
        tts_kit.TtsKitError: unknown target 'fp8'; use one of: fp16, int8
    """
    if to not in TARGETS:
        raise TtsKitError(f"unknown target '{to}'; use one of: {', '.join(TARGETS)}")


# -- records ----------------------------------------------------------------------------


@dataclass(frozen=True)
class MeasureSpec:
    """What the measurements synthesise (text ``i`` with noise seed ``seed + i``; texts
    default to `tts_kit.precision.DEFAULT_TEXTS`, the preset to ``supertonic-default``).

    Example:
        >>> MeasureSpec(steps=2).repeats
        3
    """

    texts: Sequence[str] | None = None
    seed: int = 0
    steps: int = contract.DEFAULT_STEPS
    repeats: int = 3
    lang: str = "en"
    preset: Any = None


@dataclass(frozen=True)
class ConvertSpec(MeasureSpec):
    """The options of `tts_kit.precision.convert` (documented there); its `MeasureSpec`
    fields say what the measurements synthesise.

    Example:
        >>> ConvertSpec(to="int8", measure=False).steps == contract.DEFAULT_STEPS
        True
    """

    to: str = "fp16"
    stages: Sequence[str] | None = None
    keep_io_types: bool = True
    op_block_list: Sequence[str] | None = None
    measure: bool | str = True
    providers: Sequence[str] | None = None
    recipe: str | None = None
    floor: bool | None = None
    quality: bool | None = None


@dataclass
class StageReport:
    """One graph before and after conversion (sizes in bytes).

    Example:
        >>> StageReport("vocoder", True, 4_000_000, 2_010_000).ratio
        0.5025
    """

    stage: str  # ``model`` for a single ``.onnx`` file
    converted: bool  # False: copied unchanged (e.g. a duration predictor kept FP32)
    size_before: int
    size_after: int
    precision_before: str = ""  # dominant weight type: float32, float16, int8, mixed
    precision_after: str = ""
    #: INT8: source op types whose weights were quantised, with counts (``{"MatMul": 40}``);
    #: FP16: ``{"Cast": n}``, the Casts the converter added.
    ops: dict[str, int] = field(default_factory=dict)
    kept_float: int = 0  # INT8: candidate ops left float (small weights, or blocked)
    method: str = ""  # `tts_kit.precision.recipes.METHODS`; empty: ``to``
    #: INT8: `tts_kit.precision.recipes.kernel_report` of the written graph, as a dict.
    kernels: dict[str, Any] | None = None

    @property
    def ratio(self) -> float:
        """``size_after / size_before`` (NaN when there was nothing before)."""
        return self.size_after / self.size_before if self.size_before else math.nan


@dataclass
class RunRecord:
    """One precision measured on one provider in a fresh process (memory in MiB).

    Example:
        >>> RunRecord("fp32", "CPUExecutionProvider", status="ok", p50_s=0.5).ok
        True
    """

    precision: str  # label of the bundle measured: fp32, fp16, int8, ...
    provider: str
    status: str = "ok"  # `tts_kit.runtime.measure.Measurement.status`, or "error"
    error: str = ""
    size_mb: float = math.nan  # the four graphs
    baseline_rss_mb: float = math.nan  # after imports, before the engine
    load_rss_mb: float = math.nan  # once every session is created (resident loading)
    peak_rss_mb: float = math.nan  # high-water mark over load and synthesis
    load_s: float = math.nan
    #: Median seconds of one synthesis after a warm-up; the texts alternate, so every
    #: call's shapes differ from the last one's, as a server's requests do.
    p50_s: float = math.nan
    rtf: float = math.nan  # p50 / audio seconds
    gpu_mem_mb: float | None = None  # CUDA only (`tts_kit.runtime.devices.gpu_memory_mb`)
    gpu_mem_source: str = ""
    preset: str = ""

    @property
    def ok(self) -> bool:
        """True when the run completed."""
        return self.status == "ok"

    @property
    def load_delta_mb(self) -> float:
        """What loading the sessions added to RSS."""
        return self.load_rss_mb - self.baseline_rss_mb

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN becomes None)."""
        return _record_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        """Inverse of `to_dict`."""
        return _record_from_dict(cls, data)


@dataclass
class Fidelity:
    """A converted bundle against FP32 on one provider; `evaluate` computes ``passed``
    (thresholds: `MIN_SNR_DB`, `MAX_LOG_MEL_DB`, `MAX_LENGTH_CHANGE`; finite stages, no
    latent length changed).

    Example:
        >>> f = Fidelity("CPUExecutionProvider", waveform_snr_db=35.0, log_mel_distance_db=0.3,
        ...              min_snr_db=20.0, max_log_mel_db=2.0)
        >>> f.evaluate().passed
        True
    """

    provider: str
    waveform_snr_db: float = math.nan  # over the texts; inf: identical
    log_mel_distance_db: float = math.nan  # mean over frames of the RMS log-mel difference
    #: Each stage's output SNR when both get the same FP32 inputs.
    stage_snr_db: dict[str, float] = field(default_factory=dict)
    length_ref: int = 0  # samples of the FP32 waveforms (all texts)
    length_candidate: int = 0
    #: Chunks whose latent length (frames of 3072 samples) differs from FP32: the duration
    #: predictor's error crossed a frame boundary, so the noise and waveform differ.
    frames_changed: int = 0
    min_snr_db: float = 20.0
    max_log_mel_db: float = 2.0
    passed: bool = False
    reasons: list[str] = field(default_factory=list)  # why it failed
    error: str = ""  # set when the comparison itself could not run

    @property
    def length_change(self) -> float:
        """``length_candidate / length_ref - 1`` (0 when nothing was compared)."""
        return self.length_candidate / self.length_ref - 1 if self.length_ref else 0.0

    def evaluate(self) -> Fidelity:
        """Fill ``passed`` and ``reasons`` from the numbers; returns self."""
        reasons = []
        if self.error:
            reasons.append(f"comparison failed: {self.error}")
        if self.frames_changed:
            reasons.append(
                f"latent length changed in {self.frames_changed} chunk(s): the duration "
                "predictor's output crossed a frame boundary, so the noise and the waveform "
                "differ; keep the duration predictor in FP32"
            )
        if abs(self.length_change) > MAX_LENGTH_CHANGE:
            reasons.append(
                f"length changed by {100 * self.length_change:+.1f} %: {self.length_candidate} "
                f"samples vs {self.length_ref} in FP32 (the duration predictor's output moved; "
                "keep it FP32)"
            )
        snr, lmd = self.waveform_snr_db, self.log_mel_distance_db
        if not snr >= self.min_snr_db:  # NaN fails too
            reasons.append(f"waveform SNR {snr:.1f} dB < {self.min_snr_db:g} dB")
        if not lmd <= self.max_log_mel_db:
            reasons.append(f"log-mel distance {lmd:.2f} dB > {self.max_log_mel_db:g} dB")
        bad = [s for s, v in self.stage_snr_db.items() if math.isnan(v)]
        if bad:
            reasons.append(f"non-finite output from {', '.join(bad)}")
        self.reasons = reasons
        self.passed = not reasons
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (inf and NaN become None; ``identical`` says which was inf)."""
        return {**_record_to_dict(self), "identical": math.isinf(self.waveform_snr_db),
                "stage_snr_db": {k: _json_num(v) for k, v in self.stage_snr_db.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fidelity:
        """Inverse of `to_dict` (None: NaN, or infinity where ``identical``)."""
        d = dict(data)
        none_is = math.inf if d.pop("identical", False) else math.nan
        if none_is == math.inf:
            d["waveform_snr_db"] = math.inf
        d["stage_snr_db"] = {k: none_is if v is None else v
                             for k, v in d.get("stage_snr_db", {}).items()}
        return _record_from_dict(cls, d)


@dataclass
class ConversionReport:
    """What `tts_kit.precision.convert` did and measured. Save with `save`, read back with `load`.

    Example:
        >>> r = ConversionReport(kind="onnx", src="a.onnx", dst="b.onnx", to="fp16")
        >>> ConversionReport.from_dict(r.to_dict()).to
        'fp16'
    """

    kind: str  # ``bundle``, ``onnx`` (a single file) or ``piper``
    src: str
    dst: str
    to: str  # ``fp16`` or ``int8``
    stages: dict[str, StageReport] = field(default_factory=dict)  # every output graph
    converted: list[str] = field(default_factory=list)
    tool: str = ""  # the converter and its version
    options: dict[str, Any] = field(default_factory=dict)
    #: SHA-256 of every source file (relative path -> hex) before conversion; the same
    #: hashes after it give ``source_unchanged`` (a difference is raised as an error).
    source_sha256: dict[str, str] = field(default_factory=dict)
    source_unchanged: bool = True
    convert_s: float = 0.0  # the conversion, not the measurements
    measured: bool = False
    texts: list[str] = field(default_factory=list)
    seed: int = 0
    steps: int = contract.DEFAULT_STEPS
    runs: list[RunRecord] = field(default_factory=list)
    fidelity: dict[str, Fidelity] = field(default_factory=dict)  # per provider
    #: Single files: output name -> SNR against the source model on random inputs.
    output_snr_db: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # anything skipped, and why
    recipe: str = ""  # `tts_kit.precision.recipes.RECIPES`, when one was used
    #: The copy against the source's measured noise floor, a conformance figure
    #: (`tts_kit.precision.evaluate.judge_against_floor`); empty when not measured.
    conformance: dict[str, Any] = field(default_factory=dict)
    #: The listener's verdict (`tts_kit.fidelity.listening.judge_quality`); empty when
    #: not measured.
    quality: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> tuple[str, list[str]] | None:
        """The one verdict, ``(verdict, reasons)`` (`tts_kit.fidelity.listening.decide`)."""
        c = self.conformance
        return decide(self.quality, (c["verdict"], c.get("reasons", [])) if c else None)

    @property
    def size_before(self) -> int:
        """Bytes of the converted stages before."""
        return sum(s.size_before for s in self.stages.values() if s.converted)

    @property
    def size_after(self) -> int:
        """Bytes of the converted stages after."""
        return sum(s.size_after for s in self.stages.values() if s.converted)

    @property
    def passed(self) -> bool | None:
        """All fidelity checks passed (None when nothing was compared)."""
        return all(f.passed for f in self.fidelity.values()) if self.fidelity else None

    def run(self, precision: str, provider: str = "CPUExecutionProvider") -> RunRecord | None:
        """The measurement of one precision on one provider, if any."""
        return next((r for r in self.runs if (r.precision, r.provider) == (precision, provider)),
                    None)

    def table(self) -> str:
        """Human-readable summary: the verdict first and alone, then sizes, memory,
        latency, fidelity and the conformance against the source's floor."""
        verdict = self.verdict
        lines = [*(quality_lines(self.quality) if self.quality else
                   [f"verdict (against the source's measured noise floor): "
                    f"{verdict[0].upper()}"] if verdict else []),
            f"{self.kind} {self.src} -> {self.dst}  ({self.recipe or self.to}; converted: "
            f"{', '.join(self.converted) or '-'})",
            f"{'stage':<20}{'before MB':>10}{'after MB':>10}{'ratio':>7}  {'weights':<17}ops",
        ]
        for s in self.stages.values():
            ops = ", ".join(f"{k} {v}" for k, v in s.ops.items()) if s.converted else "copied"
            if s.kept_float:
                ops += f" (kept float: {s.kept_float})"
            if s.method and s.converted:
                ops = f"[{s.method}] {ops}"
            prec = f"{s.precision_before}->{s.precision_after}"
            lines.append(f"{_sizes(s.stage, s.size_before, s.size_after)}  {prec:<17}{ops}")
            if s.kernels:
                lines.append(f"{'':<20}runs: {s.kernels.get('verdict', '')}")
        if self.stages:
            lines.append(_sizes("converted total", self.size_before, self.size_after))
        lines.append(
            f"source unchanged: {'yes' if self.source_unchanged else 'NO'} "
            f"(SHA-256 of {len(self.source_sha256)} files checked before and after)"
        )
        if self.runs:
            lines.append(format_runs(self.runs))
        for prov, f in self.fidelity.items():
            stages = ", ".join(f"{k} {_fmt_db(v)}" for k, v in f.stage_snr_db.items())
            # Sanity thresholds chosen by hand (catch a broken conversion cheaply).
            verdict = ("PASSED the sanity thresholds" if f.passed
                       else "FAILED the sanity thresholds: " + "; ".join(f.reasons))
            lines.append(
                f"fidelity vs fp32 on {_short(prov)}: waveform SNR {_fmt_db(f.waveform_snr_db)}, "
                f"log-mel distance {f.log_mel_distance_db:.2f} dB; stage SNR: {stages or '-'}"
            )
            lines.append(
                f"  {verdict} (needs SNR >= {f.min_snr_db:g} dB, log-mel <= "
                f"{f.max_log_mel_db:g} dB, length within {100 * MAX_LENGTH_CHANGE:g} %; "
                f"length {100 * f.length_change:+.3f} %)"
            )
        if self.conformance:
            j = self.conformance
            d, fl, take = j["distances"], j["floor"], j["take"]
            read = f" on {j['read']}" if j.get("read") else ""
            lines.append(
                f"conformance against the source's measured noise floor{read}: "
                f"{conformance(j['verdict'], self.to.upper())} "
                f"(distances: SNR {_fmt_db(_num(d['snr_db']))}, log-mel "
                f"{d['log_mel_db']:.3g} dB, MCD {d['mcd_db']:.3g} dB; floor: SNR "
                f"{_fmt_db(_num(fl['snr_db']))}, log-mel {fl['log_mel_db']:.3g} dB, MCD "
                f"{fl['mcd_db']:.3g} dB; another take: log-mel {take['log_mel_db']:.3g} dB, "
                f"MCD {take['mcd_db']:.3g} dB)")
            lines += [f"  {r}" for r in j.get("reasons", [])]
        if self.output_snr_db:
            lines.append(
                "outputs vs source on random inputs: "
                + ", ".join(f"{k} {_fmt_db(v)}" for k, v in self.output_snr_db.items())
            )
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the `save` format)."""
        d = dataclasses.asdict(self)
        d["runs"] = [r.to_dict() for r in self.runs]
        d["fidelity"] = {k: f.to_dict() for k, f in self.fidelity.items()}
        d["output_snr_db"] = {k: _json_num(x) for k, x in self.output_snr_db.items()}
        d["passed"], d["verdict"] = self.passed, (self.verdict or (None,))[0]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConversionReport:
        """Inverse of `to_dict` (an older report names ``conformance`` ``judgement``)."""
        d = {k: v for k, v in data.items() if k not in ("passed", "verdict", "judgement")}
        d.setdefault("conformance", data.get("judgement") or {})
        d["stages"] = {k: StageReport(**s) for k, s in d.get("stages", {}).items()}
        d["runs"] = [RunRecord.from_dict(r) for r in d.get("runs", [])]
        d["fidelity"] = {k: Fidelity.from_dict(f) for k, f in d.get("fidelity", {}).items()}
        d["output_snr_db"] = {k: _num(v) for k, v in d.get("output_snr_db", {}).items()}
        return cls(**d)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the report as JSON (strict JSON: no NaN or Infinity)."""
        from tts_kit.core.atomic import atomic_file

        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        with atomic_file(path) as tmp:  # whole or not at all
            Path(tmp).write_text(text + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ConversionReport:
        """Read a report written by `save`."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def _num(v: Any) -> float:
    # JSON-safe distances: None is NaN, "inf" is infinity (`tts_kit.fidelity.cases.json_safe`).
    return math.nan if v is None else float(v)


def _json_num(v: Any) -> Any:
    # Strings, ints and None pass; a float goes through the one NaN rule.
    return to_number(v) if isinstance(v, float) else v


def _record_to_dict(record: Any) -> dict[str, Any]:
    """A record's fields, JSON-ready (NaN and infinity become None)."""
    return {f.name: _json_num(getattr(record, f.name)) for f in dataclasses.fields(record)}


def _record_from_dict(cls: Any, data: dict[str, Any]) -> Any:
    """``cls`` from `_record_to_dict`'s dict: unknown keys dropped, None as NaN in a field
    whose default is NaN."""
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    return cls(**{k: math.nan if v is None and defaults[k] is math.nan else v
                  for k, v in data.items() if k in defaults})


def _sizes(name: str, before: int, after: int) -> str:
    """A table row's name, sizes in MB and their ratio."""
    ratio = after / before if before else math.nan
    return f"{name:<20}{before / 2**20:>10.2f}{after / 2**20:>10.2f}{ratio:>7.2f}"


def _fmt_db(v: float) -> str:
    if math.isinf(v):
        return "identical"
    return "n/a" if math.isnan(v) else f"{v:.1f} dB"


def _short(provider: str) -> str:
    return provider.replace("ExecutionProvider", "")


def format_runs(runs: Sequence[RunRecord], reference: str = "fp32") -> str:
    """Table of measurements with ratios to ``reference`` on the same provider.

    Example:
        >>> table = format_runs([RunRecord("fp32", "CPUExecutionProvider", size_mb=4.0,
        ...                                p50_s=1.0)])
        >>> table.splitlines()[1].split()
        ['CPU', 'fp32', '4.00', '1.00', 'n/a', 'n/a', 'n/a', 'n/a', '1.000', '1.00', '-', 'ok']
    """
    columns = (("size MB", "size_mb", 8, ".2f"), ("load MB", "load_delta_mb", 9, ".1f"),
               ("peak MB", "peak_rss_mb", 9, ".1f"), ("p50 s", "p50_s", 8, ".3f"))
    lines = [f"{'provider':<9}{'precision':<10}"
             + "".join(f"{head:>{width}}{'x':>5}" for head, _, width, _ in columns)
             + f"{'GPU MB':>8} status"]
    refs = {r.provider: r for r in runs if r.precision == reference and r.ok}

    def cell(v: float | None, ref: float | None, width: int, fmt: str) -> str:
        num = "n/a" if v is None or not math.isfinite(v) else format(v, fmt)
        bad = ref is None or num == "n/a" or not math.isfinite(ref) or not ref
        return f"{num:>{width}}{'n/a' if bad else format(v / ref, '.2f'):>5}"

    for r in runs:
        ref = refs.get(r.provider)
        gpu = "-" if r.gpu_mem_mb is None else f"{r.gpu_mem_mb:.0f}"
        lines.append(f"{_short(r.provider):<9}{r.precision:<10}"
                     + "".join(cell(getattr(r, key), getattr(ref, key) if ref else None, width, fmt)
                               for _, key, width, fmt in columns)
                     + f"{gpu:>8} {r.status}{(': ' + r.error) if r.error else ''}")
    lines.append("(load MB: RSS added by creating the sessions; peak MB: RSS high-water mark)")
    return "\n".join(lines)

