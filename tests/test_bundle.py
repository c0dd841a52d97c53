"""Bundle: validation of every file against the contract, and what it reports."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from tts_kit import Bundle, BundleError, resolve_model_dir
from tts_kit.core import contract


@pytest.fixture()
def bundle_copy(tiny_bundle_dir: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "bundle"
    shutil.copytree(tiny_bundle_dir, dst)
    return dst


def test_opens_and_describes(tiny_bundle_dir: Path):
    b = Bundle(tiny_bundle_dir)
    assert b.is_standin and b.standin_info["scale"] == "tiny"
    assert {"M1", "F1"} <= set(b.voices)
    assert b.sample_rate == 44100
    info = b.describe()
    for stage in contract.STAGES:
        s = info["stages"][stage]
        path = tiny_bundle_dir / contract.GRAPHS[stage].path
        assert s["size_bytes"] == path.stat().st_size
        assert s["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        # the scan's parameter count equals onnx's own count of initializer elements
        model = onnx.load(str(path))
        expected = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
        assert s["params"] == expected > 0
        assert s["precision"] == "float32"
    assert b.voice("M1").ttl.shape == (1, 50, 256)
    assert b.voice("M1").dp.shape == (1, 8, 16)


def test_unknown_voice_lists_available(tiny_bundle_dir: Path):
    with pytest.raises(ValueError, match="available voices: F1, M1"):
        Bundle(tiny_bundle_dir).voice("Z9")


def _expect(path: Path, pattern: str):
    with pytest.raises(BundleError, match=pattern) as info:
        Bundle(path)
    assert "\n" not in str(info.value)


def test_missing_file(bundle_copy: Path):
    (bundle_copy / "onnx/vocoder.onnx").unlink()
    _expect(bundle_copy, r"onnx/vocoder.onnx: missing")


def test_missing_directory(tmp_path: Path):
    _expect(tmp_path / "nope", "not a directory")


def test_truncated_onnx(bundle_copy: Path):
    p = bundle_copy / "onnx/text_encoder.onnx"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    _expect(bundle_copy, r"onnx/text_encoder.onnx: not a readable ONNX model")


def test_garbage_onnx(bundle_copy: Path):
    (bundle_copy / "onnx/vocoder.onnx").write_bytes(b"\xff" * 100)
    _expect(bundle_copy, r"onnx/vocoder.onnx: not a readable ONNX model")


def test_wrong_input_name(bundle_copy: Path):
    p = bundle_copy / "onnx/duration_predictor.onnx"
    model = onnx.load(str(p))
    old = model.graph.input[0].name
    model.graph.input[0].name = "token_ids"
    for node in model.graph.node:
        node.input[:] = ["token_ids" if i == old else i for i in node.input]
    onnx.save(model, str(p))
    _expect(bundle_copy, r"predictor.onnx: inputs are \['token_ids'.*expected \['text_ids'")


def test_wrong_fixed_dim(bundle_copy: Path):
    p = bundle_copy / "onnx/vocoder.onnx"
    model = onnx.load(str(p))
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 100
    onnx.save(model, str(p))
    _expect(bundle_copy, r"vocoder.onnx: input 'latent' has size 100 on axis 1, expected 144")


def test_wrong_rank(bundle_copy: Path):
    p = bundle_copy / "onnx/vocoder.onnx"
    model = onnx.load(str(p))
    del model.graph.output[0].type.tensor_type.shape.dim[0]
    onnx.save(model, str(p))
    _expect(bundle_copy, r"vocoder.onnx: output 'wav_tts' has rank 1 .*expected rank 2")


def test_voice_with_wrong_dims(bundle_copy: Path):
    p = bundle_copy / "voice_styles/F1.json"
    data = json.loads(p.read_text())
    data["style_dp"]["dims"] = [1, 16, 8]
    p.write_text(json.dumps(data))
    _expect(bundle_copy, r"F1.json: style_dp dims are \[1, 16, 8\], expected \[1, 8, 16\]")


def test_malformed_json(bundle_copy: Path):
    (bundle_copy / "onnx/tts.json").write_text('{"ae": {"sample_rate": 44100,')
    _expect(bundle_copy, r"onnx/tts.json: not valid JSON")


def test_wrong_runtime_key(bundle_copy: Path):
    p = bundle_copy / "onnx/tts.json"
    cfg = json.loads(p.read_text())
    cfg["ae"]["sample_rate"] = 22050
    p.write_text(json.dumps(cfg))
    _expect(bundle_copy, r"ae.sample_rate is 22050, expected 44100")


def test_discovery_order(tiny_bundle_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    assert resolve_model_dir(tiny_bundle_dir) == (tiny_bundle_dir, "explicit path")
    monkeypatch.setenv("TTS_KIT_MODEL_DIR", str(tiny_bundle_dir))
    assert resolve_model_dir()[1] == "$TTS_KIT_MODEL_DIR"
    monkeypatch.delenv("TTS_KIT_MODEL_DIR")
    official = tmp_path / "official"
    shutil.copytree(tiny_bundle_dir, official)
    monkeypatch.setenv("SUPERTONIC_CACHE_DIR", str(official))
    assert resolve_model_dir() == (official, "official supertonic cache")
    monkeypatch.setenv("SUPERTONIC_CACHE_DIR", str(tmp_path / "empty"))
    path, source = resolve_model_dir()
    assert source == "stand-in (tiny)" and Bundle(path).is_standin
    assert resolve_model_dir()[0] == path  # built once, then reused


def _onnx_dims(vi) -> list:
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in vi.type.tensor_type.shape.dim]


def test_the_scan_reads_inputs_and_outputs_as_onnx_does(tiny_bundle_dir: Path, tmp_path: Path):
    from tts_kit.core.protoscan import scan_onnx

    for stage in contract.STAGES:
        path = tiny_bundle_dir / contract.GRAPHS[stage].path
        model, scan = onnx.load(str(path)), scan_onnx(path)
        inits = {i.name for i in model.graph.initializer}
        want_in = [i for i in model.graph.input if i.name not in inits]
        for mine, theirs in [*zip(scan.inputs, want_in), *zip(scan.outputs, model.graph.output)]:
            assert mine.name == theirs.name
            assert mine.elem_type == theirs.type.tensor_type.elem_type
            assert mine.dims == _onnx_dims(theirs), (stage, mine)
        assert len(scan.inputs) == len(want_in) and len(scan.outputs) == len(model.graph.output)
        assert scan.params == sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    # An unknown dimension (neither value nor name) and a non-tensor output.
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT16, [None, 3, "T"])
    seq = onnx.helper.make_tensor_sequence_value_info("s", onnx.TensorProto.FLOAT, None)
    graph = onnx.helper.make_graph([onnx.helper.make_node("SequenceConstruct", ["x"], ["s"])],
                                   "g", [x], [seq])
    onnx.save(onnx.helper.make_model(graph), tmp_path / "g.onnx")
    scan = scan_onnx(tmp_path / "g.onnx")
    assert (scan.inputs[0].elem_type, scan.inputs[0].dims) == (onnx.TensorProto.FLOAT16,
                                                               [None, 3, "T"])
    assert scan.outputs[0].name == "s" and scan.outputs[0].elem_type == 0


@pytest.mark.slow  # a fresh interpreter per case
@pytest.mark.parametrize("loading", ["resident", "paged"])
def test_opening_a_bundle_and_engine_does_not_import_onnx(tiny_bundle_dir: Path, tmp_path: Path,
                                                          loading: str):
    import os
    import subprocess
    import sys

    # paged with an empty cache: the external-data copies are made on the first request.
    code = ("import sys; from tts_kit import Bundle, Engine; "
            f"e = Engine(Bundle({str(tiny_bundle_dir)!r}), loading={loading!r}); "
            "e.synthesize('Hi.', lang='en', steps=1); print('onnx' in sys.modules)")
    env = {**os.environ, "TTS_KIT_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120, env=env).stdout.strip()
    assert out == "False"  # onnx costs 0.7 s and 15 MB per process; the engine needs none
    if loading == "paged":
        assert len(list((tmp_path / "external").glob("*/*.onnx.data"))) == 4


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_voice_with_non_finite_values(bundle_copy: Path, value: str):
    # A NaN style gave an all-NaN waveform, written as full-scale DC.
    p = bundle_copy / "voice_styles/F1.json"
    text = p.read_text()
    data = json.loads(text)
    first = json.dumps(data["style_ttl"]["data"][0][0][0])
    p.write_text(text.replace(first, value, 1))
    _expect(bundle_copy, r"voice_styles/F1.json: style_ttl has 1 value\(s\) that are NaN or "
                         r"infinite; the voice file is damaged: re-download it")
