"""Paged loads from optimised copies made once (issue 27, item 6): same audio, the copy is
reused, a stale one (another ONNX Runtime, another graph, a broken record) is rebuilt."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from tts_kit import Engine
from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.runtime import session_files
from tts_kit.runtime.loading import LoadPolicy, needs_preparation, prepare_loading
from tts_kit.runtime.session_files import OPTIMISED_META, session_file


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TTS_KIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "external"


def test_opt_is_on_for_paged_and_budget_and_needs_external_data():
    assert LoadPolicy.parse("paged").optimised and LoadPolicy.parse("budget:300").optimised
    assert not LoadPolicy.parse("resident").optimised
    assert not LoadPolicy.parse("paged+noext").optimised
    assert not LoadPolicy.parse("paged+noopt").optimised
    for spec in ("paged", "paged+noopt", "resident+ext+opt", "budget:300+notrim"):
        assert LoadPolicy.parse(spec).spec == spec
    with pytest.raises(TtsKitError, match="opt needs external data"):
        LoadPolicy.parse("paged+noext+opt")
    assert needs_preparation("paged+noopt")


def test_prepared_once_then_reused(tiny_bundle_dir, cache):
    graphs = sorted((tiny_bundle_dir / "onnx").glob("*.onnx"))
    first = prepare_loading(graphs, "paged")
    assert all(f.parent.name.startswith("opt-") and f.parent.parent == cache for f in first)
    assert all((f.parent / OPTIMISED_META).is_file() and f != g for f, g in zip(first, graphs))
    mtimes = [os.stat(f).st_mtime_ns for f in first]
    assert prepare_loading(graphs, "paged") == first
    assert [os.stat(f).st_mtime_ns for f in first] == mtimes  # reused, not rewritten
    # CUDA sessions and the optimiser turned off load no CPU-optimised copy
    vocoder = graphs[-1]
    assert not session_file(vocoder, "paged", None, ["CUDAExecutionProvider"]).parent.name \
        .startswith("opt-")
    assert session_file(vocoder, "paged+noopt").parent.name != first[-1].parent.name


def test_stale_copies_are_rebuilt(tiny_bundle_dir, cache, tmp_path, monkeypatch):
    src = tmp_path / "g" / "vocoder.onnx"
    src.parent.mkdir()
    shutil.copyfile(tiny_bundle_dir / contract.GRAPHS["vocoder"].path, src)
    made = session_file(src, "paged")
    # a broken record: the same key is rebuilt
    (made.parent / OPTIMISED_META).write_text("{}", encoding="utf-8")
    old = os.stat(made).st_mtime_ns
    again = session_file(src, "paged")
    assert again == made and os.stat(again).st_mtime_ns != old
    assert json.loads((again.parent / OPTIMISED_META).read_text())["onnxruntime"]
    # another ONNX Runtime version: another copy
    monkeypatch.setattr(session_files.ort, "__version__", "0.0.1-other")
    other_ort = session_file(src, "paged")
    assert other_ort != made and other_ort.is_file()
    monkeypatch.undo()
    # another graph at the same path: another copy
    shutil.copyfile(tiny_bundle_dir / contract.GRAPHS["duration_predictor"].path, src)
    assert session_file(src, "paged") not in (made, other_ort)


@pytest.mark.parametrize("stage", ["vector_estimator", "vocoder"])
def test_optimised_copy_gives_the_same_outputs(tiny_bundle_dir, stage):
    # each stage as a paged load runs it (optimised, pre-packed copy, optimiser off)
    # against the load before (external-data copy, optimised at every load)
    from tts_kit.precision.conversion import random_feeds
    from tts_kit.runtime.session_files import create_session

    path = tiny_bundle_dir / contract.GRAPHS[stage].path
    before = create_session(path, policy="paged+noopt")
    after = create_session(path, policy="paged")
    feeds = random_feeds(before, dynamic=5)
    feeds.update({k: np.ones_like(v) for k, v in feeds.items() if "mask" in k})
    if "total_step" in feeds:
        feeds["current_step"] = np.full_like(feeds["current_step"], 1.0)
        feeds["total_step"] = np.full_like(feeds["total_step"], 4.0)
    for a, b in zip(before.run(None, feeds), after.run(None, feeds)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6 * float(np.abs(a).max()))


@pytest.mark.slow
def test_paged_from_optimised_copies_gives_the_same_audio(tiny_bundle_dir):
    # the run's shared cache: copies other tests made are reused (this test stays short)
    from tts_kit.runtime.session_files import external_cache_dir

    def wav(loading: str) -> np.ndarray:
        engine = Engine(tiny_bundle_dir, loading=loading)
        try:
            return engine.synthesize("Hello there.", steps=1, seed=0).wav
        finally:
            engine.close()

    ref = wav("paged+noopt")
    got = wav("paged")
    assert any(p.name.startswith("opt-") for p in external_cache_dir().iterdir())
    assert ref.shape == got.shape
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_large_graphs_are_converted_in_a_child_python(tiny_bundle_dir, cache, monkeypatch):
    # every graph counts as large: both copies are written by a child process, not this one
    monkeypatch.setattr(session_files, "INPROCESS_CONVERT_BYTES", -1)
    src = tiny_bundle_dir / contract.GRAPHS["vocoder"].path
    for policy in ("paged+noopt", "paged"):
        made = session_file(src, policy)
        assert made != src and (made.parent / "vocoder.onnx.data").is_file()
        assert session_files.create_session(src, policy=policy).get_inputs()
