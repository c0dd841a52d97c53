"""The listener's verdict kept beside a converted copy, and the report that reads it (issue 23)."""

from __future__ import annotations

import json
import shutil

import pytest

from tts_kit.precision.verdict_file import (
    VERDICT_FILE,
    read_verdict,
    save_verdict,
    verdict_path,
    verdict_sentence,
)

QUALITY = {"verdict": "degraded", "decided_by": "stoi", "reasons": ["stoi 0.77 < 0.90"],
           "metrics": {"stoi": 0.77}, "notes": [], "spread": {"takes": 3}, "seconds": 1.0}


def test_saved_in_a_directory_and_beside_a_file(tmp_path):
    d = tmp_path / "copy"
    d.mkdir()
    assert save_verdict(d, QUALITY, recipe="int8", source="src") == d / VERDICT_FILE
    got = read_verdict(d)
    assert got["verdict"] == "degraded" and got["recipe"] == "int8" and "spread" not in got
    f = tmp_path / "out.onnx"
    f.write_bytes(b"x")
    save_verdict(f, QUALITY, recipe="int8-flow")
    assert verdict_path(f) == tmp_path / "out.onnx.verdict.json"
    assert read_verdict(f)["recipe"] == "int8-flow"


@pytest.mark.parametrize("content", ["{not json", "[1]", '{"verdict": "<b>great</b>"}',
                                     '{"decided_by": "mcd"}', "[" * 100000])
def test_anything_but_a_verdict_reads_as_none(tmp_path, content):
    (tmp_path / VERDICT_FILE).write_text(content)
    assert read_verdict(tmp_path) is None


def test_fields_that_are_not_short_words_are_dropped(tmp_path):
    (tmp_path / VERDICT_FILE).write_text(json.dumps(
        {"verdict": "broken", "recipe": "x" * 500, "decided_by": {"a": 1}}))
    got = read_verdict(tmp_path)
    assert got["recipe"] is None and got["decided_by"] is None
    assert verdict_sentence(got).endswith("was broken.")


def test_the_report_names_the_conversion_it_measured(tiny_bundle_dir, tmp_path):
    from tts_kit.models.resolve import open_model
    from tts_kit.report import SweepSpec, TuningReport
    from tts_kit.report.answer import conclusions
    from tts_kit.report.document import model_fingerprint

    copy = tmp_path / "copy"
    shutil.copytree(tiny_bundle_dir, copy)
    assert model_fingerprint(open_model(copy))["conversion"] is None
    save_verdict(copy, QUALITY, recipe="int8")
    model = model_fingerprint(open_model(copy))
    assert model["conversion"]["verdict"] == "degraded"
    rep = TuningReport(SweepSpec(), [], None, "", {}, model, {})
    assert ("This model is a converted copy (recipe int8): the listener's verdict when it was "
            "made was degraded, decided by stoi.") in conclusions(rep)
    # report.json's schema accepts it, and refuses a verdict that is not one of the four
    import jsonschema

    from tts_kit.report.document import _schema

    jsonschema.validate(json.loads(json.dumps(model)), _schema()["properties"]["model"])
    model["conversion"]["verdict"] = "great"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(model, _schema()["properties"]["model"])


def test_a_copy_of_a_copy_does_not_inherit_its_verdict(tiny_bundle_dir, tmp_path):
    from tts_kit.precision import convert

    src = tmp_path / "judged"
    shutil.copytree(tiny_bundle_dir, src)
    save_verdict(src, QUALITY, recipe="int8")
    convert(src, tmp_path / "again", to="fp16", stages=["duration_predictor"], measure=False)
    assert read_verdict(tmp_path / "again") is None and read_verdict(src) is not None
