"""`tts_kit.runtime.loading`: specs, same audio under every policy, event order, budgets, the
loader."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from tts_kit import Engine
from tts_kit.core import contract, events
from tts_kit.runtime.loading import (
    LoadPolicy,
    SessionLease,
    StageLoader,
    create_session,
    estimate_costs_mb,
    external_copy,
    resident_costs_mb,
)

TEXT = "Paged loading gives the same audio."


@pytest.fixture(scope="module")
def reference(tiny_bundle_dir):
    return Engine(tiny_bundle_dir).synthesize(TEXT, steps=3, seed=5)


# -- specs ----------------------------------------------------------------------------------


def test_parse_and_spec_round_trip():
    assert LoadPolicy.parse("resident") == LoadPolicy("resident")
    p = LoadPolicy.parse(" Budget:300 ")
    assert (p.policy, p.budget_mb) == ("budget", 300.0)
    for spec in ("resident", "paged", "budget:300", "paged+notrim", "resident+ext",
                 "paged+noext", "paged+mmap", "budget:12.5+notrim+mmap"):
        p = LoadPolicy.parse(spec)
        assert LoadPolicy.parse(p.spec) == p
    assert LoadPolicy.parse("paged").external_data and LoadPolicy.parse("paged").trim
    assert not LoadPolicy.parse("resident").external_data


@pytest.mark.parametrize("spec, words", [
    ("swap", "unknown loading"), ("budget", "budget:MB"), ("budget:-3", "MB > 0"),
    ("budget:nan", "MB > 0"), ("paged:300", "only budget"), ("paged+fast", "unknown option"),
    ("paged+mmap+noext", "contradicts"),
])
def test_bad_specs_name_the_fix(spec, words):
    with pytest.raises(ValueError, match=words):
        LoadPolicy.parse(spec)


# -- engine behaviour on the tiny stand-in --------------------------------------------------


@pytest.mark.parametrize("loading", ["paged", "paged+noext", "paged+notrim", "budget:3",
                                     "resident+ext"])
def test_policies_give_identical_audio(tiny_bundle_dir, reference, loading):
    got = Engine(tiny_bundle_dir, loading=loading).synthesize(TEXT, steps=3, seed=5)
    np.testing.assert_array_equal(got.wav, reference.wav)


def test_mmap_matches_closely(tiny_bundle_dir, reference):
    # Without pre-packing the GEMMs take another path: equal up to float rounding.
    got = Engine(tiny_bundle_dir, loading="paged+mmap").synthesize(TEXT, steps=3, seed=5)
    np.testing.assert_allclose(got.wav, reference.wav, atol=1e-5)


def test_paged_event_order(tiny_bundle_dir):
    engine = Engine(tiny_bundle_dir, loading="paged")
    assert engine.loaded_stages == []
    with events.recording() as log:
        engine.synthesize(TEXT, steps=4, seed=0)
    names = [n for _, n in log]
    want = [f"{verb} {s}" for s in contract.STAGES for verb in ("load", "run", "release")]
    assert names == want  # one load/run/release even for 4 flow steps
    assert engine.loaded_stages == []


def test_resident_loads_once(tiny_bundle_dir):
    with events.recording() as log:
        engine = Engine(tiny_bundle_dir, loading="resident")
        engine.synthesize_batch(["One.", "Two texts."], steps=2, seed=0)
    names = [n for _, n in log]
    assert names == [f"load {s}" for s in contract.STAGES] + [f"run {s}" for s in contract.STAGES]
    assert engine.loaded_stages == list(contract.STAGES)
    engine.close()
    assert engine.loaded_stages == []


def test_budget_too_small_fails_before_any_work(tiny_bundle_dir):
    with events.recording() as log, pytest.raises(ValueError, match="smaller than the cheapest"):
        Engine(tiny_bundle_dir, loading="budget:0.5")
    with pytest.raises(ValueError, match="raise the budget or use paged"):
        Engine(tiny_bundle_dir, loading="budget:9",
               stage_costs_mb={s: 10.0 for s in contract.STAGES})
    assert log == []  # no session was created


def test_budget_keeps_at_most_its_budget_lru(tiny_bundle_dir, reference):
    costs = {s: 10.0 for s in contract.STAGES}
    engine = Engine(tiny_bundle_dir, loading="budget:25", stage_costs_mb=costs)
    seen: list[list[str]] = []

    def check(_t: float, _name: str) -> None:
        seen.append(engine.loaded_stages)

    events.add_listener(check)
    try:
        got = engine.synthesize(TEXT, steps=3, seed=5)
    finally:
        events.remove_listener(check)
    np.testing.assert_array_equal(got.wav, reference.wav)
    assert seen and all(sum(costs[s] for s in live) <= 25 for live in seen)
    # Two fit; the least recently used went first.
    assert engine.loaded_stages == ["vector_estimator", "vocoder"]
    with events.recording() as log:
        engine.synthesize(TEXT, steps=3, seed=5)
    assert "release vector_estimator" in [n for _, n in log]
    assert engine.loaded_stages == ["vector_estimator", "vocoder"]


def test_budget_runs_an_oversized_stage_paged(tiny_bundle_dir):
    costs = {"duration_predictor": 1.0, "text_encoder": 1.0, "vector_estimator": 50.0,
             "vocoder": 1.0}
    engine = Engine(tiny_bundle_dir, loading="budget:10", stage_costs_mb=costs)
    engine.synthesize(TEXT, steps=2, seed=0)
    assert engine.loaded_stages == ["duration_predictor", "text_encoder", "vocoder"]


def test_estimated_costs_fill_the_gaps(tiny_bundle_dir):
    engine = Engine(tiny_bundle_dir)
    est = estimate_costs_mb(engine.bundle)
    assert set(est) == set(contract.STAGES) and all(v > 0 for v in est.values())
    merged = resident_costs_mb({"vocoder": {"load_mb": 7}}, engine.bundle)
    assert merged["vocoder"] == 7.0 and merged["text_encoder"] == est["text_encoder"]
    with pytest.raises(ValueError, match="unknown stage"):
        resident_costs_mb({"decoder": 1}, engine.bundle)
    with pytest.raises(ValueError, match="MB >= 0"):
        resident_costs_mb({"vocoder": -1}, engine.bundle)


@contextmanager
def _full_collections() -> Iterator[list[int]]:
    """Count full (generation 2) collections inside the block, automatic ones switched off."""
    count = [0]

    def seen(phase: str, info: dict) -> None:
        count[0] += phase == "start" and info["generation"] == 2

    was_enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(seen)
    try:
        yield count
    finally:
        gc.callbacks.remove(seen)
        if was_enabled:
            gc.enable()


@pytest.mark.parametrize("loading", ["resident", "paged"])
def test_releases_cost_no_collection_when_nothing_else_holds_the_session(tiny_bundle_dir,
                                                                         loading, monkeypatch):
    """A session only the loader holds dies by reference count: making, running and closing
    an engine runs no full garbage collection (each one walks the whole heap; there used
    to be one per load and release, eight per engine), and the sessions are gone."""
    probes: list[weakref.ref] = []
    load = StageLoader._load

    def probed_load(self: StageLoader, stage: str) -> None:
        load(self, stage)
        probes.append(weakref.ref(self._live[stage]._sess))

    monkeypatch.setattr(StageLoader, "_load", probed_load)
    with _full_collections() as full:
        engine = Engine(tiny_bundle_dir, loading=loading)
        engine.synthesize(TEXT, steps=2, seed=5)
        engine.close()
    assert full == [0]
    assert engine.loaded_stages == [] and len(probes) == len(contract.STAGES)
    assert all(p() is None for p in probes)


def test_a_released_session_held_by_a_cycle_is_collected(tiny_bundle_dir):
    """A session that garbage (a reference cycle) still holds is collected on release, so
    its memory goes back just the same."""
    path = next((tiny_bundle_dir / "onnx").glob("*.onnx"))
    probes = []

    def in_a_cycle(stage: str):
        sess = create_session(path)
        cycle: list = [sess]
        cycle.append(cycle)  # garbage once the factory returns, holding the session
        probes.append(weakref.ref(sess._sess))
        return sess

    loader = StageLoader(in_a_cycle, "paged")
    with _full_collections() as full:
        with loader.session("vocoder"):
            pass
        assert loader.loaded == [] and probes[0]() is None
    assert full == [1]


def test_lease_does_not_keep_a_released_session():
    loader = StageLoader(lambda stage: object(), "paged")
    with loader.session("vocoder") as lease:
        assert isinstance(lease, SessionLease) and lease.session is not None
    assert loader.loaded == []
    with pytest.raises(RuntimeError, match="was released"):
        lease.session  # noqa: B018


def test_loader_is_reentrant():
    made: list[str] = []
    loader = StageLoader(lambda stage: made.append(stage) or object(), "paged")
    with events.recording() as log:
        with loader.session("vector_estimator") as outer:
            for _ in range(3):
                with loader.session("vector_estimator") as inner:
                    assert inner is outer
            assert loader.loaded == ["vector_estimator"]
    assert made == ["vector_estimator"]
    assert [n for _, n in log] == ["load vector_estimator", "run vector_estimator",
                                   "release vector_estimator"]


def test_external_copy_leaves_the_bundle_alone(tiny_bundle_dir, tmp_path):
    src = tiny_bundle_dir / "onnx" / "vocoder.onnx"
    before = src.read_bytes()
    out = external_copy(src, cache_dir=tmp_path)
    assert out.parent.parent == tmp_path and (out.parent / "vocoder.onnx.data").is_file()
    assert out.stat().st_size < len(before) // 4  # the weights moved to the data file
    assert external_copy(src, cache_dir=tmp_path) == out  # made once
    assert src.read_bytes() == before
    assert sorted(p.name for p in (tiny_bundle_dir / "onnx").iterdir()) == sorted(
        [f"{s}.onnx" for s in contract.STAGES] + ["tts.json", "unicode_indexer.json"])


def test_engine_parses_its_spec_once_and_keeps_it_as_given(tiny_bundle_dir, monkeypatch):
    calls: list[object] = []
    real = LoadPolicy.parse.__func__

    def counting(cls, spec):
        calls.append(spec)
        return real(cls, spec)

    monkeypatch.setattr(LoadPolicy, "parse", classmethod(counting))
    engine = Engine(tiny_bundle_dir, loading=" Paged+notrim ")
    engine.synthesize(TEXT, steps=2, seed=0)
    assert calls == [" Paged+notrim "]  # the loader and every session creation got the object
    assert engine.loading == " Paged+notrim "
    assert Engine(tiny_bundle_dir, loading=LoadPolicy("paged")).loading == "paged"


def test_create_session_takes_a_spec_or_a_policy(tiny_bundle_dir):
    path = tiny_bundle_dir / "onnx" / "duration_predictor.onnx"
    for policy in ("resident", LoadPolicy.parse("paged+mmap")):
        assert create_session(path, policy=policy).get_inputs()


def test_external_copy_sweeps_partial_copies_of_dead_writers(tiny_bundle_dir, tmp_path):
    """An interrupt or an OOM kill during a first paged load left ``.<key>.*`` directories
    in the cache forever; the next copy removes those whose writer is gone."""
    import os
    import subprocess
    import sys
    import time

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    stale = tmp_path / f".0123456789abcdef0123.tmp-{dead_pid}-k9x2"
    legacy = tmp_path / ".0123456789abcdef0123.ab_cd123"  # before writers named their pid
    live = tmp_path / f".0123456789abcdef0123.tmp-{os.getpid()}-live"  # still being written
    for d in (stale, legacy, live):
        d.mkdir()
        (d / "vocoder.onnx.data").write_bytes(b"\0" * 4096)
    old = time.time() - 2 * 3600
    os.utime(legacy, (old, old))
    external_copy(tiny_bundle_dir / "onnx" / "vocoder.onnx", cache_dir=tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert stale.name not in names and legacy.name not in names
    assert live.name in names and len(names) == 2  # the live one and the new copy


# -- concurrent callers (issue 11) ----------------------------------------------------------


class _Session:
    """A stand-in session whose run yields the GIL, so threads interleave inside runs."""

    def run(self) -> None:
        time.sleep(0.0005)


@pytest.fixture
def no_trim_per_load(monkeypatch):
    """Skip the malloc_trim after each load and release: it hands pages back that the next
    load faults in again, beside the bookkeeping under test."""
    monkeypatch.setattr("tts_kit.runtime.loading.malloc_trim", lambda: False)


@pytest.mark.parametrize("loading", ["paged", "budget:25"])
def test_loader_serves_4_threads_x_25_calls(loading, no_trim_per_load):
    # Before the loader took a lock, nearly every call failed with KeyError or ran a
    # released session: one thread released what another was about to run.
    loader = StageLoader(lambda stage: _Session(), loading, {s: 10.0 for s in contract.STAGES})
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work() -> None:
        start.wait()
        for _ in range(25):
            try:
                for stage in contract.STAGES:
                    with loader.session(stage) as outer:
                        for _ in range(3):  # re-entered, as the engine does for flow steps
                            with loader.session(stage) as inner:
                                assert inner is outer
                                inner.run()
            except BaseException as exc:  # noqa: BLE001 - counted, reported below
                errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], errors[:3]
    assert not any(loader._pins.values())
    if loading == "paged":
        assert loader.loaded == []  # every session went back once its runs ended
    else:
        assert 10.0 * len(loader.loaded) <= 25  # back under the budget


# 4 x 6 calls (the loader test above does 4 x 25): every paged synthesis creates four
# sessions, one at a time under the loader's lock.
@pytest.mark.parametrize("loading", ["paged", "budget:3"])
def test_concurrent_syntheses_equal_the_single_thread_audio(tiny_bundle_dir, reference, loading,
                                                            no_trim_per_load):
    engine = Engine(tiny_bundle_dir, loading=loading)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work() -> None:
        start.wait()
        for _ in range(6):
            try:
                results.append(engine.synthesize(TEXT, steps=3, seed=5).wav)
            except BaseException as exc:  # noqa: BLE001 - counted, reported below
                errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 24, errors[:3]
    for wav in results:
        np.testing.assert_array_equal(wav, reference.wav)
    if loading.startswith("paged"):
        assert engine.loaded_stages == []
    else:
        assert sum(engine._loader.costs_mb[s] for s in engine.loaded_stages) <= 3


def test_loader_never_releases_a_session_another_thread_runs():
    loader = StageLoader(lambda stage: object(), "paged")
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with loader.session("vocoder"):
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    inside.wait(10)
    with loader.session("vocoder") as lease:  # a second caller shares the loaded session
        with loader.session("vocoder"):
            pass
    assert lease.session is not None and loader.loaded == ["vocoder"]  # t still runs it
    loader.close()  # closed while t runs it: released when t's run ends
    assert loader.loaded == ["vocoder"]
    leave.set()
    t.join()
    assert loader.loaded == []


# -- the external-data cache (issue 12) -----------------------------------------------------


def test_a_graph_replaced_with_its_size_and_mtime_kept_is_not_served_stale(tiny_bundle_dir,
                                                                           tmp_path):
    # cp -p / rsync -a / tar keep size and mtime: the cache was keyed by them, so paged
    # loading kept running the old vocoder while resident ran the new one.
    import os
    import shutil

    from tts_kit.models.supertonic.standin import build_standin

    bundle = tmp_path / "bundle"
    shutil.copytree(tiny_bundle_dir, bundle)
    other = tmp_path / "other"
    build_standin(other, scale="tiny", seed=1)
    latent = np.random.default_rng(0).standard_normal((1, contract.LATENT_CHANNELS, 4),
                                                      np.float32)
    old = Engine(bundle, loading="paged").run_stage("vocoder", {"latent": latent})

    graph = bundle / "onnx" / "vocoder.onnx"
    new_graph = other / "onnx" / "vocoder.onnx"
    st = graph.stat()
    assert new_graph.stat().st_size == st.st_size
    shutil.copyfile(new_graph, graph)  # in place: same inode, as cp -p does
    os.utime(graph, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (graph.stat().st_size, graph.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)

    want = Engine(bundle).run_stage("vocoder", {"latent": latent})  # resident: the file itself
    got = Engine(bundle, loading="paged").run_stage("vocoder", {"latent": latent})
    assert not np.array_equal(want, old)
    np.testing.assert_array_equal(got, want)


def test_external_cache_stays_under_its_bound_least_recently_used_first(tiny_bundle_dir,
                                                                        tmp_path, monkeypatch):
    import os

    from tts_kit.runtime.loading import prune_external_cache

    def mb(path) -> float:
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20

    onnx = tiny_bundle_dir / "onnx"
    copies = {}
    for i, stage in enumerate(("vocoder", "duration_predictor", "text_encoder")):
        copies[stage] = external_copy(onnx / f"{stage}.onnx", cache_dir=tmp_path).parent
        os.utime(copies[stage], (1000 + i, 1000 + i))  # a clear order of last use
    external_copy(onnx / "duration_predictor.onnx", cache_dir=tmp_path)  # used again: newest
    assert copies["duration_predictor"].stat().st_mtime > 2000

    # Room for the duration predictor and the vector estimator only: the vocoder and the
    # text encoder, used longest ago, go when the vector estimator's copy is made.
    ve_mb = 1.1 * (onnx / "vector_estimator.onnx").stat().st_size / 2**20  # copies run larger
    limit = mb(copies["duration_predictor"]) + ve_mb
    monkeypatch.setenv("TTS_KIT_EXTERNAL_CACHE_MB", f"{limit:.3f}")
    newest = external_copy(onnx / "vector_estimator.onnx", cache_dir=tmp_path).parent
    assert mb(tmp_path) <= limit
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [copies["duration_predictor"].name, newest.name])
    # The copy in use stays even when it alone is over the bound.
    assert prune_external_cache(tmp_path, 0.1, keep=newest) == [copies["duration_predictor"]]
    assert [p.name for p in tmp_path.iterdir()] == [newest.name]


def test_external_cache_bound_is_checked(monkeypatch, tiny_bundle_dir, tmp_path):
    monkeypatch.setenv("TTS_KIT_EXTERNAL_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="TTS_KIT_EXTERNAL_CACHE_MB is 'lots'; set it to MB"):
        external_copy(tiny_bundle_dir / "onnx" / "vocoder.onnx", cache_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []
