"""Verdicts a listener would agree with: **transparent** when the candidate is no further
from take 0 than the reference's own takes are (`TakeSpread`), else the worst band of the
metrics' published scales (`VERDICT_TABLE`): **acceptable**, **degraded** or **broken**."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tts_kit.fidelity.quality import (
    QualityMetrics,
    dnsmos,
    missing,
    quality_metrics,
    transcribe,
)

TRANSPARENT, ACCEPTABLE, DEGRADED, BROKEN = "transparent", "acceptable", "degraded", "broken"
#: Verdicts from best to worst.
VERDICTS: tuple[str, ...] = (TRANSPARENT, ACCEPTABLE, DEGRADED, BROKEN)

#: The published scales: metric -> (higher is better, acceptable limit, degraded limit,
#: source); beyond the degraded limit: broken.
VERDICT_TABLE: dict[str, tuple[bool, float, float, str]] = {
    "pesq": (True, 3.0, 2.0, "PESQ-WB MOS-LQO (ITU-T P.862.2; P.800: 3 fair, 2 poor)"),
    "stoi": (True, 0.90, 0.70, "STOI (Taal et al. 2011; 0.9: near-full intelligibility)"),
    "wer_rise": (False, 0.10, 0.30, "WER over the worst of the reference's takes"),
    "dnsmos_drop": (False, 0.30, 0.70, "DNSMOS P.835 OVRL drop (MOS points)"),
}

#: The transparency check: metric -> higher is better (NaN on either side: not judged).
_SPREAD_METRICS: dict[str, bool] = {"pesq": True, "stoi": True, "dnsmos_drop": False,
                                    "wer": False, "mcd_db": False}


@dataclass
class TakeSpread:
    """The worst of the reference's own takes against take 0 (`take_spread`).

    Example:
        >>> TakeSpread(QualityMetrics(pesq=2.0), takes=3).to_dict()["worst"]["pesq"]
        2.0
    """

    worst: QualityMetrics
    takes: int
    per_take: list[QualityMetrics] = field(default_factory=list)
    transcripts: list[str] = field(default_factory=list)  # take 0's, heard (empty: no WER)
    reference_dnsmos: list[float] = field(default_factory=list)  # take 0's OVRL per text
    #: Take 0's waveforms (not in `to_dict`), compared with a candidate, not synthesised again.
    reference_wavs: list[np.ndarray] = field(default_factory=list, repr=False, compare=False)
    sample_rate: int = 0  # 0: unknown

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the worst, the number of takes, each take's metrics."""
        return {"worst": self.worst.to_dict(), "takes": self.takes,
                "per_take": [m.to_dict() for m in self.per_take],
                "transcripts": self.transcripts, "reference_dnsmos": self.reference_dnsmos}


def take_spread(takes: Sequence[Sequence[np.ndarray]], sample_rate: int, *,
                skip: Sequence[str] = ()) -> TakeSpread:
    """The spread of the reference across ``takes`` (lists of waveforms of the same texts):
    every take against ``takes[0]``.

    Example:
        >>> t = [[np.sin(np.linspace(0, 3000, 16000))]] * 2
        >>> take_spread(t, 16000, skip=("pesq", "stoi", "dnsmos", "wer")).worst.mcd_db
        0.0
    """
    if len(takes) < 2:
        raise ValueError("take_spread: give at least two takes of the reference")
    absent = missing()
    heard = ([transcribe(w, sample_rate) for w in takes[0]]
             if "wer" not in skip and "wer" not in absent else [])
    d_ref = ([dnsmos(w, sample_rate)["ovrl"] for w in takes[0]]
             if "dnsmos" not in skip and "dnsmos" not in absent else [])
    per = [quality_metrics(takes[0], t, sample_rate, ref_transcripts=heard or None,
                           ref_dnsmos=d_ref or None, skip=skip) for t in takes[1:]]
    worst = QualityMetrics(notes=per[0].notes)
    for name, higher in {**_SPREAD_METRICS, "dnsmos_ovrl": True, "dnsmos_p808": True}.items():
        vals = [getattr(m, name) for m in per]
        finite = [abs(v) if name == "dnsmos_drop" else v for v in vals if not math.isnan(v)]
        setattr(worst, name, (min if higher else max)(finite, default=math.nan))
    return TakeSpread(worst, len(takes), per, heard, d_ref, list(takes[0]), int(sample_rate))


@dataclass
class Verdict:
    """A verdict, the metric that decided it, and why (one line per metric judged).

    Example:
        >>> Verdict("acceptable", "pesq", ["pesq 3.4: acceptable"]).line()
        'acceptable (decided by pesq): pesq 3.4: acceptable'
    """

    name: str
    decided_by: str
    reasons: list[str]

    def line(self) -> str:
        """One line: the verdict, its deciding metric and its reasons."""
        return f"{self.name} (decided by {self.decided_by}): " + "; ".join(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"verdict": self.name, "decided_by": self.decided_by, "reasons": self.reasons}


def _band(metric: str, value: float) -> str:
    higher, ok, bad, _ = VERDICT_TABLE[metric]
    if math.isnan(value):
        return BROKEN
    if (value >= ok) if higher else (value <= ok):
        return ACCEPTABLE
    if (value >= bad) if higher else (value <= bad):
        return DEGRADED
    return BROKEN


def _within_spread(cand: QualityMetrics, spread: TakeSpread) -> tuple[dict[str, str], str]:
    """(metrics outside the spread -> reason, the metric nearest its limit)."""
    outside: dict[str, str] = {}
    nearest, margin = "", math.inf
    for name, higher in _SPREAD_METRICS.items():
        limit, value = getattr(spread.worst, name), getattr(cand, name)
        if math.isnan(limit):
            continue
        if name == "dnsmos_drop" and not math.isnan(value):
            value = abs(value)
        slack = (value - limit) if higher else (limit - value)
        if math.isnan(value) or slack < 0:
            outside[name] = f"{name} {value:.3g} beyond the takes' {limit:.3g}"
        elif slack / max(abs(limit), 1e-9) < margin:
            nearest, margin = name, slack / max(abs(limit), 1e-9)
    return outside, nearest


def verdict(cand: QualityMetrics, spread: TakeSpread) -> Verdict:
    """``cand`` (against take 0) judged on ``spread`` and `VERDICT_TABLE`.

    Example:
        >>> spread = TakeSpread(QualityMetrics(pesq=1.8, stoi=0.6, wer=0.1), takes=3)
        >>> v = verdict(QualityMetrics(pesq=1.5, stoi=0.8, wer=0.1), spread)
        >>> v.name, v.decided_by
        ('broken', 'pesq')
    """
    outside, nearest = _within_spread(cand, spread)
    if not outside and nearest:
        limit = getattr(spread.worst, nearest)
        return Verdict(TRANSPARENT, nearest,
                       ["no further from the reference than its own takes on every metric "
                        f"(nearest its limit: {nearest} {getattr(cand, nearest):.3g} against "
                        f"the takes' {limit:.3g})"])
    values = {"pesq": cand.pesq, "stoi": cand.stoi, "dnsmos_drop": cand.dnsmos_drop,
              "wer_rise": cand.wer - (0.0 if math.isnan(spread.worst.wer)
                                      else spread.worst.wer)}
    measured = {k: v for k, v in values.items()
                if not math.isnan(getattr(spread.worst, "wer" if k == "wer_rise" else k))
                or not math.isnan(v)}
    if not measured:
        return Verdict(BROKEN, next(iter(outside), "none"),
                       ["no metric of the published scales was measured"]
                       + list(outside.values()))
    bands = {k: _band(k, v) for k, v in measured.items()}
    decided = max(bands, key=lambda k: VERDICTS.index(bands[k]))
    name = bands[decided]
    if name == ACCEPTABLE and outside:  # what kept it from being transparent
        decided = next(iter(outside))
    reasons = [f"{k} {measured[k]:.3g}: {bands[k]}" for k in measured] + list(outside.values())
    return Verdict(name, decided, reasons)
