"""The cost model (`tts_kit.tuning.flops`): FLOPs counted from the stand-in's graphs
equal the architecture's formula (`lab.architecture_flops`, from its ``tts.json``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from lab import architecture_flops as arch

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.models.supertonic.standin import _config
from tts_kit.models.supertonic.standin_graphs import build_graph
from tts_kit.tuning import flops


def architecture_flops(scale: str, dims: dict[str, int]) -> dict[str, int]:
    return arch.architecture_flops(_config(scale, 0), dims)


@pytest.mark.parametrize("scale", ["tiny", "medium"])
def test_graph_flops_match_the_architecture(scale):
    dims = flops.reference_dims(8.0)
    want = architecture_flops(scale, dims)
    for stage in contract.STAGES:
        got = flops.graph_flops(build_graph(stage, scale), dims)
        assert got == pytest.approx(want[stage], rel=0.02), stage


@pytest.mark.slow
def test_full_standin_flops_match_the_architecture():
    dims = flops.reference_dims(8.0)
    want = architecture_flops("full", dims)
    for stage in contract.STAGES:
        got = flops.graph_flops(build_graph(stage, "full"), dims)
        assert got == pytest.approx(want[stage], rel=0.02), stage


def test_the_vector_estimator_does_two_branches_per_step():
    # Classifier-free guidance doubles the vector field's batch: a step costs about twice
    # a single conditional pass (the one-branch formula, batch halved).
    dims = flops.reference_dims(8.0)
    one = flops.graph_flops(build_graph("vector_estimator", "tiny"), {**dims, "B": 1})
    single = architecture_flops("tiny", dims)["vector_estimator"] / 2
    assert one / single == pytest.approx(2.0, rel=0.02)


def test_stage_flops_scale_with_steps():
    g = {"vector_estimator": build_graph("vector_estimator", "tiny"),
         "vocoder": build_graph("vocoder", "tiny")}
    c5 = {c.stage: c for c in flops.stage_flops(g, steps=5)}
    c8 = {c.stage: c for c in flops.stage_flops(g, steps=8)}
    ve5, ve8 = c5["vector_estimator"], c8["vector_estimator"]
    assert ve8.gflops_per_audio_s == pytest.approx(ve5.gflops_per_audio_s * 8 / 5)
    assert c8["vocoder"].gflops_per_audio_s == pytest.approx(c5["vocoder"].gflops_per_audio_s)
    assert ve8.params == flops.graph_params(g["vector_estimator"])


def test_bad_input_is_one_line_error():
    with pytest.raises(TtsKitError, match="no value for dimension"):
        flops.graph_flops(build_graph("vocoder", "tiny"), {"B": 1})
    with pytest.raises(TtsKitError, match="steps"):
        flops.stage_flops({}, steps=0)

    class _OneGraph:  # a model whose stages are not the Supertonic contract's (Piper)
        stages = {"voice": None}

    with pytest.raises(TtsKitError, match="voice graph has other inputs"):
        flops.model_costs(_OneGraph())


@pytest.mark.slow  # the CLI in a subprocess: out of the quick loop
def test_info_costs_on_the_tiny_standin(tiny_bundle_dir, capsys):
    from tts_kit.cli import main

    out = subprocess.run([sys.executable, "-m", "tts_kit.cli", "info", "--costs", "--json",
                          "--model", str(tiny_bundle_dir)], capture_output=True, text=True,
                         check=True).stdout
    info = json.loads(out)
    costs = {c["stage"]: c for c in info["costs"]["stages"]}
    assert set(costs) == set(contract.STAGES)
    assert costs["vector_estimator"]["runs"] == contract.DEFAULT_STEPS
    # The table, from the same `main` in this process (the JSON above crossed the boundary).
    assert main(["info", "--costs", "--model", str(tiny_bundle_dir)]) == 0
    text = capsys.readouterr().out
    assert "GFLOP/audio s" in text and "vector_estimator" in text


@pytest.mark.slow  # one roofline measurement in a fresh pinned process
def test_info_costs_measure_shows_how_far_each_stage_is_from_the_floor(tiny_bundle_dir,
                                                                      capsys):
    from tts_kit.cli import main

    assert main(["info", "--costs", "--measure", "--steps", "2", "--no-load", "--model",
                 str(tiny_bundle_dir)]) == 0
    out = capsys.readouterr().out
    assert "MatMul peak" in out and "fresh pinned process" in out and "vector_estimator" in out
    assert "thread and session tuning can win" in out


def test_info_measure_needs_costs_and_sane_threads(tiny_bundle_dir, capsys):
    from tts_kit.cli import main

    assert main(["info", "--measure", "--model", str(tiny_bundle_dir)]) == 2
    assert "give it with --costs" in capsys.readouterr().err
    assert main(["info", "--costs", "--measure", "--threads", "0", "--model",
                 str(tiny_bundle_dir)]) == 2
    assert "--threads 0" in capsys.readouterr().err


@pytest.mark.bench
def test_standin_realism_bench(tiny_bundle_dir, tmp_path):
    from pathlib import Path

    out = tmp_path / "realism.json"
    bench = Path(__file__).resolve().parents[1] / "bench" / "standin_realism.py"
    run = subprocess.run([sys.executable, str(bench), "--model", str(tiny_bundle_dir),
                          "--steps", "2", "--threads", "1", "--repeats", "1",
                          "--no-instances", "--json", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    data = json.loads(out.read_text())
    stages = {s["stage"]: s for s in data["roofline"]["stages"]}
    for stage in contract.STAGES:
        assert data["graph_flops"][stage] == pytest.approx(data["arch_flops"][stage], rel=0.02)
        assert stages[stage]["gflop"] > 0
    assert "within 2 % of the architecture: yes" in run.stdout
    assert data["roofline"]["sentence"] in run.stdout and "x floor" in run.stdout
