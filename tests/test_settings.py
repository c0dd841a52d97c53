"""Settings are read from the environment once (`tts_kit.core.settings`), and nothing else in
the package reads ``os.environ`` for a setting."""

from __future__ import annotations

import ast
from pathlib import Path

from tts_kit.core.settings import VARIABLES, Settings, reset_settings, settings

PKG = Path(__file__).resolve().parent.parent / "tts_kit"

#: Modules that touch ``os.environ`` to build a child process's environment (a spawned,
#: measured trial; a notebook kernel; a server), which is not reading a setting, and the
#: CLI (an entry point).
CHILD_ENV = {"core/settings.py", "runtime/measure.py", "report/render.py", "serve/launch.py"}
ENTRY_POINTS = ("cli/",)


def _environ_reads(path: Path) -> list[int]:
    """Lines where ``path``'s code (docstrings aside) names ``os.environ`` or ``getenv``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "getenvb"):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and any(
                a.name in ("environ", "getenv") for a in node.names):
            lines.append(node.lineno)
    return sorted(lines)


def test_only_settings_reads_the_environment():
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel in CHILD_ENV or rel.startswith(ENTRY_POINTS):
            continue
        if lines := _environ_reads(path):
            found[rel] = lines
    assert found == {}, f"read settings via tts_kit.core.settings.settings(): {found}"


def test_the_checker_sees_environ_reads(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text('"""os.environ in a docstring is fine."""\nimport os\n'
                   'x = os.environ.get("TTS_KIT_MODEL_DIR")\ny = os.getenv("HOME")\n')
    assert _environ_reads(bad) == [3, 4]


def test_from_env_reads_every_variable():
    env = {var: f"v-{name}" for name, var in VARIABLES.items()}
    s = Settings.from_env({**env, "HOME": "/h", "HF_HUB_OFFLINE": "true"})
    assert {name: getattr(s, name) for name in VARIABLES} == {
        name: f"v-{name}" for name in VARIABLES}
    assert s.hf_hub_offline and s.home == Path("/h")
    assert Settings.from_env({"TTS_KIT_MODEL_DIR": ""}).model_dir is None


def test_settings_are_read_once_until_reset(monkeypatch):
    import os

    monkeypatch.setenv("TTS_KIT_MODEL_DIR", "/first")
    first = settings()
    os.environ["TTS_KIT_MODEL_DIR"] = "/second"  # behind the package's back: not seen
    assert settings() is first and settings().model_dir == "/first"
    reset_settings()
    assert settings().model_dir == "/second"


def test_settings_are_frozen():
    import dataclasses

    import pytest

    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings().model_dir = "x"  # type: ignore[misc]
