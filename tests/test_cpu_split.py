"""Where a worker's CPU goes, and the FP32 levers (issue 27): real ONNX Runtime, tiny stand-in."""

from __future__ import annotations

import numpy as np
import pytest
from lab.cpu_split import (
    FP32_LEVERS,
    exact_ceiling,
    gemm_share,
    lever_ab,
    op_shares,
    stage_split,
)
from lab.stage_speed import stage_feeds

from tts_kit.core import contract
from tts_kit.models.supertonic.engine import Engine
from tts_kit.serve.worker import WorkerConfig

TEXT = "The quick brown fox jumps over the lazy dog. Then it sleeps in the warm sun."


@pytest.fixture(scope="module")
def feeds(tiny_bundle_dir):
    return stage_feeds(tiny_bundle_dir, TEXT, steps=2)


def test_stage_split_accounts_for_the_whole_render_and_restores_the_engine(tiny_bundle_dir):
    preset = WorkerConfig(model=str(tiny_bundle_dir), threads=1, spinning=False).preset_obj()
    engine = Engine(tiny_bundle_dir, preset=preset)
    engine.synthesize("Warm up.", steps=1, seed=0)
    split = stage_split(engine, TEXT, steps=2, max_chunk_chars=50)
    assert set(split["stages"]) == set(contract.STAGES)
    assert split["other_s"] + sum(split["stages"].values()) == pytest.approx(split["total_s"])
    assert split["chunks"] >= 2
    # The pauses between chunks are audio that costs nothing: speech leaves them out.
    assert split["speech_s"] == pytest.approx(
        split["audio_s"] - contract.CHUNK_SILENCE_S * (split["chunks"] - 1))
    assert "_run" not in vars(engine)  # the instrumented method is gone again
    # The same render as without the instrument: the split only reads the clock.
    plan = engine.plan(TEXT, engine.config(seed=0, steps=2, max_chunk_chars=50))
    again = sum(engine.render_chunk(plan, k).duration_s for k in range(len(plan.chunks)))
    assert again == pytest.approx(split["audio_s"])
    engine.close()


def test_op_shares_sum_to_one_and_the_gemm_part_is_read_from_them(tiny_bundle_dir, feeds,
                                                                   tmp_path):
    shares = op_shares(tiny_bundle_dir / contract.GRAPHS["vocoder"].path, feeds["vocoder"],
                       calls=1, prefix=str(tmp_path / "prof"))
    assert sum(shares.values()) == pytest.approx(1.0)
    assert "MatMul" in shares and "Conv" in shares
    assert 0 < gemm_share(shares) <= 1
    assert not list(tmp_path.iterdir())  # the profiler's trace is removed


def test_exact_ceiling_counts_only_the_non_gemm_part():
    assert exact_ceiling({"a": 0.5, "b": 0.5}, {"a": 1.0, "b": 1.0}) == 1.0
    assert exact_ceiling({"a": 0.9, "python": 0.1}, {"a": 0.9}) == pytest.approx(1 / 0.81)


@pytest.mark.parametrize("stage", ["vector_estimator", "vocoder"])
def test_every_fp32_lever_keeps_the_output(tiny_bundle_dir, feeds, tmp_path, stage):
    ab = lever_ab(tiny_bundle_dir / contract.GRAPHS[stage].path, feeds[stage], tmp_path,
                  rounds=2, calls=1)
    assert list(ab) == list(FP32_LEVERS)
    assert ab["base"]["x_base"] == 1.0 and ab["base"]["max_abs_diff"] == 0.0
    ref = np.abs(next(iter(feeds[stage].values()))).max()
    for lever, r in ab.items():
        assert r["cpu_s"] > 0 and r["min_s"] <= r["cpu_s"] <= r["max_s"]
        # The pointwise rewrite sums in another order: the same numbers to float rounding.
        assert r["max_abs_diff"] <= 1e-5 * max(1.0, float(ref)), (lever, r)
    # Session options that do not touch the graph run the very same kernels.
    for lever in ("optimised-copy", "mem-pattern-off", "arena-off"):
        assert ab[lever]["max_abs_diff"] == 0.0, lever
