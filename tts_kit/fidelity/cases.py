"""What `tts-kit verify` and the noise floor run and compare: the cases, the default
English and Korean set, and the `Comparison` of paired outputs."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.fidelity.audio_metrics import snr_from_energies


@dataclass(frozen=True)
class Case:
    """One verification case: a batch of texts (one voice each) at one setting.

    Example:
        >>> Case(("Hello.",), "en", ("M1",), steps=2).batch
        1
    """

    texts: tuple[str, ...]
    lang: str
    voices: tuple[str, ...]
    steps: int = contract.DEFAULT_STEPS
    speed: float = contract.DEFAULT_SPEED
    seed: int = 0

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.voices) or not self.texts:
            raise TtsKitError(f"a case needs one voice per text, got {len(self.texts)} texts "
                             f"and {len(self.voices)} voices")
        from tts_kit.text import chunk

        for t in self.texts:  # the official batch call reads each text as one chunk
            if len(chunk(t, self.lang)) != 1:
                raise TtsKitError(f"verify compares texts of one chunk each; {t[:30]!r}... "
                                 "is split in several: give shorter texts")

    @property
    def batch(self) -> int:
        return len(self.texts)

    def label(self) -> str:
        return (f"{self.lang} B={self.batch} steps={self.steps} speed={self.speed:g} "
                f"seed={self.seed} voices={','.join(self.voices)}")


#: English and Korean texts of one chunk each (the official batch call does not chunk).
TEXTS = {
    "en": ("The quick brown fox jumps over the lazy dog.",
           "Hello there, how are you today?",
           "On a small server, memory decides how many voices can speak at once."),
    "ko": ("안녕하세요, 반갑습니다.",
           "오늘 날씨가 정말 좋네요.",
           "작은 서버에서는 메모리가 동시에 말할 수 있는 목소리의 수를 정합니다."),
}


def default_cases(voices: Sequence[str]) -> list[Case]:
    """Both languages, batch sizes 1 to 3, several speeds and step counts, two voices.

    Example:
        >>> len(default_cases(["M1", "F1"]))
        6
    """
    v = list(voices)[:2] or ["M1"]
    settings = ((5, 1.05), (3, 0.8), (2, 1.6))  # (steps, speed) of batches of 1, 2 and 3
    return [Case(TEXTS[lang][:n], lang, tuple(v[i % len(v)] for i in range(n)), steps=steps,
                 speed=speed, seed=n - 1)
            for lang in ("en", "ko") for n, (steps, speed) in enumerate(settings, 1)]


def json_safe(v: Any) -> Any:
    """``v`` with NaN as None and infinities as ``"inf"``/``"-inf"`` (for JSON), recursively.

    Example:
        >>> json_safe({"snr": [float("inf"), float("nan"), 1.0]})
        {'snr': ['inf', None, 1.0]}
    """
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


def _db(v: float) -> str:
    return "inf" if v == math.inf else "nan" if math.isnan(v) else f"{v:.1f}"


def _engine(model: str | os.PathLike[str], threads: int | None, optimization: str = "all"
            ) -> Any:
    from tts_kit.fidelity.engine_reuse import default_preset
    from tts_kit.models.supertonic.engine import Engine

    return Engine(model, preset=default_preset(threads, optimization), normalize=False)


def _voices(bundle: Any) -> list[str]:
    """The default voice first, then another (the batch's styles)."""
    first = bundle.default_voice
    return [first, *[v for v in bundle.voices if v != first]][:2]


@dataclass
class Comparison:
    """One output compared with its reference.

    Example:
        >>> c = Comparison.of([np.ones(4)], [np.ones(4) * 1.1])
        >>> round(c.snr_db, 1), round(c.max_abs_diff, 2), c.length_diff
        (20.0, 0.1, 0)
    """

    max_abs_diff: float
    snr_db: float
    length_diff: int = 0  # samples (waveforms) or elements, candidate - reference

    @staticmethod
    def of(ref: Sequence[np.ndarray], cand: Sequence[np.ndarray]) -> Comparison:
        """Pool several paired arrays (compared over their common leading length)."""
        sig = err = worst = 0.0
        diff = 0
        for r, c in zip(ref, cand):
            r64, c64 = np.asarray(r, np.float64), np.asarray(c, np.float64)
            if r64.shape != c64.shape:
                diff += c64.size - r64.size
                n = min(r64.shape[-1], c64.shape[-1])
                r64, c64 = r64[..., :n], c64[..., :n]
                if r64.shape != c64.shape:
                    return Comparison(math.nan, math.nan, diff)
            if not np.isfinite(c64).all():
                return Comparison(math.nan, math.nan, diff)
            sig += float(np.sum(r64 * r64))
            err += float(np.sum((r64 - c64) ** 2))
            if r64.size:
                worst = max(worst, float(np.max(np.abs(r64 - c64))))
        return Comparison(worst, snr_from_energies(sig, err), diff)


@dataclass
class CaseResult:
    """A case's comparisons: per stage, the waveform, and what the ear would notice.

    Example:
        >>> verify("standin-tiny").results[0].waveform.snr_db  # doctest: +SKIP
        inf
    """

    case: Case
    stages: dict[str, Comparison]
    waveform: Comparison
    samples_ref: list[int]
    samples_candidate: list[int]
    log_mel_db: float
    mcd_db: float
    official_batch_leak: float = 0.0
    #: Against a bundle: each candidate stage on the reference's inputs (`replay`).
    stages_alone: dict[str, Comparison] = field(default_factory=dict)

    @property
    def duration_change_s(self) -> float:
        """Largest |candidate - reference| item length, in seconds."""
        return max(abs(a - b) for a, b in zip(self.samples_ref, self.samples_candidate)) / (
            contract.SAMPLE_RATE)
