"""Pointwise Conv -> MatMul rewrite (issue 27, item 5): same numbers, integer kernels after."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tts_kit.core import contract
from tts_kit.precision.conversion import random_feeds
from tts_kit.precision.pointwise import convert_int8_pw, pointwise_to_matmul
from tts_kit.precision.recipes import kernel_report


def _run(path: Path, feeds: dict) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("stage", ["vector_estimator", "vocoder"])
def test_rewrite_gives_the_same_outputs_to_float_rounding(tiny_bundle_dir, tmp_path, stage):
    src = tiny_bundle_dir / contract.GRAPHS[stage].path
    model = onnx.load(str(src))
    convs = sum(n.op_type == "Conv" for n in model.graph.node)
    assert pointwise_to_matmul(model) == 1  # the stand-in's proj_in / head.2
    assert sum(n.op_type == "Conv" for n in model.graph.node) == convs - 1
    onnx.checker.check_model(model)
    out = tmp_path / "pw.onnx"
    onnx.save(model, str(out))
    feeds = random_feeds(ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]),
                         dynamic=6)
    if stage == "vector_estimator":  # masks of ones and a step in range, as the engine feeds
        feeds.update({k: np.ones_like(v) for k, v in feeds.items() if "mask" in k})
        feeds["current_step"] = np.full_like(feeds["current_step"], 1.0)
        feeds["total_step"] = np.full_like(feeds["total_step"], 4.0)
    for a, b in zip(_run(src, feeds), _run(out, feeds)):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5 * float(np.abs(a).max()))


def test_only_pointwise_convs_are_rewritten(tiny_bundle_dir):
    model = onnx.load(str(tiny_bundle_dir / contract.GRAPHS["text_encoder"].path))
    before = [n.op_type for n in model.graph.node]
    assert pointwise_to_matmul(model) == 0  # depthwise k=5 convs only: nothing to do
    assert [n.op_type for n in model.graph.node] == before


def test_int8_pw_runs_integer_gemm_and_no_conv_integer(tiny_bundle_dir, tmp_path):
    src = tiny_bundle_dir / contract.GRAPHS["vocoder"].path
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ops, _ = convert_int8_pw(src, tmp_path / "voc.onnx", scratch)
    assert ops["Conv 1x1 -> MatMul"] == 1 and ops.get("MatMul", 0) >= 1
    report = kernel_report(tmp_path / "voc.onnx")
    assert report.integer_ops > 0 and "ConvInteger" not in report.ops
    feeds = random_feeds(ort.InferenceSession(str(src), providers=["CPUExecutionProvider"]),
                         dynamic=6)
    ref, got = _run(src, feeds)[0], _run(tmp_path / "voc.onnx", feeds)[0]
    assert ref.shape == got.shape and np.isfinite(got).all()
