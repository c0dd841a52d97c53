"""Perceptual and intelligibility metrics at 16 kHz (`quality_metrics` runs them all), each
from a library in the optional ``quality`` extra (an absent one is skipped with a one-line
note). Which libraries, and why: docs/benchmarks.md."""

from __future__ import annotations

import importlib.util
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from tts_kit.core.errors import TtsKitError
from tts_kit.fidelity.audio_metrics import mel_filterbank

#: The rate every metric here reads (PESQ wideband, DNSMOS and pocketsphinx are 16 kHz).
RATE = 16000

#: metric -> the package that computes it.
PACKAGES: dict[str, str] = {"pesq": "pesq", "stoi": "pystoi", "dnsmos": "speechmos",
                            "wer": "pocketsphinx", "resample": "scipy"}


def missing() -> dict[str, str]:
    """Metrics whose package is absent: metric -> a one-line note (empty: all present).

    Example:
        >>> sorted(missing()) <= ["dnsmos", "pesq", "resample", "stoi", "wer"]
        True
    """
    return {metric: f"{metric}: skipped ({pkg} is not installed; pip install 'tts_kit[quality]')"
            for metric, pkg in PACKAGES.items() if importlib.util.find_spec(pkg) is None}


def to_16k(wav: np.ndarray, sample_rate: int) -> np.ndarray:
    """``wav`` resampled to 16 kHz (polyphase, ``scipy.signal.resample_poly``), float64.

    Example:
        >>> to_16k(np.zeros(22050), 22050).shape
        (16000,)
    """
    from scipy.signal import resample_poly

    x = np.asarray(wav, np.float64).ravel()
    if sample_rate == RATE:
        return x
    g = math.gcd(RATE, int(sample_rate))
    return resample_poly(x, RATE // g, int(sample_rate) // g)


def _pair(ref: np.ndarray, cand: np.ndarray, sample_rate: int) -> tuple[np.ndarray, np.ndarray]:
    """Both at 16 kHz, cut to the shorter (the intrusive metrics compare sample frames)."""
    r, c = to_16k(ref, sample_rate), to_16k(cand, sample_rate)
    n = min(r.size, c.size)
    return r[:n], c[:n]


def pesq_wb(ref: np.ndarray, cand: np.ndarray, sample_rate: int) -> float:
    """PESQ wideband MOS-LQO of ``cand`` against ``ref`` (NaN when PESQ finds no speech).

    Example:
        >>> round(pesq_wb(speech, speech, 16000), 2)  # doctest: +SKIP
        4.64
    """
    from pesq import pesq

    r, c = _pair(ref, cand, sample_rate)
    try:
        return float(pesq(RATE, r, c, "wb"))
    except Exception:  # noqa: BLE001 (pesq raises its own classes: no utterance, too short)
        return math.nan


def stoi(ref: np.ndarray, cand: np.ndarray, sample_rate: int) -> float:
    """STOI of ``cand`` against ``ref``, 0 .. 1.

    Example:
        >>> round(stoi(speech, speech, 16000), 3)  # doctest: +SKIP
        1.0
    """
    from pystoi import stoi as _stoi

    r, c = _pair(ref, cand, sample_rate)
    return float(_stoi(r, c, RATE, extended=False))


@lru_cache(maxsize=2)
def _dnsmos_session(name: str = "sig_bak_ovr.onnx") -> Any:
    """An ONNX Runtime session on a DNSMOS model speechmos ships (P.835 or ``model_v8.onnx``,
    P.808)."""
    import onnxruntime as ort

    spec = importlib.util.find_spec("speechmos")
    if spec is None or not spec.submodule_search_locations:
        raise TtsKitError("dnsmos: speechmos is not installed; pip install 'tts_kit[quality]'")
    model = Path(list(spec.submodule_search_locations)[0]) / "dnsmos_models" / name
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])


#: DNSMOS P.835's calibration polynomials (the published DNSMOS scripts'), raw -> MOS.
_DNSMOS_POLY = {"sig": (-0.08397278, 1.22083953, 0.0052439),
                "bak": (-0.13166888, 1.60915514, -0.39604546),
                "ovrl": (-0.06766283, 1.11546468, 0.04602535)}


def dnsmos(wav: np.ndarray, sample_rate: int) -> dict[str, float]:
    """DNSMOS P.835 scores (``sig``, ``bak``, ``ovrl``) and the P.808 MOS (``p808``), each
    1 .. 5, of one waveform, as the published DNSMOS script computes them (9.01 s windows a
    second apart, averaged).

    Example:
        >>> dnsmos(np.zeros(16000), 16000)["ovrl"] < 2  # doctest: +SKIP
        True
    """
    x = np.clip(to_16k(wav, sample_rate), -1.0, 1.0).astype(np.float32)
    n = int(9.01 * RATE)
    if x.size == 0:
        return {k: math.nan for k in (*_DNSMOS_POLY, "p808")}
    while x.size < n:
        x = np.concatenate([x, x])
    sess, p808 = _dnsmos_session(), _dnsmos_session("model_v8.onnx")
    raw, p808_mos = [], []
    for start in range(0, x.size - n + 1, RATE):
        seg = x[start:start + n]
        raw.append(sess.run(None, {"input_1": seg[None]})[0][0])
        feats = p808_features(seg[:-160])[None]
        p808_mos.append(float(p808.run(None, {"input_1": feats})[0][0][0]))
    mean = np.mean(np.asarray(raw, np.float64), axis=0)
    out = {k: float(np.poly1d(_DNSMOS_POLY[k])(v)) for k, v in zip(("sig", "bak", "ovrl"), mean)}
    return {**out, "p808": float(np.mean(p808_mos))}


def p808_features(segment: np.ndarray) -> np.ndarray:
    """DNSMOS P.808's input features of a 16 kHz ``segment`` as librosa computes them
    (mel power in dB against the maximum, 80 dB floor, ``(dB + 40) / 40``): (frames, 120).

    Example:
        >>> p808_features(np.zeros(16000)).shape
        (100, 120)
    """
    x = np.asarray(segment, np.float64).ravel()
    n, hop = 321, 160  # FFT size and hop (120 mel bands)
    padded = np.pad(x, n // 2)
    count = 1 + (padded.size - n) // hop
    frames = np.lib.stride_tricks.sliding_window_view(padded, n)[::hop][:count]
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)  # periodic Hann
    power = np.abs(np.fft.rfft(frames * window, n=n, axis=1)) ** 2
    mel = power @ mel_filterbank(RATE, n, 120, slaney=True).T
    db = 10.0 * np.log10(np.maximum(mel, 1e-10))
    db -= 10.0 * np.log10(max(float(mel.max(initial=0.0)), 1e-10))
    db = np.maximum(db, db.max(initial=0.0) - 80.0)
    return ((db + 40.0) / 40.0).astype(np.float32)


@lru_cache(maxsize=1)
def _decoder() -> Any:
    from pocketsphinx import Decoder

    return Decoder(samprate=RATE, loglevel="FATAL")


def transcribe(wav: np.ndarray, sample_rate: int) -> str:
    """What pocketsphinx's bundled US English model hears in ``wav`` (lower case words).

    Example:
        >>> transcribe(np.zeros(16000), 16000)  # doctest: +SKIP
        ''
    """
    pcm = (np.clip(to_16k(wav, sample_rate), -1.0, 1.0) * 32767).astype("<i2").tobytes()
    d = _decoder()
    d.start_utt()
    d.process_raw(pcm, full_utt=True)
    d.end_utt()
    hyp = d.hyp()
    return " ".join(hyp.hypstr.split()) if hyp is not None else ""


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Word error rate: word-level Levenshtein distance / reference words (case and
    punctuation ignored).

    Example:
        >>> word_error_rate("a b c d", "a x c"), word_error_rate("", "")
        (0.5, 0.0)
    """
    def words(s: str) -> list[str]:
        return "".join(ch.lower() if ch.isalnum() or ch == "'" else " " for ch in s).split()

    ref, hyp = words(reference), words(hypothesis)
    if not ref:
        return 0.0 if not hyp else math.inf
    row = list(range(len(hyp) + 1))
    for i, rw in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, hw in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (rw != hw))
    return row[-1] / len(ref)


@dataclass
class QualityMetrics:
    """A candidate's metrics against a reference, means over the texts (NaN: not measured,
    see ``notes``).

    Example:
        >>> m = QualityMetrics.from_dict(QualityMetrics(pesq=4.5).to_dict())
        >>> m.pesq, m.to_dict()["stoi"], math.isnan(m.stoi)
        (4.5, None, True)
    """

    pesq: float = math.nan  # MOS-LQO
    stoi: float = math.nan
    dnsmos_ovrl: float = math.nan  # the candidate's own DNSMOS P.835 overall quality
    dnsmos_drop: float = math.nan  # the reference's OVRL minus the candidate's
    dnsmos_p808: float = math.nan  # reported, not judged
    wer: float = math.nan  # the candidate's transcript against the reference's
    mcd_db: float = math.nan
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN and inf as None)."""
        return {k: (v if not isinstance(v, float) or math.isfinite(v) else None)
                for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QualityMetrics:
        """The inverse of `to_dict`."""
        names = {f.name for f in fields(cls)}
        kw = {k: (math.nan if v is None and k != "notes" else v)
              for k, v in data.items() if k in names}
        return cls(**kw)


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return statistics.fmean(finite) if finite else math.nan


def quality_metrics(refs: Sequence[np.ndarray], cands: Sequence[np.ndarray],
                    sample_rate: int, *, ref_transcripts: Sequence[str] | None = None,
                    ref_dnsmos: Sequence[float] | None = None,
                    skip: Sequence[str] = ()) -> QualityMetrics:
    """Every available metric of ``cands`` against ``refs`` (paired waveforms), averaged.
    ``ref_transcripts``, ``ref_dnsmos``: the reference's, when already known; ``skip``:
    metrics (of `PACKAGES`) not to compute.

    Example:
        >>> x = [np.sin(np.linspace(0, 3000, 32000))]
        >>> quality_metrics(x, x, 16000, skip=("pesq", "stoi", "dnsmos", "wer")).mcd_db
        0.0
    """
    from tts_kit.fidelity.audio_metrics import mel_cepstral_distortion

    if len(refs) != len(cands) or not refs:
        raise TtsKitError(f"quality: give paired waveforms ({len(refs)} vs {len(cands)})")
    absent = missing()
    m = QualityMetrics(notes=[absent[k] for k in PACKAGES if k in absent and k not in skip])
    on = {k for k in PACKAGES if k not in skip and k not in absent and "resample" not in absent}
    m.mcd_db = _mean([mel_cepstral_distortion(r, c, sample_rate) for r, c in zip(refs, cands)])
    for name, intrusive in (("pesq", pesq_wb), ("stoi", stoi)):
        if name in on:
            setattr(m, name, _mean([intrusive(r, c, sample_rate) for r, c in zip(refs, cands)]))
    if "dnsmos" in on:
        d_ref = list(ref_dnsmos) if ref_dnsmos else [dnsmos(r, sample_rate)["ovrl"]
                                                     for r in refs]
        scores = [dnsmos(c, sample_rate) for c in cands]
        d_cand = [d["ovrl"] for d in scores]
        m.dnsmos_ovrl, m.dnsmos_p808 = _mean(d_cand), _mean([d["p808"] for d in scores])
        m.dnsmos_drop = _mean([a - b for a, b in zip(d_ref, d_cand)])
    if "wer" in on:
        heard = list(ref_transcripts) if ref_transcripts else [
            transcribe(r, sample_rate) for r in refs]
        m.wer = _mean([word_error_rate(t, transcribe(c, sample_rate))
                       for t, c in zip(heard, cands)])
    return m
