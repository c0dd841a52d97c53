"""Figures that repeat (issue 22, section 3): alternating rounds, merged records with their
spread, recommendations and tables that say which differences exceed it."""

from __future__ import annotations

import pytest

from tts_kit.tuning import tune
from tts_kit.tuning.records import (
    LATENCIES_MS,
    P50_MS,
    PEAK_RSS_MB,
    PREP_PEAK_RSS_MB,
    PREP_S,
    REPEATS,
    ROUND_LATENCIES_MS,
    ROUNDS,
    RTF,
)
from tts_kit.tuning.spread import format_table, merge_rounds, split_repeats
from tts_kit.tuning.tune import SweepResult, mark_pareto
from tts_kit.tuning.workload import Workload


def _round(preset, p50, peak, calls=2, status="ok"):
    return {"preset": preset, "cpus": 1, "loading": "resident", "steps": 8, "batch_size": 1,
            "status": status, P50_MS: p50, PEAK_RSS_MB: peak, LATENCIES_MS: [p50] * calls,
            REPEATS: calls, "audio_s": 2.0, RTF: p50 / 2000, "load_s": 1.0, "wall_s": 5.0}


class _Calls(list):
    """(preset, timed calls) of each trial, in the order run; ``prepared``: whether each
    did the one-time preparation."""

    def __init__(self):
        super().__init__()
        self.prepared: list[bool] = []


@pytest.fixture
def fake_trials(monkeypatch):
    """`tune.trial` replaced by a recorder: (preset, timed calls) in the order run. Each
    trial's calls spread 10 % about its preset's latency: "fast" and "close" (3 % apart)
    stay open, "slow" (2x) is settled by its first trial."""
    calls = _Calls()
    latency = {"fast": 100.0, "close": 103.0, "slow": 200.0, "lean": 130.0}

    def fake(path, preset, workload, **kwargs):
        calls.append((preset.name, workload.repeats))
        calls.prepared.append(kwargs["prepare"])
        if preset.name == "doomed":
            return _round("doomed", 0.0, 900.0, status="oom")
        p50 = latency[preset.name] * (1 + 0.05 * (len(calls) % 3 - 1))
        rec = _round(preset.name, p50, 500.0, calls=workload.repeats)
        rec[LATENCIES_MS] = [p50 * (0.9 + 0.2 * i / max(1, workload.repeats - 1))
                             for i in range(workload.repeats)]
        return rec

    monkeypatch.setattr(tune, "trial", fake)
    monkeypatch.setattr(tune, "get_preset", lambda p: tune.SessionPreset(name=p))
    return calls


def test_racing_screens_every_configuration_then_measures_the_open_ones(tiny_bundle_dir,
                                                                       fake_trials):
    result = tune.sweep(tiny_bundle_dir, ["fast", "close", "slow"], Workload(repeats=5),
                        cpus=(1,), progress=False, warmup=False, stage_costs_mb=None)
    names = [name for name, _ in fake_trials]
    # Screening: every configuration once (shuffled), then only the open ones, until the
    # budget (2 rounds x 3 configurations) is spent; the calls alternate 3 + 2.
    assert sorted(names[:3]) == ["close", "fast", "slow"] and len(names) == 6
    assert names.count("slow") == 1 and sorted(set(names[3:])) == ["close", "fast"]
    assert [n for name, n in fake_trials if name == "fast"][:2] == [3, 2]
    assert fake_trials.prepared[:3] == [True] * 3 and not any(fake_trials.prepared[3:])
    fast = result.records[0]
    assert fast[ROUNDS] == names.count("fast") and len(fast[ROUND_LATENCIES_MS]) == fast[ROUNDS]
    assert result.recommend(None)[0]["preset"] in ("fast", "close")


def test_a_configuration_that_fails_a_round_is_not_measured_again(tiny_bundle_dir,
                                                                 fake_trials):
    result = tune.sweep(tiny_bundle_dir, ["doomed", "lean"], Workload(repeats=2), cpus=(1,),
                        progress=False, warmup=False, stage_costs_mb=None)
    # The one that did not hold is not measured again; the budget (2 x 2) goes to the rest.
    assert sorted(name for name, _ in fake_trials) == ["doomed", "lean", "lean", "lean"]
    assert result.records[0]["status"] == "oom"


def test_rounds_are_checked_before_any_trial(tiny_bundle_dir, fake_trials):
    with pytest.raises(tune.TtsKitError, match="rounds must be an integer >= 1"):
        tune.sweep(tiny_bundle_dir, ["fast"], rounds=0, progress=False, warmup=False)
    assert fake_trials == []


def test_repeats_are_split_across_rounds_not_doubled():
    assert split_repeats(5, 2) == [3, 2]
    assert split_repeats(3, 3) == [1, 1, 1]
    assert sum(split_repeats(7, 2)) == 7


def test_merged_figures_pool_the_calls_and_keep_the_highest_peak():
    m = merge_rounds([_round("a", 100.0, 500.0, calls=1), _round("a", 120.0, 560.0, calls=2)])
    assert m[P50_MS] == 120.0 and m[RTF] == pytest.approx(0.06)
    assert m[PEAK_RSS_MB] == 560.0 and m["load_s"] == 1.0 and m["wall_s"] == 10.0


def _tie(fast_peaks, lean_peaks):
    """A fast configuration and one 3 % slower (shown inside the 5 % band), each with the
    peaks of its two rounds."""
    fast = merge_rounds([_round("fast", 100.0, fast_peaks[0]),
                         _round("fast", 101.0, fast_peaks[1])])
    lean = merge_rounds([_round("lean", 103.0, lean_peaks[0]),
                         _round("lean", 104.0, lean_peaks[1])])
    return SweepResult(mark_pareto([fast, lean]))


def test_a_lower_peak_within_the_spread_does_not_decide():
    # The wobble (554 vs 493 MB in two runs of one configuration), on both: tied in
    # latency (3 %, inside the band) and in peak, so the fixed order decides.
    best, reason = _tie(fast_peaks=(493.0, 554.0), lean_peaks=(480.0, 540.0)).recommend(None)
    assert best["preset"] == "lean" and "same speed within 5 %" in reason
    assert "peak higher" not in reason


def test_a_lower_peak_beyond_the_spread_decides():
    best, reason = _tie(fast_peaks=(554.0, 554.0), lean_peaks=(445.0, 450.0)).recommend(None)
    assert best["preset"] == "lean"
    assert "peak 450 MB (rounds 445-450)" in reason and "1 of them peak higher" in reason


def test_the_table_shows_spreads_what_differs_from_the_pick_and_the_preparation():
    fast = merge_rounds([_round("fast", 100.0, 500.0), _round("fast", 110.0, 540.0)])
    lean = merge_rounds([_round("lean", 200.0, 510.0), _round("lean", 210.0, 520.0)])
    lean.update({"loading": "paged", PREP_S: 35.2, PREP_PEAK_RSS_MB: 588.0})
    lines = format_table([fast, lean], pick=fast).splitlines()
    assert lines[0].count("±") == 2 and lines[0].endswith("vs pick")
    assert "±20" in lines[1] and lines[1].endswith("pick")
    assert lines[2].endswith("p50 +95%")  # the peak is within the spread: not named
    assert "one-time preparation" in lines[3] and "not in the figures above" in lines[3]
    assert lines[4] == "  paged: 35.2 s (peak 588 MB)"


def test_sweep_options_and_keywords_say_the_same(tiny_bundle_dir, fake_trials):
    opts = tune.SweepOptions(cpus=(1,), progress=False, warmup=False, stage_costs_mb=None)
    tune.sweep(tiny_bundle_dir, ["lean"], Workload(repeats=2), opts, rounds=1)
    assert fake_trials == [("lean", 2)]  # the keyword overrode the options' two rounds
    with pytest.raises(TypeError, match="SweepOptions has no option cpu"):
        tune.sweep(tiny_bundle_dir, ["lean"], None, opts, cpu=1)
