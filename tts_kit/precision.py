"""FP16 and INT8 conversion of a bundle (or any ``.onnx`` file), measured rather than assumed.

`convert` writes a converted copy of a Supertonic bundle, stage by stage, and returns a
`ConversionReport`: size before and after per stage and, when measured, load RSS, peak
RSS and p50 latency of each precision on each available execution provider (each run in a
fresh process through `tts_kit.measure.run_isolated`, same texts, seeds and noise), plus
the fidelity of the converted bundle against FP32: SNR and log-mel distance of the final
waveform, and the SNR of every stage's output when both bundles get the same FP32 inputs.

Tools:

* FP16: ``onnxruntime.transformers.float16.convert_float_to_float16``. It is the
  ``onnxconverter_common`` algorithm (the file says so) maintained inside ONNX Runtime,
  with fixes for Resize/GroupNorm mixed inputs and opset-aware blocking, and it ships with
  the ``onnxruntime`` wheel we already depend on, so no extra dependency. ``keep_io_types``
  keeps float32 graph inputs and outputs (Casts inside the graph), so callers need not
  change; the engine casts for graphs converted without it.
* INT8: ``onnxruntime.quantization.quantize_dynamic`` with signed 8-bit weights
  (``QInt8``, per output channel) for ``MatMul`` with a constant weight (the ConvNeXt
  pointwise layers and every linear layer), ``Conv`` (depthwise and ordinary convs, as
  ``ConvInteger``) and ``Gather`` (the character embeddings). Activations are quantised
  at run time (``DynamicQuantizeLinear``, uint8), which is what the CPU provider's
  ``MatMulInteger``/``ConvInteger`` kernels take. Weights under
  `INT8_MIN_WEIGHT_ELEMENTS` elements stay float: each quantised op adds four to five
  nodes plus a scale and zero point, more bytes and more time than a small weight saves.

Why measure instead of quoting "FP16 saves 40 %": on the CPU provider most operators have
no FP16 kernel, so ONNX Runtime inserts Casts back to FP32 at load time; the file halves,
the resident memory may not, and latency often grows. On CUDA, FP16 runs natively. The
report records what happened on this machine. On the full stand-in on a 2-core x86 CPU
(``bench/precision.py``), FP16 halved the files but not the memory (load RSS x1.01) and
was 1.5x slower; INT8 cut load RSS to 0.29x and peak RSS to 0.40x at about the same
speed. INT8 of the duration predictor moved one chunk's length across a latent frame
boundary, which changes the noise and so the whole waveform (the fidelity check flags it);
with the duration predictor kept FP32 (3 MB), INT8 kept 31 dB SNR.

Fidelity (`fidelity`) hooks the engine's per-stage call (``Engine._run``) to record the
FP32 inputs of every stage, so each converted stage is judged on identical inputs.

Safety: the destination must not exist (or be an empty directory); the output is built in
a temporary directory beside it, checked (it opens as a `tts_kit.Bundle`, every converted
graph opens in ONNX Runtime), and renamed into place only when complete. The source is
hashed (SHA-256, every file) before and after; a change is an error. Voice styles and JSON
files are copied; ``tts.json`` gains a ``tts_kit_precision`` record of the conversion.

Example:
    >>> from tts_kit.precision import convert
    >>> report = convert("models/supertonic-3", "models/supertonic-3-fp16", to="fp16",
    ...                  stages=["text_encoder", "vector_estimator", "vocoder"])  # doctest: +SKIP
    >>> print(report.table())  # doctest: +SKIP
    >>> report.fidelity["CPUExecutionProvider"].passed  # doctest: +SKIP
    True
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from . import contract

#: Conversion targets.
TARGETS: tuple[str, ...] = ("fp16", "int8")
#: Op types `quantize_dynamic` is asked to quantise (see the module docstring).
INT8_OP_TYPES: tuple[str, ...] = ("MatMul", "Conv", "Gather")
#: Weights with fewer elements than this stay float in INT8 conversions.
INT8_MIN_WEIGHT_ELEMENTS = 1024
#: Fidelity thresholds per target: the converted waveform passes when its SNR against
#: FP32 is at least this many dB ... On the full stand-in FP16 measures about 48 dB and
#: INT8 (duration predictor kept FP32) about 31 dB, while a layer with zeroed weights gives
#: about 0 dB: the thresholds sit well below healthy values and far above broken ones.
MIN_SNR_DB: dict[str, float] = {"fp16": 20.0, "int8": 15.0}
#: ... and its log-mel distance (dB, see `log_mel_distance`) is at most this.
MAX_LOG_MEL_DB: dict[str, float] = {"fp16": 2.0, "int8": 3.0}
#: Largest relative change of the total audio length that still passes. The duration
#: predictor's output sets the length; FP16 moves it by a few samples (harmless). A change
#: that crosses a latent frame boundary is flagged on its own (`Fidelity.frames_changed`).
MAX_LENGTH_CHANGE = 0.01
#: Texts synthesised by the measurements unless the caller gives others.
DEFAULT_TEXTS: tuple[str, ...] = ("The quick brown fox jumps over the lazy dog.",)
#: Providers the measurements know how to compare (others, e.g. Azure, are skipped).
MEASURED_PROVIDERS: tuple[str, ...] = ("CPUExecutionProvider", "CUDAExecutionProvider")
PRECISION_KEY = "tts_kit_precision"


def _tool(to: str) -> str:
    if to == "fp16":
        return (
            "onnxruntime.transformers.float16.convert_float_to_float16 "
            f"(onnxruntime {ort.__version__})"
        )
    return (
        f"onnxruntime.quantization.quantize_dynamic (onnxruntime {ort.__version__}; "
        f"QInt8 per-channel weights, ops {', '.join(INT8_OP_TYPES)})"
    )


# -- reports ----------------------------------------------------------------------------


@dataclass
class StageReport:
    """One graph before and after conversion.

    Example:
        >>> StageReport("vocoder", True, 4_000_000, 2_010_000).ratio
        0.5025
    """

    stage: str
    """Stage name (``model`` for a single ``.onnx`` file)."""
    converted: bool
    """False for graphs copied unchanged (e.g. a duration predictor kept FP32)."""
    size_before: int
    """Bytes of the source graph."""
    size_after: int
    """Bytes of the written graph."""
    precision_before: str = ""
    """Dominant weight type before (``float32``, ``float16``, ``int8``, ``mixed``)."""
    precision_after: str = ""
    """Dominant weight type after."""
    ops: dict[str, int] = field(default_factory=dict)
    """INT8: source op types whose weights were quantised, with counts (``{"MatMul": 40}``);
    FP16: ``{"Cast": n}``, the Casts the converter added."""
    kept_float: int = 0
    """INT8: candidate ops left float (weights under `INT8_MIN_WEIGHT_ELEMENTS`, or blocked)."""

    @property
    def ratio(self) -> float:
        """``size_after / size_before``."""
        return self.size_after / self.size_before if self.size_before else math.nan


@dataclass
class RunRecord:
    """One precision measured on one provider in a fresh process (memory in MiB).

    Example:
        >>> RunRecord("fp32", "CPUExecutionProvider", status="ok", p50_s=0.5).ok
        True
    """

    precision: str
    """Label of the bundle measured (``fp32``, ``fp16``, ``int8``, ...)."""
    provider: str
    """Execution provider the sessions asked for."""
    status: str = "ok"
    """`tts_kit.measure.Measurement.status`, or ``"error"`` when the provider was unusable."""
    error: str = ""
    """One line when not ok."""
    size_mb: float = math.nan
    """Bytes of the four graphs / 2**20."""
    baseline_rss_mb: float = math.nan
    """RSS after imports, before the engine (Python + ONNX Runtime)."""
    load_rss_mb: float = math.nan
    """RSS once every session is created (resident loading)."""
    peak_rss_mb: float = math.nan
    """The process's RSS high-water mark over load and synthesis."""
    load_s: float = math.nan
    """Seconds to create the four sessions."""
    p50_s: float = math.nan
    """Median wall seconds of one synthesis (after one warm-up call)."""
    rtf: float = math.nan
    """p50 / audio seconds."""
    gpu_mem_mb: float | None = None
    """CUDA only: GPU memory the process held after the runs (see `gpu_memory_mb`)."""
    gpu_mem_source: str = ""
    """How ``gpu_mem_mb`` was read."""
    preset: str = ""
    """Session preset name."""

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
        return {f.name: _json_num(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        """Inverse of `to_dict`."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        kw = {}
        for k, v in data.items():
            if k not in known:
                continue
            kw[k] = math.nan if v is None and known[k].default is math.nan else v
        return cls(**kw)


@dataclass
class Fidelity:
    """A converted bundle against FP32 on one provider.

    ``passed`` is computed, never assumed: the waveform SNR must reach
    ``min_snr_db`` and the log-mel distance stay under ``max_log_mel_db`` (defaults per
    target in `MIN_SNR_DB` / `MAX_LOG_MEL_DB`), every stage must give finite output, no
    chunk may change its latent length and the total length may change by at most
    `MAX_LENGTH_CHANGE`.

    Example:
        >>> f = Fidelity("CPUExecutionProvider", waveform_snr_db=35.0, log_mel_distance_db=0.3,
        ...              min_snr_db=20.0, max_log_mel_db=2.0)
        >>> f.evaluate().passed
        True
    """

    provider: str
    """Provider both bundles ran on."""
    waveform_snr_db: float = math.nan
    """10 log10(signal / error) of the final waveform, over the texts (inf: identical)."""
    log_mel_distance_db: float = math.nan
    """Mean over frames of the RMS difference of log-mel spectra in dB."""
    stage_snr_db: dict[str, float] = field(default_factory=dict)
    """SNR of each stage's output when both get the same FP32 inputs."""
    length_ref: int = 0
    """Samples of the FP32 waveforms (all texts)."""
    length_candidate: int = 0
    """Samples of the converted waveforms; a difference means the durations moved."""
    frames_changed: int = 0
    """Chunks whose latent length (frames of 3072 samples) differs from FP32. Each one draws
    differently shaped noise, so its waveform cannot match sample by sample: the duration
    predictor's error crossed a frame boundary."""
    min_snr_db: float = 20.0
    """Threshold used for ``passed``."""
    max_log_mel_db: float = 2.0
    """Threshold used for ``passed``."""
    passed: bool = False
    """True when every check below held."""
    reasons: list[str] = field(default_factory=list)
    """Why it failed (empty when it passed)."""
    error: str = ""
    """Set when the comparison itself could not run."""

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
        if not self.waveform_snr_db >= self.min_snr_db:  # NaN fails too
            reasons.append(
                f"waveform SNR {self.waveform_snr_db:.1f} dB < {self.min_snr_db:g} dB"
            )
        if not self.log_mel_distance_db <= self.max_log_mel_db:
            reasons.append(
                f"log-mel distance {self.log_mel_distance_db:.2f} dB > {self.max_log_mel_db:g} dB"
            )
        bad = [s for s, v in self.stage_snr_db.items() if math.isnan(v)]
        if bad:
            reasons.append(f"non-finite output from {', '.join(bad)}")
        self.reasons = reasons
        self.passed = not reasons
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (inf and NaN become None; ``identical`` says which was inf)."""
        d = {f.name: _json_num(getattr(self, f.name)) for f in dataclasses.fields(self)}
        d["stage_snr_db"] = {k: _json_num(v) for k, v in self.stage_snr_db.items()}
        d["identical"] = math.isinf(self.waveform_snr_db)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fidelity:
        """Inverse of `to_dict`."""
        d = dict(data)
        identical = d.pop("identical", False)
        snr = d.get("waveform_snr_db")
        d["waveform_snr_db"] = math.inf if identical else (math.nan if snr is None else snr)
        if d.get("log_mel_distance_db") is None:
            d["log_mel_distance_db"] = math.nan
        d["stage_snr_db"] = {
            k: (math.inf if v is None and identical else math.nan if v is None else v)
            for k, v in d.get("stage_snr_db", {}).items()
        }
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class ConversionReport:
    """What `convert` did and measured. Save with `save`, read back with `load`.

    Example:
        >>> r = ConversionReport(kind="onnx", src="a.onnx", dst="b.onnx", to="fp16")
        >>> ConversionReport.from_dict(r.to_dict()).to
        'fp16'
    """

    kind: str
    """``bundle`` or ``onnx`` (a single file)."""
    src: str
    """Source path."""
    dst: str
    """Destination path."""
    to: str
    """``fp16`` or ``int8``."""
    stages: dict[str, StageReport] = field(default_factory=dict)
    """Every graph of the output, converted or copied."""
    converted: list[str] = field(default_factory=list)
    """The stages converted."""
    tool: str = ""
    """The converter and its version."""
    options: dict[str, Any] = field(default_factory=dict)
    """keep_io_types, op_block_list, INT8 settings."""
    source_sha256: dict[str, str] = field(default_factory=dict)
    """SHA-256 of every source file (relative path -> hex) before conversion."""
    source_unchanged: bool = True
    """The same hashes after conversion (a difference is raised as an error)."""
    convert_s: float = 0.0
    """Wall seconds of the conversion (not the measurements)."""
    measured: bool = False
    """Whether measurements ran."""
    texts: list[str] = field(default_factory=list)
    """Texts the measurements synthesised."""
    seed: int = 0
    """Noise seed of the measurements."""
    steps: int = contract.DEFAULT_STEPS
    """Flow steps of the measurements."""
    runs: list[RunRecord] = field(default_factory=list)
    """Memory and latency per precision and provider."""
    fidelity: dict[str, Fidelity] = field(default_factory=dict)
    """Converted vs FP32 per provider."""
    output_snr_db: dict[str, float] = field(default_factory=dict)
    """Single files: output name -> SNR against the source model on random inputs."""
    notes: list[str] = field(default_factory=list)
    """Anything skipped, and why."""

    @property
    def size_before(self) -> int:
        """Bytes of the converted stages before."""
        return sum(s.size_before for s in self.stages.values() if s.converted)

    @property
    def size_after(self) -> int:
        """Bytes of the converted stages after."""
        return sum(s.size_after for s in self.stages.values() if s.converted)

    @property
    def total_before(self) -> int:
        """Bytes of every graph of the source (converted or not)."""
        return sum(s.size_before for s in self.stages.values())

    @property
    def total_after(self) -> int:
        """Bytes of every graph of the output."""
        return sum(s.size_after for s in self.stages.values())

    @property
    def passed(self) -> bool | None:
        """All fidelity checks passed (None when nothing was compared)."""
        if not self.fidelity:
            return None
        return all(f.passed for f in self.fidelity.values())

    def run(self, precision: str, provider: str = "CPUExecutionProvider") -> RunRecord | None:
        """The measurement of one precision on one provider, if any."""
        for r in self.runs:
            if r.precision == precision and r.provider == provider:
                return r
        return None

    def table(self) -> str:
        """Human-readable summary: sizes, memory, latency, fidelity."""
        lines = [
            f"{self.kind} {self.src} -> {self.dst}  ({self.to}; converted: "
            f"{', '.join(self.converted) or '-'})",
            f"{'stage':<20}{'before MB':>10}{'after MB':>10}{'ratio':>7}  {'weights':<17}ops",
        ]
        for s in self.stages.values():
            ops = ", ".join(f"{k} {v}" for k, v in s.ops.items()) if s.converted else "copied"
            if s.kept_float:
                ops += f" (kept float: {s.kept_float})"
            prec = f"{s.precision_before}->{s.precision_after}"
            lines.append(
                f"{s.stage:<20}{s.size_before / 2**20:>10.2f}{s.size_after / 2**20:>10.2f}"
                f"{s.ratio:>7.2f}  {prec:<17}{ops}"
            )
        if self.stages:
            lines.append(
                f"{'converted total':<20}{self.size_before / 2**20:>10.2f}"
                f"{self.size_after / 2**20:>10.2f}"
                f"{(self.size_after / self.size_before if self.size_before else math.nan):>7.2f}"
            )
        lines.append(
            f"source unchanged: {'yes' if self.source_unchanged else 'NO'} "
            f"(SHA-256 of {len(self.source_sha256)} files checked before and after)"
        )
        if self.runs:
            lines.append(format_runs(self.runs))
        for prov, f in self.fidelity.items():
            stages = ", ".join(f"{k} {_fmt_db(v)}" for k, v in f.stage_snr_db.items())
            verdict = "PASSED" if f.passed else "FAILED: " + "; ".join(f.reasons)
            lines.append(
                f"fidelity vs fp32 on {_short(prov)}: waveform SNR {_fmt_db(f.waveform_snr_db)}, "
                f"log-mel distance {f.log_mel_distance_db:.2f} dB; stage SNR: {stages or '-'}"
            )
            lines.append(
                f"  {verdict} (needs SNR >= {f.min_snr_db:g} dB, log-mel <= "
                f"{f.max_log_mel_db:g} dB, length within {100 * MAX_LENGTH_CHANGE:g} %; "
                f"length {100 * f.length_change:+.3f} %)"
            )
        if self.output_snr_db:
            lines.append(
                "outputs vs source on random inputs: "
                + ", ".join(f"{k} {_fmt_db(v)}" for k, v in self.output_snr_db.items())
            )
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the `save` format)."""
        d: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "stages":
                v = {k: dataclasses.asdict(s) for k, s in v.items()}
            elif f.name == "runs":
                v = [r.to_dict() for r in v]
            elif f.name == "fidelity":
                v = {k: fi.to_dict() for k, fi in v.items()}
            elif f.name == "output_snr_db":
                v = {k: _json_num(x) for k, x in v.items()}
            d[f.name] = v
        d["passed"] = self.passed
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConversionReport:
        """Inverse of `to_dict`."""
        d = {k: v for k, v in data.items() if k != "passed"}
        d["stages"] = {k: StageReport(**s) for k, s in d.get("stages", {}).items()}
        d["runs"] = [RunRecord.from_dict(r) for r in d.get("runs", [])]
        d["fidelity"] = {k: Fidelity.from_dict(f) for k, f in d.get("fidelity", {}).items()}
        d["output_snr_db"] = {
            k: math.nan if v is None else v for k, v in d.get("output_snr_db", {}).items()
        }
        return cls(**d)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the report as JSON (strict JSON: no NaN or Infinity)."""
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        Path(path).write_text(text + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ConversionReport:
        """Read a report written by `save`."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def _json_num(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


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
    head = (
        f"{'provider':<9}{'precision':<10}{'size MB':>8}{'x':>5}{'load MB':>9}{'x':>5}"
        f"{'peak MB':>9}{'x':>5}{'p50 s':>8}{'x':>5}{'GPU MB':>8} status"
    )
    lines = [head]
    refs = {r.provider: r for r in runs if r.precision == reference and r.ok}

    def cell(v: float | None, ref: float | None, width: int, fmt: str) -> str:
        num = "n/a" if v is None or not math.isfinite(v) else format(v, fmt)
        if ref is None or v is None or not (math.isfinite(v) and math.isfinite(ref)) or not ref:
            ratio = "n/a"
        else:
            ratio = f"{v / ref:.2f}"
        return f"{num:>{width}}{ratio:>5}"

    for r in runs:
        ref = refs.get(r.provider)
        gpu = "-" if r.gpu_mem_mb is None else f"{r.gpu_mem_mb:.0f}"
        lines.append(
            f"{_short(r.provider):<9}{r.precision:<10}"
            + cell(r.size_mb, ref.size_mb if ref else None, 8, ".2f")
            + cell(r.load_delta_mb, ref.load_delta_mb if ref else None, 9, ".1f")
            + cell(r.peak_rss_mb, ref.peak_rss_mb if ref else None, 9, ".1f")
            + cell(r.p50_s, ref.p50_s if ref else None, 8, ".3f")
            + f"{gpu:>8} {r.status}{(': ' + r.error) if r.error else ''}"
        )
    lines.append("(load MB: RSS added by creating the sessions; peak MB: RSS high-water mark)")
    return "\n".join(lines)


# -- signal measures --------------------------------------------------------------------


def snr_db(reference: np.ndarray, candidate: np.ndarray) -> float:
    """Signal-to-noise ratio of ``candidate`` against ``reference`` in dB (inf: identical).

    Both are flattened; they must have the same number of elements. NaN when the
    candidate is not finite or the reference is silent.

    Example:
        >>> x = np.sin(np.linspace(0, 100, 1000))
        >>> round(snr_db(x, x * 1.01), 1)
        40.0
    """
    ref = np.asarray(reference, np.float64).ravel()
    cand = np.asarray(candidate, np.float64).ravel()
    if ref.shape != cand.shape:
        raise ValueError(f"snr_db: shapes differ ({ref.size} vs {cand.size} elements)")
    if not np.isfinite(cand).all():
        return math.nan
    signal = float(np.sum(ref * ref))
    noise = float(np.sum((ref - cand) ** 2))
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return math.nan
    return 10.0 * math.log10(signal / noise)


def mel_filterbank(
    sample_rate: int, n_fft: int, n_mels: int = 80, fmin: float = 0.0, fmax: float | None = None
) -> np.ndarray:
    """Triangular mel filters (HTK mel scale), shape ``[n_mels, n_fft // 2 + 1]``.

    Example:
        >>> fb = mel_filterbank(44100, 2048, 80)
        >>> fb.shape, bool((fb >= 0).all())
        ((80, 1025), True)
    """
    fmax = sample_rate / 2 if fmax is None else fmax

    def hz_to_mel(f: np.ndarray | float) -> np.ndarray:
        return 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)

    def mel_to_hz(m: np.ndarray) -> np.ndarray:
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)

    freqs = np.linspace(0, sample_rate / 2, n_fft // 2 + 1)
    edges = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    up = (freqs[None, :] - lo) / np.maximum(mid - lo, 1e-9)
    down = (hi - freqs[None, :]) / np.maximum(hi - mid, 1e-9)
    return np.maximum(0.0, np.minimum(up, down))


def log_mel(
    wav: np.ndarray, sample_rate: int, n_fft: int = 2048, hop: int = 512, n_mels: int = 80
) -> np.ndarray:
    """Log-mel power spectrogram in dB, shape ``[frames, n_mels]`` (Hann window, numpy FFT).

    Example:
        >>> log_mel(np.zeros(44100, np.float32), 44100).shape  # 1 + (44100 - 2048) // 512
        (83, 80)
    """
    x = np.asarray(wav, np.float64).ravel()
    if x.size < n_fft:
        x = np.pad(x, (0, n_fft - x.size))
    frames = 1 + (x.size - n_fft) // hop
    idx = np.arange(n_fft)[None, :] + hop * np.arange(frames)[:, None]
    spec = np.abs(np.fft.rfft(x[idx] * np.hanning(n_fft), axis=1)) ** 2
    mel = spec @ mel_filterbank(sample_rate, n_fft, n_mels).T
    return 10.0 * np.log10(np.maximum(mel, 1e-10))


def log_mel_distance(
    reference: np.ndarray, candidate: np.ndarray, sample_rate: int, floor_db: float = 80.0
) -> float:
    """Mean over frames of the RMS (over mel bands) difference of log-mel spectra, in dB.

    Both spectra are floored at ``floor_db`` below the reference's maximum, so near-silent
    frames (where log spectra are dominated by rounding) cannot dominate the distance.
    Compares the common length. 0 means identical; about 1 dB is inaudible on speech.

    Example:
        >>> x = np.random.default_rng(0).standard_normal(44100).astype(np.float32)
        >>> log_mel_distance(x, x, 44100)
        0.0
    """
    n = min(len(reference), len(candidate))
    if not np.isfinite(np.asarray(candidate[:n])).all():
        return math.nan
    a = log_mel(reference[:n], sample_rate)
    b = log_mel(candidate[:n], sample_rate)
    floor = a.max() - floor_db
    a, b = np.maximum(a, floor), np.maximum(b, floor)
    return float(np.mean(np.sqrt(np.mean((a - b) ** 2, axis=1))))


def waveform_fidelity(
    reference: Sequence[np.ndarray], candidate: Sequence[np.ndarray], sample_rate: int
) -> tuple[float, float, int, int]:
    """``(snr_db, log_mel_distance_db, samples_ref, samples_candidate)`` over paired waveforms.

    Each pair is compared over its common length; SNR pools signal and error energy
    over all pairs, the log-mel distance is the mean over pairs.

    Example:
        >>> x = np.sin(np.linspace(0, 3000, 44100)).astype(np.float32)
        >>> snr, lmd, n_ref, n_cand = waveform_fidelity([x], [x + 1e-3], 44100)
        >>> snr > 40, n_ref == n_cand
        (True, True)
    """
    if len(reference) != len(candidate):
        raise ValueError(f"{len(reference)} reference waveforms but {len(candidate)} candidates")
    sig = err = 0.0
    dists = []
    for r, c in zip(reference, candidate):
        n = min(len(r), len(c))
        r64, c64 = np.asarray(r[:n], np.float64), np.asarray(c[:n], np.float64)
        if not np.isfinite(c64).all():
            return math.nan, math.nan, sum(map(len, reference)), sum(map(len, candidate))
        sig += float(np.sum(r64 * r64))
        err += float(np.sum((r64 - c64) ** 2))
        dists.append(log_mel_distance(r64, c64, sample_rate))
    snr = math.inf if err == 0 else (math.nan if sig == 0 else 10 * math.log10(sig / err))
    return (
        snr,
        float(np.mean(dists)) if dists else math.nan,
        sum(len(r) for r in reference),
        sum(len(c) for c in candidate),
    )


# -- hashing and file safety ------------------------------------------------------------


def sha256_file(path: str | os.PathLike[str]) -> str:
    """SHA-256 of one file, read in 1 MiB blocks.

    Example:
        >>> sha256_file(__file__) == sha256_file(__file__)
        True
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_tree(path: str | os.PathLike[str]) -> dict[str, str]:
    """SHA-256 of every file under ``path`` (relative POSIX path -> hex); a file maps to itself.

    Example:
        >>> list(sha256_tree(__file__))
        ['precision.py']
    """
    root = Path(path)
    if root.is_file():
        return {root.name: sha256_file(root)}
    return {
        p.relative_to(root).as_posix(): sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _check_dst_free(dst: Path, kind: str) -> None:
    if kind == "onnx":
        if dst.exists() or dst.is_symlink():
            raise ValueError(f"{dst}: already exists; give a new output file path")
        return
    if dst.exists() and (not dst.is_dir() or any(dst.iterdir())):
        raise ValueError(
            f"{dst}: already exists and is not an empty directory; choose a new path or remove it"
        )


def _graph_bytes(path: Path) -> int:
    return path.stat().st_size + sum(
        p.stat().st_size for p in path.parent.glob(f"{path.name}.data*")
    )


# -- the converters ---------------------------------------------------------------------


def _strip_added_value_info(model: onnx.ModelProto, keep: set[str]) -> None:
    """Drop shape-inference annotations the converters add (ORT infers them again on load).

    They are metadata, not weights: a few KB that make small graphs look larger.
    """
    kept = [vi for vi in model.graph.value_info if vi.name in keep]
    del model.graph.value_info[:]
    model.graph.value_info.extend(kept)


def _save_model(model: onnx.ModelProto, path: Path) -> None:
    # Protobuf cannot serialise 2 GB; larger graphs go to an external data file.
    big = model.ByteSize() > 1_800_000_000
    onnx.save_model(model, str(path), save_as_external_data=big,
                    location=f"{path.name}.data" if big else None)


def _weights_of(model: onnx.ModelProto) -> dict[str, int]:
    return {i.name: int(np.prod(i.dims)) for i in model.graph.initializer}


def _convert_graph(
    src: Path, dst: Path, to: str, keep_io_types: bool, op_block_list: Sequence[str] | None
) -> tuple[dict[str, int], int]:
    """Convert one ONNX file to ``dst``; returns (ops report, number of ops kept float)."""
    source = onnx.load(str(src))
    keep_vi = {vi.name for vi in source.graph.value_info}
    if to == "fp16":
        from onnxruntime.transformers.float16 import (
            DEFAULT_OP_BLOCK_LIST,
            convert_float_to_float16,
        )

        casts_before = sum(n.op_type == "Cast" for n in source.graph.node)
        blocked = sorted(set(DEFAULT_OP_BLOCK_LIST) | set(op_block_list or ()))
        model = convert_float_to_float16(source, keep_io_types=keep_io_types,
                                         op_block_list=blocked)
        del source
        _strip_added_value_info(model, keep_vi)
        casts = sum(n.op_type == "Cast" for n in model.graph.node) - casts_before
        _save_model(model, dst)
        return {"Cast": casts}, 0

    from onnxruntime.quantization import QuantType, quantize_dynamic

    weights = _weights_of(source)
    blocked_ops = set(op_block_list or ())
    op_types = [t for t in INT8_OP_TYPES if t not in blocked_ops]
    unnamed = False
    for k, n in enumerate(source.graph.node):
        if not n.name:  # nodes_to_exclude works by name; this is our private copy
            n.name = f"tts_kit_node_{k}"
            unnamed = True
    # Only ops with a weight are candidates (activation x activation MatMuls never are).
    candidates = [
        n for n in source.graph.node
        if n.op_type in INT8_OP_TYPES and any(i in weights for i in n.input)
    ]
    exclude = [
        n.name for n in candidates
        if n.op_type in blocked_ops
        or not any(weights.get(i, 0) >= INT8_MIN_WEIGHT_ELEMENTS for i in n.input)
    ]
    consumer = {}
    for n in candidates:
        for i in n.input:
            if i in weights:
                consumer.setdefault(i, n.op_type)
    model_in: onnx.ModelProto | str = source
    if not unnamed:
        # The quantiser loads its own copy; not holding ours too saves a model's worth
        # of RAM (about 250 MB for the vector estimator).
        model_in = str(src)
        del source
    with tempfile.TemporaryDirectory(prefix=".tts_kit-int8-", dir=dst.parent) as tmp, \
            _without_preprocess_advice():
        quantize_dynamic(
            model_in,
            Path(tmp) / "q.onnx",
            op_types_to_quantize=op_types,
            per_channel=True,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=exclude,
            extra_options={"MatMulConstBOnly": True},
        )
        del model_in
        model = onnx.load(str(Path(tmp) / "q.onnx"))
    _strip_added_value_info(model, keep_vi)
    out_names = {i.name for i in model.graph.initializer}
    ops = Counter(
        op for name, op in consumer.items() if f"{name}_quantized" in out_names
    )
    _save_model(model, dst)
    return dict(sorted(ops.items())), len(exclude)


class _DropPreprocessAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Please consider to run pre-processing")


@contextlib.contextmanager
def _without_preprocess_advice() -> Iterator[None]:
    """Silence quantize_dynamic's per-call root-logger advice to run quant_pre_process.

    tts_kit does not run that step: it rewrites the graph with ORT's optimiser, so the
    saved stage would no longer be the source graph plus quantisation; the INT8 result
    is judged by its measured fidelity instead. The advice, repeated for every stage,
    buried the conversion's own output in notebooks.
    """
    drop = _DropPreprocessAdvice()
    root = logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def _precision_of(path: Path) -> str:
    from ._protoscan import scan_onnx
    from .bundle import _precision

    return _precision(scan_onnx(path).initializer_types)


def _open_check(path: Path) -> ort.InferenceSession:
    """Open a graph in ONNX Runtime on the CPU (what every machine has)."""
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])


def _check_float32(found: str, name: str) -> None:
    # Converting twice compounds the error, and FP16 over INT8 breaks the quantisation
    # scales; always start from the FP32 original.
    if found != "float32":
        raise ValueError(
            f"{name}: weights are already {found}; convert from the FP32 original instead"
        )


def _check_target(to: str) -> None:
    if to not in TARGETS:
        raise ValueError(f"unknown target '{to}'; use one of: {', '.join(TARGETS)}")


def convert(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    to: str = "fp16",
    stages: Iterable[str] | None = None,
    keep_io_types: bool = True,
    op_block_list: Sequence[str] | None = None,
    measure: bool | str = True,
    texts: Sequence[str] | None = None,
    providers: Sequence[str] | None = None,
    *,
    seed: int = 0,
    steps: int = contract.DEFAULT_STEPS,
    repeats: int = 3,
    lang: str = "en",
    preset: Any = None,
) -> ConversionReport:
    """Convert a bundle or one ``.onnx`` file to FP16 or INT8 and report what it changed.

    Args:
        src: a bundle directory, or a single ``.onnx`` file (any model).
        dst: the new bundle directory (must not exist, or be empty), or for a file the
            output file path (must not exist).
        to: ``"fp16"`` or ``"int8"``.
        stages: bundle stages to convert (default: all four); the others are copied.
            The public FP16 bundle keeps the duration predictor FP32:
            ``stages=["text_encoder", "vector_estimator", "vocoder"]``.
        keep_io_types: FP16 only: keep float32 graph inputs and outputs.
        op_block_list: op types to leave in FP32 (FP16: added to ONNX Runtime's default
            block list; INT8: op types not to quantise, e.g. ``["Gather"]``).
        measure: measure afterwards (default). For a bundle: memory and latency of
            source and result (each in a fresh process) and their fidelity (`fidelity`,
            in a third); seconds for the tiny stand-in, a minute or two at full size.
            ``"fidelity"``: only the fidelity check. For a single file: compare its
            outputs with the source's on random inputs (cheap, in this process).
        texts: texts the measurements synthesise (default `DEFAULT_TEXTS`).
        providers: execution providers to measure on (default: CPU, and CUDA when
            this ONNX Runtime has it).
        seed, steps, repeats, lang: noise seed, flow steps, timed repeats per text and
            language of the measurements.
        preset: session preset name or `SessionPreset` for the measurements (default
            ``supertonic-default``); its providers are replaced per measured provider.

    Returns:
        The `ConversionReport` (also describes measurements that failed, in ``status``).

    Raises:
        ValueError: bad target, unknown stage, ``dst`` not free, ``src`` not a bundle
            or ``.onnx`` file (`tts_kit.BundleError` is a ValueError).
        RuntimeError: the source changed during conversion (nothing is written).

    Example:
        >>> r = convert("supertonic-3", "supertonic-3-int8", to="int8")  # doctest: +SKIP
        >>> r.stages["vocoder"].ops  # doctest: +SKIP
        {'Conv': 13, 'MatMul': 20}
    """
    _check_target(to)
    if measure not in (True, False, "fidelity"):
        raise ValueError(f"measure must be True, False or 'fidelity', got {measure!r}")
    src_p = Path(src).expanduser()
    dst_p = Path(dst).expanduser()
    if src_p.is_dir():
        kind = "bundle"
    elif src_p.is_file() and src_p.suffix == ".onnx":
        kind = "onnx"
    elif src_p.exists():
        raise ValueError(f"{src}: not a bundle directory or an .onnx file")
    else:
        raise FileNotFoundError(f"{src}: no such bundle directory or .onnx file")
    if src_p.resolve() == dst_p.resolve() or dst_p.resolve().is_relative_to(src_p.resolve()):
        raise ValueError(f"{dst}: the output must be outside the source {src}")
    if kind == "bundle":
        from .bundle import Bundle

        bundle = Bundle(src_p)  # validates; raises BundleError naming the file
        chosen = list(contract.STAGES) if stages is None else list(stages)
        unknown = [s for s in chosen if s not in contract.STAGES]
        if unknown or not chosen:
            raise ValueError(
                f"unknown stage(s) {unknown or chosen}; stages are {', '.join(contract.STAGES)}"
            )
        chosen = [s for s in contract.STAGES if s in chosen]  # pipeline order, no repeats
        for s in chosen:
            _check_float32(bundle.stages[s].precision, contract.GRAPHS[s].path)
    else:
        if stages is not None:
            raise ValueError("stages only apply to bundles; a single .onnx file is one graph")
        chosen = ["model"]
        _check_float32(_precision_of(src_p), src_p.name)
    _check_dst_free(dst_p, kind)

    t0 = time.perf_counter()
    before = sha256_tree(src_p)
    report = ConversionReport(
        kind=kind, src=str(src_p), dst=str(dst_p), to=to, converted=chosen, tool=_tool(to),
        options={
            "keep_io_types": keep_io_types,
            "op_block_list": list(op_block_list or []),
            **({"int8": {"weight_type": "QInt8", "per_channel": True,
                         "op_types": list(INT8_OP_TYPES),
                         "min_weight_elements": INT8_MIN_WEIGHT_ELEMENTS,
                         "activations": "uint8, dynamic"}} if to == "int8" else {}),
        },
        source_sha256=before,
    )
    dst_p.parent.mkdir(parents=True, exist_ok=True)
    if kind == "bundle":
        _convert_bundle(bundle, src_p, dst_p, to, chosen, keep_io_types, op_block_list, report)
    else:
        _convert_file(src_p, dst_p, to, keep_io_types, op_block_list, report)
    report.convert_s = time.perf_counter() - t0

    if measure and kind == "bundle":
        report.measured = True
        _measure_conversion(report, texts, providers, seed, steps, repeats, lang, preset,
                            runs=measure is True)
    elif measure:
        report.measured = True
        _compare_outputs(report, src_p, dst_p)
    return report


def _convert_bundle(
    bundle: Any, src_p: Path, dst_p: Path, to: str, chosen: list[str], keep_io_types: bool,
    op_block_list: Sequence[str] | None, report: ConversionReport,
) -> None:
    from .bundle import Bundle

    tmp = Path(tempfile.mkdtemp(prefix=f".{dst_p.name}.tmp-", dir=dst_p.parent))
    try:
        graph_files = {contract.GRAPHS[s].path for s in chosen}
        for rel in report.source_sha256:
            if rel in graph_files or any(rel.startswith(g + ".data") for g in graph_files):
                continue
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src_p / rel, tmp / rel)
        for stage in contract.STAGES:
            info = bundle.stages[stage]
            out = tmp / contract.GRAPHS[stage].path
            if stage in chosen:
                ops, kept = _convert_graph(info.path, out, to, keep_io_types, op_block_list)
                sess = _open_check(out)  # fails here, not in the user's engine
                del sess
            else:
                ops, kept = {}, 0
            report.stages[stage] = StageReport(
                stage, stage in chosen, info.size_bytes, _graph_bytes(out), info.precision,
                _precision_of(out), ops, kept,
            )
        cfg_path = tmp / contract.CONFIG_FILE
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        record = {
            "to": to,
            "stages": chosen,
            "source_sha256": {
                s: report.source_sha256.get(contract.GRAPHS[s].path, "") for s in contract.STAGES
            },
            "tool": report.tool,
            "options": report.options,
        }
        if PRECISION_KEY in cfg:
            record["previous"] = cfg[PRECISION_KEY]
        cfg[PRECISION_KEY] = record
        cfg_path.write_text(json.dumps(cfg, ensure_ascii=False, indent=1) + "\n",
                            encoding="utf-8")
        Bundle(tmp)  # the result must open like any bundle
        _finish(report, src_p, tmp, dst_p)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask_mode(mode: int) -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mode & ~mask


def _finish(report: ConversionReport, src_p: Path, tmp: Path, dst_p: Path) -> None:
    after = sha256_tree(src_p)
    if after != report.source_sha256:
        changed = sorted(k for k in set(after) | set(report.source_sha256)
                         if after.get(k) != report.source_sha256.get(k))
        report.source_unchanged = False
        raise RuntimeError(
            f"{src_p}: source changed during conversion ({', '.join(changed[:5])}); "
            "nothing was written; make sure nothing else writes to it and retry"
        )
    _check_dst_free(dst_p, report.kind)  # someone may have created it meanwhile
    # mkdtemp/mkstemp create private (0700/0600) entries; the output gets the usual mode.
    os.chmod(tmp, _umask_mode(0o777 if tmp.is_dir() else 0o666))
    os.replace(tmp, dst_p)


def _convert_file(
    src_p: Path, dst_p: Path, to: str, keep_io_types: bool, op_block_list: Sequence[str] | None,
    report: ConversionReport,
) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dst_p.name}.tmp-", suffix=".onnx",
                                    dir=dst_p.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        ops, kept = _convert_graph(src_p, tmp, to, keep_io_types, op_block_list)
        del ops  # reported below
        sess = _open_check(tmp)
        del sess
        report.stages["model"] = StageReport(
            "model", True, _graph_bytes(src_p), _graph_bytes(tmp), _precision_of(src_p),
            _precision_of(tmp), _ops_again(src_p, tmp, to), kept,
        )
        _finish(report, src_p, tmp, dst_p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _ops_again(src_p: Path, out: Path, to: str) -> dict[str, int]:
    """The ops report for a single file (recomputed from both graphs)."""
    a, b = onnx.load(str(src_p), load_external_data=False), onnx.load(
        str(out), load_external_data=False)
    if to == "fp16":
        return {"Cast": sum(n.op_type == "Cast" for n in b.graph.node)
                - sum(n.op_type == "Cast" for n in a.graph.node)}
    weights = {i.name for i in a.graph.initializer}
    outs = {i.name for i in b.graph.initializer}
    ops: Counter[str] = Counter()
    for n in a.graph.node:
        if n.op_type in INT8_OP_TYPES and any(
            i in weights and f"{i}_quantized" in outs for i in n.input
        ):
            ops[n.op_type] += 1
    return dict(sorted(ops.items()))


# -- single-file output check -----------------------------------------------------------


_ORT_NP = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
}


def random_feeds(sess: ort.InferenceSession, seed: int = 0, dynamic: int = 4) -> dict:
    """Inputs for any session: normal floats, zero integers, dynamic axes of size ``dynamic``.

    Example:
        >>> feeds = random_feeds(ort.InferenceSession("model.onnx"))  # doctest: +SKIP
    """
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        if i.type not in _ORT_NP:
            raise ValueError(f"input '{i.name}' has type {i.type}; no random input for it")
        shape = [d if isinstance(d, int) and d > 0 else dynamic for d in i.shape]
        dt = _ORT_NP[i.type]
        if np.issubdtype(dt, np.floating):
            feeds[i.name] = rng.standard_normal(shape).astype(dt)
        else:
            feeds[i.name] = np.zeros(shape, dt)
    return feeds


def _compare_outputs(report: ConversionReport, src_p: Path, dst_p: Path) -> None:
    try:
        ref = _open_check(src_p)
        cand = _open_check(dst_p)
        feeds = random_feeds(ref)
        types = {i.name: _ORT_NP.get(i.type) for i in cand.get_inputs()}
        cfeeds = {k: v.astype(types[k]) if types.get(k) is not None else v
                  for k, v in feeds.items()}
        names = [o.name for o in ref.get_outputs()]
        for name, a, b in zip(names, ref.run(None, feeds), cand.run(None, cfeeds)):
            if np.issubdtype(np.asarray(a).dtype, np.floating):
                report.output_snr_db[name] = snr_db(a, np.asarray(b, np.float32))
    except Exception as exc:  # any model: inputs we cannot invent are a note, not a failure
        report.notes.append(f"output comparison skipped: {type(exc).__name__}: {exc}")


# -- measurements -----------------------------------------------------------------------


def available_providers() -> list[str]:
    """The providers of `MEASURED_PROVIDERS` that this ONNX Runtime build lists.

    Example:
        >>> "CPUExecutionProvider" in available_providers()
        True
    """
    have = set(ort.get_available_providers())
    return [p for p in MEASURED_PROVIDERS if p in have]


def gpu_memory_mb(pid: int | None = None) -> tuple[float | None, str]:
    """GPU memory in MiB held by process ``pid`` (default: this one), and how it was read.

    ONNX Runtime has no Python API for the CUDA arena's size, so this asks ``nvidia-smi``:
    first the per-process figure (``--query-compute-apps``); when the process is not
    listed (containers often hide PIDs), the device-wide ``memory.used``, which includes
    other processes. ``(None, reason)`` without ``nvidia-smi``. The CUDA provider's arena
    grows in powers of two by default (``arena_extend_strategy=kNextPowerOfTwo``), so this
    is what the process reserved, not what its tensors need.

    Example:
        >>> mb, how = gpu_memory_mb()
        >>> mb is None or mb >= 0
        True
    """
    pid = os.getpid() if pid is None else pid
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, "nvidia-smi not found"
    try:
        out = subprocess.run(
            [smi, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[0] == str(pid):
                return float(parts[1]), "nvidia-smi per-process used_memory"
        out = subprocess.run(
            [smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
        total = sum(float(x) for x in out.split() if x.strip())
        return total, "nvidia-smi device memory.used (all processes)"
    except (subprocess.SubprocessError, OSError, ValueError) as exc:
        return None, f"nvidia-smi failed: {exc}"


def cuda_usable() -> tuple[bool, str]:
    """Whether a session really runs on CUDA here (listed is not enough: libraries may miss).

    Example:
        >>> ok, why = cuda_usable()
        >>> isinstance(ok, bool) and isinstance(why, str)
        True
    """
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return False, (
            f"this onnxruntime {ort.__version__} has no CUDAExecutionProvider "
            "(install onnxruntime-gpu instead of onnxruntime)"
        )
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    try:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        sess = ort.InferenceSession(
            model.SerializeToString(), sess_options=so,
            providers=["CUDAExecutionProvider", "CPUExecutionProvider"],
        )
    except Exception as exc:
        return False, f"CUDA session failed: {type(exc).__name__}: {exc}"
    if sess.get_providers()[0] != "CUDAExecutionProvider":
        return False, "CUDAExecutionProvider is listed but fell back to CPU (CUDA/cuDNN libraries?)"
    return True, "ok"


def _preset_for(preset: Any, provider: str) -> Any:
    """The measurement preset for one provider (CUDA keeps the CPU as fallback for odd ops)."""
    from .sessions import SessionPreset, get_preset

    base = get_preset(preset or "supertonic-default")
    if provider == "CUDAExecutionProvider":
        if "CUDAExecutionProvider" in base.providers:
            return base
        return base.cuda()
    if not isinstance(base, SessionPreset):  # pragma: no cover - defensive
        raise TypeError(f"preset must be a name or SessionPreset, got {type(preset).__name__}")
    return base.replace(providers=[provider])


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _measure_job(
    bundle_dir: str, texts: list[str], seed: int, steps: int, repeats: int, lang: str,
    preset: dict[str, Any],
) -> dict[str, Any]:
    """Child side of `measure_bundle` (runs in a fresh process)."""
    from .engine import Engine
    from .sessions import SessionPreset

    p = SessionPreset.from_dict(preset)
    out: dict[str, Any] = {}
    if "CUDAExecutionProvider" in p.providers:
        ok, why = cuda_usable()
        if not ok:
            return {"error": why}
    cuda = "CUDAExecutionProvider" in p.providers
    gpu0 = gpu_memory_mb() if cuda else (None, "")
    out["baseline_rss_mb"] = _rss_mb()
    t0 = time.perf_counter()
    engine = Engine(bundle_dir, preset=p, loading="resident")
    out["load_s"] = time.perf_counter() - t0
    out["load_rss_mb"] = _rss_mb()
    for i, t in enumerate(texts):  # warm-up: first-run allocations, cuDNN algorithm search
        engine.synthesize(t, lang=lang, seed=seed + i, steps=steps)
    times, audio = [], []
    for _ in range(repeats):
        for i, t in enumerate(texts):
            t1 = time.perf_counter()
            r = engine.synthesize(t, lang=lang, seed=seed + i, steps=steps)
            times.append(time.perf_counter() - t1)
            audio.append(r.duration_s)
    out["p50_s"] = statistics.median(times) if times else math.nan
    out["rtf"] = out["p50_s"] / statistics.median(audio) if audio else math.nan
    if cuda:
        used, how = gpu_memory_mb()
        if used is not None and "device" in how and gpu0[0] is not None:
            # Device-wide figures include other processes: keep only what this one added.
            used, how = used - gpu0[0], how + ", minus the figure before loading"
        out["gpu_mem_mb"], out["gpu_mem_source"] = used, how
    return out


def measure_bundle(
    path: str | os.PathLike[str],
    label: str,
    provider: str = "CPUExecutionProvider",
    texts: Sequence[str] | None = None,
    seed: int = 0,
    steps: int = contract.DEFAULT_STEPS,
    repeats: int = 3,
    lang: str = "en",
    preset: Any = None,
    timeout_s: float | None = 900,
    cpus: int | None = None,
) -> RunRecord:
    """Load a bundle in a fresh process and measure RSS, peak RSS, p50 latency (and GPU memory).

    The engine loads all four sessions (``resident``), synthesises every text once (the
    warm-up) and then ``repeats`` more times;
    text ``i`` always uses noise seed ``seed + i``. ``cpus`` pins the process to that many
    cores (`tts_kit.measure.run_isolated`).

    Example:
        >>> rec = measure_bundle("standin-tiny", "fp32")  # doctest: +SKIP
        >>> rec.p50_s > 0  # doctest: +SKIP
        True
    """
    from .bundle import Bundle
    from .measure import run_isolated

    texts = list(texts or DEFAULT_TEXTS)
    b = Bundle(path)
    size = sum(s.size_bytes for s in b.stages.values()) / 2**20
    p = _preset_for(preset, provider)
    m = run_isolated(_measure_job, str(b.path), texts, seed, steps, repeats, lang, p.to_dict(),
                     timeout_s=timeout_s, cpus=cpus)
    rec = RunRecord(label, provider, status=m.status, error=m.error, size_mb=size,
                    peak_rss_mb=m.peak_rss_mb, preset=p.name)
    if m.ok and isinstance(m.result, dict):
        res = dict(m.result)
        if "error" in res:
            rec.status, rec.error = "error", res["error"]
            return rec
        for k, v in res.items():
            setattr(rec, k, v)
    return rec


def _fidelity_job(
    ref_dir: str, cand_dir: str, to: str, texts: list[str], seed: int, steps: int, lang: str,
    preset: dict[str, Any],
) -> Fidelity:
    """Child side of `fidelity_isolated`."""
    from .sessions import SessionPreset

    return fidelity(ref_dir, cand_dir, to, texts, seed, steps, lang,
                    SessionPreset.from_dict(preset))


def fidelity(
    reference: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    to: str = "fp16",
    texts: Sequence[str] | None = None,
    seed: int = 0,
    steps: int = contract.DEFAULT_STEPS,
    lang: str = "en",
    preset: Any = None,
    min_snr_db: float | None = None,
    max_log_mel_db: float | None = None,
) -> Fidelity:
    """Compare a converted bundle with its FP32 source, in this process.

    1. The reference synthesises every text (text ``i`` with noise seed ``seed + i``),
       recording each stage call's inputs and output.
    2. Each candidate stage gets exactly those FP32 inputs (cast to its input types):
       its SNR is its own error, not inherited from the stages before it.
    3. The candidate synthesises the same texts with the same seeds end to end; its
       waveforms are compared with the reference's (SNR, log-mel distance, length).

    The reference is released before the candidate loads, so one bundle is resident at
    a time. ``to`` picks the default thresholds (`MIN_SNR_DB`,
    `MAX_LOG_MEL_DB`); ``preset`` the session options and provider.

    Example:
        >>> f = fidelity("standin-tiny", "standin-tiny-fp16", "fp16")  # doctest: +SKIP
        >>> f.passed, round(f.waveform_snr_db)  # doctest: +SKIP
        (True, 49)
    """
    from .engine import Engine
    from .sessions import SessionPreset

    _check_target(to)
    p = preset if isinstance(preset, SessionPreset) else _preset_for(preset,
                                                                      "CPUExecutionProvider")
    texts = list(texts or DEFAULT_TEXTS)
    f = Fidelity(
        p.providers[0],
        min_snr_db=MIN_SNR_DB[to] if min_snr_db is None else min_snr_db,
        max_log_mel_db=MAX_LOG_MEL_DB[to] if max_log_mel_db is None else max_log_mel_db,
    )
    ref = Engine(reference, preset=p)
    calls: list[tuple[str, dict[str, np.ndarray], np.ndarray]] = []
    run = ref._run  # the engine's single point where a stage runs

    def recording_run(stage, feeds, timings):
        out = run(stage, feeds, timings)
        calls.append((stage, {k: np.array(v) for k, v in feeds.items()}, np.array(out)))
        return out

    ref._run = recording_run  # type: ignore[method-assign]
    ref_wavs = [ref.synthesize(t, lang=lang, seed=seed + i, steps=steps).wav
                for i, t in enumerate(texts)]
    ref.close()
    ref_frames = [feeds["latent"].shape[-1] for st, feeds, _ in calls if st == "vocoder"]
    cand = Engine(candidate, preset=p)
    for stage in contract.STAGES:
        mine = [c for c in calls if c[0] == stage]
        sig = err = 0.0
        finite = True
        timings: dict[str, float] = {}
        with cand._loader.session(stage):  # one load for all of this stage's calls
            for _, feeds, want in mine:
                got = cand._run(stage, feeds, timings).astype(np.float64)
                finite = finite and bool(np.isfinite(got).all())
                w64 = want.astype(np.float64)
                sig += float(np.sum(w64 * w64))
                err += float(np.sum((w64 - got) ** 2))
        if not finite or not mine:
            f.stage_snr_db[stage] = math.nan
        else:
            f.stage_snr_db[stage] = math.inf if err == 0 else (
                math.nan if sig == 0 else 10 * math.log10(sig / err))
    calls.clear()  # the recorded tensors are no longer needed
    cand_frames: list[int] = []
    cand_run = cand._run

    def frame_counting_run(stage, feeds, timings):
        if stage == "vocoder":
            cand_frames.append(feeds["latent"].shape[-1])
        return cand_run(stage, feeds, timings)

    cand._run = frame_counting_run  # type: ignore[method-assign]
    cand_wavs = [cand.synthesize(t, lang=lang, seed=seed + i, steps=steps).wav
                 for i, t in enumerate(texts)]
    cand.close()
    f.frames_changed = sum(a != b for a, b in zip(ref_frames, cand_frames)) + abs(
        len(ref_frames) - len(cand_frames))
    (f.waveform_snr_db, f.log_mel_distance_db, f.length_ref,
     f.length_candidate) = waveform_fidelity(ref_wavs, cand_wavs, ref.bundle.sample_rate)
    return f.evaluate()


def fidelity_isolated(
    reference: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    to: str = "fp16",
    provider: str = "CPUExecutionProvider",
    texts: Sequence[str] | None = None,
    seed: int = 0,
    steps: int = contract.DEFAULT_STEPS,
    lang: str = "en",
    preset: Any = None,
    timeout_s: float | None = 900,
) -> Fidelity:
    """`fidelity` in a fresh process on ``provider`` (a failure comes back in ``error``).

    Example:
        >>> fidelity_isolated("standin-tiny", "standin-int8", "int8").passed  # doctest: +SKIP
        True
    """
    from .measure import run_isolated

    p = _preset_for(preset, provider)
    m = run_isolated(_fidelity_job, str(reference), str(candidate), to,
                     list(texts or DEFAULT_TEXTS), seed, steps, lang, p.to_dict(),
                     timeout_s=timeout_s)
    if m.ok and isinstance(m.result, Fidelity):
        return m.result
    f = Fidelity(provider, min_snr_db=MIN_SNR_DB[to], max_log_mel_db=MAX_LOG_MEL_DB[to],
                 error=f"{m.status}: {m.error}")
    return f.evaluate()


def _measure_conversion(
    report: ConversionReport, texts: Sequence[str] | None, providers: Sequence[str] | None,
    seed: int, steps: int, repeats: int, lang: str, preset: Any, runs: bool,
) -> None:
    from .measure import run_isolated

    texts = list(texts or DEFAULT_TEXTS)
    report.texts, report.seed, report.steps = texts, seed, steps
    wanted = list(providers) if providers is not None else available_providers()
    for prov in wanted:
        if prov not in MEASURED_PROVIDERS:
            report.notes.append(f"{prov}: not measured (tts_kit measures {MEASURED_PROVIDERS})")
            continue
        if prov == "CUDAExecutionProvider":
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                ok, why = cuda_usable()  # says which package is missing; no CUDA context
            else:
                # Probed in a child: a CUDA context in this process would inflate GPU figures.
                probe = run_isolated(cuda_usable, timeout_s=300)
                ok, why = probe.result if probe.ok else (False, probe.error)
            if not ok:
                report.notes.append(f"CUDA not measured: {why}")
                continue
        if runs:
            kw = dict(texts=texts, seed=seed, steps=steps, repeats=repeats, lang=lang,
                      preset=preset)
            report.runs += [measure_bundle(report.src, "fp32", prov, **kw),
                            measure_bundle(report.dst, report.to, prov, **kw)]
        report.fidelity[prov] = fidelity_isolated(report.src, report.dst, report.to, prov,
                                                  texts, seed, steps, lang, preset)
