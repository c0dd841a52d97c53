"""A blind ABX test: the listener hears A (reference), B (conversion) and a hidden X and
says which X is; the result carries its exact binomial p-value (under `ALPHA`: told apart).
`AbxTest` is plain Python; `abx_widget` puts it behind ipywidgets.
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tts_kit.core.errors import TtsKitError

A, B = "A", "B"
#: Below this p-value the listener is taken to hear a difference.
ALPHA = 0.05


def binomial_p_value(correct: int, trials: int) -> float:
    """One-sided exact binomial p-value: P(at least ``correct`` of ``trials`` by chance).

    Example:
        >>> binomial_p_value(9, 10), binomial_p_value(0, 10), binomial_p_value(0, 0)
        (0.0107421875, 1.0, 1.0)
    """
    if not 0 <= correct <= trials:
        raise TtsKitError(f"abx: {correct} correct out of {trials} trials is not possible")
    return sum(math.comb(trials, k) for k in range(correct, trials + 1)) / 2 ** trials


@dataclass
class AbxTest:
    """``trials`` ABX trials over ``clips`` pairs (A, B), in an order drawn from ``seed``:
    X is A in half the trials.

    Example:
        >>> t = AbxTest(clips=2, trials=6, seed=1)
        >>> sorted(t.x_is(i) for i in range(6)).count("A")
        3
    """

    clips: int
    trials: int
    seed: int = 0
    answers: dict[int, str] = field(default_factory=dict)
    _order: list[tuple[int, str]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if self.clips < 1 or self.trials < 1:
            raise TtsKitError(f"abx: give at least one clip and one trial (got {self.clips} "
                              f"clip(s), {self.trials} trial(s))")
        rng = random.Random(self.seed)
        xs = [A, B] * (self.trials // 2) + ([rng.choice((A, B))] if self.trials % 2 else [])
        rng.shuffle(xs)
        clips = [i % self.clips for i in range(self.trials)]
        rng.shuffle(clips)
        self._order = list(zip(clips, xs))

    def clip_of(self, trial: int) -> int:
        """Which clip pair trial ``trial`` plays."""
        return self._order[trial][0]

    def x_is(self, trial: int) -> str:
        """What X is in trial ``trial``: ``"A"`` or ``"B"`` (hidden from the listener)."""
        return self._order[trial][1]

    def answer(self, trial: int, choice: str) -> bool:
        """Record the listener's ``choice`` (``"A"`` or ``"B"``, once); True when right.

        Example:
            >>> t = AbxTest(1, 2, seed=0)
            >>> t.answer(0, t.x_is(0)), t.done
            (True, False)
        """
        if choice not in (A, B):
            raise TtsKitError(f"abx: answer 'A' or 'B', not {choice!r}")
        if not 0 <= trial < self.trials:
            raise TtsKitError(f"abx: trial {trial} is not one of 0..{self.trials - 1}")
        if trial in self.answers:
            raise TtsKitError(f"abx: trial {trial} is already answered")
        self.answers[trial] = choice
        return choice == self.x_is(trial)

    @property
    def done(self) -> bool:
        """Every trial answered."""
        return len(self.answers) == self.trials

    def result(self) -> dict[str, Any]:
        """The score so far: answered, correct, the p-value, and what it says.

        Example:
            >>> AbxTest(1, 3).result()["verdict"]
            'no answers yet'
        """
        n = len(self.answers)
        k = sum(c == self.x_is(i) for i, c in self.answers.items())
        p = binomial_p_value(k, n)
        if n == 0:
            said = "no answers yet"
        elif p < ALPHA:
            said = f"audible: the listener told A from B (p = {p:.3g} < {ALPHA})"
        else:
            said = f"not shown audible: {k}/{n} right is what guessing gives (p = {p:.3g})"
        return {"trials": self.trials, "answered": n, "correct": k, "p_value": p,
                "alpha": ALPHA, "verdict": said, "seed": self.seed, "clips": self.clips,
                "answers": [{"trial": i, "clip": self.clip_of(i), "x_is": self.x_is(i),
                             "chosen": c} for i, c in sorted(self.answers.items())]}

    def save(self, path: str | os.PathLike[str], **context: Any) -> None:
        """Write `result` and ``context`` (which models, texts) as JSON, atomically.

        Example:
            >>> AbxTest(1, 2).save("fp16.abx.json", reference="piper:joe-us")  # doctest: +SKIP
        """
        from tts_kit.core import atomic

        with atomic.atomic_file(path) as tmp:
            tmp.write_text(json.dumps({**context, **self.result()}, indent=1) + "\n",
                           encoding="utf-8")


def abx_widget(a_wavs: list[np.ndarray], b_wavs: list[np.ndarray], sample_rate: int, *,
               trials: int = 10, seed: int | None = None, save_to: str | None = None,
               context: dict[str, Any] | None = None) -> Any:
    """The ABX test as an ipywidgets box; when done, the p-value (saved to ``save_to``).

    Example:
        >>> abx_widget([ref], [fp16], 22050, trials=10, save_to="fp16.abx.json")  # doctest: +SKIP
    """
    import ipywidgets as W

    from tts_kit.models.synthesis import SynthesisResult

    if len(a_wavs) != len(b_wavs) or not a_wavs:
        raise TtsKitError("abx: give the same number (at least one) of A and B clips")
    test = AbxTest(len(a_wavs), trials, random.SystemRandom().randrange(2**31)
                   if seed is None else seed)
    players = {k: W.Audio(format="wav", autoplay=False, loop=False) for k in ("A", "B", "X")}
    status = W.HTML()
    buttons = [W.Button(description=f"X is {c}") for c in (A, B)]
    state = {"trial": 0}

    def show() -> None:
        i = state["trial"]
        if i >= trials:
            for b in buttons:
                b.disabled = True
            r = test.result()
            status.value = f"<b>{r['correct']}/{r['answered']} right</b>: {r['verdict']}"
            if save_to:
                test.save(save_to, **(context or {}))
                status.value += f" (saved to {save_to})"
            return
        c = test.clip_of(i)
        x = a_wavs[c] if test.x_is(i) == A else b_wavs[c]
        for key, wav in (("A", a_wavs[c]), ("B", b_wavs[c]), ("X", x)):
            players[key].value = SynthesisResult(wav=np.asarray(wav, np.float32),
                                                 sample_rate=sample_rate, text="").wav_bytes()
        status.value = f"trial {i + 1} of {trials}"

    def on_click(choice: str, _button: Any) -> None:
        test.answer(state["trial"], choice)
        state["trial"] += 1
        show()

    for b, c in zip(buttons, (A, B)):
        b.on_click(functools.partial(on_click, c))
    show()
    row = W.HBox([W.VBox([W.Label(k), p]) for k, p in players.items()])
    box = W.VBox([row, W.HBox(buttons), status])
    box.abx = test  # the logic, for the notebook to read back
    return box
