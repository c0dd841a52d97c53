"""Settings for every test, the library's doctests (tts_kit/) included.

Users get the full-scale stand-in when no model is found (realistic costs, a 400 MB
build); tests and doctests use the tiny one, so discovery stays fast. The users' default
is checked on its own (tests/test_standin.py). tests/conftest.py holds the fixtures.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _tiny_standin_for_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTS_KIT_STANDIN_SCALE", "tiny")
