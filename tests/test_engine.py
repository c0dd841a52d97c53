"""Engine: the pipeline of the contract on the tiny stand-in, with real ONNX Runtime."""

from __future__ import annotations

import io

import numpy as np
import onnxruntime as ort
import pytest
import soundfile as sf

from tts_kit import Engine
from tts_kit.core import contract
from tts_kit.core.textproc import encode


@pytest.fixture(scope="module")
def engine(tiny_bundle_dir) -> Engine:
    return Engine(tiny_bundle_dir)


def test_length_equals_trimmed_duration(engine: Engine):
    text = "The quick brown fox jumps over the lazy dog."
    r = engine.synthesize(text, lang="en", voice="M1", steps=2, speed=1.0, seed=1)
    # The predicted duration, computed straight from the graph, sets the length.
    ids, mask = encode([r.text], "en", engine.bundle.indexer)
    dp = ort.InferenceSession(str(engine.bundle.stage_path("duration_predictor")))
    dur = dp.run(None, {"text_ids": ids, "style_dp": engine.bundle.voice("M1").dp,
                        "text_mask": mask})[0]
    assert len(r.wav) == int(dur[0] * 44100)
    assert r.wav.dtype == np.float32 and np.isfinite(r.wav).all()
    assert np.abs(r.wav).max() <= 1.0
    assert r.sample_rate == 44100
    assert set(contract.STAGES) <= set(r.timings) and r.timings["total"] > 0


def test_speed_shortens(engine: Engine):
    slow = engine.synthesize("Speed changes the length.", speed=0.8, steps=1, seed=0)
    fast = engine.synthesize("Speed changes the length.", speed=1.6, steps=1, seed=0)
    assert len(fast.wav) == pytest.approx(len(slow.wav) / 2, rel=0.01)


def test_same_seed_same_samples(engine: Engine):
    a = engine.synthesize("Same seed, same noise.", steps=2, seed=7)
    b = engine.synthesize("Same seed, same noise.", steps=2, seed=7)
    c = engine.synthesize("Same seed, same noise.", steps=2, seed=8)
    np.testing.assert_array_equal(a.wav, b.wav)
    assert a.wav.shape == c.wav.shape and not np.array_equal(a.wav, c.wav)


def test_batch_equals_single_calls(engine: Engine):
    texts = ["A short one.", "A noticeably longer sentence for the second voice."]
    batch = engine.synthesize_batch(texts, voices=["M1", "F1"], steps=2, seed=3)
    one = engine.synthesize(texts[0], voice="M1", steps=2, seed=3)
    two = engine.synthesize(texts[1], voice="F1", steps=2, seed=4)
    for got, want in zip(batch, (one, two)):
        assert got.wav.shape == want.wav.shape
        np.testing.assert_allclose(got.wav, want.wav, atol=1e-4)
    assert [r.voice for r in batch] == ["M1", "F1"]


def test_long_text_is_chunked_with_silence(engine: Engine):
    sentence = "This sentence is here to make the text long enough to need chunks. "
    r = engine.synthesize(sentence * 8, steps=1, seed=0)
    assert len(r.chunks) > 1 and all(len(c) <= 300 for c in r.chunks)
    parts = [engine.synthesize(c, steps=1, seed=0, ).wav for c in r.chunks]
    gap = int(0.3 * 44100)
    assert len(r.wav) == sum(len(p) for p in parts) + gap * (len(parts) - 1)
    assert not r.wav[len(parts[0]) : len(parts[0]) + gap].any()


def test_korean_default_chunk_is_300_model_characters(engine: Engine):
    # Sized by what the model reads (NFKD: a Hangul syllable is 2-3 jamo), about the
    # upstream 120 syllables.
    from tts_kit.text.chunking import model_length

    r = engine.synthesize("안녕하세요. 오늘은 날씨가 정말 좋네요. " * 8, lang="ko", steps=1, seed=0)
    assert len(r.chunks) > 1 and all(model_length(c) <= 300 for c in r.chunks)
    assert max(len(c) for c in r.chunks) <= 150


def test_wav_bytes_in_memory(engine: Engine):
    r = engine.synthesize("Bytes, not files.", steps=1, seed=0)
    data, sr = sf.read(io.BytesIO(r.wav_bytes()), dtype="float32")
    assert sr == 44100 and len(data) == len(r.wav)
    np.testing.assert_allclose(data, r.wav, atol=1 / 32767 + 1e-6)


def test_normalize_switch(tiny_bundle_dir):
    on = Engine(tiny_bundle_dir).synthesize("I have 3 apples.", steps=1, seed=0)
    off = Engine(tiny_bundle_dir, normalize=False).synthesize("I have 3 apples.", steps=1, seed=0)
    assert "three" in on.text and "3" in off.text


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"text": ""}, "text is empty"),
        ({"text": "   \n\t "}, "text is empty"),
        ({"text": "x" * 100_001}, "more than the 100,000 allowed"),
        ({"lang": "xx"}, "unknown language 'xx'; use one of: en, ko"),
        ({"text": "Hello \u0e01\u0e02 world", "lang": "na"}, r"cannot read: '\u0e01' '\u0e02'"),
        ({"steps": 0}, r"steps must be an integer in 1..100, got 0"),
        ({"steps": 101}, r"steps must be an integer in 1..100"),
        ({"steps": 2.5}, r"steps must be an integer"),
        ({"speed": 0.5}, r"speed must be a number in 0.7..2, got 0.5"),
        ({"speed": 2.5}, r"speed must be a number in 0.7..2"),
        ({"voice": "Q7"}, r"unknown voice 'Q7'; available voices: F1, M1"),
    ],
)
def test_errors_are_one_line(engine: Engine, kwargs, pattern):
    args = {"text": "Hello.", **kwargs}
    with pytest.raises(ValueError, match=pattern) as info:
        engine.synthesize(args.pop("text"), **args)
    assert "\n" not in str(info.value)


def test_per_stage_preset_override(tiny_bundle_dir):
    from tts_kit.runtime.sessions import SessionPreset

    one = SessionPreset(name="one-thread", intra_op_num_threads=1)
    engine = Engine(tiny_bundle_dir, stage_presets={"vocoder": one})
    assert engine.preset_for("vocoder") is one
    assert engine.preset_for("text_encoder") is engine.preset
    with pytest.raises(ValueError, match="unknown stage"):
        Engine(tiny_bundle_dir, stage_presets={"decoder": one})


def test_the_normalisers_are_built_with_the_engine_not_on_the_first_request(tiny_bundle_dir):
    from tts_kit.text import normalizer

    normalizer._default.cache_clear()
    Engine(tiny_bundle_dir, normalize=False)
    assert normalizer._default.cache_info().currsize == 0
    Engine(tiny_bundle_dir)
    assert normalizer._default.cache_info().currsize == 2  # en and ko, ready for request one


def test_stage_hook_sees_every_run_in_pipeline_order(engine: Engine):
    seen = []

    def hook(stage, feeds, out):
        seen.append((stage, sorted(feeds), out.shape, out.dtype))
        return np.zeros(1)  # ignored: a hook observes, it cannot change the audio

    plain = engine.synthesize_batch(["One.", "A second text."], steps=3, seed=5)
    remove = engine.add_stage_hook(hook)
    try:
        hooked = engine.synthesize_batch(["One.", "A second text."], steps=3, seed=5)
    finally:
        remove()
    stages = [s for s, *_ in seen]
    # One batch round: each stage once, the vector estimator once per flow step, the
    # vocoder once per item (it runs unpadded).
    assert stages == ["duration_predictor", "text_encoder", *["vector_estimator"] * 3,
                      "vocoder", "vocoder"]
    assert seen[0][1] == ["style_dp", "text_ids", "text_mask"]
    assert seen[-1][1] == ["latent"] and all(dt == np.float32 for *_, dt in seen)
    for got, want in zip(hooked, plain):
        np.testing.assert_array_equal(got.wav, want.wav)
    remove()  # twice is harmless
    engine.synthesize("After removal.", steps=1, seed=0)
    assert len(seen) == len(stages)


def test_stage_hook_gets_read_only_arrays_and_removal_is_per_registration(engine: Engine):
    calls = []

    def hook(stage, feeds, out):
        calls.append(stage)
        with pytest.raises(ValueError, match="read-only"):
            out[...] = 0
        with pytest.raises(ValueError, match="read-only"):
            next(iter(feeds.values()))[...] = 0

    first = engine.add_stage_hook(hook)
    engine.add_stage_hook(hook)()  # the same function twice: two registrations
    engine.synthesize("Read only.", steps=1, seed=0)
    first()
    assert calls == ["duration_predictor", "text_encoder", "vector_estimator", "vocoder"]
    with pytest.raises(TypeError, match="callable"):
        engine.add_stage_hook("not a function")


def test_run_stage_replays_recorded_inputs(engine: Engine):
    recorded = []
    remove = engine.add_stage_hook(
        lambda stage, feeds, out: recorded.append((stage, dict(feeds), np.array(out))))
    engine.synthesize("Replay me.", steps=1, seed=2)
    remove()
    for stage, feeds, out in recorded:
        np.testing.assert_array_equal(engine.run_stage(stage, feeds), out)
    with pytest.raises(ValueError, match="unknown stage 'decoder'"):
        engine.run_stage("decoder", {})


def _constant_duration_predictor(path, value: float) -> None:
    """A duration predictor with the contract's inputs and output that predicts ``value``
    seconds for every item, whatever the text."""
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(t.name, TensorProto.INT64 if t.dtype == "int64"
                                            else TensorProto.FLOAT, list(t.shape))
              for t in contract.GRAPHS["duration_predictor"].inputs]
    out = helper.make_tensor_value_info("duration", TensorProto.FLOAT, ["B"])
    nodes = [
        helper.make_node("ReduceMax", ["text_mask"], ["m"], axes=[1, 2], keepdims=0),
        helper.make_node("Mul", ["m", "zero"], ["z"]),
        helper.make_node("Add", ["z", "value"], ["duration"]),
    ]
    consts = [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
              helper.make_tensor("value", TensorProto.FLOAT, [], [value])]
    graph = helper.make_graph(nodes, "constant_duration", inputs, [out], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())


@pytest.mark.parametrize("value, said", [
    (float("nan"), "predicted nan s"), (float("inf"), "predicted inf s"),
    (1e7, "predicted 1e[+]07 s"), (600.0, "predicted 600 s"), (-1.0, "predicted -1 s"),
    (0.0, "predicted 0 s"),
])
def test_absurd_predicted_durations_are_refused(tiny_bundle_dir, tmp_path, value, said):
    # NaN crashed, inf and 1e7 asked for a 73 GiB waveform, 600 gave 571 s of audio for
    # "Hello there.", a negative duration gave one sample.
    import shutil
    import tracemalloc

    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_bundle_dir, bundle)
    _constant_duration_predictor(bundle / "onnx" / "duration_predictor.onnx", value)
    engine = Engine(bundle)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=f"^duration_predictor {said} for a 12-character "
                                             r"chunk \('Hello there.'\); a duration must be "
                                             r"finite, above 0 and at most 1 s per character "
                                             r"\+ 2 s \(14 s here\)") as info:
            engine.synthesize("Hello there.", seed=0, speed=1.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "\n" not in str(info.value) and "rebuild the bundle" in str(info.value)
    assert peak < 20 * 2**20  # refused before anything was allocated for that duration


def test_a_sane_constant_duration_still_synthesises(tiny_bundle_dir, tmp_path):
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_bundle_dir, bundle)
    _constant_duration_predictor(bundle / "onnx" / "duration_predictor.onnx", 1.05)
    result = Engine(bundle).synthesize("Hello there.", seed=0, speed=1.05)
    assert result.duration_s == pytest.approx(1.0, abs=1e-4)


def test_nan_samples_fail_instead_of_playing_as_dc(tiny_bundle_dir, monkeypatch):
    # The last line of defence behind the bundle's checks: a NaN reaching the vocoder
    # (here a style let in past validation) must not be written as full-scale DC.
    from tts_kit.models.supertonic.bundle import VoiceStyle

    engine = Engine(tiny_bundle_dir)
    good = engine.bundle.voice("M1")
    bad = VoiceStyle("M1", np.full_like(good.ttl, np.nan), good.dp)
    monkeypatch.setattr(engine.bundle, "voice", lambda name: bad)
    with pytest.raises(ValueError, match="^the model produced NaN or infinite samples; its "
                                         "graphs are damaged"):
        engine.synthesize("Hello there.", seed=0)


# -- silent text loss (issue 15) ------------------------------------------------------------


@pytest.mark.parametrize("text, pattern", [
    ("你好，", r"^text has nothing to speak after normalisation: 'en' dropped '你' '好' and "
              r"only ',' is left"),  # was synthesised as ","
    # was synthesised as "Hello":
    ("Hello 你好 مرحبا", r"^normalisation for 'en' dropped 7 of 12 letters \('你' '好' "),
    ("." * 1000, r"^text has nothing to speak after normalisation: only '...' is left"),  # 78 s
    ("!?!? ... ,,,", r"^text has nothing to speak after normalisation"),
    ("<ko>안녕하세요</ko> Hello.", r"^text has a <ko> tag but lang is 'en'; the model reads one "
                               r"language per call: synthesise that part separately with "
                               r"lang='ko'"),
    ("<en></en>", r"^text is empty"),  # its own language tags alone
])
def test_text_that_would_lose_most_of_its_words_is_refused(engine: Engine, text, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        engine.synthesize(text, lang="en", seed=0)
    assert "\n" not in str(info.value)


def test_dropped_characters_are_named_in_a_warning(engine: Engine):
    with pytest.warns(UserWarning, match=r"^normalisation for 'en' dropped 2 character\(s\) the "
                                         r"model cannot say: '你' '好'; pass the text's own "
                                         r"lang="):
        result = engine.synthesize("Hello there, my friend 你好", lang="en", seed=0)
    assert result.text == "Hello there, my friend"


def test_nothing_is_warned_when_nothing_is_dropped(engine: Engine):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine.synthesize("Hello there, it is 10:30.", lang="en", seed=0, steps=1)
        engine.synthesize("안녕하세요, 3개 주세요.", lang="ko", seed=0, steps=1)


def test_punctuation_runs_are_collapsed(engine: Engine):
    long = engine.synthesize("Hello" + "." * 1000, lang="en", seed=0, steps=1)
    short = engine.synthesize("Hello...", lang="en", seed=0, steps=1)
    assert long.text == "Hello..." and long.duration_s == short.duration_s < 3


def test_language_tags_of_the_call_language_are_not_nested(engine: Engine):
    tagged = engine.synthesize("<en>Hello</en> there.", lang="en", seed=0, steps=1)
    plain = engine.synthesize("Hello there.", lang="en", seed=0, steps=1)
    assert tagged.text == "Hello there." and np.array_equal(tagged.wav, plain.wav)


def test_unnormalised_text_with_nothing_speakable_is_refused(tiny_bundle_dir):
    engine = Engine(tiny_bundle_dir, normalize=False)
    with pytest.raises(ValueError, match=r"^text has nothing to speak: only '....' is left"):
        engine.synthesize("....", lang="en")
    with pytest.raises(ValueError, match=r"^text has a <ko> tag but lang is 'ja'"):
        engine.synthesize("<ko>안녕</ko>", lang="ja")
