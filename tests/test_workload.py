"""The Workload: defaults, one-line validation, batches, the voice fallback, JSON and pickling."""

from __future__ import annotations

import json
import pickle

import pytest

from tts_kit.core import contract
from tts_kit.tuning.workload import DEFAULT_TEXTS, Workload


def test_the_defaults_are_the_measurement_defaults():
    w = Workload()
    assert w.texts == DEFAULT_TEXTS and w.lang == "en" and w.voice is None
    assert (w.steps, w.speed, w.seed, w.repeats, w.batch_size) == (
        contract.DEFAULT_STEPS, contract.DEFAULT_SPEED, 0, 5, 1)
    assert w.batch() == [DEFAULT_TEXTS[0]]


@pytest.mark.parametrize("changes, message", [
    ({"steps": 0}, "steps must be an integer >= 1, got 0"),
    ({"steps": 2.0}, "steps must be an integer >= 1, got 2.0"),
    ({"batch_size": 0}, "batch_size must be an integer >= 1, got 0"),
    ({"repeats": -1}, "repeats must be an integer >= 0, got -1"),
    ({"repeats": True}, "repeats must be an integer >= 0, got True"),
    ({"texts": []}, "texts must be non-empty strings"),
    ({"texts": ["ok", "  "]}, "texts must be non-empty strings"),
    ({"texts": [3]}, "texts must be non-empty strings"),
    ({"speed": 5}, "speed must be a number in 0.7..2, got 5"),
    ({"seed": None}, "seed must be an integer >= 0, got None"),
    # Bounds a crafted report.json could pass (issue 11, item 16): each measured every trial
    # as an error (or for ever) and read as "does NOT hold" instead of bad input.
    ({"seed": -1}, "seed must be an integer >= 0, got -1"),
    ({"steps": 101}, "steps must be an integer <= 100, got 101"),
    ({"repeats": 10**12}, "repeats must be an integer <= 1000, got 1000000000000"),
    ({"batch_size": 100_000}, "batch_size must be an integer <= 256, got 100000"),
    ({"lang": "xx"}, "lang must be a language code such as 'en'"),
    ({"lang": ""}, "lang must be a language code"),
    ({"voice": ""}, "voice must be a voice name or None"),
])
def test_bad_values_fail_in_one_line(changes, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("(", r"\(")) as err:
        Workload(**changes)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="must"):
        Workload().replace(**changes)  # a copy is checked like a new one


def test_a_batch_takes_the_first_texts_cycled():
    assert Workload(texts=["a", "b", "c"], batch_size=2).batch() == ["a", "b"]
    assert Workload(texts=["a", "b"], batch_size=5).batch() == ["a", "b", "a", "b", "a"]
    assert Workload(texts="one text").texts == ("one text",)  # a string is one text


def test_voice_for_falls_back_to_the_bundles_default(tiny_bundle_dir):
    from tts_kit.models.supertonic.bundle import Bundle

    bundle = Bundle(tiny_bundle_dir)
    assert bundle.default_voice == "M1"
    assert Workload().voice_for(bundle) == "M1"
    assert Workload(voice="F1").voice_for(bundle) == "F1"
    assert Workload(voice="Q7").voice_for(bundle) == "M1"  # a voice it lacks: the default


def test_default_voice_without_m1_is_the_first(tmp_path):
    from tts_kit.models.supertonic.bundle import Bundle
    from tts_kit.models.supertonic.standin import build_standin

    build_standin(tmp_path / "b", "tiny", voices=("F2", "F1"))
    bundle = Bundle(tmp_path / "b")
    assert bundle.default_voice == "F1" == Workload(voice="M1").voice_for(bundle)


def test_json_round_trip_and_unknown_keys():
    w = Workload(texts=["Hi.", "Bye."], lang="ko", voice="F1", steps=3, speed=1.2, seed=7,
                 repeats=2, batch_size=2)
    data = json.loads(json.dumps(w.to_dict()))
    assert data["texts"] == ["Hi.", "Bye."]
    assert Workload.from_dict(data) == w
    assert Workload.from_dict({}) == Workload()
    with pytest.raises(ValueError, match="workload: unknown key.s. text; known: "):
        Workload.from_dict({"text": "Hi."})


def test_a_workload_pickles_and_is_frozen():
    w = Workload(steps=2, voice="F1")
    assert pickle.loads(pickle.dumps(w)) == w
    with pytest.raises(AttributeError):
        w.steps = 3  # type: ignore[misc]
    assert hash(w) == hash(Workload(steps=2, voice="F1"))
