"""``convert`` exits 1 when its own verdict on the copy is "broken" (a script can act on it);
0 otherwise. The conversion is replaced by its report (the verdict is what is under test)."""

from __future__ import annotations

import types

import pytest

import tts_kit.precision as precision
from tts_kit.cli import main


@pytest.mark.parametrize(("verdict", "code"), [("broken", 1), ("audible risk", 0),
                                                ("within the floor", 0)])
def test_convert_exits_1_when_its_verdict_is_broken(verdict, code, monkeypatch, capsys,
                                                     tmp_path):
    report = types.SimpleNamespace(
        table=lambda: "table", save=lambda path: None,
        judgement={"verdict": verdict, "reasons": ["non-finite audio"]})
    monkeypatch.setattr(precision, "convert", lambda *a, **k: report)
    assert main(["convert", "--to", "fp16", "src", str(tmp_path / "dst")]) == code
    err = capsys.readouterr().err
    if code:
        line = err.strip().splitlines()[-1]
        assert "is broken against the source's measured noise floor (non-finite audio)" in line
