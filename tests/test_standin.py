"""The synthetic stand-in bundle: contract, determinism, numerics, official-package conformance."""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tts_kit.core import contract
from tts_kit.core.settings import settings
from tts_kit.models.supertonic import standin as st

STAGES = contract.STAGES
ORT_TYPES = {"float32": "tensor(float)", "int64": "tensor(int64)"}
TEXT_60 = "The quick brown fox jumps over the lazy dog near the river.."
assert len(TEXT_60) == 60


def _sessions(bundle: Path, fp16: bool = False) -> dict[str, ort.InferenceSession]:
    out = {}
    for s in STAGES:
        path = bundle / contract.GRAPHS[s].path
        if fp16:
            from onnxruntime.transformers.float16 import convert_float_to_float16

            model = convert_float_to_float16(onnx.load(str(path)), keep_io_types=True)
            src: str | bytes = model.SerializeToString()
        else:
            src = str(path)
        out[s] = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
    return out


def _voice(bundle: Path, name: str = "M1") -> tuple[np.ndarray, np.ndarray]:
    v = json.loads((bundle / contract.VOICE_DIR / f"{name}.json").read_text())
    return (np.asarray(v["style_ttl"]["data"], np.float32),
            np.asarray(v["style_dp"]["data"], np.float32))


def _encode(bundle: Path, texts: list[str], lang: str = "en") -> tuple[np.ndarray, np.ndarray]:
    """Minimal text front end: NFKD, language tags, indexer lookup, zero padding."""
    indexer = json.loads((bundle / contract.INDEXER_FILE).read_text())
    wrapped = [f"<{lang}>{unicodedata.normalize('NFKD', t)}</{lang}>" for t in texts]
    n = max(len(t) for t in wrapped)
    ids = np.zeros((len(texts), n), np.int64)
    mask = np.zeros((len(texts), 1, n), np.float32)
    for i, t in enumerate(wrapped):
        ids[i, : len(t)] = [indexer[ord(c)] for c in t]
        mask[i, 0, : len(t)] = 1
    assert (ids >= 0).all(), "a test text uses a character the indexer lacks"
    return ids, mask


def _synthesize(sessions, bundle: Path, text: str, steps: int = 3, voice: str = "M1",
                seed: int = 0) -> tuple[np.ndarray, float, int]:
    """The pipeline of CONTRACT.md for one text; returns (wav, duration, n_tokens)."""
    ids, mask = _encode(bundle, [text])
    ttl, dp = _voice(bundle, voice)
    dur = sessions["duration_predictor"].run(
        None, {"text_ids": ids, "style_dp": dp, "text_mask": mask})[0]
    emb = sessions["text_encoder"].run(
        None, {"text_ids": ids, "style_ttl": ttl, "text_mask": mask})[0]
    frames = int(np.ceil(dur[0] * contract.SAMPLE_RATE / contract.FRAME_SAMPLES))
    x = np.random.default_rng(seed).standard_normal((1, 144, frames)).astype(np.float32)
    lmask = np.ones((1, 1, frames), np.float32)
    for k in range(steps):
        x = sessions["vector_estimator"].run(None, {
            "noisy_latent": x, "text_emb": emb, "style_ttl": ttl, "latent_mask": lmask,
            "text_mask": mask, "current_step": np.array([k], np.float32),
            "total_step": np.array([steps], np.float32)})[0]
    wav = sessions["vocoder"].run(None, {"latent": x})[0]
    assert wav.shape == (1, contract.FRAME_SAMPLES * frames)
    return wav[0, : int(dur[0] * contract.SAMPLE_RATE)], float(dur[0]), ids.shape[1]


@pytest.fixture(scope="module")
def sessions(tiny_bundle_dir: Path) -> dict[str, ort.InferenceSession]:
    return _sessions(tiny_bundle_dir)


# -- layout and contract ----------------------------------------------------------------


def test_io_matches_contract(sessions):
    for stage, sess in sessions.items():
        spec = contract.GRAPHS[stage]
        for got, want in [(sess.get_inputs(), spec.inputs), (sess.get_outputs(), spec.outputs)]:
            assert [t.name for t in got] == [t.name for t in want], stage
            for g, w in zip(got, want):
                assert g.type == ORT_TYPES[w.dtype], (stage, g.name)
                assert len(g.shape) == w.rank, (stage, g.name)
                for gd, wd in zip(g.shape, w.shape):
                    assert gd == wd, (stage, g.name, g.shape)  # ints fixed, names B/T/L


def test_graphs_pass_the_onnx_checker(tiny_bundle_dir: Path):
    for s in STAGES:
        onnx.checker.check_model(str(tiny_bundle_dir / contract.GRAPHS[s].path), full_check=True)
        model = onnx.load(str(tiny_bundle_dir / contract.GRAPHS[s].path))
        assert model.opset_import[0].version == 17
        assert st.NOTE in model.doc_string


def test_tiny_is_small_and_config_is_real_layout(tiny_bundle_dir: Path):
    total = sum(p.stat().st_size for p in tiny_bundle_dir.rglob("*") if p.is_file())
    assert total < 5_000_000
    cfg = json.loads((tiny_bundle_dir / contract.CONFIG_FILE).read_text())
    assert cfg["ae"]["sample_rate"] == 44100 and cfg["ae"]["base_chunk_size"] == 512
    assert cfg["ttl"]["chunk_compress_factor"] == 6 and cfg["ttl"]["latent_dim"] == 24
    assert cfg[contract.STANDIN_KEY] == {"scale": "tiny", "seed": 0,
                                        "version": st.STANDIN_VERSION, "note": st.NOTE}
    # Architecture keys mirror the real file and report this scale's (shrunk) widths.
    assert cfg["ttl"]["vector_field"]["main_blocks"]["convnext_0"]["idim"] == 64
    assert cfg["ae"]["decoder"]["head"]["odim"] == 512


def test_indexer_coverage(tiny_bundle_dir: Path):
    idx = np.asarray(json.loads((tiny_bundle_dir / contract.INDEXER_FILE).read_text()))
    assert idx.shape == (65536,) and idx.max() == st.VOCAB_SIZE - 1
    ranges = [(0x20, 0x7E), (0xA0, 0xFF), (0xAC00, 0xD7A3), (0x1100, 0x11FF),
              (0x3131, 0x318E), (0x2010, 0x2027), (0x3000, 0x3003)]
    for lo, hi in ranges:
        assert (idx[lo: hi + 1] >= 0).all(), hex(lo)
    supported = idx[idx >= 0]
    assert len(np.unique(supported)) == st.VOCAB_SIZE
    # What NFKD makes of Korean and accented Latin is covered too.
    for ch in unicodedata.normalize("NFKD", "안녕하세요 café Ünïcödé"):
        assert idx[ord(ch)] >= 0, repr(ch)


def test_voices_look_like_real_ones(tiny_bundle_dir: Path):
    ttl, dp = _voice(tiny_bundle_dir, "M1")
    ttl_f, _ = _voice(tiny_bundle_dir, "F1")
    assert ttl.shape == (1, 50, 256) and dp.shape == (1, 8, 16)
    assert 0.04 < ttl.std() < 0.08 and 0.18 < dp.std() < 0.32
    assert not np.allclose(ttl, ttl_f)
    meta = json.loads((tiny_bundle_dir / "voice_styles/M1.json").read_text())["metadata"]
    assert meta["synthetic"] is True


def test_deterministic_per_seed(tiny_bundle_dir: Path, tmp_path: Path):
    again = st.build_standin(tmp_path / "same", "tiny", seed=0)
    other = st.build_standin(tmp_path / "other", "tiny", seed=1)
    for rel in [contract.GRAPHS[s].path for s in STAGES] + ["voice_styles/M1.json"]:
        ref = (tiny_bundle_dir / rel).read_bytes()
        assert (again.path / rel).read_bytes() == ref, rel
        assert (other.path / rel).read_bytes() != ref, rel
    assert [s.params for s in again.stages] == [s.params for s in other.stages]


def test_build_refuses_bad_input(tmp_path: Path):
    with pytest.raises(ValueError, match="tiny, medium, full"):
        st.build_standin(tmp_path / "x", scale="huge")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not an empty directory"):
        st.build_standin(busy)
    assert (busy / "keep.txt").read_text() == "mine"
    with pytest.raises(ValueError, match="voice names"):
        st.build_standin(tmp_path / "v", voices=("../M1",))
    assert not list(tmp_path.glob(".*tmp-*")), "a failed build left its temp dir"


def test_build_into_empty_dir_with_more_voices(tmp_path: Path):
    target = tmp_path / "empty"
    target.mkdir()
    summary = st.build_standin(target, "tiny", seed=3, voices=("M1", "F1", "M2"))
    assert sorted(p.stem for p in (target / "voice_styles").glob("*.json")) == ["F1", "M1",
                                                                                 "M2"]
    assert [s.stage for s in summary.stages] == list(STAGES)
    table = summary.table()
    assert all(s in table for s in STAGES) and "total" in table
    assert summary.total_params == sum(s.params for s in summary.stages) > 0
    assert list(tmp_path.iterdir()) == [target]


# -- numerics ---------------------------------------------------------------------------


def test_pipeline_audio_and_durations(sessions, tiny_bundle_dir: Path):
    wav, dur, n_tokens = _synthesize(sessions, tiny_bundle_dir, TEXT_60)
    assert np.isfinite(wav).all() and np.abs(wav).max() <= 1.0
    assert 0.05 < wav.std() < 0.5
    assert (np.abs(wav) > 0.99).mean() < 0.01, "waveform is saturated"
    assert 10 < len(TEXT_60) / dur < 18 and 10 < n_tokens / dur < 18
    _, dur_long, _ = _synthesize(sessions, tiny_bundle_dir, TEXT_60 * 3, steps=1)
    assert dur_long > 2.5 * dur
    _, dur_f1, _ = _synthesize(sessions, tiny_bundle_dir, TEXT_60, steps=1, voice="F1")
    assert dur_f1 != dur and abs(dur_f1 / dur - 1) < 0.2


def test_batch_equals_single_calls(sessions, tiny_bundle_dir: Path):
    """Padding never leaks: a batch of two texts gives what two single calls give."""
    texts = ["Hi.", "A somewhat longer sentence, padded against the short one."]
    ttl, dp = _voice(tiny_bundle_dir)
    ids, mask = _encode(tiny_bundle_dir, texts)
    ttl2, dp2 = np.repeat(ttl, 2, 0), np.repeat(dp, 2, 0)
    dur = sessions["duration_predictor"].run(
        None, {"text_ids": ids, "style_dp": dp2, "text_mask": mask})[0]
    emb = sessions["text_encoder"].run(
        None, {"text_ids": ids, "style_ttl": ttl2, "text_mask": mask})[0]
    frames = [3, 7]
    lmask = np.zeros((2, 1, 7), np.float32)
    noise = np.random.default_rng(0).standard_normal((2, 144, 7)).astype(np.float32)
    for i, f in enumerate(frames):
        lmask[i, 0, :f] = 1
    x = noise * lmask
    ve = {"text_emb": emb, "style_ttl": ttl2, "latent_mask": lmask, "text_mask": mask,
          "current_step": np.zeros(2, np.float32), "total_step": np.full(2, 4, np.float32)}
    out = sessions["vector_estimator"].run(None, {"noisy_latent": x, **ve})[0]
    assert (out[0, :, 3:] == 0).all()
    for i, t in enumerate(texts):
        ids1, mask1 = _encode(tiny_bundle_dir, [t])
        n = ids1.shape[1]
        d1 = sessions["duration_predictor"].run(
            None, {"text_ids": ids1, "style_dp": dp, "text_mask": mask1})[0]
        e1 = sessions["text_encoder"].run(
            None, {"text_ids": ids1, "style_ttl": ttl, "text_mask": mask1})[0]
        np.testing.assert_allclose(dur[i], d1[0], rtol=1e-5)
        np.testing.assert_allclose(emb[i, :, :n], e1[0], rtol=1e-4, atol=1e-5)
        assert (emb[i, :, n:] == 0).all()
        f = frames[i]
        o1 = sessions["vector_estimator"].run(None, {
            "noisy_latent": x[i: i + 1, :, :f], "text_emb": e1, "style_ttl": ttl,
            "latent_mask": np.ones((1, 1, f), np.float32), "text_mask": mask1,
            "current_step": np.zeros(1, np.float32),
            "total_step": np.full(1, 4, np.float32)})[0]
        np.testing.assert_allclose(out[i, :, :f], o1[0], rtol=1e-4, atol=1e-4)


def test_flow_step_moves_the_latent_by_a_bounded_velocity(sessions, tiny_bundle_dir: Path):
    ids, mask = _encode(tiny_bundle_dir, [TEXT_60])
    ttl, _ = _voice(tiny_bundle_dir)
    emb = sessions["text_encoder"].run(
        None, {"text_ids": ids, "style_ttl": ttl, "text_mask": mask})[0]
    x = np.random.default_rng(1).standard_normal((1, 144, 20)).astype(np.float32)
    feeds = {"noisy_latent": x, "text_emb": emb, "style_ttl": ttl,
             "latent_mask": np.ones((1, 1, 20), np.float32), "text_mask": mask,
             "current_step": np.zeros(1, np.float32)}
    v = {}
    for n in (2.0, 8.0):
        out = sessions["vector_estimator"].run(
            None, {**feeds, "total_step": np.array([n], np.float32)})[0]
        v[n] = (out - x) * n
        assert 0.3 < v[n].std() < 3.0
    # Same t = 0 for both: the velocity does not depend on the step count.
    np.testing.assert_allclose(v[2.0], v[8.0], rtol=1e-3, atol=1e-3)


def test_fp16_copy_does_not_overflow(sessions, tiny_bundle_dir: Path):
    half = _sessions(tiny_bundle_dir, fp16=True)
    ref, dur, _ = _synthesize(sessions, tiny_bundle_dir, TEXT_60)
    got, dur16, _ = _synthesize(half, tiny_bundle_dir, TEXT_60)
    assert np.isfinite(got).all() and abs(dur16 - dur) < 0.01
    n = min(len(ref), len(got))
    snr = 10 * np.log10(np.sum(ref[:n] ** 2) / np.sum((ref[:n] - got[:n]) ** 2))
    assert snr > 30, f"FP16 waveform SNR {snr:.1f} dB"


# -- the official package ---------------------------------------------------------------


def test_official_package_loads_and_synthesizes(tiny_bundle_dir: Path):
    supertonic = pytest.importorskip("supertonic")
    tts = supertonic.TTS(model_dir=tiny_bundle_dir, auto_download=False)
    assert {"M1", "F1"} <= set(tts.voice_style_names) and tts.sample_rate == 44100
    wav, dur = tts.synthesize("Hello world.", voice_style=tts.get_voice_style("M1"),
                              lang="en", total_steps=2)
    frames = int(np.ceil(dur[0] * 44100 / 3072))
    assert wav.shape == (1, 3072 * frames) and np.isfinite(wav).all()
    assert 0.5 < dur[0] < 2.0  # 21 tokens at ~14 per second, / speed 1.05


def test_standin_graphs_with_the_real_assets(tiny_bundle_dir: Path, shared_assets: Path,
                                             tmp_path: Path):
    supertonic = pytest.importorskip("supertonic")
    mixed = tmp_path / "mixed"
    (mixed / "onnx").mkdir(parents=True)
    for s in STAGES:
        shutil.copy(tiny_bundle_dir / contract.GRAPHS[s].path, mixed / contract.GRAPHS[s].path)
    for rel in (contract.CONFIG_FILE, contract.INDEXER_FILE):
        shutil.copy(shared_assets / rel, mixed / rel)
    shutil.copytree(shared_assets / contract.VOICE_DIR, mixed / contract.VOICE_DIR)
    tts = supertonic.TTS(model_dir=mixed, auto_download=False)
    style = tts.get_voice_style("F1")
    for text, lang in [("안녕하세요. 반갑습니다.", "ko"), ("Hello from the real indexer.", "en")]:
        wav, dur = tts.synthesize(text, voice_style=style, lang=lang, total_steps=2)
        assert np.isfinite(wav).all() and wav.shape[1] >= dur[0] * 44100 > 0


# -- the cache --------------------------------------------------------------------------


def test_ensure_standin_builds_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("TTS_KIT_CACHE_DIR", str(tmp_path / "cache"))
    first = st.ensure_standin("tiny", seed=5)
    assert first == tmp_path / "cache" / f"standin-tiny-seed5-v{st.STANDIN_VERSION}"
    cfg = json.loads((first / contract.CONFIG_FILE).read_text())
    assert cfg[contract.STANDIN_KEY]["seed"] == 5

    def no_rebuild(*a, **k):
        raise AssertionError("rebuilt a cached stand-in")

    monkeypatch.setattr(st, "build_standin", no_rebuild)
    assert st.ensure_standin("tiny", seed=5) == first
    with pytest.raises(ValueError, match="tiny, medium, full"):
        st.ensure_standin("small")


def test_ensure_standin_loses_a_race_gracefully(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path, tiny_bundle_dir: Path):
    monkeypatch.setenv("TTS_KIT_CACHE_DIR", str(tmp_path))
    target = tmp_path / f"standin-tiny-seed0-v{st.STANDIN_VERSION}"
    real_graph = st.build_graph

    def rival_finishes_first(stage, *args):
        if not target.exists():  # while ours is being built, another process renames first
            shutil.copytree(tiny_bundle_dir, target)
            (target / "rival").write_text("")
        return real_graph(stage, *args)

    monkeypatch.setattr(st, "build_graph", rival_finishes_first)
    assert st.ensure_standin("tiny") == target
    assert (target / "rival").exists()  # the winner's copy is kept intact
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # ours discarded


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TTS_KIT_CACHE_DIR")
    assert settings().tts_kit_cache == Path.home() / ".cache" / "tts_kit"


# -- the users' default: the full scale -------------------------------------------------


def test_users_get_the_full_scale_standin_by_default(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path):
    """No model anywhere and no $TTS_KIT_STANDIN_SCALE: discovery (the CLI, the notebooks'
    model cell, the report) builds the full stand-in, whose costs are the real model's.
    Tests get the tiny one only because conftest.py sets the scale explicitly."""
    from tts_kit.cli import _parser
    from tts_kit.models.discovery import default_standin_scale
    from tts_kit.models.supertonic.bundle import BundleError, resolve_model_dir

    monkeypatch.delenv("TTS_KIT_STANDIN_SCALE")
    built = []
    monkeypatch.setattr(st, "ensure_standin",
                        lambda scale, seed=0, **_: built.append(scale) or tmp_path / scale)
    assert default_standin_scale() == "full" == st.DEFAULT_SCALE
    assert resolve_model_dir() == (tmp_path / "full", "stand-in (full)")
    assert built == ["full"]
    assert _parser().parse_args(["standin", "d"]).scale == "full"
    # quick=True in a notebook shrinks the work, never the model: no notebook picks a scale.
    for nb in sorted((Path(__file__).parents[1] / "notebooks").glob("[0-9][0-9]_*.py")):
        text = nb.read_text(encoding="utf-8")
        assert not any(w in text for w in ("TTS_KIT_STANDIN_SCALE", "ensure_standin(",
                                           "build_standin(")), nb.name
    monkeypatch.setenv("TTS_KIT_STANDIN_SCALE", "huge")
    with pytest.raises(BundleError, match="not a stand-in scale; set it to one of tiny, "
                                          "medium, full or unset it"):
        resolve_model_dir()


def test_the_note_says_whether_the_costs_are_realistic(tiny_bundle_dir: Path):
    assert "the costs are realistic (full scale" in st.scale_note("full")
    for scale in ("tiny", "medium"):
        assert "the costs are NOT realistic" in st.scale_note(scale)
    # A tiny bundle never claims realistic costs on its banner or in the CLI's note.
    from tts_kit import Bundle
    from tts_kit.notebook.widgets import banner

    html = banner(Bundle(tiny_bundle_dir), "stand-in (tiny)").data
    assert st.scale_note("tiny") in html and "costs are realistic" not in html


# -- full scale -------------------------------------------------------------------------


@pytest.mark.slow
def test_full_scale_has_the_published_size(tmp_path: Path):
    summary = st.build_standin(tmp_path / "full", "full")
    params = {s.stage: s.params for s in summary.stages}
    assert 90e6 < summary.total_params < 110e6
    assert 0.7e6 < params["duration_predictor"] < 1.1e6
    assert 7e6 < params["text_encoder"] < 9.5e6
    assert 58e6 < params["vector_estimator"] < 66e6
    assert 23e6 < params["vocoder"] < 27e6
    wav, dur, n = _synthesize(_sessions(summary.path), summary.path, TEXT_60, steps=2)
    assert np.isfinite(wav).all() and 0.05 < wav.std() < 0.5 and 10 < n / dur < 18


@pytest.mark.slow
def test_medium_scale_size(tmp_path: Path):
    summary = st.build_standin(tmp_path / "medium", "medium")
    assert 22e6 < summary.total_params < 32e6
