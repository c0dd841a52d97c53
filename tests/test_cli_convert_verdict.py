"""One verdict per conversion (issue 38): ``convert`` says the listener's verdict first and
alone, shows the comparison with the source's noise floor as the conformance figure it is
(never "risk" when the listener is content), keeps the same split in its report JSON, and
exits 1 when the verdict is "broken" (a script can act on it); 0 otherwise."""

from __future__ import annotations

import json

import pytest

import tts_kit.precision as precision
from tts_kit.cli import main
from tts_kit.fidelity.floor import FLOOR_READINGS
from tts_kit.fidelity.listening import decide
from tts_kit.precision.conversion_report import ConversionReport

QUALITY = {"verdict": "transparent", "decided_by": "pesq", "reasons": [], "metrics": {},
           "spread": {"takes": 3, "worst": {}}}
FLOOR = {"verdict": "beyond the floor", "reasons": ["MCD 0.02 dB > 1e-05 dB (2x the floor)"],
         "distances": {"snr_db": 54.0, "log_mel_db": 0.005, "mcd_db": 0.02},
         "floor": {"snr_db": 125.0, "log_mel_db": 1e-6, "mcd_db": 1e-5},
         "take": {"log_mel_db": 2.6, "mcd_db": 10.7}}


@pytest.mark.slow  # a measured conversion of the tiny stand-in (about 20 s)
def test_convert_says_one_verdict_first_and_no_risk(tiny_bundle_dir, tmp_path, capsys):
    rc = main(["convert", "--to", "fp16", "--fidelity-only", str(tiny_bundle_dir),
               str(tmp_path / "dst"), "--report", str(tmp_path / "r.json")])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0
    verdicts = [line for line in lines if line.lower().startswith("verdict")]
    assert len(verdicts) == 1 and lines[0] == verdicts[0], lines
    assert "TRANSPARENT" in lines[0] or "ACCEPTABLE" in lines[0], lines[0]
    assert not any("risk" in line.lower() for line in lines), lines
    floor_line = next(line for line in lines if "measured noise floor" in line)
    assert floor_line.startswith("conformance") and "expected for FP16" in floor_line
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["verdict"] == data["quality"]["verdict"] and "judgement" not in data
    assert data["conformance"]["verdict"] in FLOOR_READINGS


def test_a_report_saved_with_the_old_fields_reads_back(tmp_path):
    old = ConversionReport(kind="bundle", src="a", dst="b", to="fp16", quality=QUALITY,
                           conformance={**FLOOR, "verdict": "audible risk"}).to_dict()
    old["judgement"] = old.pop("conformance")
    del old["verdict"]
    back = ConversionReport.from_dict(old)
    assert back.conformance["verdict"] == "audible risk" and back.verdict[0] == "transparent"
    assert "risk" not in back.table().lower() and "expected for FP16" in back.table()


def test_one_rule_decides():
    assert decide(QUALITY, ("broken", ["x"])) == ("transparent", [])
    assert decide({}, ("beyond the floor", ["x"])) == ("beyond the floor", ["x"])
    assert decide(None, None) is None


@pytest.mark.parametrize(("quality", "floor", "code"), [
    ("broken", "within the floor", 1), ("transparent", "beyond the floor", 0),
    ("acceptable", "broken", 0), (None, "broken", 1), (None, "beyond the floor", 0)])
def test_convert_exits_1_when_its_verdict_is_broken(quality, floor, code, monkeypatch, capsys,
                                                     tmp_path):
    report = ConversionReport(
        kind="bundle", src="src", dst=str(tmp_path / "dst"), to="fp16",
        quality={**QUALITY, "verdict": quality, "reasons": ["stoi 0.1"]} if quality else {},
        conformance={**FLOOR, "verdict": floor, "reasons": ["non-finite audio"]})
    monkeypatch.setattr(precision, "convert", lambda *a, **k: report)
    assert main(["convert", "--to", "fp16", "src", str(tmp_path / "dst")]) == code
    err = capsys.readouterr().err
    if code:
        line = err.strip().splitlines()[-1]
        assert "is broken (stoi 0.1)" in line or "is broken (non-finite audio)" in line
