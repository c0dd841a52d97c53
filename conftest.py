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


class _SettingsMonkeyPatch(pytest.MonkeyPatch):
    """`pytest.MonkeyPatch` that makes `tts_kit.core.settings.settings()` read the
    environment again after each change and each undo: the package reads it once
    (`tts_kit.core.settings`), tests change it freely."""

    def setenv(self, name: str, value: str, prepend: str | None = None) -> None:
        super().setenv(name, value, prepend)
        _reset()

    def delenv(self, name: str, raising: bool = True) -> None:
        super().delenv(name, raising)
        _reset()

    def undo(self) -> None:
        super().undo()
        _reset()


def _reset() -> None:
    from tts_kit.core.settings import reset_settings

    reset_settings()


@pytest.fixture
def monkeypatch():
    """Every test's (and doctest's) ``monkeypatch``, with settings re-read on each change."""
    mp = _SettingsMonkeyPatch()
    yield mp
    mp.undo()
