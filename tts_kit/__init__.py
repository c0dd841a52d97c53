"""tts_kit: measure, tune and explain on-device Supertonic text-to-speech.

The entry points are `Bundle` (a validated model directory) and `Engine` (the
four-stage pipeline). Everything else builds on them: `tts_kit.text` (normalisation),
`tts_kit.sessions` (ONNX Runtime presets), `tts_kit.measure` (isolated measurements),
`tts_kit.tune`, `tts_kit.precision`, `tts_kit.paged`, `tts_kit.plots`, `tts_kit.widgets`.

Example:
    >>> import tts_kit
    >>> engine = tts_kit.Engine()  # doctest: +SKIP
    >>> engine.synthesize("Hello.", seed=0).duration_s  # doctest: +SKIP
    0.52
"""

from .bundle import Bundle, BundleError, VoiceStyle, resolve_model_dir
from .engine import Engine, SynthesisResult

__version__ = "0.1.0"

__all__ = [
    "Bundle",
    "BundleError",
    "Engine",
    "SynthesisResult",
    "VoiceStyle",
    "resolve_model_dir",
    "__version__",
]
