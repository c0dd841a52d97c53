"""tts_kit: measure, tune and explain on-device Supertonic text-to-speech.

The entry points are `Bundle` (a validated model directory) and `Engine` (the
four-stage pipeline); `open_model`/`resolve_model` (`tts_kit.models.resolve`, the one way to
open a model) and `make_engine` (`tts_kit.models.family`) also open a Piper voice
(``piper:joe-us``), the second family. The environment is read once
(`tts_kit.core.settings`). Everything else builds on them:
`tts_kit.text` (normalisation), `tts_kit.runtime.sessions` (ONNX Runtime presets),
`tts_kit.runtime.measure` (isolated measurements),
`tts_kit.runtime.loading` (load policies), `tts_kit.experiments.workload` (what a measurement
synthesises),
`tts_kit.experiments.stage_costs`, `tts_kit.experiments.tune`, `tts_kit.precision`,
`tts_kit.core.procfacts` (process facts), `tts_kit.notebook.plots`, `tts_kit.notebook.widgets`.

Example:
    >>> import tts_kit
    >>> engine = tts_kit.Engine()  # doctest: +SKIP
    >>> engine.synthesize("Hello.", seed=0).duration_s  # doctest: +SKIP
    0.52
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

#: The one version string: pyproject.toml reads it (`[tool.setuptools.dynamic]`), the CLI
#: prints it, report.json records it.
__version__ = "0.1.0"

# Imported on first use, so `tts_kit.text` (and `tts-kit normalize`) start without
# loading onnx and onnxruntime.
_LAZY = {
    "TtsKitError": "core.errors", "BundleError": "core.errors",
    "Bundle": "models.supertonic.bundle",
    "VoiceStyle": "models.supertonic.bundle", "resolve_model_dir": "models.supertonic.bundle",
    "Engine": "models.supertonic.engine", "SynthesisResult": "models.supertonic.engine",
    "open_model": "models.resolve", "resolve_model": "models.resolve",
    "make_engine": "models.family", "model_label": "models.family",
    "resolve_speaker": "models.family",
}

if TYPE_CHECKING:
    from tts_kit.core.errors import BundleError, TtsKitError
    from tts_kit.models.family import make_engine, model_label, resolve_speaker
    from tts_kit.models.resolve import open_model, resolve_model
    from tts_kit.models.supertonic.bundle import Bundle, VoiceStyle, resolve_model_dir
    from tts_kit.models.supertonic.engine import Engine, SynthesisResult


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'tts_kit' has no attribute {name!r}")

__all__ = [
    "Bundle",
    "BundleError",
    "Engine",
    "SynthesisResult",
    "TtsKitError",
    "VoiceStyle",
    "make_engine",
    "model_label",
    "open_model",
    "resolve_model",
    "resolve_speaker",
    "resolve_model_dir",
    "__version__",
]
