"""FP16 and INT8 conversion of a bundle (or any ``.onnx`` file), measured rather than assumed:
`convert` writes a copy and returns a `ConversionReport` (sizes and, when measured, memory,
latency and fidelity to FP32); recipes and the integer-kernel check: `.recipes`.

Example:
    >>> report = convert("models/supertonic-3", "supertonic-3-fp16", to="fp16")  # doctest: +SKIP
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
    "DEFAULT_TEXTS", "INT8_MIN_WEIGHT_ELEMENTS", "INT8_OP_TYPES", "MAX_LENGTH_CHANGE",
    "MAX_LOG_MEL_DB", "MIN_SNR_DB", "PRECISION_KEY", "TARGETS", "ConversionReport",
    "ConvertSpec", "Fidelity", "MeasureSpec", "RunRecord", "StageReport", "check_target",
    "convert", "fidelity", "fidelity_isolated", "format_runs", "measure_bundle",
    "measure_conversion", "random_feeds", "sha256_file", "sha256_tree",
]
