"""FP16 and INT8 conversion of a bundle (or any ``.onnx`` file), measured rather than assumed.

`convert` writes a converted copy of a Supertonic bundle, stage by stage, and returns a
`ConversionReport`: size before and after per stage and, when measured, load RSS, peak
RSS and p50 latency of each precision on each available execution provider (each run in a
fresh process through `tts_kit.runtime.measure.run_isolated`, same texts, seeds and noise), plus
the fidelity of the converted bundle against FP32: SNR and log-mel distance of the final
waveform, and the SNR of every stage's output when both bundles get the same FP32 inputs.

The package, one concern per module:

- `tts_kit.precision.conversion`: the converters (ONNX Runtime's FP16 converter and dynamic
  INT8 quantiser), atomic output, source hashing, the single-file output check;
- `tts_kit.precision.recipes`: per-stage recipes (``fp16``, ``int8``, ``int8-dp32``,
  ``sherpa-int8``; ``convert(..., recipe=NAME)``) and `kernel_report`, which checks that
  an INT8 graph really runs integer kernels once ONNX Runtime has optimised it;
- `tts_kit.precision.conversion_report`: targets, fidelity thresholds and the records
  (`StageReport`, `RunRecord`, `Fidelity`, `ConversionReport`, `format_runs`);
- `tts_kit.precision.evaluate`: memory and latency in isolated processes, and fidelity
  (through the engine's public per-stage hook,
  `tts_kit.models.supertonic.engine.Engine.add_stage_hook`).

The signal measures live in `tts_kit.fidelity.audio_metrics`, the device probes (CUDA usable, GPU
memory) in `tts_kit.runtime.devices`.

Example:
    >>> from tts_kit.precision import convert
    >>> report = convert("models/supertonic-3", "models/supertonic-3-fp16", to="fp16",
    ...                  stages=["text_encoder", "vector_estimator", "vocoder"])  # doctest: +SKIP
    >>> print(report.table())  # doctest: +SKIP
    >>> report.fidelity["CPUExecutionProvider"].passed  # doctest: +SKIP
    True
"""

from __future__ import annotations

from tts_kit.precision.conversion import (
    INT8_MIN_WEIGHT_ELEMENTS,
    INT8_OP_TYPES,
    PRECISION_KEY,
    convert,
    random_feeds,
    sha256_file,
    sha256_tree,
)
from tts_kit.precision.conversion_report import (
    MAX_LENGTH_CHANGE,
    MAX_LOG_MEL_DB,
    MIN_SNR_DB,
    TARGETS,
    ConversionReport,
    ConvertSpec,
    Fidelity,
    MeasureSpec,
    RunRecord,
    StageReport,
    check_target,
    format_runs,
)
from tts_kit.precision.evaluate import (
    DEFAULT_TEXTS,
    fidelity,
    fidelity_isolated,
    measure_bundle,
    measure_conversion,
)

__all__ = [
    "DEFAULT_TEXTS",
    "INT8_MIN_WEIGHT_ELEMENTS",
    "INT8_OP_TYPES",
    "MAX_LENGTH_CHANGE",
    "MAX_LOG_MEL_DB",
    "MIN_SNR_DB",
    "PRECISION_KEY",
    "TARGETS",
    "ConversionReport",
    "ConvertSpec",
    "Fidelity",
    "MeasureSpec",
    "RunRecord",
    "StageReport",
    "check_target",
    "convert",
    "fidelity",
    "fidelity_isolated",
    "format_runs",
    "measure_bundle",
    "measure_conversion",
    "random_feeds",
    "sha256_file",
    "sha256_tree",
]
