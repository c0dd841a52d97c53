"""Signal measures: the mel filterbank against its textbook definition, SNR and log-mel."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tts_kit.fidelity.audio_metrics import (
    MCD_CONSTANT,
    dtw_path,
    log_mel_distance,
    mel_cepstral_distortion,
    mel_cepstrum,
    mel_filterbank,
    snr_db,
    snr_from_energies,
    waveform_fidelity,
)


def _hz_to_mel(f):
    return 2595.0 * np.log10(1.0 + np.asarray(f) / 700.0)


@pytest.mark.parametrize("sr, n_fft, n_mels", [(44100, 2048, 80), (16000, 512, 40)])
def test_filterbank_is_the_textbook_one(sr, n_fft, n_mels):
    fb = mel_filterbank(sr, n_fft, n_mels)
    freqs = np.linspace(0, sr / 2, n_fft // 2 + 1)
    assert fb.shape == (n_mels, freqs.size) and (fb >= 0).all() and (fb <= 1).all()
    # Centres evenly spaced on the HTK mel scale, from fmin to fmax in n_mels + 2 edges.
    edges = np.linspace(0, _hz_to_mel(sr / 2), n_mels + 2)
    centres_hz = 700.0 * (10.0 ** (edges[1:-1] / 2595.0) - 1.0)
    # Each triangle is zero outside its neighbours' centres ...
    for k in range(n_mels):
        lo = 700.0 * (10.0 ** (edges[k] / 2595.0) - 1.0)
        hi = 700.0 * (10.0 ** (edges[k + 2] / 2595.0) - 1.0)
        assert not fb[k, (freqs <= lo) | (freqs >= hi)].any()
    # ... and neighbours sum to 1 between the first and the last centre: no gap in the
    # band and nothing counted twice.
    inside = (freqs >= centres_hz[0]) & (freqs <= centres_hz[-1])
    np.testing.assert_allclose(fb[:, inside].sum(axis=0), 1.0, atol=1e-9)


def test_each_triangle_peaks_at_one_at_its_centre():
    # With bins fine enough, every triangle's highest bin sits at its centre, at ~1.
    sr, n_fft, n_mels = 16000, 2**16, 20
    fb = mel_filterbank(sr, n_fft, n_mels)
    freqs = np.linspace(0, sr / 2, n_fft // 2 + 1)
    edges = np.linspace(0, _hz_to_mel(sr / 2), n_mels + 2)
    centres_hz = 700.0 * (10.0 ** (edges[1:-1] / 2595.0) - 1.0)
    np.testing.assert_allclose(fb.max(axis=1), 1.0, atol=0.02)
    bin_hz = freqs[1]
    assert np.all(np.abs(freqs[fb.argmax(axis=1)] - centres_hz) <= bin_hz)


def test_snr_and_log_mel():
    x = np.sin(np.linspace(0, 3000, 44100))
    assert snr_db(x, x) == math.inf
    assert snr_db(x, x * 1.1) == pytest.approx(20.0)
    assert math.isnan(snr_db(x, np.full_like(x, np.nan)))
    assert math.isnan(snr_db(np.zeros(4), np.ones(4)))
    with pytest.raises(ValueError, match="shapes differ"):
        snr_db(x, x[:-1])
    assert snr_from_energies(1.0, 0.01) == pytest.approx(20.0)
    noisy = x + 0.1 * np.random.default_rng(0).standard_normal(x.size)
    assert 0.0 < log_mel_distance(x, x * 1.01, 44100) < log_mel_distance(x, noisy, 44100)


def test_waveform_fidelity_pools_pairs_and_reports_lengths():
    a = np.sin(np.linspace(0, 300, 4410)).astype(np.float32)
    b = np.sin(np.linspace(0, 900, 8820)).astype(np.float32)
    snr, lmd, n_ref, n_cand = waveform_fidelity([a, b], [a * 1.1, b[:-10] * 1.1], 44100)
    assert snr == pytest.approx(20.0, abs=0.01) and lmd > 0
    assert (n_ref, n_cand) == (a.size + b.size, a.size + b.size - 10)
    with pytest.raises(ValueError, match="2 reference waveforms but 1"):
        waveform_fidelity([a, b], [a], 44100)


def _all_monotone_paths(n: int, m: int, i: int = 0, j: int = 0):
    """Every path from (0,0) to (n-1,m-1) with steps (1,0), (0,1), (1,1): the definition."""
    if (i, j) == (n - 1, m - 1):
        yield [(i, j)]
        return
    for di, dj in ((1, 0), (0, 1), (1, 1)):
        if i + di < n and j + dj < m:
            for rest in _all_monotone_paths(n, m, i + di, j + dj):
                yield [(i, j), *rest]


@pytest.mark.parametrize("n, m, seed", [(1, 1, 0), (1, 4, 1), (4, 1, 2), (3, 5, 3), (5, 5, 4),
                                        (6, 4, 5)])
def test_dtw_finds_the_cheapest_monotone_path(n, m, seed):
    cost = np.random.default_rng(seed).random((n, m))
    best = min(_all_monotone_paths(n, m), key=lambda p: sum(cost[i, j] for i, j in p))
    total, path = dtw_path(cost)
    assert total == pytest.approx(sum(cost[i, j] for i, j in best))
    assert total == pytest.approx(float(cost[path[:, 0], path[:, 1]].sum()))
    assert path[0].tolist() == [0, 0] and path[-1].tolist() == [n - 1, m - 1]
    steps = np.diff(path, axis=0)
    assert ((steps >= 0) & (steps <= 1)).all() and (steps.sum(axis=1) >= 1).all()
    with pytest.raises(ValueError, match="non-empty 2-D"):
        dtw_path(np.zeros((0, 3)))


def test_mel_cepstrum_is_the_orthonormal_dct_of_the_log_amplitude():
    x = np.random.default_rng(0).standard_normal(8192)
    c = mel_cepstrum(x, 44100, n_coeffs=80)  # all coefficients: the DCT is invertible
    from tts_kit.fidelity.audio_metrics import log_mel

    log_amp = log_mel(x, 44100) * math.log(10) / 20
    np.testing.assert_allclose(np.sum(c**2, axis=1), np.sum(log_amp**2, axis=1), rtol=1e-9)
    np.testing.assert_allclose(c[:, 0], log_amp.sum(axis=1) / math.sqrt(80), rtol=1e-9)


def test_mcd_textbook_scale_and_time_alignment():
    rng = np.random.default_rng(1)
    sr = 16000
    t = np.arange(sr) / sr
    x = (np.sin(2 * np.pi * 220 * t * (1 + t)) + 0.05 * rng.standard_normal(sr))
    assert mel_cepstral_distortion(x, x, sr) == 0.0
    # A gain changes only c0 (excluded): MCD ignores loudness.
    assert mel_cepstral_distortion(x, 2 * x, sr) == pytest.approx(0.0, abs=1e-9)
    # Its constant is 10/ln(10)*sqrt(2), as Kubichek defined it.
    assert MCD_CONSTANT == pytest.approx(6.1418, abs=1e-4)
    # A copy delayed by 2048 samples (4 frames): unaligned it is far, DTW aligns it back.
    late = np.concatenate([np.zeros(2048), x])
    aligned = mel_cepstral_distortion(x, late, sr)
    unaligned = mel_cepstral_distortion(x, late[:sr], sr, align=False)
    assert aligned < 0.25 * unaligned
    assert math.isnan(mel_cepstral_distortion(x, np.full(sr, np.nan), sr))
