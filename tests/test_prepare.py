"""One-time preparation outside the measured trial (issue 22, section 2): a paged trial on
a cold external-data cache measures what one on a warm cache does, and reports the
preparation beside it."""

from __future__ import annotations

import os

import pytest

from tts_kit.runtime.loading import needs_preparation, prepare_loading
from tts_kit.runtime.session_files import external_cache_dir
from tts_kit.tuning.records import LOAD_S, PEAK_RSS_MB, PREP_PEAK_RSS_MB, PREP_S, RECORD_KEYS
from tts_kit.tuning.tune import trial
from tts_kit.tuning.workload import Workload


def _copies() -> list[str]:
    root = external_cache_dir()
    return sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) \
        if root.is_dir() else []


def test_prep_keys_are_record_keys():
    assert PREP_S in RECORD_KEYS and PREP_PEAK_RSS_MB in RECORD_KEYS


def test_prepare_loading_makes_the_copies_once(tiny_bundle_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("TTS_KIT_CACHE_DIR", str(tmp_path / "cache"))
    graphs = sorted((tiny_bundle_dir / "onnx").glob("*.onnx"))
    assert not needs_preparation("resident") and needs_preparation("paged")
    assert prepare_loading(graphs, "resident") == graphs  # nothing to do, nothing written
    assert _copies() == []
    first = prepare_loading(graphs, "paged")
    assert len(_copies()) == len(graphs)
    assert all(f.is_file() and f != g for f, g in zip(first, graphs))
    mtimes = [os.stat(f).st_mtime_ns for f in first]
    assert prepare_loading(graphs, "paged") == first
    assert [os.stat(f).st_mtime_ns for f in first] == mtimes  # reused, not rewritten


@pytest.mark.slow
def test_cold_and_warm_cache_measure_the_same_paged_trial(tiny_bundle_dir, tmp_path,
                                                          monkeypatch):
    monkeypatch.setenv("TTS_KIT_CACHE_DIR", str(tmp_path / "cache"))
    w = Workload("Hello there.", steps=2, repeats=1)
    cold = trial(tiny_bundle_dir, "lean", w, loading="paged")
    assert _copies(), "the preparation made the external-data copies"
    warm = trial(tiny_bundle_dir, "lean", w, loading="paged")
    assert cold["status"] == warm["status"] == "ok"
    assert cold[PREP_S] is not None and cold[PREP_PEAK_RSS_MB] > 0
    assert cold[PEAK_RSS_MB] == pytest.approx(warm[PEAK_RSS_MB], rel=0.05)
    # The trial's own load found the copies made: it is not slower than a warm one by the
    # writing of them (generous bound: the machine is shared).
    assert cold[LOAD_S] < 3 * warm[LOAD_S] + 0.5
    res = trial(tiny_bundle_dir, "lean", w, loading="resident")
    assert res[PREP_S] is None and res[PREP_PEAK_RSS_MB] is None


def test_sweep_prepares_before_measuring_stage_costs(monkeypatch):
    # The sweep's stage-cost probe loads paged (external data): the copies are made by the
    # one-time preparation first, never inside the probe's load figures.
    import tts_kit.tuning.stage_costs as sc
    from tts_kit.runtime.loading import LoadPolicy
    from tts_kit.runtime.sessions import get_preset
    from tts_kit.tuning import tune

    calls: list[str] = []
    monkeypatch.setattr(tune, "_prepare", lambda path, policy, *a: calls.append(
        f"prepare {policy.spec}"))

    class _Costs:
        def costs_mb(self):
            return {"vocoder": 1.0}

    monkeypatch.setattr(sc, "stage_costs", lambda *a, **k: calls.append("measure") or _Costs())
    out = tune._sweep_stage_costs("bundle", [get_preset("lean")],
                                  {"budget:300": LoadPolicy.parse("budget:300")}, "measure",
                                  Workload("Hi."))
    assert calls == ["prepare paged", "measure"]
    assert out == {("lean", "budget:300"): {"vocoder": 1.0}}
