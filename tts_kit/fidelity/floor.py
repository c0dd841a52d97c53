"""A model's noise floor (what legitimately varies: threads, graph fusions, batch padding,
another noise draw), measured by `noise_floor`, and `Floor.verdict` on waveform `Distances`."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.fidelity.audio_metrics import log_mel_distance, mel_cepstral_distortion
from tts_kit.fidelity.cases import (
    Case,
    Comparison,
    _db,
    _engine,
    _voices,
    default_cases,
    json_safe,
)

#: A companion text longer than every case text: batched with it, each case item is padded.
PADDING_COMPANION = {
    "en": "While the others were talking, the old clockmaker quietly repaired the tower clock, "
          "one small brass wheel after another, until it struck noon again.",
    "ko": "다른 사람들이 이야기하는 동안 늙은 시계공은 탑시계의 작은 톱니바퀴를 하나씩 고쳐서 "
          "마침내 정오를 다시 알리게 했습니다.",
}

#: A distance within this factor of the floor's is "within the floor" (an SNR within 6 dB).
FLOOR_FACTOR = 2.0
#: A log-mel distance or MCD at least this fraction of another noise draw's is "broken".
BROKEN_FRACTION = 0.5

FLOOR_READINGS = ("within the floor", "beyond the floor", "broken")
#: A reading said as the conformance figure it is (a lossy copy's verdict is the
#: listener's, `tts_kit.fidelity.listening.decide`); "audible risk": its old name.
CONFORMANCE = {"within the floor": "within float rounding of the source",
               "broken": "BROKEN: at least half-way to another noise draw",
               **dict.fromkeys(("beyond the floor", "audible risk"), "differs from the source "
                               "beyond float rounding: expected for {to}")}


def conformance(reading: str, to: str = "a lossy copy") -> str:
    """``reading`` (`FLOOR_READINGS`) said as a conformance figure for a ``to`` copy.

    Example:
        >>> conformance("beyond the floor", "FP16")
        'differs from the source beyond float rounding: expected for FP16'
    """
    return CONFORMANCE.get(reading, reading).format(to=to)


@dataclass
class Distances:
    """How far one set of waveforms is from the reference's, pooled over the cases.

    Example:
        >>> Distances(40.0, 0.1, 0.2, 0.0).worse_than(Distances(60.0, 0.05, 0.05, 0.0), 2.0)
        ['waveform SNR 40.0 dB < 54.0 dB', 'MCD 0.2 dB > 0.1 dB']
    """

    snr_db: float
    log_mel_db: float
    mcd_db: float
    duration_change_s: float

    @staticmethod
    def of(ref: Sequence[np.ndarray], cand: Sequence[np.ndarray],
           sample_rate: int = contract.SAMPLE_RATE) -> Distances:
        wave = Comparison.of(ref, cand)
        lmd = [log_mel_distance(r, c, sample_rate) for r, c in zip(ref, cand)]
        mcd = [mel_cepstral_distortion(r, c, sample_rate) for r, c in zip(ref, cand)]
        dur = max(abs(len(r) - len(c)) for r, c in zip(ref, cand)) / sample_rate
        return Distances(wave.snr_db, float(np.mean(lmd)), float(np.mean(mcd)), dur)

    def worse_than(self, limit: Distances, factor: float = 1.0) -> list[str]:
        """What is further than ``factor`` x ``limit``'s distances (each line says so)."""
        out = []
        snr_limit = limit.snr_db - 20 * math.log10(factor)
        if not (self.snr_db >= snr_limit):
            out.append(f"waveform SNR {self.snr_db:.1f} dB < {snr_limit:.1f} dB")
        for name, mine, lim in (("log-mel distance", self.log_mel_db, limit.log_mel_db),
                                ("MCD", self.mcd_db, limit.mcd_db)):
            if not (mine <= factor * lim):
                out.append(f"{name} {mine:.3g} dB > {factor * lim:.3g} dB")
        if self.duration_change_s > limit.duration_change_s:
            out.append(f"length change {self.duration_change_s * 1000:.1f} ms > "
                       f"{limit.duration_change_s * 1000:.1f} ms")
        return out


@dataclass
class Floor:
    """What legitimately varies, measured (``runs``; ``floor``: their worst; ``take``: another
    noise draw): the scale a conversion is judged on.

    Example:
        >>> f = Floor({}, Distances(90.0, 0.01, 0.01, 0.0), Distances(0.5, 8.0, 9.0, 0.0))
        >>> f.verdict(Distances(88.0, 0.015, 0.012, 0.0))[0]
        'within the floor'
        >>> f.verdict(Distances(30.0, 1.0, 1.5, 0.0))[0]
        'beyond the floor'
        >>> f.verdict(Distances(0.1, 9.0, 9.5, 0.2))[0]
        'broken'
    """

    runs: dict[str, Distances]
    floor: Distances
    take: Distances
    factor: float = FLOOR_FACTOR

    def verdict(self, d: Distances) -> tuple[str, list[str]]:
        """``(reading, reasons)``: within the floor, beyond the floor, or broken."""
        if any(math.isnan(v) for v in (d.snr_db, d.log_mel_db, d.mcd_db)):
            return "broken", ["non-finite audio"]
        past_take = [r for r in d.worse_than(self.take, BROKEN_FRACTION)
                     if r.startswith(("log-mel", "MCD"))]
        if past_take:
            return "broken", [f"{r} ({BROKEN_FRACTION:g}x another noise draw's)"
                              for r in past_take]
        beyond = d.worse_than(self.floor, self.factor)
        if beyond:
            return "beyond the floor", [f"{r} ({self.factor:g}x the floor)" for r in beyond]
        return "within the floor", []

    def table(self) -> str:
        lines = [f"{'':<22}{'SNR dB':>9}{'log-mel dB':>12}{'MCD dB':>9}{'length ms':>11}"]
        for name, d in {**self.runs, "floor (worst)": self.floor,
                        "another noise draw": self.take}.items():
            lines.append(f"{name:<22}{_db(d.snr_db):>9}{d.log_mel_db:>12.4f}{d.mcd_db:>9.4f}"
                         f"{d.duration_change_s * 1000:>11.1f}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return json_safe(asdict(self))


def _seeded_wavs(engine: Any, case: Case, seed_offset: int = 0,
                 companion: bool = False) -> list[np.ndarray]:
    """The case's waveforms with per-item seeds (`Engine` default noise: independent of
    the batch), optionally each batched beside a longer companion text."""
    seeds = [case.seed * 100 + i + seed_offset for i in range(case.batch)]
    if not companion:
        res = engine.synthesize_batch(list(case.texts), case.lang, list(case.voices),
                                      case.steps, case.speed, seed=seeds)
        return [r.wav for r in res]
    wavs = []
    for text, voice, s in zip(case.texts, case.voices, seeds):
        res = engine.synthesize_batch([text, PADDING_COMPANION[case.lang]], case.lang,
                                      [voice, voice], case.steps, case.speed, seed=[s, 10**6])
        wavs.append(res[0].wav)
    return wavs


def noise_floor(
    model: Any = None, cases: Sequence[Case] | None = None, threads: tuple[int, int] = (1, 2),
    make_engine: Callable[[Path, int | None, str], Any] | None = None,
    *,
    padding: bool = True,
) -> Floor:
    """Measure the floor: the same cases through the unconverted model, varied only in
    threads, graph fusions and (unless ``padding=False``) batch padding, and against another
    noise draw. ``make_engine(path, threads, optimization)`` (default: Supertonic's
    `Engine`; another family passes its own, and the ``cases``) builds engines whose
    ``synthesize_batch(..., seed=[...])`` draws each item's noise from its seed alone.

    Example:
        >>> floor = noise_floor("standin-tiny")  # doctest: +SKIP
        >>> print(floor.table())  # doctest: +SKIP
    """
    if make_engine is None:
        from tts_kit.models.supertonic.bundle import Bundle

        bundle = model if isinstance(model, Bundle) else Bundle.discover(model)
        path = bundle.path
        cases = list(cases) if cases is not None else default_cases(_voices(bundle))
        make_engine = _engine
    else:
        if cases is None:
            raise TtsKitError("give the cases when you give make_engine (the default cases "
                             "use a Supertonic bundle's voices)")
        path, cases = Path(model), list(cases)
    a = make_engine(path, threads[0], "all")
    variants = {  # what is compared with the reference: its engine and `_seeded_wavs` options
        f"threads {threads[0]} vs {threads[1]}": (make_engine(path, threads[1], "all"), {}),
        "graph fusions all vs basic": (make_engine(path, threads[0], "basic"), {}),
        **({"batch padding": (a, {"companion": True})} if padding else {}),
        "another noise draw": (a, {"seed_offset": 50}),
    }
    sr = getattr(getattr(a, "bundle", None), "sample_rate", contract.SAMPLE_RATE)
    ref = [w for case in cases for w in _seeded_wavs(a, case)]
    runs = {name: Distances.of(ref, [w for case in cases for w in _seeded_wavs(e, case, **kw)],
                               sr) for name, (e, kw) in variants.items()}
    take = runs.pop("another noise draw")
    worst = Distances(
        min(d.snr_db for d in runs.values()), max(d.log_mel_db for d in runs.values()),
        max(d.mcd_db for d in runs.values()), max(d.duration_change_s for d in runs.values()))
    return Floor(runs, worst, take)
