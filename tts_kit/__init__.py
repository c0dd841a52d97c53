"""tts_kit: measure, tune and explain on-device Supertonic text-to-speech.

A model is opened one way (`open_model`/`resolve_model`: a path, ``piper:NAME``, or None
for discovery) and asked what it can do (`SpeechModel`, `Capabilities`); `make_engine`
gives its engine, whose `stream` yields `AudioChunk`s and whose `synthesize` joins them,
both configured by one `SynthesisConfig`. `Bundle` and `Engine` are the Supertonic family's
own classes. Measurements take a `Workload` and a `SessionPreset`; errors a user can fix
are `TtsKitError`s. The layers: docs/architecture.md.

Example:
    >>> import tts_kit
    >>> model = tts_kit.open_model()
    >>> isinstance(model, tts_kit.SpeechModel), model.capabilities.flow_steps
    (True, True)
    >>> chunks = list(tts_kit.make_engine(model).stream("Hello there.", seed=0))
    >>> isinstance(chunks[0], tts_kit.AudioChunk)
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tts_kit.core.version import __version__

# Imported on first use, so `tts_kit.text` (and `tts-kit normalize`) start without
# loading onnx and onnxruntime.
_LAZY = {
    "TtsKitError": "core.errors", "BundleError": "core.errors",
    "Bundle": "models.supertonic.bundle",
    "VoiceStyle": "models.supertonic.bundle", "resolve_model_dir": "models.supertonic.bundle",
    "Engine": "models.supertonic.engine", "SynthesisResult": "models.synthesis",
    "open_model": "models.resolve", "resolve_model": "models.resolve",
    "make_engine": "models.family", "model_label": "models.family",
    "resolve_speaker": "models.family",
    "AudioChunk": "models.synthesis", "SynthesisStream": "models.synthesis",
    "SynthesisConfig": "models.synthesis",
    "Capabilities": "models.base", "SpeechModel": "models.base", "SpeechEngine": "models.base",
    "Workload": "tuning.workload", "SessionPreset": "runtime.sessions",
}

if TYPE_CHECKING:
    from tts_kit.core.errors import BundleError, TtsKitError
    from tts_kit.models.base import Capabilities, SpeechEngine, SpeechModel
    from tts_kit.models.family import make_engine, model_label, resolve_speaker
    from tts_kit.models.resolve import open_model, resolve_model
    from tts_kit.models.supertonic.bundle import Bundle, VoiceStyle, resolve_model_dir
    from tts_kit.models.supertonic.engine import Engine
    from tts_kit.models.synthesis import (
        AudioChunk,
        SynthesisConfig,
        SynthesisResult,
        SynthesisStream,
    )
    from tts_kit.runtime.sessions import SessionPreset
    from tts_kit.tuning.workload import Workload


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'tts_kit' has no attribute {name!r}")


__all__ = [
    "AudioChunk", "Bundle", "BundleError", "Capabilities", "Engine", "SessionPreset",
    "SpeechEngine", "SpeechModel", "SynthesisConfig", "SynthesisStream", "SynthesisResult",
    "TtsKitError", "VoiceStyle", "Workload", "make_engine", "model_label", "open_model",
    "resolve_model", "resolve_speaker", "resolve_model_dir", "__version__"
]
