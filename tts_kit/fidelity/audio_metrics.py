"""How close two signals are: SNR, the log-mel spectrogram and its distance, MCD (numpy;
why not librosa: docs/benchmarks.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tts_kit.core.errors import TtsKitError


def snr_from_energies(signal: float, error: float) -> float:
    """``10 log10(signal / error)`` in dB from pooled energies (inf: no error; NaN: no signal).

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
    """SNR of ``candidate`` against ``reference`` in dB, both flattened (inf: identical; NaN:
    candidate not finite or reference silent).

    Example:
        >>> round(snr_db(np.ones(8), np.ones(8) * 1.01), 1)
        40.0
    """
    ref = np.asarray(reference, np.float64).ravel()
    cand = np.asarray(candidate, np.float64).ravel()
    if ref.shape != cand.shape:
        raise TtsKitError(f"snr_db: shapes differ ({ref.size} vs {cand.size} elements)")
    if not np.isfinite(cand).all():
        return math.nan
    return snr_from_energies(float(np.sum(ref * ref)), float(np.sum((ref - cand) ** 2)))


def _htk_mel(f: np.ndarray | float) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)


def _htk_hz(m: np.ndarray) -> np.ndarray:
    return 700.0 * (10.0 ** (m / 2595.0) - 1.0)


def _slaney_mel(f: np.ndarray | float) -> np.ndarray:
    f = np.asarray(f, np.float64)
    log = 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / (np.log(6.4) / 27.0)
    return np.where(f >= 1000.0, log, f / (200.0 / 3))


def _slaney_hz(m: np.ndarray) -> np.ndarray:
    return np.where(m >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (m - 15.0)),
                    (200.0 / 3) * m)


def mel_filterbank(
    sample_rate: int, n_fft: int, n_mels: int = 80, fmin: float = 0.0,
    fmax: float | None = None, *, slaney: bool = False,
) -> np.ndarray:
    """Triangular mel filters ``[n_mels, n_fft//2 + 1]`` on the power spectrum: HTK mel scale,
    each peaking at 1, or (``slaney``) librosa's default, Slaney's scale with area
    normalisation.

    Example:
        >>> fb = mel_filterbank(44100, 2048, 80)
        >>> fb.shape, bool((fb >= 0).all())
        ((80, 1025), True)
    """
    fmax = sample_rate / 2 if fmax is None else fmax
    to_mel, to_hz = (_slaney_mel, _slaney_hz) if slaney else (_htk_mel, _htk_hz)
    freqs = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    edges = to_hz(np.linspace(to_mel(fmin), to_mel(fmax), n_mels + 2))
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    up = (freqs[None, :] - lo) / np.maximum(mid - lo, 1e-9)
    down = (hi - freqs[None, :]) / np.maximum(hi - mid, 1e-9)
    weights = np.maximum(0.0, np.minimum(up, down))
    return weights * (2.0 / (hi - lo)) if slaney else weights


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
    """Mean over frames of the RMS (over mel bands) difference of log-mel spectra in dB, over
    the common length, both floored ``floor_db`` below the reference's maximum.

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
    """``(snr_db, log_mel_distance_db, samples_ref, samples_candidate)`` over paired waveforms
    (each over its common length; SNR pooled, the distance averaged).

    Example:
        >>> waveform_fidelity([np.ones(4096)], [np.ones(4096)], 44100)
        (inf, 0.0, 4096, 4096)
    """
    if len(reference) != len(candidate):
        raise TtsKitError(f"{len(reference)} reference waveforms but {len(candidate)} candidates")
    sig = err = 0.0
    dists = []
    lengths = sum(map(len, reference)), sum(map(len, candidate))
    for r, c in zip(reference, candidate):
        n = min(len(r), len(c))
        r64, c64 = np.asarray(r[:n], np.float64), np.asarray(c[:n], np.float64)
        if not np.isfinite(c64).all():
            return math.nan, math.nan, *lengths
        sig += float(np.sum(r64 * r64))
        err += float(np.sum((r64 - c64) ** 2))
        dists.append(log_mel_distance(r64, c64, sample_rate))
    return snr_from_energies(sig, err), (float(np.mean(dists)) if dists else math.nan), *lengths


def mel_cepstrum(
    wav: np.ndarray, sample_rate: int, n_coeffs: int = 25, n_fft: int = 2048, hop: int = 512,
    n_mels: int = 80,
) -> np.ndarray:
    """Mel cepstra ``[frames, n_coeffs]``: the orthonormal DCT-II of the log mel amplitude
    spectrum (coefficient 0: the energy).

    Example:
        >>> mel_cepstrum(np.ones(44100, np.float32), 44100).shape
        (83, 25)
    """
    # log_mel is 10 log10(power); ln(amplitude) = ln(10) / 20 * that.
    log_amp = log_mel(wav, sample_rate, n_fft, hop, n_mels) * (math.log(10.0) / 20.0)
    k = np.arange(n_mels)
    basis = np.cos(np.pi / n_mels * (k[None, :] + 0.5) * np.arange(n_coeffs)[:, None])
    basis *= math.sqrt(2.0 / n_mels)
    basis[0] /= math.sqrt(2.0)  # orthonormal DCT-II
    return log_amp @ basis.T


def dtw_path(cost: np.ndarray) -> tuple[float, np.ndarray]:
    """Dynamic time warping over a cost matrix ``[n, m]``: the minimum total cost of a
    monotone path with steps (1,0), (0,1), (1,1), and the path ``[k, 2]``.

    Example:
        >>> c = np.array([[0., 1., 2.], [1., 0., 1.], [2., 1., 0.]])
        >>> total, path = dtw_path(c)
        >>> total, path.tolist()
        (0.0, [[0, 0], [1, 1], [2, 2]])
    """
    c = np.asarray(cost, np.float64)
    if c.ndim != 2 or 0 in c.shape:
        raise TtsKitError(f"dtw_path needs a non-empty 2-D cost matrix, got shape {c.shape}")
    n, m = c.shape
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for d in range(n + m - 1):  # anti-diagonal i + j = d (0-based cost indices)
        i = np.arange(max(0, d - m + 1), min(n, d + 1))
        j = d - i
        best = np.minimum(np.minimum(acc[i, j], acc[i, j + 1]), acc[i + 1, j])
        acc[i + 1, j + 1] = c[i, j] + best
    path = [(n - 1, m - 1)]
    i, j = n, m
    while (i, j) != (1, 1):
        moves = ((i - 1, j - 1), (i - 1, j), (i, j - 1))
        i, j = min(moves, key=lambda ij: acc[ij])
        path.append((i - 1, j - 1))
    return float(acc[n, m]), np.array(path[::-1], dtype=np.int64)


#: ``10 / ln(10) * sqrt(2)``: the MCD constant (Kubichek 1993), for cepstra in nepers.
MCD_CONSTANT = 10.0 / math.log(10.0) * math.sqrt(2.0)


def mel_cepstral_distortion(
    reference: np.ndarray, candidate: np.ndarray, sample_rate: int, align: bool | None = None,
    n_coeffs: int = 25,
) -> float:
    """Mel-cepstral distortion in dB (Kubichek 1993; energy excluded), averaged over frames
    paired one to one, or along the DTW path for unequal lengths (or ``align=True``).

    Example:
        >>> x = np.random.default_rng(0).standard_normal(44100).astype(np.float32)
        >>> mel_cepstral_distortion(x, x, 44100)
        0.0
    """
    if not np.isfinite(np.asarray(candidate)).all():
        return math.nan
    a = mel_cepstrum(reference, sample_rate, n_coeffs)[:, 1:]
    b = mel_cepstrum(candidate, sample_rate, n_coeffs)[:, 1:]
    if align is None:
        align = len(reference) != len(candidate)
    if not align:
        n = min(len(a), len(b))
        dist = np.sqrt(np.sum((a[:n] - b[:n]) ** 2, axis=1))
    else:
        cost = np.sqrt(np.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=2))
        _, path = dtw_path(cost)
        dist = cost[path[:, 0], path[:, 1]]
    return float(MCD_CONSTANT * np.mean(dist))
