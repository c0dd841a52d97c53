"""A converted model judged as a listener would: perceptual and intelligibility metrics
(`tts_kit.fidelity.quality`) against a scale taken from the unconverted model's own
takes (`tts_kit.fidelity.quality_verdict`), as JSON-ready data (`judge_quality`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

#: Texts the quality verdict reads unless told (English: pocketsphinx's model is US English).
QUALITY_TEXTS: tuple[str, ...] = (
    "The quick brown fox jumps over the lazy dog.",
    "On a small server, memory decides how many voices can speak at once.",
)
#: Noise seeds of the reference's takes (the first is the candidate's too).
DEFAULT_TAKES = 3


def _engine(model: Any) -> Any:
    """The engine every reading here is made with, as a context (`engine_reuse.engine`)."""
    from tts_kit.fidelity.engine_reuse import default_preset, engine

    return engine(model, default_preset())


def _read(engine: Any, texts: Sequence[str], seed: int) -> list[np.ndarray]:
    """``engine``'s reading of ``texts`` with the noise of ``seed``: one text per call, so
    the noise of text i is the same for every model (seed ``seed * 1000 + i``)."""
    return [engine.synthesize_batch([t], seed=seed * 1000 + i)[0].wav
            for i, t in enumerate(texts)]


def _synth(model: Any, texts: Sequence[str], seed: int) -> tuple[list[np.ndarray], int]:
    with _engine(model) as engine:
        return _read(engine, texts, seed), int(engine.bundle.sample_rate)


def reference_takes(model: Any, texts: Sequence[str] = QUALITY_TEXTS,
                    takes: int = DEFAULT_TAKES) -> tuple[list[list[np.ndarray]], int]:
    """``takes`` readings of ``texts`` by ``model``, each with other noise (seeds 0..), all
    by one engine, and the sample rate.

    Example:
        >>> reference_takes("piper:joe-us", takes=2)[1]  # doctest: +SKIP
        22050
    """
    with _engine(model) as engine:
        return ([_read(engine, texts, seed) for seed in range(takes)],
                int(engine.bundle.sample_rate))


def judge_quality(reference: Any, candidate: Any, texts: Sequence[str] | None = None, *,
                  takes: int = DEFAULT_TAKES, skip: Sequence[str] = (),
                  spread: Any = None) -> dict[str, Any]:
    """``candidate`` (at take 0's noise) against ``reference``'s take spread: the verdict,
    the metric that decided it, the reasons, the candidate's metrics and the spread.
    ``spread``: a `TakeSpread` already measured for ``reference`` on the same texts.

    Example:
        >>> judge_quality("standin-tiny", "standin-tiny-int8")["verdict"]  # doctest: +SKIP
        'broken'
    """
    from tts_kit.fidelity.quality import quality_metrics
    from tts_kit.fidelity.quality_verdict import verdict

    texts = tuple(texts or QUALITY_TEXTS)
    t0 = time.perf_counter()
    noise = standin_notes(reference)
    skip = tuple(skip) + (("wer",) if noise else ())
    if spread is None:
        spread = quality_spread(reference, texts, takes=takes, skip=skip)
    if len(spread.reference_wavs) == len(texts) and spread.sample_rate:
        ref, rate = spread.reference_wavs, spread.sample_rate  # take 0, already synthesised
    else:
        ref, rate = _synth(reference, texts, 0)
    cand, _ = _synth(candidate, texts, 0)
    m = quality_metrics(ref, cand, rate, ref_transcripts=spread.transcripts or None,
                        ref_dnsmos=spread.reference_dnsmos or None, skip=skip)
    v = verdict(m, spread)
    return {**v.to_dict(), "metrics": m.to_dict(), "spread": spread.to_dict(),
            "texts": list(texts), "notes": [*noise, *m.notes],
            "seconds": time.perf_counter() - t0}


def standin_notes(model: Any) -> list[str]:
    """One-line notes when ``model`` is a stand-in (its audio is noise: WER is left out);
    empty for a real model.

    Example:
        >>> standin_notes("standin-tiny")[0].startswith("the stand-in")  # doctest: +SKIP
        True
    """
    from tts_kit.models.resolve import open_model

    opened = model if hasattr(model, "capabilities") else open_model(model)
    if not opened.capabilities.standin:
        return []
    return ["the stand-in has random weights: its audio is noise, so this verdict says how "
            "far the copy's noise is from the source's, not how speech would sound",
            "wer: skipped (the stand-in's audio is noise: there are no words to recognise)"]


def quality_spread(reference: Any, texts: Sequence[str] | None = None, *,
                   takes: int = DEFAULT_TAKES, skip: Sequence[str] = ()) -> Any:
    """The `TakeSpread` of ``reference`` on ``texts`` (for `judge_quality`'s ``spread``).

    Example:
        >>> quality_spread("piper:joe-us", takes=3).takes  # doctest: +SKIP
        3
    """
    from tts_kit.fidelity.quality_verdict import take_spread

    all_takes, rate = reference_takes(reference, tuple(texts or QUALITY_TEXTS), takes)
    skip = tuple(skip) + (("wer",) if standin_notes(reference) else ())
    return take_spread(all_takes, rate, skip=skip)


def decide(quality: dict[str, Any] | None, floor: tuple[str, list[str]] | None = None
           ) -> tuple[str, list[str]] | None:
    """The one verdict of a converted copy, ``(verdict, reasons)``: the listener's when
    measured, else the reading against the floor; None when neither was measured.

    Example:
        >>> decide({"verdict": "transparent", "reasons": []}, ("beyond the floor", ["x"]))
        ('transparent', [])
    """
    if quality:
        return quality["verdict"], list(quality.get("reasons", []))
    return (floor[0], list(floor[1])) if floor else None


def quality_lines(q: dict[str, Any]) -> list[str]:
    """`judge_quality`'s result as lines: the verdict with its deciding metric, the
    candidate's metrics against the takes'.

    Example:
        >>> quality_lines({"verdict": "transparent", "decided_by": "pesq", "reasons": [],
        ...                "metrics": {"pesq": 4.4}, "spread": {"takes": 4,
        ...                "worst": {"pesq": 2.1}}})[1].split(", ")[:2]
        ['  pesq 4.40 (takes 2.10)', 'stoi - (takes -)']
    """
    m, w = q.get("metrics", {}), q.get("spread", {}).get("worst", {})

    def cell(key: str, fmt: str) -> str:
        a, b = m.get(key), w.get(key)
        return (f"{key} {'-' if a is None else format(a, fmt)} "
                f"(takes {'-' if b is None else format(b, fmt)})")

    takes = q.get("spread", {}).get("takes", "?")
    out = [f"verdict (PESQ/STOI/DNSMOS/WER against the source's {takes} takes): "
           f"{q['verdict'].upper()} (decided by {q['decided_by']})",
           "  " + ", ".join(cell(k, f) for k, f in (("pesq", ".2f"), ("stoi", ".3f"),
                                                   ("dnsmos_drop", "+.2f"), ("wer", ".2f"),
                                                   ("mcd_db", ".2f")))]
    out += [f"  {r}" for r in q.get("reasons", [])]
    out += [f"  note: {n}" for n in q.get("notes", [])]
    return out
