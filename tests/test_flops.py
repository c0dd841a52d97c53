"""The cost model (`tts_kit.experiments.flops`): FLOPs counted from the stand-in's graphs
equal the architecture's formula, written here from the dimensions in its ``tts.json``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.experiments import flops
from tts_kit.models.supertonic.standin import _config
from tts_kit.models.supertonic.standin_graphs import build_graph

STYLE_TOKENS, STYLE_DIM = contract.STYLE_TTL_DIMS[1], contract.STYLE_TTL_DIMS[2]


def _convnext(n: int, cfg: dict) -> int:
    """A ConvNeXt layer stack over ``n`` positions: depthwise conv + two pointwise."""
    ch, k, hid = cfg["idim"], cfg["ksz"], cfg["intermediate_dim"]
    return cfg["num_layers"] * 2 * n * ch * (k + 2 * hid)


def _self_attn(n: int, cfg: dict) -> int:
    """VITS attention layers: q, k, v, o projections, scores and mixing, the FFN."""
    ch, ffn = cfg["hidden_channels"], cfg["filter_channels"]
    return cfg["n_layers"] * (2 * n * ch * (4 * ch + 2 * ffn) + 4 * n * n * ch)


def _cross_attn(nq: int, nk: int, dq: int, dk: int, units: int) -> int:
    """q from ``nq`` queries, k and v from ``nk`` keys, scores, mixing, output projection."""
    return 2 * nq * dq * units * 2 + 2 * 2 * nk * dk * units + 4 * nq * nk * units


def _dp(cfg: dict, t: int) -> int:
    se, pr = cfg["dp"]["sentence_encoder"], cfg["dp"]["predictor"]
    ch, hid = pr["sentence_dim"], pr["hdim"]
    return (_convnext(t, se["convnext"]) + _self_attn(t, se["attn_encoder"])
            + 2 * t * ch * ch + 2 * pr["n_style"] * pr["style_dim"] * hid
            + 2 * t * ch * hid + (pr["n_layer"] - 1) * 2 * t * hid * hid + 2 * t * hid)


def _te(cfg: dict, t: int) -> int:
    te, sp = cfg["ttl"]["text_encoder"], cfg["ttl"]["speech_prompted_text_encoder"]
    return (_convnext(t, te["convnext"]) + _self_attn(t, te["attn_encoder"])
            + _cross_attn(t, STYLE_TOKENS, sp["text_dim"], sp["style_dim"], sp["n_units"])
            + 2 * t * te["proj_out"]["idim"] * te["proj_out"]["odim"])


def _ve(cfg: dict, t: int, lat: int) -> int:
    """One flow step; the vector field runs on the doubled batch (cond + uncond)."""
    vf = cfg["ttl"]["vector_field"]
    mb, te = vf["main_blocks"], vf["time_encoder"]
    ch, n2 = vf["proj_in"]["odim"], 2 * lat
    ldim = contract.LATENT_CHANNELS
    tx, st = mb["text_cond_layer"], mb["style_cond_layer"]
    block = (sum(_convnext(n2, mb[k]) for k in ("convnext_0", "convnext_1", "convnext_2"))
             + 2 * 2 * te["hdim"] * ch
             + 2 * _cross_attn(lat, t, ch, tx["text_dim"], tx["n_units"])
             + 2 * _cross_attn(lat, STYLE_TOKENS, ch, st["style_dim"], st["n_units"]))
    return (2 * (te["time_dim"] * te["hdim"] + te["hdim"] ** 2) + 2 * n2 * ldim * ch
            + mb["n_blocks"] * block + _convnext(n2, vf["last_convnext"]) + 2 * n2 * ch * ldim)


def _voc(cfg: dict, lat: int) -> int:
    dec = cfg["ae"]["decoder"]
    f, ch, head = contract.CHUNK_COMPRESS_FACTOR * lat, dec["hdim"], dec["head"]
    stack = {"idim": ch, "ksz": dec["ksz"], "intermediate_dim": dec["intermediate_dim"],
             "num_layers": dec["num_layers"]}
    return (2 * f * dec["idim"] * ch * dec["ksz_init"] + _convnext(f, stack)
            + 2 * f * ch * head["hdim"] * head["ksz"] + 2 * f * head["hdim"] * head["odim"])


def architecture_flops(scale: str, dims: dict[str, int]) -> dict[str, int]:
    """FLOPs per run of each stage from the architecture's dimensions alone."""
    cfg, t, lat = _config(scale, 0), dims["T"], dims["L"]
    return {"duration_predictor": _dp(cfg, t), "text_encoder": _te(cfg, t),
            "vector_estimator": _ve(cfg, t, lat), "vocoder": _voc(cfg, lat)}


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
    cfg = _config("tiny", 0)
    single = _ve(cfg, dims["T"], dims["L"]) / 2
    assert one / single == pytest.approx(2.0, rel=0.02)


def test_stage_costs_scale_with_steps():
    g = {"vector_estimator": build_graph("vector_estimator", "tiny"),
         "vocoder": build_graph("vocoder", "tiny")}
    c5 = {c.stage: c for c in flops.stage_costs(g, steps=5)}
    c8 = {c.stage: c for c in flops.stage_costs(g, steps=8)}
    ve5, ve8 = c5["vector_estimator"], c8["vector_estimator"]
    assert ve8.gflops_per_audio_s == pytest.approx(ve5.gflops_per_audio_s * 8 / 5)
    assert c8["vocoder"].gflops_per_audio_s == pytest.approx(c5["vocoder"].gflops_per_audio_s)
    assert ve8.params == flops.graph_params(g["vector_estimator"])


def test_bad_input_is_one_line_error(tmp_path):
    with pytest.raises(TtsKitError, match="not a Supertonic bundle"):
        flops.bundle_costs(tmp_path)
    with pytest.raises(TtsKitError, match="no value for dimension"):
        flops.graph_flops(build_graph("vocoder", "tiny"), {"B": 1})
    with pytest.raises(TtsKitError, match="steps"):
        flops.stage_costs({}, steps=0)


def test_info_costs_on_the_tiny_standin(tiny_bundle_dir):
    out = subprocess.run([sys.executable, "-m", "tts_kit.cli", "info", "--costs", "--json",
                          "--model", str(tiny_bundle_dir)], capture_output=True, text=True,
                         check=True).stdout
    info = json.loads(out)
    costs = {c["stage"]: c for c in info["costs"]["stages"]}
    assert set(costs) == set(contract.STAGES)
    assert costs["vector_estimator"]["runs"] == contract.DEFAULT_STEPS
    text = subprocess.run([sys.executable, "-m", "tts_kit.cli", "info", "--costs", "--model",
                           str(tiny_bundle_dir)], capture_output=True, text=True, check=True).stdout
    assert "GFLOP/audio s" in text and "vector_estimator" in text
