"""`tts_kit.tuning.stage_costs` (per-stage costs) and `lab.probe_policy` (load policies over
requests), measured in fresh processes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from lab.probe_policy import probe_policy

from tts_kit import Engine
from tts_kit.core import contract
from tts_kit.runtime.loading import StageCosts, resident_costs_mb
from tts_kit.runtime.measure import run_isolated
from tts_kit.tuning.stage_costs import stage_costs
from tts_kit.tuning.workload import DEFAULT_TEXTS, Workload


def test_stage_costs_on_tiny(tiny_bundle_dir):
    costs = stage_costs(tiny_bundle_dir, "supertonic-default", Workload(steps=2))
    assert isinstance(costs, StageCosts) and list(costs.stages) == list(contract.STAGES)
    assert (costs.text, costs.steps) == (DEFAULT_TEXTS[0], 2)  # the workload's first text
    for c in costs.stages.values():
        assert c.file_mb > 0 and math.isfinite(c.load_mb) and c.run_s > 0
    assert costs.runtime_mb > costs.imports_mb * 0.9 > 0
    assert set(costs.costs_mb()) == set(contract.STAGES)
    assert abs(sum(costs.split().values()) - 100) < 1e-6
    assert costs.claimed_split["weights"] == 40.0
    assert costs.rows()[-1]["stage"].startswith("runtime")
    assert "vector_estimator" in costs.table()
    # Measured costs plug straight into the budget policy: they replace every estimate,
    # the live sessions stay within the budget by them, and the audio does not change.
    measured = costs.costs_mb()
    engine = Engine(tiny_bundle_dir, loading="budget:100", stage_costs_mb=costs)
    assert resident_costs_mb(costs, engine.bundle) == measured
    text = "The meeting starts at 10:30."
    got = engine.synthesize(text, steps=3, seed=5)
    ref = Engine(tiny_bundle_dir).synthesize(text, steps=3, seed=5)
    np.testing.assert_array_equal(got.wav, ref.wav)
    assert engine.loaded_stages and sum(measured[s] for s in engine.loaded_stages) <= 100


def test_stage_costs_refuses_a_bad_spec_before_any_process():
    with pytest.raises(ValueError, match="unknown loading"):
        stage_costs("no-such-bundle", loading="swap")


# -- memory that goes back (medium stand-in, isolated processes) ----------------------------


@pytest.fixture(scope="module")
def medium_bundle(standin_once):
    """A medium stand-in built once per run (tests/conftest.py's `standin_once`: the two
    tests below may run on both xdist workers)."""
    return str(standin_once("medium"))


@pytest.mark.slow  # probes in fresh processes
def test_paged_memory_goes_back_and_peaks_lower(medium_bundle):
    two_steps = Workload(steps=2)
    # The first paged load writes the external-data cache in a subprocess of its own,
    # which run_isolated counts (it is the trial's process tree); warm the cache first, so
    # the comparison is of paged serving, not of the one-time cache build.
    warm = run_isolated(probe_policy, medium_bundle, "paged", None, two_steps, 1, cpus=1,
                        timeout_s=120)
    assert warm.ok, warm.error
    paged = run_isolated(probe_policy, medium_bundle, "paged", None, two_steps, 2, cpus=1,
                         timeout_s=120)
    resident = run_isolated(probe_policy, medium_bundle, "resident", None, two_steps, 1, cpus=1,
                            timeout_s=120)
    assert paged.ok, paged.error
    assert resident.ok, resident.error
    before = paged.result["before_mb"]
    for idle in paged.result["idle_mb"]:
        assert idle - before < 50, (before, paged.result["idle_mb"])
    assert paged.result["loaded"] == [[], []]
    assert paged.peak_rss_mb < resident.peak_rss_mb
    names = [n for _, n in paged.events]
    assert names.count("release vector_estimator") == 2


@pytest.mark.slow  # trials in fresh processes
def test_a_paged_trial_holds_less_between_requests(medium_bundle):
    from tts_kit.tuning.tune import trial

    recs = {lo: trial(medium_bundle, "supertonic-default", Workload(steps=2, repeats=1),
                      cpus=1, loading=lo) for lo in ("resident", "paged")}
    assert all(r["status"] == "ok" for r in recs.values()), recs
    paged, resident = recs["paged"], recs["resident"]
    # Paged: the sessions are gone again after the requests; resident keeps them.
    assert paged["after_rss_mb"] - paged["idle_rss_mb"] < 50
    assert paged["after_rss_mb"] < resident["after_rss_mb"]
