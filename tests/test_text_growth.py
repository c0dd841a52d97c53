"""No rule makes normalisation cost grow faster than the input (issue 24).

Adversarial inputs (long runs of digits, dots, @, hyphens, nested brackets, Hangul
without a space ...) are normalised at two sizes, four times apart; the larger must cost
less than 10 times the smaller. That compares growth, not speed: a linear rule costs
about 4x, a quadratic one about 16x, whatever the machine. Both sizes are large (tens of
thousands of characters), so that fixed costs and CPU caches do not count for the small
one, and each time is the best of a few runs of this thread's CPU time (not wall time: a
busy machine makes a thread wait for a core, which is not cost), so a busy machine does not
make the test flaky.
"""

from __future__ import annotations

import time

import pytest

from tts_kit.text import Normalizer

SMALL = 22_000
#: Four times SMALL, under the 100,000 characters one call accepts.
LARGE = 4 * SMALL
#: Cost bound for four times the input: linear is ~4x, quadratic ~16x.
BOUND = 10

CASES = {
    "digits": "7",
    "dots": ".",
    "at signs": "@",
    "hyphens": "-",
    "digit groups": "1-",
    "dotted digits": "1.",
    "comma digits": "1,",
    "slashed digits": "1/",
    "nested brackets": None,  # built below: ((((a))))
    "hangul without spaces": "가",
    "capitals": "A",
    "e-mail-like": None,
    "dotted words": "a.",
    "wave dashes": "~",
    "weekday brackets": "(월)",
}


def _text(name: str, n: int) -> str:
    if name == "nested brackets":
        return "(" * (n // 2) + "a" + ")" * (n // 2 - 1)
    if name == "e-mail-like":
        return "a" * (n - 10) + "@b.com"
    unit = CASES[name]
    return (unit * (n // len(unit) + 1))[:n]


def _cost(norm: Normalizer, text: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.thread_time()
        try:
            norm.normalize(text)
        except ValueError:
            pass  # refused (nothing speakable) is fine: it still had to be scanned
        best = min(best, time.thread_time() - start)
    return best


@pytest.mark.parametrize("lang", ["ko", "en"])
@pytest.mark.parametrize("name", list(CASES))
def test_cost_grows_linearly_with_adversarial_input(lang, name):
    norm = Normalizer(lang)
    small, large = _text(name, SMALL), _text(name, LARGE)
    assert len(large) <= 100_000
    _cost(norm, small, 1)  # warm the caches
    t_small = max(_cost(norm, small, 5), 1e-3)  # below 1 ms the clock is the noise
    t_large = _cost(norm, large, 3)
    assert t_large < BOUND * t_small, (
        f"{name} ({lang}): {LARGE:,} characters cost {t_large * 1e3:.1f} ms, "
        f"{t_large / t_small:.0f}x the {t_small * 1e3:.2f} ms of {SMALL:,}: superlinear"
    )
