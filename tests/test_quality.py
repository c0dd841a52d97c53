"""Perceptual and intelligibility metrics on known cases, the take spread, and the verdict
table on hand-built metric sets (`tts_kit.fidelity.quality`, `quality_verdict`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tts_kit.fidelity import quality as q
from tts_kit.fidelity.quality import QualityMetrics
from tts_kit.fidelity.quality_verdict import (
    ACCEPTABLE,
    BROKEN,
    DEGRADED,
    TRANSPARENT,
    VERDICT_TABLE,
    TakeSpread,
    take_spread,
    verdict,
)

needs = {m: pytest.mark.skipif(m in q.missing(), reason=q.missing().get(m, ""))
         for m in q.PACKAGES}


def _voiced(seconds: float = 2.0, rate: int = 16000) -> np.ndarray:
    """A speech-like test signal: harmonics of a gliding 120-180 Hz voice, syllable-rate
    amplitude modulation, quiet (not silent) between syllables."""
    t = np.arange(int(seconds * rate)) / rate
    f0 = 150 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    x = sum(np.sin(k * phase) / k for k in range(1, 20))
    env = 0.1 + 0.9 * np.clip(np.sin(2 * np.pi * 2.5 * t), 0, None) ** 0.5
    return (0.2 * x * env).astype(np.float64)


def _noisy(x: np.ndarray, snr_db: float, seed: int = 0) -> np.ndarray:
    n = np.random.default_rng(seed).standard_normal(x.size)
    n *= np.sqrt(np.sum(x * x) / np.sum(n * n) / 10 ** (snr_db / 10))
    return x + n


def test_word_error_rate_counts_edits_per_reference_word():
    assert q.word_error_rate("The quick, brown fox.", "the quick brown fox") == 0.0
    assert q.word_error_rate("a b c d", "a c d e f") == 0.75  # 1 deletion, 2 insertions
    assert q.word_error_rate("", "") == 0.0 and q.word_error_rate("", "x") == math.inf


@needs["pesq"]
@needs["stoi"]
@needs["dnsmos"]
def test_identical_signals_score_the_top_of_each_scale():
    x = _voiced(4.6)  # doubled to 9.2 s: one DNSMOS window (a 2 s clip makes seven)
    m = q.quality_metrics([x], [x], 16000, skip=("wer",))
    assert m.pesq == pytest.approx(4.64, abs=0.01)
    assert m.stoi == pytest.approx(1.0, abs=1e-6)
    assert m.dnsmos_drop == 0.0 and 1.0 <= m.dnsmos_ovrl <= 5.0
    assert m.mcd_db == 0.0


@needs["pesq"]
@needs["stoi"]
@needs["dnsmos"]
def test_white_noise_at_falling_snr_gives_monotone_scores():
    x = _voiced(2.3)  # repeated to 9.2 s: one DNSMOS window per clip (2 s made seven)
    # The reference's DNSMOS measured once and handed in, as the take spread does: the
    # four candidates' DNSMOS and every other metric are measured per level.
    ref = [q.dnsmos(x, 16000)["ovrl"]]
    ms = [q.quality_metrics([x], [_noisy(x, snr)], 16000, ref_dnsmos=ref, skip=("wer",))
          for snr in (50, 40, 30, 20)]
    for a, b in zip(ms, ms[1:]):
        assert a.pesq > b.pesq and a.stoi > b.stoi and a.mcd_db < b.mcd_db
        assert a.dnsmos_drop < b.dnsmos_drop


def test_resampling_to_16k_keeps_a_tone_and_its_length():
    rate = 22050
    t = np.arange(rate) / rate
    y = q.to_16k(np.sin(2 * np.pi * 440 * t), rate)
    assert y.size == 16000
    peak = np.argmax(np.abs(np.fft.rfft(y))) * 16000 / y.size
    assert peak == pytest.approx(440, abs=1)


def test_an_absent_package_is_skipped_with_a_one_line_note(monkeypatch):
    real = q.importlib.util.find_spec
    monkeypatch.setattr(q.importlib.util, "find_spec",
                        lambda name: None if name == "pesq" else real(name))
    x = _voiced(1.0)
    m = q.quality_metrics([x], [x], 16000, skip=("stoi", "dnsmos", "wer"))
    assert math.isnan(m.pesq) and m.mcd_db == 0.0
    assert m.notes == ["pesq: skipped (pesq is not installed; pip install 'tts_kit[quality]')"]


def test_metrics_round_trip_through_json():
    m = QualityMetrics(pesq=3.5, stoi=0.91, notes=["x"])
    back = QualityMetrics.from_dict(m.to_dict())
    assert back.pesq == 3.5 and math.isnan(back.wer) and back.notes == ["x"]


# -- the verdict table on hand-built metric sets ---------------------------------------------

SPREAD = TakeSpread(QualityMetrics(pesq=1.9, stoi=0.62, dnsmos_drop=0.15, wer=0.1,
                                   mcd_db=7.0), takes=4)


@pytest.mark.parametrize("metrics, expected, decided_by", [
    # Closer to the reference than its own takes on every metric: transparent, whatever
    # the published scale says of PESQ 2.5; WER equal to the takes' is nearest its limit.
    (dict(pesq=2.5, stoi=0.95, dnsmos_drop=0.05, wer=0.1, mcd_db=2.0), TRANSPARENT, "wer"),
    (dict(pesq=2.0, stoi=0.95, dnsmos_drop=0.05, wer=0.0, mcd_db=2.0), TRANSPARENT, "pesq"),
    # WER higher than the takes': not transparent (WER decides); all bands acceptable.
    (dict(pesq=4.0, stoi=0.97, dnsmos_drop=0.1, wer=0.15, mcd_db=2.0), ACCEPTABLE, "wer"),
    (dict(pesq=3.4, stoi=0.85, dnsmos_drop=0.2, wer=0.2, mcd_db=9.0), DEGRADED, "stoi"),
    (dict(pesq=3.4, stoi=0.95, dnsmos_drop=0.2, wer=0.6, mcd_db=9.0), BROKEN, "wer_rise"),
    (dict(pesq=1.5, stoi=0.95, dnsmos_drop=0.1, wer=0.1, mcd_db=9.0), BROKEN, "pesq"),
    (dict(pesq=3.2, stoi=0.95, dnsmos_drop=0.5, wer=0.1, mcd_db=9.0), DEGRADED, "dnsmos_drop"),
    # A candidate that did not synthesise (NaN where the takes were measured): broken.
    (dict(pesq=math.nan, stoi=0.95, dnsmos_drop=0.1, wer=0.1, mcd_db=9.0), BROKEN, "pesq"),
])
def test_the_verdict_table_on_hand_built_metric_sets(metrics, expected, decided_by):
    v = verdict(QualityMetrics(**metrics), SPREAD)
    assert (v.name, v.decided_by) == (expected, decided_by), v.line()
    assert decided_by in v.line()


def test_without_a_package_its_metric_is_left_out_of_the_verdict():
    spread = TakeSpread(QualityMetrics(mcd_db=5.0), takes=3)  # only MCD measured
    assert verdict(QualityMetrics(mcd_db=4.0), spread).name == TRANSPARENT
    v = verdict(QualityMetrics(mcd_db=6.0), spread)  # outside, and nothing else to say
    assert (v.name, v.decided_by) == (BROKEN, "mcd_db")


def test_the_table_is_one_source_for_code_and_the_guide():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "docs" / "guide.md").read_text()
    for k, (higher, ok, bad, src) in VERDICT_TABLE.items():  # the guide's rows, as Markdown
        op = ">=" if higher else "<="
        row = f"| {k} | {'higher' if higher else 'lower'} | {op} {ok:g} | {op} {bad:g} | {src} |"
        assert row in readme, row
    assert set(VERDICT_TABLE) == {"pesq", "stoi", "wer_rise", "dnsmos_drop"}


# -- the take spread ---------------------------------------------------------------------------


def test_the_take_spread_on_the_tiny_stand_in(tiny_bundle_dir):
    from tts_kit.fidelity.listening import reference_takes

    takes, rate = reference_takes(tiny_bundle_dir, ("Hello there.",), takes=3)
    assert len(takes) == 3 and not np.array_equal(takes[0][0], takes[1][0])
    s = take_spread(takes, rate, skip=("wer", "dnsmos"))
    assert s.takes == 3 and len(s.per_take) == 2
    assert s.worst.mcd_db > 0  # other noise is another take
    assert s.worst.mcd_db == max(m.mcd_db for m in s.per_take)
    # The same noise again is no further than the takes: transparent on this scale.
    same = q.quality_metrics(takes[0], reference_takes(tiny_bundle_dir, ("Hello there.",), 1)[0][0],
                     rate, skip=("wer", "dnsmos"))
    assert verdict(same, s).name == TRANSPARENT


def test_the_takes_are_read_by_one_engine_as_fresh_ones_would(tiny_bundle_dir, monkeypatch):
    """Building an engine is the costly part of a take (about 1.5 CPU-s for a Piper voice):
    `reference_takes` builds one for all of them, and each take is still the reading a
    fresh engine gives with that seed's noise."""
    from tts_kit.fidelity import listening

    texts = ("Hello there.", "Hi.")
    fresh = [listening._synth(tiny_bundle_dir, texts, seed)[0] for seed in range(2)]
    built = []
    real = listening._engine
    monkeypatch.setattr(listening, "_engine", lambda m: built.append(m) or real(m))
    takes, rate = listening.reference_takes(tiny_bundle_dir, texts, takes=2)
    assert len(built) == 1 and rate == 44100
    assert len(takes) == 2 and all(len(t) == 2 for t in takes)
    assert all(np.array_equal(a, b) for t, f in zip(takes, fresh) for a, b in zip(t, f))
    assert not np.array_equal(takes[0][0], takes[1][0])  # each take its own noise


def test_a_reuse_scope_builds_each_engine_once_reads_the_same_and_closes_it(
        tiny_bundle_dir, monkeypatch):
    """Inside `reuse_engines` the takes, the judged reading and the distances share one
    engine per model and preset (a Piper voice's is about 1.5 CPU-s to build), read what a
    fresh engine reads, and the engine is closed when the scope ends; outside, each
    reading builds its own and closes it."""
    from tts_kit.fidelity import engine_reuse, listening
    from tts_kit.models import family
    from tts_kit.precision import evaluate

    texts = ("Hello there.",)
    built = []
    real = family.make_engine
    monkeypatch.setattr(family, "make_engine",
                        lambda *a, **k: built.append(real(*a, **k)) or built[-1])
    fresh = listening._synth(tiny_bundle_dir, texts, 0)[0]
    assert len(built) == 1 and built[0].loaded_stages == []  # closed when done
    with engine_reuse.reuse_engines():
        takes, _ = listening.reference_takes(tiny_bundle_dir, texts, takes=1)
        again = listening._synth(tiny_bundle_dir, texts, 0)[0]
        with engine_reuse.reuse_engines():  # nested: the same scope
            d = evaluate.piper_distances(tiny_bundle_dir, tiny_bundle_dir, texts)
        assert len(built) == 2 and built[1].loaded_stages != []  # alive in the scope
    assert built[1].loaded_stages == []  # closed with the scope
    assert np.array_equal(takes[0][0], fresh[0]) and np.array_equal(again[0], fresh[0])
    assert d.snr_db == math.inf or d.snr_db > 100


# -- a converted Supertonic copy judged by `verify --against DIR` ------------------------------

_PACKAGES = ("pesq", "pystoi", "speechmos", "pocketsphinx")


def _only_mcd(monkeypatch):
    """The perceptual packages as if absent (seconds each on noise): MCD and the verdict's
    logic stay real, and each absent metric is skipped with its one-line note."""
    real = q.importlib.util.find_spec
    monkeypatch.setattr(q.importlib.util, "find_spec",
                        lambda name, *a: None if name in _PACKAGES else real(name, *a))


def test_on_the_stand_in_the_verdict_says_its_audio_is_noise_and_skips_wer(tiny_bundle_dir):
    from tts_kit.fidelity.listening import judge_quality

    j = judge_quality(tiny_bundle_dir, tiny_bundle_dir, ("Hello there.",), takes=2,
                      skip=("pesq", "stoi", "dnsmos"))
    assert j["verdict"] == TRANSPARENT and j["decided_by"] == "mcd_db"  # computed, on noise
    assert j["metrics"]["wer"] is None and j["metrics"]["mcd_db"] == 0.0
    assert j["notes"][0].startswith("the stand-in has random weights: its audio is noise")
    assert "wer: skipped (the stand-in's audio is noise: there are no words to recognise)" \
        in j["notes"]
    assert all("\n" not in n for n in j["notes"])


def test_a_candidate_judged_on_a_measured_spread_is_the_only_one_synthesised(
        tiny_bundle_dir, monkeypatch):
    """The spread keeps take 0's readings: judging a candidate on it synthesises the
    candidate only (each reading is an engine built and run: seconds for a real voice),
    and the verdict is the one a fresh take 0 gives."""
    from tts_kit.fidelity import listening

    skip, texts = ("pesq", "stoi", "dnsmos"), ("Hello there.",)
    spread = listening.quality_spread(tiny_bundle_dir, texts, takes=2, skip=skip)
    fresh = listening.judge_quality(tiny_bundle_dir, tiny_bundle_dir, texts, takes=2, skip=skip)
    read = []
    real = listening._synth
    monkeypatch.setattr(listening, "_synth", lambda m, t, seed: read.append(m) or real(m, t, seed))
    j = listening.judge_quality(tiny_bundle_dir, tiny_bundle_dir, texts, skip=skip,
                                spread=spread)
    assert len(read) == 1  # the candidate; take 0 came with the spread
    assert j["metrics"] == fresh["metrics"] and j["verdict"] == fresh["verdict"]
    assert "reference_wavs" not in spread.to_dict()  # JSON stays the figures


@pytest.mark.slow
def test_verify_against_a_copy_gives_the_listeners_verdict(tiny_bundle_dir, tmp_path,
                                                          monkeypatch):
    import shutil

    from tts_kit.core.errors import TtsKitError
    from tts_kit.fidelity import verify as v

    _only_mcd(monkeypatch)
    copy = tmp_path / "copy"
    shutil.copytree(tiny_bundle_dir, copy)
    case = [v.Case(("Hello there.",), "en", ("M1",), steps=1)]
    report = v.verify(tiny_bundle_dir, copy, case, quality=True, quality_texts=("Hi there.",))
    assert report.verdict[0] == TRANSPARENT and report.floor_verdict is None
    assert report.to_dict()["quality"]["decided_by"] == "mcd_db"
    table = report.table().splitlines()
    # The listener's verdict first (after the title) and alone; the tolerance is conformance.
    assert table[1].startswith("verdict (PESQ/STOI/DNSMOS/WER against the source's 3 takes): "
                               "TRANSPARENT (decided by mcd_db)")
    assert "float-rounding tolerance (conformance, not the verdict of a lossy copy): PASS: " \
        "within tolerance" in table
    assert sum(line.startswith("verdict") for line in table) == 1
    with pytest.raises(TtsKitError, match="converted copy"):
        v.verify(tiny_bundle_dir, "official", case, quality=True)


@pytest.mark.slow
def test_verify_floor_on_a_copy_is_decided_by_the_listeners_verdict(tiny_bundle_dir, tmp_path,
                                                                   monkeypatch, capsys):
    """The command: --floor judges a copy on the floor and as a listener; the listener
    decides the exit status."""
    import json
    import shutil

    from tts_kit.cli import main
    from tts_kit.fidelity import verify as v

    _only_mcd(monkeypatch)
    copy = tmp_path / "copy"
    shutil.copytree(tiny_bundle_dir, copy)
    case = [v.Case(("Hello there.",), "en", ("M1",), steps=1)]
    monkeypatch.setattr(v, "default_cases", lambda voices: case)
    monkeypatch.setattr("tts_kit.fidelity.listening.QUALITY_TEXTS", ("Hi there.",))
    js = tmp_path / "v.json"
    assert main(["verify", "--model", str(tiny_bundle_dir), "--against", str(copy), "--floor",
                 "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "conformance: within float rounding of the source" in out
    assert out.index("TRANSPARENT (decided by") < out.index("conformance:")
    data = json.loads(js.read_text())
    assert data["verdict"] == TRANSPARENT and data["floor_verdict"] == "within the floor"


# -- DNSMOS P.808: its mel features computed by our own code, equal to librosa's ---------------


def test_p808_features_equal_librosas_on_the_stored_fixture():
    """tests/fixtures/make_p808_reference.py wrote librosa's features (speechmos' call) once;
    librosa is no dependency. float32 rounding in librosa: |diff| <= 3e-7 near zero, hence
    the tiny atol beside rtol 1e-4."""
    from pathlib import Path

    ref = np.load(Path(__file__).parent / "fixtures" / "p808_mel_reference.npz")
    for name in ("voiced", "noise"):
        audio, want = ref[f"{name}_audio"], ref[f"{name}_features"]
        got = q.p808_features(audio[:-160])
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert ref["voiced_features"].min() == -1.0  # the 80 dB floor is exercised


@needs["dnsmos"]
def test_p808_mos_is_reported_beside_p835_and_falls_with_noise():
    x = _voiced(4.6)  # doubled to 9.2 s: one DNSMOS window
    noisy = _noisy(x, 0.0)
    m = q.quality_metrics([x], [noisy], 16000, skip=("pesq", "stoi", "wer"))
    clean = q.dnsmos(x, 16000)
    assert 1.0 <= m.dnsmos_p808 < clean["p808"] <= 5.0 and m.to_dict()["dnsmos_p808"]
    assert m.dnsmos_drop == pytest.approx(clean["ovrl"] - m.dnsmos_ovrl)
