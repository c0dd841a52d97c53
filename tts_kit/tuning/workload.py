"""What a measurement synthesises: the `Workload`, frozen and plain (it pickles into an
isolated child), with a JSON form."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError

#: A batch of N takes the first N: the default batch of one is the mid-length sentence
#: (about 5 s of audio); the second is the shortest (what `tts_kit.precision` compares).
DEFAULT_TEXTS: tuple[str, ...] = (
    "Supertonic runs on the device, so nothing you type ever leaves the machine.",
    "The quick brown fox jumps over the lazy dog.",
    "On a small server, memory decides what fits, and latency decides whether anyone "
    "waits for it; a good configuration keeps both in view.",
)


#: Bounds a report.json cannot exceed (10**12 repeats would measure for ever).
MAX_REPEATS = 1000
MAX_BATCH_SIZE = 256


@dataclass(frozen=True)
class Workload:
    """What every call of a measurement synthesises, and how often.
    Checked when built; ``texts``: a list or a single string.

    Example:
        >>> Workload(texts=["Hi.", "Bye."], batch_size=3).batch()
        ['Hi.', 'Bye.', 'Hi.']
        >>> Workload(steps=0)
        Traceback (most recent call last):
        ...
        tts_kit.TtsKitError: steps must be an integer >= 1, got 0
    """

    texts: tuple[str, ...] = DEFAULT_TEXTS
    lang: str = "en"
    voice: str | None = None  #: None, or one the bundle lacks: its `default_voice`
    steps: int = contract.DEFAULT_STEPS
    speed: float = contract.DEFAULT_SPEED
    seed: int = 0  #: noise seed: every call synthesises the same audio
    repeats: int = 5  #: timed calls after the first (0: the first call only)
    batch_size: int = 1  #: texts per call, ``texts`` cycled (`batch`)

    def __post_init__(self) -> None:
        texts = (self.texts,) if isinstance(self.texts, str) else self.texts
        try:
            texts = tuple(texts)
        except TypeError:
            raise TtsKitError("texts must be non-empty strings") from None
        if not texts or any(not isinstance(t, str) or not t.strip() for t in texts):
            raise TtsKitError("texts must be non-empty strings")
        object.__setattr__(self, "texts", texts)
        for name, lo, hi in (("steps", contract.MIN_STEPS, contract.MAX_STEPS),
                             ("batch_size", 1, MAX_BATCH_SIZE), ("repeats", 0, MAX_REPEATS),
                             ("seed", 0, math.inf)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < lo:
                raise TtsKitError(f"{name} must be an integer >= {lo}, got {value!r}")
            if value > hi:
                raise TtsKitError(f"{name} must be an integer <= {hi}, got {value!r}")
        # The engine's checks, here too, so a trial fails before it spawns.
        if not isinstance(self.lang, str) or self.lang not in contract.LANGUAGES:
            raise TtsKitError(f"lang must be a language code such as 'en' (one of "
                             f"{', '.join(contract.LANGUAGES)}), got {self.lang!r}")
        if self.voice is not None and (not isinstance(self.voice, str) or not self.voice):
            raise TtsKitError(f"voice must be a voice name or None, got {self.voice!r}")
        speed = self.speed
        if (isinstance(speed, bool) or not isinstance(speed, (int, float))
                or not math.isfinite(speed)
                or not contract.MIN_SPEED <= speed <= contract.MAX_SPEED):
            raise TtsKitError(f"speed must be a number in {contract.MIN_SPEED:g}.."
                             f"{contract.MAX_SPEED:g}, got {speed!r}")

    def batch(self) -> list[str]:
        """The texts of one call: the first ``batch_size`` texts, cycled.

        Example:
            >>> Workload(texts=("A.",), batch_size=2).batch()
            ['A.', 'A.']
        """
        return [self.texts[i % len(self.texts)] for i in range(self.batch_size)]

    def voice_for(self, bundle: Any) -> str:
        """``voice`` if ``bundle`` has it, else its default.

        Example:
            >>> from types import SimpleNamespace
            >>> Workload(voice="F1").voice_for(SimpleNamespace(voices=["M1"], default_voice="M1"))
            'M1'
        """
        if self.voice is not None and self.voice in bundle.voices:
            return self.voice
        return bundle.default_voice

    def replace(self, **changes: Any) -> Workload:
        """A copy with ``changes`` (checked like a new one).

        Example:
            >>> Workload().replace(repeats=0).repeats
            0
        """
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (``texts`` as a list).

        Example:
            >>> Workload(texts="Hi.").to_dict()["texts"]
            ['Hi.']
        """
        return {**dataclasses.asdict(self), "texts": list(self.texts)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Workload:
        """Build from `to_dict`'s form (missing keys: the defaults; unknown keys fail).

        Example:
            >>> Workload.from_dict({"steps": 2, "texts": ["Hi."]}) == Workload("Hi.", steps=2)
            True
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise TtsKitError(f"workload: unknown key(s) {', '.join(unknown)}; "
                             f"known: {', '.join(sorted(known))}")
        return cls(**dict(data))

