"""The blind ABX test's logic without a browser (`tts_kit.notebook.abx`): trial order from a
seed, scoring, the binomial p-value, storing the result; and the widget driven by its
buttons."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tts_kit.core.errors import TtsKitError
from tts_kit.notebook.abx import AbxTest, abx_widget, binomial_p_value


def test_the_p_value_is_the_exact_binomial_tail():
    assert binomial_p_value(10, 10) == 1 / 1024
    assert binomial_p_value(5, 10) == pytest.approx(638 / 1024)
    # Against a brute-force count of all 2^8 answer sheets.
    sheets = [bin(s).count("1") for s in range(256)]
    for k in range(9):
        assert binomial_p_value(k, 8) == sum(c >= k for c in sheets) / 256
    with pytest.raises(TtsKitError, match="not possible"):
        binomial_p_value(3, 2)


def test_the_trial_order_comes_from_the_seed_and_is_balanced():
    a, b = AbxTest(3, 12, seed=7), AbxTest(3, 12, seed=7)
    order = [(a.clip_of(i), a.x_is(i)) for i in range(12)]
    assert order == [(b.clip_of(i), b.x_is(i)) for i in range(12)]
    assert order != [(AbxTest(3, 12, seed=8).clip_of(i), AbxTest(3, 12, seed=8).x_is(i))
                     for i in range(12)]
    assert [x for _, x in order].count("A") == 6
    assert sorted(c for c, _ in order) == [0] * 4 + [1] * 4 + [2] * 4


def test_scoring_a_perfect_a_guessing_and_a_wrong_listener():
    perfect, wrong = AbxTest(2, 10, seed=1), AbxTest(2, 10, seed=1)
    for i in range(10):
        assert perfect.answer(i, perfect.x_is(i))
        assert not wrong.answer(i, "B" if wrong.x_is(i) == "A" else "A")
    r = perfect.result()
    assert (r["correct"], r["answered"], r["p_value"]) == (10, 10, 1 / 1024)
    assert r["verdict"].startswith("audible")
    assert wrong.result()["p_value"] == 1.0 and perfect.done
    always_a = AbxTest(1, 10, seed=3)
    for i in range(10):
        always_a.answer(i, "A")
    assert always_a.result()["correct"] == 5  # balanced: a constant answer scores half
    assert always_a.result()["verdict"].startswith("not shown audible")


def test_bad_answers_are_one_line_errors():
    t = AbxTest(1, 2)
    t.answer(0, "A")
    for trial, choice, msg in ((0, "B", "already answered"), (5, "A", "not one of"),
                               (1, "C", "answer 'A' or 'B'")):
        with pytest.raises(TtsKitError, match=msg):
            t.answer(trial, choice)
    with pytest.raises(TtsKitError, match="at least one"):
        AbxTest(0, 3)


def test_the_widget_plays_x_and_saves_the_result_beside_the_report(tmp_path):
    pytest.importorskip("ipywidgets")
    a = [np.zeros(800, np.float32)]
    b = [np.full(800, 0.1, np.float32)]
    out = tmp_path / "fp16.abx.json"
    box = abx_widget(a, b, 8000, trials=4, seed=2, save_to=str(out),
                     context={"reference": "piper:joe-us", "candidate": "joe-fp16"})
    test = box.abx
    players, buttons, status = box.children[0].children, box.children[1].children, box.children[2]
    for i in range(4):
        x = players[2].children[1].value
        assert x == (players[0] if test.x_is(i) == "A" else players[1]).children[1].value
        buttons[0 if test.x_is(i) == "A" else 1].click()  # the right answer
    saved = json.loads(out.read_text())
    assert saved["correct"] == 4 and saved["reference"] == "piper:joe-us"
    assert math.isclose(saved["p_value"], 1 / 16) and "4/4 right" in status.value
    assert all(b.disabled for b in buttons)
