"""pyproject.toml and environment.yml must install the same packages, at the same floors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the check runs on any newer CI

ROOT = Path(__file__).resolve().parent.parent


def _norm(req: str) -> tuple[str, str]:
    m = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", req)
    assert m, req
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def _pyproject() -> dict[str, str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(data["dependencies"])
    for extra in data["optional-dependencies"].values():
        reqs += [r for r in extra if not r.startswith("tts_kit")]
    return dict(_norm(r) for r in reqs)


def _environment() -> dict[str, str]:
    # A tiny reader for the flat YAML we write: "  - name>=x" and a nested "pip:" list.
    out = {}
    text = (ROOT / "environment.yml").read_text()
    for line in text.split("dependencies:", 1)[1].splitlines():
        line = line.split("#", 1)[0].rstrip()
        m = re.match(r"^\s*-\s+([A-Za-z0-9_.\-]+[^:]*)$", line)
        if not m or m.group(1).startswith("-e"):
            continue
        name, spec = _norm(m.group(1))
        if name not in ("python", "pip"):  # the interpreter and installer, not packages
            out[name] = spec
    return out


def test_environment_matches_pyproject():
    py, env = _pyproject(), _environment()
    assert set(py) == set(env), (
        f"only in pyproject: {sorted(set(py) - set(env))}; "
        f"only in environment.yml: {sorted(set(env) - set(py))}"
    )
    for name, spec in py.items():
        assert env[name] == spec, f"{name}: pyproject {spec!r} vs environment.yml {env[name]!r}"


def test_all_extra_covers_every_extra():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(data["optional-dependencies"]) - {"all"}
    all_extra = data["optional-dependencies"]["all"][0]
    assert set(re.search(r"\[(.*)\]", all_extra).group(1).split(",")) == extras
