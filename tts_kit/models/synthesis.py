"""What a synthesis call takes and gives, for every family: `SynthesisConfig` in,
`AudioChunk` / `SynthesisStream` / `SynthesisResult` out, and the request checks they share.
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tts_kit.core.errors import TtsKitError

#: Hard cap on one request, as in the official package (no silent truncation anywhere).
MAX_TEXT_CHARS = 100_000
#: The chunk orders `SynthesisConfig.order` accepts.
ORDERS = ("chunk", "stage")


def is_seed(value: object) -> bool:
    """A noise seed: an integer >= 0 (numpy's too), not a bool.

    Example:
        >>> is_seed(3), is_seed(-1), is_seed(True)
        (True, False, False)
    """
    return (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            and value >= 0)


def check_number(name: str, value: float, lo: float, hi: float, integer: bool = False) -> None:
    """Refuse ``value`` unless it is a number (an integer if ``integer``) in ``lo..hi``.

    Example:
        >>> check_number("speed", 3, 0.5, 2.0)
        Traceback (most recent call last):
        ...
        tts_kit.TtsKitError: speed must be a number in 0.5..2, got 3
    """
    ok = isinstance(value, (int, np.integer)) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or not (lo <= value <= hi):
        kind = "an integer" if integer else "a number"
        raise TtsKitError(f"{name} must be {kind} in {lo:g}..{hi:g}, got {value!r}")


def _bad_seed(value: object) -> TtsKitError:
    return TtsKitError(f"seed must be an integer >= 0 or None (one per text in a list), "
                       f"got {value!r}")


@dataclass(frozen=True)
class SynthesisConfig:
    """How to speak a text: every engine's ``stream``/``synthesize`` take one. ``None`` is
    the model's own default; a field a family cannot honour is refused where ignoring it
    would mislead.

    Example:
        >>> SynthesisConfig(voice="M1", steps=2, seed=0).order
        'chunk'
    """

    lang: str = "en"  # the model's `languages` lists them
    voice: str | None = None
    steps: int | None = None  # flow-matching steps (``capabilities.flow_steps``)
    speed: float | None = None  # durations are divided by it
    seed: int | None = None  # equal seeds, equal audio (None: fresh noise)
    noise: Any = None  # the initial noise instead of a seed (``capabilities.caller_noise``)
    max_chunk_chars: int | None = None
    first_chunk_chars: int | None = None  # a shorter first chunk, for sooner first audio
    #: ``chunk`` (each chunk through every stage) or ``stage`` (each stage on every chunk).
    order: str = "chunk"

    def replace(self, **changes: Any) -> SynthesisConfig:
        """A copy with ``changes``.

        Example:
            >>> SynthesisConfig().replace(lang="ko").lang
            'ko'
        """
        return dataclasses.replace(self, **changes)

    @classmethod
    def of(cls, config: SynthesisConfig | None, **overrides: Any) -> SynthesisConfig:
        """``config`` (None: the defaults) with ``overrides``, fields changed by name.

        Example:
            >>> SynthesisConfig.of(SynthesisConfig(seed=1), seed=2).seed
            2
        """
        if config is not None and not isinstance(config, SynthesisConfig):
            hint = " (lang is a keyword: lang='ko')" if isinstance(config, str) else ""
            raise TtsKitError(f"config must be a SynthesisConfig, got "
                              f"{type(config).__name__}{hint}")
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(overrides) - set(names))
        if unknown:
            raise TypeError(f"unknown synthesis option(s) {', '.join(unknown)}; a "
                            f"SynthesisConfig has {', '.join(names)}")
        config = config or cls()
        return config.replace(**overrides) if overrides else config

    def check(self) -> None:
        """The checks every family shares: order, first chunk, seed (before any work)."""
        if self.order not in ORDERS:
            raise TtsKitError(f"order must be 'chunk' or 'stage', got {self.order!r}")
        if self.first_chunk_chars is not None:
            check_number("first_chunk_chars", self.first_chunk_chars, 1, MAX_TEXT_CHARS,
                         integer=True)
        if self.seed is not None and not is_seed(self.seed):
            raise _bad_seed(self.seed)


def batch_seeds(n: int, seed: Any) -> list[int | None]:
    """One seed per text of a batch: an int gives text ``i`` the seed ``seed + i``, a list
    one each, None fresh noise for all.

    Example:
        >>> batch_seeds(3, 5), batch_seeds(2, [None, 7])
        ([5, 6, 7], [None, 7])
    """
    if seed is None or is_seed(seed):
        seeds = [None if seed is None else int(seed) + i for i in range(n)]
    elif isinstance(seed, (list, tuple, np.ndarray)):
        seeds = list(seed)
        if len(seeds) != n:
            raise TtsKitError(f"{n} texts but {len(seeds)} seeds; give one per text")
    else:
        seeds = [seed]  # checked below, in the same words as a bad list item
    for s in seeds:  # in our words, not numpy's
        if s is not None and not is_seed(s):
            raise _bad_seed(s)
    return [None if s is None else int(s) for s in seeds]  # plain ints in results


def batch_voices(texts: Any, voices: str | list[str]) -> list[str]:
    """Check a batch's texts and give one voice per text (one name for all, or a list).

    Example:
        >>> batch_voices(["a", "b"], "M1")
        ['M1', 'M1']
    """
    if isinstance(texts, str):
        raise TtsKitError("texts must be a list of strings; use synthesize() for one text")
    if not texts:
        raise TtsKitError("texts is empty; give at least one text")
    voice_list = [voices] * len(texts) if isinstance(voices, str) else list(voices)
    if len(voice_list) != len(texts):
        raise TtsKitError(f"{len(texts)} texts but {len(voice_list)} voices; give one per text")
    return voice_list


def pcm16(samples: np.ndarray) -> bytes:
    """Float samples in [-1, 1] as 16-bit little-endian PCM, as soundfile writes PCM_16.

    Example:
        >>> pcm16(np.array([0.5], np.float32))
        b'\\x00@'
    """
    clipped = np.clip(np.asarray(samples, np.float32), -1.0, 1.0)
    return (clipped * 32767.0).round().astype("<i2").tobytes()


@dataclass
class AudioChunk:
    """One chunk of streamed audio (any engine's ``stream``).

    Example:
        >>> AudioChunk(np.zeros(441, np.float32), 44100, "Hi.", 0, {"total": 0.01}).duration_s
        0.01
    """

    samples: np.ndarray  # mono float32 in [-1, 1]; after the first, led by the pause
    sample_rate: int
    text: str  # as the model read it (a Piper voice: its phonemes)
    index: int
    #: Wall seconds of this chunk's stages and ``total`` (``text`` on the first: the whole
    #: text's checks, normalisation and chunking).
    timings: dict[str, float]
    last: bool = False  # the request's final chunk

    @property
    def duration_s(self) -> float:
        """Audio length in seconds (the leading pause included)."""
        return len(self.samples) / self.sample_rate

    def pcm16(self) -> bytes:
        """The samples as 16-bit little-endian PCM bytes (what a WAV's data chunk holds).

        Example:
            >>> AudioChunk(np.array([0.0, 1.0, -1.0], np.float32), 44100, "", 0, {}).pcm16()
            b'\\x00\\x00\\xff\\x7f\\x01\\x80'
        """
        return pcm16(self.samples)


@dataclass(eq=False)
class SynthesisStream:
    """The chunks of one request, synthesised as they are iterated (any engine's ``stream``):
    ``text`` and ``chunks`` are known before any audio; `close` (or a ``with`` block's end)
    stops the work.

    Example:
        >>> s = SynthesisStream("Hi.", ["Hi."], iter([]))
        >>> s.chunks, list(s)
        (['Hi.'], [])
    """

    text: str
    chunks: list[str]
    _parts: Iterator[AudioChunk] = field(repr=False)
    seed: int | None = None  # the noise seed (None: fresh noise, or noise without a seed)

    def __iter__(self) -> SynthesisStream:
        return self

    def __next__(self) -> AudioChunk:
        return next(self._parts)

    def close(self) -> None:
        """Stop synthesising (sessions pinned by the current stage are released)."""
        close = getattr(self._parts, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> SynthesisStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class SynthesisResult:
    """One synthesised utterance.

    Example:
        >>> SynthesisResult(np.zeros(22050, np.float32), 44100, "Hi.").duration_s
        0.5
    """

    wav: np.ndarray  # mono float32 in [-1, 1]
    sample_rate: int
    text: str  # after normalisation
    chunks: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # wall seconds per stage, total
    voice: str = ""
    seed: int | None = None  # None: fresh noise

    @property
    def duration_s(self) -> float:
        """Audio length in seconds."""
        return len(self.wav) / self.sample_rate

    @property
    def rtf(self) -> float:
        """Real-time factor: synthesis wall time / audio duration (lower is faster)."""
        return self.timings.get("total", 0.0) / max(self.duration_s, 1e-9)

    def wav_bytes(self) -> bytes:
        """The audio as a 16-bit WAV file in memory (no temporary file), via soundfile."""
        import soundfile as sf

        buf = io.BytesIO()
        sf.write(buf, self.wav, self.sample_rate, format="WAV", subtype="PCM_16")
        return buf.getvalue()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write a 16-bit mono WAV file."""
        Path(path).write_bytes(self.wav_bytes())


#: ``fn(stage, feeds, output)``, called after every stage run (``add_stage_hook``).
StageHook = Callable[[str, Any, np.ndarray], object]

__all__ = ["MAX_TEXT_CHARS", "AudioChunk", "StageHook", "SynthesisConfig", "SynthesisResult",
           "SynthesisStream", "batch_seeds", "batch_voices", "check_number", "is_seed",
           "pcm16"]
