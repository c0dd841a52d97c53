"""How close two signals are: SNR, the log-mel spectrogram and its distance (pure numpy).

Used to judge a converted model against its FP32 source (`tts_kit.precision`), and by
anything else that compares waveforms or tensors: `snr_db` for any pair of arrays,
`log_mel_distance` for audio as the ear hears it, `waveform_fidelity` for a set of
paired waveforms of possibly different lengths.

The mel filterbank is our own dozen lines, not librosa's. It equals
``librosa.filters.mel(sr, n_fft, n_mels, htk=True, norm=None)`` to within 3e-8 (checked
once against librosa 0.11), and it is the only piece of librosa this would use: librosa
brings scipy, scikit-learn, numba and llvmlite, about 500 MB installed (a 26 MB venv grew
to 524 MB), and its first filterbank call took 2.3 s (numba's start-up) against
milliseconds here. ``tests/test_audio_metrics.py`` checks the textbook properties
instead: each triangle peaks at 1 at its centre, the centres are evenly spaced in mel,
and the triangles sum to 1 between the first and the last centre (no gap, no double
counting).

Example:
    >>> import numpy as np
    >>> x = np.sin(np.linspace(0, 3000, 44100)).astype(np.float32)
    >>> round(snr_db(x, x * 1.01), 1), log_mel_distance(x, x, 44100)
    (40.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def snr_from_energies(signal: float, error: float) -> float:
    """``10 log10(signal / error)`` in dB from summed energies: inf when the error is 0,
    NaN when the signal is (and the error is not).

    Lets callers pool energies over many tensors before taking one ratio.

    Example:
        >>> snr_from_energies(100.0, 1.0), snr_from_energies(1.0, 0.0)
        (20.0, inf)
    """
    if error == 0.0:
        return math.inf
    if signal == 0.0:
        return math.nan
    return 10.0 * math.log10(signal / error)


def snr_db(reference: np.ndarray, candidate: np.ndarray) -> float:
    """Signal-to-noise ratio of ``candidate`` against ``reference`` in dB (inf: identical).

    Both are flattened; they must have the same number of elements. NaN when the
    candidate is not finite or the reference is silent.

    Example:
        >>> x = np.sin(np.linspace(0, 100, 1000))
        >>> round(snr_db(x, x * 1.01), 1)
        40.0
    """
    ref = np.asarray(reference, np.float64).ravel()
    cand = np.asarray(candidate, np.float64).ravel()
    if ref.shape != cand.shape:
        raise ValueError(f"snr_db: shapes differ ({ref.size} vs {cand.size} elements)")
    if not np.isfinite(cand).all():
        return math.nan
    return snr_from_energies(float(np.sum(ref * ref)), float(np.sum((ref - cand) ** 2)))


def mel_filterbank(
    sample_rate: int, n_fft: int, n_mels: int = 80, fmin: float = 0.0, fmax: float | None = None
) -> np.ndarray:
    """Triangular mel filters (HTK mel scale), shape ``[n_mels, n_fft // 2 + 1]``.

    Unnormalised (each triangle peaks at 1), as ``librosa.filters.mel(..., htk=True,
    norm=None)``.

    Example:
        >>> fb = mel_filterbank(44100, 2048, 80)
        >>> fb.shape, bool((fb >= 0).all())
        ((80, 1025), True)
    """
    fmax = sample_rate / 2 if fmax is None else fmax

    def hz_to_mel(f: np.ndarray | float) -> np.ndarray:
        return 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)

    def mel_to_hz(m: np.ndarray) -> np.ndarray:
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)

    freqs = np.linspace(0, sample_rate / 2, n_fft // 2 + 1)
    edges = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    up = (freqs[None, :] - lo) / np.maximum(mid - lo, 1e-9)
    down = (hi - freqs[None, :]) / np.maximum(hi - mid, 1e-9)
    return np.maximum(0.0, np.minimum(up, down))


def log_mel(
    wav: np.ndarray, sample_rate: int, n_fft: int = 2048, hop: int = 512, n_mels: int = 80
) -> np.ndarray:
    """Log-mel power spectrogram in dB, shape ``[frames, n_mels]`` (Hann window, numpy FFT).

    Example:
        >>> log_mel(np.zeros(44100, np.float32), 44100).shape  # 1 + (44100 - 2048) // 512
        (83, 80)
    """
    x = np.asarray(wav, np.float64).ravel()
    if x.size < n_fft:
        x = np.pad(x, (0, n_fft - x.size))
    frames = 1 + (x.size - n_fft) // hop
    idx = np.arange(n_fft)[None, :] + hop * np.arange(frames)[:, None]
    spec = np.abs(np.fft.rfft(x[idx] * np.hanning(n_fft), axis=1)) ** 2
    mel = spec @ mel_filterbank(sample_rate, n_fft, n_mels).T
    return 10.0 * np.log10(np.maximum(mel, 1e-10))


def log_mel_distance(
    reference: np.ndarray, candidate: np.ndarray, sample_rate: int, floor_db: float = 80.0
) -> float:
    """Mean over frames of the RMS (over mel bands) difference of log-mel spectra, in dB.

    Both spectra are floored at ``floor_db`` below the reference's maximum, so near-silent
    frames (where log spectra are dominated by rounding) cannot dominate the distance.
    Compares the common length. 0 means identical; about 1 dB is inaudible on speech.

    Example:
        >>> x = np.random.default_rng(0).standard_normal(44100).astype(np.float32)
        >>> log_mel_distance(x, x, 44100)
        0.0
    """
    n = min(len(reference), len(candidate))
    if not np.isfinite(np.asarray(candidate[:n])).all():
        return math.nan
    a = log_mel(reference[:n], sample_rate)
    b = log_mel(candidate[:n], sample_rate)
    floor = a.max() - floor_db
    a, b = np.maximum(a, floor), np.maximum(b, floor)
    return float(np.mean(np.sqrt(np.mean((a - b) ** 2, axis=1))))


def waveform_fidelity(
    reference: Sequence[np.ndarray], candidate: Sequence[np.ndarray], sample_rate: int
) -> tuple[float, float, int, int]:
    """``(snr_db, log_mel_distance_db, samples_ref, samples_candidate)`` over paired waveforms.

    Each pair is compared over its common length; SNR pools signal and error energy
    over all pairs, the log-mel distance is the mean over pairs.

    Example:
        >>> x = np.sin(np.linspace(0, 3000, 44100)).astype(np.float32)
        >>> snr, lmd, n_ref, n_cand = waveform_fidelity([x], [x + 1e-3], 44100)
        >>> snr > 40, n_ref == n_cand
        (True, True)
    """
    if len(reference) != len(candidate):
        raise ValueError(f"{len(reference)} reference waveforms but {len(candidate)} candidates")
    sig = err = 0.0
    dists = []
    for r, c in zip(reference, candidate):
        n = min(len(r), len(c))
        r64, c64 = np.asarray(r[:n], np.float64), np.asarray(c[:n], np.float64)
        if not np.isfinite(c64).all():
            return math.nan, math.nan, sum(map(len, reference)), sum(map(len, candidate))
        sig += float(np.sum(r64 * r64))
        err += float(np.sum((r64 - c64) ** 2))
        dists.append(log_mel_distance(r64, c64, sample_rate))
    return (
        snr_from_energies(sig, err),
        float(np.mean(dists)) if dists else math.nan,
        sum(len(r) for r in reference),
        sum(len(c) for c in candidate),
    )
