"""Equivalence verdicts (issue 35): worse, better or tied by the interval of a ratio, the tie
set, and the fixed order that picks inside it without reading latency."""

from __future__ import annotations

import numpy as np
import pytest

from tts_kit.tuning import verdict
from tts_kit.tuning.records import P50_MS, PEAK_RSS_MB, ROUND_LATENCIES_MS, ROUND_PEAK_RSS_MB


def _noisy(p50: float, seed: int, rounds: int = 6, calls: int = 3, noise: float = 0.10,
           peak: float = 500.0, **config) -> dict:
    rng = np.random.default_rng(seed)
    lat = [list(p50 * (1 + noise * rng.standard_normal(calls))) for _ in range(rounds)]
    return {"status": "ok", P50_MS: p50, PEAK_RSS_MB: peak, ROUND_LATENCIES_MS: lat,
            ROUND_PEAK_RSS_MB: [peak] * rounds, **config}


@pytest.mark.parametrize("seed", range(10))
def test_three_percent_apart_in_ten_percent_noise_is_tied(seed):
    a, b = _noisy(1000.0, seed), _noisy(1030.0, seed + 100)
    v = verdict.compare(b, a, P50_MS, verdict.band([a, b]))
    assert v.word == "tied", v


@pytest.mark.parametrize("seed", range(10))
def test_thirty_percent_apart_in_ten_percent_noise_differs(seed):
    a, b = _noisy(1000.0, seed), _noisy(1300.0, seed + 100)
    width = verdict.band([a, b])
    assert verdict.compare(b, a, P50_MS, width).word == "worse"
    assert verdict.compare(a, b, P50_MS, width).word == "better"


@pytest.mark.parametrize("seed", range(5))
def test_thirty_percent_apart_still_differs_with_the_machines_noise_as_the_floor(seed):
    a, b = _noisy(1000.0, seed), _noisy(1300.0, seed + 100)
    recs = [a, b]
    assert verdict.compare(b, a, P50_MS, verdict.band(recs), verdict.noise(recs)).word == "worse"


def test_processes_that_land_fast_or_slow_and_stay_there_are_not_a_difference():
    """Regression (issue 35, a quiet 2-core run): each fresh process ran at about 1,350 or
    about 1,750 ms and stayed there; eight configurations of one speed, two processes each.
    Two that happened to land fast twice and slow twice were called 1.3x apart: the band was
    the median of two-sample spreads (5 %) and the interval a bootstrap of two agreeing
    processes. The pooled spread of all the machine's processes is the floor now."""
    def rec(*rounds: float) -> dict:
        return {"status": "ok", P50_MS: float(np.mean(rounds)), PEAK_RSS_MB: 600.0,
                ROUND_LATENCIES_MS: [[x, x + 4] for x in rounds]}
    fast, slow = rec(1350, 1345), rec(1750, 1760)
    recs = [fast, slow, rec(1352, 1348), rec(1755, 1748), rec(1349, 1351),
            rec(1350, 1750), rec(1752, 1346), rec(1348, 1757)]
    width = verdict.band(recs)
    assert 0.09 < width < 0.15, width  # one process's spread here, not the 5 % floor
    assert verdict.compare(slow, fast, P50_MS, width, verdict.noise(recs)).word == "tied"
    assert slow in verdict.pick(recs).tie_set


def test_each_verdict_on_hand_built_records():
    base = {P50_MS: 100.0, PEAK_RSS_MB: 500.0, ROUND_LATENCIES_MS: [[98, 100, 102], [99, 101]]}
    slower = {P50_MS: 120.0, ROUND_LATENCIES_MS: [[118, 120, 122], [119, 121]]}
    faster = {P50_MS: 80.0, ROUND_LATENCIES_MS: [[79, 80, 81], [80, 82]]}
    same = {P50_MS: 101.0, ROUND_LATENCIES_MS: [[99, 101, 103], [100, 102]]}
    open_ = {P50_MS: 106.0, ROUND_LATENCIES_MS: [[96, 106, 116], [100, 112]]}
    assert verdict.compare(slower, base).word == "worse"
    assert verdict.compare(faster, base).word == "better"
    same_v, open_v = verdict.compare(same, base), verdict.compare(open_, base)
    assert same_v.word == open_v.word == "tied"
    assert same_v.settled and not open_v.settled  # equivalent, against not yet known
    # The same records always give the same answer (a fixed seed).
    assert verdict.compare(open_, base) == open_v
    # Peak memory: one figure per fresh process.
    hungry = {PEAK_RSS_MB: 700.0, ROUND_PEAK_RSS_MB: [690.0, 710.0]}
    assert verdict.compare(hungry, {ROUND_PEAK_RSS_MB: [495.0, 505.0]}, PEAK_RSS_MB).word == "worse"


def _cfg(preset, cpus, loading, p50, peak):
    return {"preset": preset, "cpus": cpus, "loading": loading, "steps": 8, "batch_size": 1,
            "status": "ok", P50_MS: p50, PEAK_RSS_MB: peak}


def test_the_fixed_order_inside_the_tie_set():
    recs = [_cfg("lean", 2, "resident", 1000, 620), _cfg("ort-default", 2, "resident", 1020, 630),
            _cfg("lean", 2, "paged", 1030, 340), _cfg("ort-default", 2, "paged", 1040, 345),
            _cfg("lean", 1, "paged", 1600, 330)]
    p = verdict.pick(recs, budget_mb=1024)
    # 1 vCPU is worse (1.6x): out of the tie set; resident peaks higher beyond the band;
    # of the paged two, the untuned default preset comes first.
    assert len(p.tie_set) == 4
    assert (p.record["preset"], p.record["cpus"], p.record["loading"]) == (
        "ort-default", 2, "paged")
    # Fewer vCPUs come before the preset, where they tie.
    tied = [_cfg("lean", 2, "paged", 1000, 340), _cfg("lean", 1, "paged", 1010, 340)]
    assert verdict.pick(tied).record["cpus"] == 1
    # A budget that nothing fits: no pick.
    assert verdict.pick(recs, budget_mb=100).record is None


@pytest.mark.parametrize("order", range(6))
def test_the_order_never_reads_latency_inside_the_tie_set(order):
    # Three configurations within 4 % of each other, their latencies permuted: the pick
    # is the same whichever is fastest.
    configs = [("lean", "paged"), ("ort-default", "paged"), ("seed-2vcpu", "paged")]
    perms = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)][order]
    recs = [_cfg(p, 2, lo, 1000 + 20 * perms[i], 340) for i, (p, lo) in enumerate(configs)]
    p = verdict.pick(recs)
    assert len(p.tie_set) == 3 and p.record["preset"] == "ort-default"


def test_effects_name_each_dimension_with_its_interval():
    recs = [_noisy(1600.0 / c * (1.08 if lo == "paged" else 1.0), seed=10 * c + i,
                   peak=330.0 if lo == "paged" else 620.0, preset=pr, cpus=c, loading=lo)
            for c in (1, 2) for i, lo in enumerate(("resident", "paged"))
            for pr in ("ort-default", "lean")]
    found = verdict.effects(recs, 0.05)
    by = {(e["dimension"], e["level"]): e for e in found}
    assert by["cpus", 2]["latency"].word == "better"
    assert by["loading", "paged"]["peak"].word == "better"
    assert by["loading", "paged"]["latency"].lo < by["loading", "paged"]["latency"].hi
    lines = verdict.effect_lines(found, 0.05)
    assert any(line.startswith("preset: no difference beyond 5 %") for line in lines), lines
    assert any(line.startswith("vCPUs 2 against 1: latency -50 %") for line in lines), lines


def _sweep(seed: int, paged_cost: float = 1.15) -> list[dict]:
    """A default-like sweep (5 presets x 1-2 vCPUs x resident/paged, 2 fresh processes
    each) on a machine whose processes run fast or 1.25x slower and stay there (issue 35's
    quiet 2-core box): presets equal, 2 vCPUs 1.6x faster, paged ``paged_cost`` slower at
    half the peak; resident's peak wobbles between processes."""
    rng = np.random.default_rng(seed)
    out = []
    for preset in ("ort-default", "supertonic-default", "seed-2vcpu", "low-memory", "lean"):
        for cpus in (1, 2):
            for loading in ("resident", "paged"):
                true = 1400.0 * (1.6 if cpus == 1 else 1.0) * (
                    paged_cost if loading == "paged" else 1.0)
                rounds = [[true * (1.25 if rng.random() < 0.4 else 1.0)
                           * (1 + 0.01 * rng.standard_normal()) for _ in range(3)]
                          for _ in range(2)]
                peaks = [340.0 + rng.normal(0, 3) if loading == "paged" else
                         rng.uniform(520, 624) for _ in range(2)]
                out.append({"preset": preset, "cpus": cpus, "loading": loading, "steps": 8,
                            "batch_size": 1, "status": "ok", ROUND_LATENCIES_MS: rounds,
                            P50_MS: float(np.median(sum(rounds, []))),
                            ROUND_PEAK_RSS_MB: peaks, PEAK_RSS_MB: float(max(peaks))})
    return out


def test_the_pick_repeats_where_one_configuration_drew_lucky_processes():
    """Regression (issue 35): on the quiet box the pick flipped between paged and resident
    run to run (0 of 3 consistent): one configuration's two processes landing fast made it
    the leader, and paged's +15 % sat at the edge of that leader's tie band. Decided a
    dimension at a time over every configuration that differs only there, the picks of
    twelve simulated runs lie in each other's tie sets."""
    def consistent(picks: list) -> list[tuple]:
        key = ("preset", "cpus", "loading")
        sets = [{tuple(r[k] for k in key) for r in p.tie_set} for p in picks]
        chosen = [tuple(p.record[k] for k in key) for p in picks]
        assert all(c in s for c in chosen for s in sets), (chosen, sets)
        return chosen
    chosen = consistent([verdict.pick(_sweep(seed)) for seed in range(12)])
    assert set(chosen) == {("ort-default", 2, "resident")}
    # Where paged's cost lies inside the band, its half peak wins once that is shown.
    cheap = consistent([verdict.pick(_sweep(seed, paged_cost=1.02)) for seed in range(12)])
    assert sum(c == ("ort-default", 2, "paged") for c in cheap) >= 9, cheap


def test_six_quiet_runs_of_the_default_report_give_one_pick():
    """Regression (issue 35) on real records: the six default reports of the quiet 2-core
    box (tests/fixtures/issue35_quiet_runs.json) picked ort-default paged, seed-2vcpu
    resident, lean resident, ort-default paged, supertonic-default paged and seed-2vcpu
    resident: 0 of 3 consistent in each set of three. Paged's +11-15 % over every preset
    was "tied" against a band of 8-11 % in half of them."""
    import json
    from pathlib import Path

    runs = json.loads((Path(__file__).parent / "fixtures" / "issue35_quiet_runs.json")
                      .read_text(encoding="utf-8"))["runs"]
    picks = [verdict.pick(recs) for recs in runs]
    key = ("preset", "cpus", "loading")
    for three in (picks[:3], picks[3:]):
        sets = [{tuple(r[k] for k in key) for r in p.tie_set} for p in three]
        assert all(tuple(p.record[k] for k in key) in s for p in three for s in sets)
    assert {tuple(p.record[k] for k in key) for p in picks} == {("ort-default", 2, "resident")}
    # The reason says why paged's half peak was not taken where paged was tied, and does
    # not call the resident pick's peak "higher beyond the band" beside it.
    for p in picks:
        tied_paged = any(r["loading"] == "paged" for r in p.tie_set)
        assert ("paged (latency" in p.reason) == tied_paged, p.reason
        assert "peak higher" not in p.reason, p.reason
