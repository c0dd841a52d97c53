"""Precision conversion on the tiny stand-in and on a hand-built ONNX model, with real ORT."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from tts_kit import Bundle, Engine, precision
from tts_kit.core import contract
from tts_kit.fidelity.audio_metrics import snr_db
from tts_kit.precision import ConversionReport, convert, sha256_tree
from tts_kit.precision import conversion as converter

CPU = "CPUExecutionProvider"
NO_DP = ["text_encoder", "vector_estimator", "vocoder"]


@pytest.fixture(scope="module")
def fp16(tiny_bundle_dir, tmp_path_factory):
    """FP16 of every stage, measured (memory, latency, fidelity) on the CPU."""
    before = sha256_tree(tiny_bundle_dir)
    dst = tmp_path_factory.mktemp("fp16") / "bundle"
    report = convert(tiny_bundle_dir, dst, to="fp16", providers=[CPU], repeats=1, quality=False)
    return report, before


@pytest.fixture(scope="module")
def int8(tiny_bundle_dir, tmp_path_factory):
    dst = tmp_path_factory.mktemp("int8") / "bundle"
    return convert(tiny_bundle_dir, dst, to="int8", measure=False)


@pytest.mark.slow  # a measured conversion and the listener's metrics
def test_a_measured_conversion_is_judged_as_a_listener_would(tiny_bundle_dir, tmp_path,
                                                            monkeypatch):
    from functools import partial

    # The stand-in speaks noise: recognising it and DNSMOS say nothing (and take minutes).
    monkeypatch.setattr(converter, "judge_quality",
                        partial(converter.judge_quality, skip=("wer", "dnsmos")))
    report = convert(tiny_bundle_dir, tmp_path / "q", to="fp16", measure="fidelity",
                     providers=[CPU], floor=False, quality=True)
    q = report.quality
    assert q["verdict"] in ("transparent", "acceptable", "degraded", "broken")
    assert q["decided_by"] and q["spread"]["takes"] == 3 and q["metrics"]["mcd_db"] >= 0
    assert f"decided by {q['decided_by']}" in report.table()
    assert ConversionReport.from_dict(report.to_dict()).quality == q
    # kept beside the copy, so a later report on the copy says how it was judged (issue 23)
    from tts_kit.precision.verdict_file import read_verdict

    kept = read_verdict(tmp_path / "q")
    assert kept["verdict"] == q["verdict"] and kept["decided_by"] == q["decided_by"]
    assert kept["recipe"] == "fp16" and kept["source"] == tiny_bundle_dir.name


@pytest.mark.slow  # the module's measured FP16 conversion: trials in fresh processes
def test_files_shrink(fp16, int8):
    report, _ = fp16
    for stage in contract.STAGES:
        # The vector estimator's guidance tokens (3 x 50 x 256 float32, issue 22) are not
        # weights of a MatMul and stay float under dynamic INT8: 12 % of the tiny graph,
        # 0.06 % of the full one.
        int8_limit = 0.45 if stage == "vector_estimator" else 0.35
        for r, limit in ((report, 0.55), (int8, int8_limit)):
            s = r.stages[stage]
            on_disk = (r.dst and Bundle(r.dst).stages[stage].size_bytes)
            assert s.converted and s.size_after == on_disk
            assert s.size_after <= limit * s.size_before, (r.to, stage, s.ratio)
        assert report.stages[stage].precision_after == "float16"
    # INT8 quantises the ConvNeXt pointwise layers (MatMul) in every stage, and the
    # vocoder's convolutions; the report says which.
    assert all(int8.stages[s].ops.get("MatMul", 0) >= 1 for s in contract.STAGES)
    assert int8.stages["vocoder"].ops.get("Conv", 0) >= 1
    assert int8.stages["text_encoder"].ops.get("Gather") == 1


@pytest.mark.slow  # the module's measured FP16 conversion: trials in fresh processes
def test_converted_bundles_open_and_synthesise(fp16, int8, tiny_bundle_dir):
    src = Bundle(tiny_bundle_dir)
    for r in (fp16[0], int8):
        b = Bundle(r.dst)
        rec = b.config[precision.PRECISION_KEY]
        assert rec["to"] == r.to and rec["stages"] == list(contract.STAGES)
        assert rec["source_sha256"] == src.fingerprint()
        assert b.voices == src.voices
        wav = Engine(b).synthesize("Converted models still speak.", seed=0, steps=2).wav
        assert wav.size > 0 and np.isfinite(wav).all()


@pytest.mark.slow  # the module's measured FP16 conversion: trials in fresh processes
def test_source_byte_identical(fp16, tiny_bundle_dir):
    report, before = fp16
    assert sha256_tree(tiny_bundle_dir) == before == report.source_sha256
    assert report.source_unchanged and len(before) >= 7


def test_duration_predictor_kept_fp32(tiny_bundle_dir, tmp_path):
    r = convert(tiny_bundle_dir, tmp_path / "out", to="fp16", stages=NO_DP, measure=False)
    src, out = Bundle(tiny_bundle_dir), Bundle(tmp_path / "out")
    assert not r.stages["duration_predictor"].converted
    assert out.sha256("duration_predictor") == src.sha256("duration_predictor")
    assert [out.stages[s].precision for s in NO_DP] == ["float16"] * 3
    assert out.config[precision.PRECISION_KEY]["stages"] == NO_DP
    # The output is not left with the temp directory's private 0700 mode.
    assert (tmp_path / "out").stat().st_mode & 0o777 == (tmp_path / "out" / "onnx").stat(
    ).st_mode & 0o777
    with pytest.raises(ValueError, match="unknown stage.*vocoder"):
        convert(tiny_bundle_dir, tmp_path / "x", to="fp16", stages=["vocodr"], measure=False)
    assert not (tmp_path / "x").exists()


def test_non_empty_dst_refused_and_untouched(tiny_bundle_dir, tmp_path):
    dst = tmp_path / "taken"
    dst.mkdir()
    (dst / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not an empty directory"):
        convert(tiny_bundle_dir, dst, to="int8", measure=False)
    assert [p.name for p in dst.iterdir()] == ["keep.txt"]
    assert (dst / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]  # no temp dir left
    # An empty directory is fine.
    (tmp_path / "empty").mkdir()
    convert(tiny_bundle_dir, tmp_path / "empty", to="int8", measure=False)
    Bundle(tmp_path / "empty")


def test_interrupted_conversion_leaves_nothing(tiny_bundle_dir, tmp_path, monkeypatch):
    real = converter._convert_graph
    calls = []

    def failing(src, dst, *args, **kwargs):
        calls.append(src)
        if len(calls) == 3:
            raise RuntimeError("simulated crash on the third stage")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(converter, "_convert_graph", failing)
    before = sha256_tree(tiny_bundle_dir)
    with pytest.raises(RuntimeError, match="third stage"):
        convert(tiny_bundle_dir, tmp_path / "out", to="fp16", measure=False)
    assert len(calls) == 3
    assert list(tmp_path.iterdir()) == []  # no partial dst, no temp dir
    assert sha256_tree(tiny_bundle_dir) == before


def _small_model(path):
    """Conv1d 16->32 (k=3) -> MatMul 32x64 + bias -> Relu -> MatMul 64x8: not a bundle."""
    rng = np.random.default_rng(1)
    inits = [
        numpy_helper.from_array(rng.standard_normal((32, 16, 3)).astype(np.float32) * 0.2, "cw"),
        numpy_helper.from_array(rng.standard_normal(32).astype(np.float32) * 0.1, "cb"),
        numpy_helper.from_array(rng.standard_normal((32, 64)).astype(np.float32) * 0.2, "w1"),
        numpy_helper.from_array(rng.standard_normal(64).astype(np.float32) * 0.1, "b1"),
        numpy_helper.from_array(rng.standard_normal((64, 8)).astype(np.float32) * 0.2, "w2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", pads=[1, 1]),
        helper.make_node("Transpose", ["c"], ["ct"], name="t", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["ct", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="add"),
        helper.make_node("Relu", ["hb"], ["hr"], name="relu"),
        helper.make_node("MatMul", ["hr", "w2"], ["y"], name="fc2"),
    ]
    graph = helper.make_graph(
        nodes, "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, "T"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "T", 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


@pytest.mark.parametrize("to, min_snr", [("fp16", 40.0), ("int8", 15.0)])
def test_single_onnx_file(tmp_path, to, min_snr):
    src = tmp_path / "small.onnx"
    _small_model(src)
    before = sha256_tree(src)
    out = tmp_path / f"small-{to}.onnx"
    r = convert(src, out, to=to)
    assert r.kind == "onnx" and out.is_file() and sha256_tree(src) == before
    assert r.stages["model"].size_after < r.stages["model"].size_before
    x = np.random.default_rng(2).standard_normal((2, 16, 10)).astype(np.float32)
    want = ort.InferenceSession(str(src)).run(None, {"x": x})[0]
    got = ort.InferenceSession(str(out)).run(None, {"x": x})[0]
    assert got.shape == want.shape and got.dtype == np.float32
    assert snr_db(want, got) > min_snr
    assert min_snr < r.output_snr_db["y"] < math.inf  # computed by convert, not identical
    if to == "int8":  # the conv and fc1 have >= 1024 weights; fc2 (512) stays float
        assert r.stages["model"].ops == {"Conv": 1, "MatMul": 1}
        assert r.stages["model"].kept_float == 1
    with pytest.raises(ValueError, match="already exists"):
        convert(src, out, to=to)
    with pytest.raises(ValueError, match="stages only apply to bundles"):
        convert(src, tmp_path / "o.onnx", to=to, stages=["vocoder"])


@pytest.mark.slow  # the module's measured FP16 conversion: trials in fresh processes
def test_fp16_fidelity_is_measured(fp16, tmp_path):
    report, _ = fp16
    f = report.fidelity[CPU]
    # Close but not identical: FP16 weights really changed the numbers.
    assert 20.0 < f.waveform_snr_db < math.inf
    assert 0.0 < f.log_mel_distance_db < 2.0
    # The FP16 duration predictor moves the trimmed length by a few samples at most.
    assert abs(f.length_candidate - f.length_ref) < 0.001 * f.length_ref
    assert f.frames_changed == 0
    assert set(f.stage_snr_db) == set(contract.STAGES)
    assert all(20.0 < v < math.inf for v in f.stage_snr_db.values())
    assert f.passed and report.passed
    for label in ("fp32", "fp16"):
        run = report.run(label, CPU)
        assert run is not None and run.ok, run
        assert run.p50_s > 0 and run.peak_rss_mb >= run.load_rss_mb > run.baseline_rss_mb > 0
    # The JSON is strict (no NaN/Infinity) and reads back.
    report.save(tmp_path / "r.json")
    json.loads((tmp_path / "r.json").read_text(), parse_constant=pytest.fail)
    back = ConversionReport.load(tmp_path / "r.json")
    assert back.fidelity[CPU].waveform_snr_db == pytest.approx(f.waveform_snr_db)
    assert back.passed and back.stages["vocoder"].ratio == report.stages["vocoder"].ratio
    assert "fidelity vs fp32 on CPU" in report.table() and "PASSED" in report.table()
    # Judged against the source's measured floor too (float rounding of the same model):
    # FP16 is not broken, and the floor it is judged on is far finer than another take.
    j = report.conformance
    assert j["verdict"] in ("within the floor", "beyond the floor"), j
    assert j["floor"]["log_mel_db"] < j["distances"]["log_mel_db"] < j["take"]["log_mel_db"]
    assert back.conformance == j and "against the source's measured noise floor" in report.table()


@pytest.mark.slow  # a measured conversion: fidelity in a fresh process
def test_broken_conversion_is_flagged(tiny_bundle_dir, tmp_path, monkeypatch):
    real = converter._convert_graph

    def zeroing(src, dst, *args, **kwargs):
        ops = real(src, dst, *args, **kwargs)
        if dst.name == "vocoder.onnx":
            model = onnx.load(str(dst))
            weights = {n.input[1] for n in model.graph.node if n.op_type in ("MatMul", "Conv")}
            for init in model.graph.initializer:
                if init.name in weights:
                    arr = numpy_helper.to_array(init)
                    init.CopyFrom(numpy_helper.from_array(np.zeros_like(arr), init.name))
            onnx.save(model, str(dst))
        return ops

    monkeypatch.setattr(converter, "_convert_graph", zeroing)
    # The listener's judgement (a recogniser, DNSMOS: a minute on noise) is covered by
    # test_a_measured_conversion_is_judged_as_a_listener_would; here the fidelity and the
    # floor's verdict are the point.
    r = convert(tiny_bundle_dir, tmp_path / "broken", to="fp16", measure="fidelity",
                providers=[CPU], quality=False)
    f = r.fidelity[CPU]
    assert r.runs == []  # fidelity only: no memory/latency runs
    assert not f.passed and r.passed is False
    assert f.waveform_snr_db < 5.0 and any("waveform SNR" in why for why in f.reasons)
    assert f.stage_snr_db["vocoder"] < 5.0 < f.stage_snr_db["text_encoder"]
    assert "FAILED" in r.table()
    assert r.conformance["verdict"] == "broken" and "BROKEN" in r.table()


def test_converting_twice_is_refused(int8, tmp_path):
    with pytest.raises(ValueError, match="already .*convert from the FP32 original"):
        convert(int8.dst, tmp_path / "again", to="fp16", measure=False)
    assert list(tmp_path.iterdir()) == []


def test_missing_cuda_is_a_note_not_a_crash(tiny_bundle_dir, tmp_path):
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this machine has the CUDA provider")
    r = convert(tiny_bundle_dir, tmp_path / "out", to="int8",
                providers=["CUDAExecutionProvider"], repeats=1)
    assert r.runs == [] and r.fidelity == {} and r.conformance == {}  # nothing ran on the CPU
    # A bundle is never compared as a single .onnx file would be (no note about it either).
    assert r.output_snr_db == {} and not any("output comparison" in n for n in r.notes)
    assert any("CUDA not measured" in n and "onnxruntime-gpu" in n for n in r.notes)


def test_fidelity_verdict_names_the_cause():
    ok = precision.Fidelity(CPU, waveform_snr_db=48.0, log_mel_distance_db=0.01,
                            length_ref=1000, length_candidate=1001).evaluate()
    assert ok.passed and ok.reasons == []
    moved = precision.Fidelity(CPU, waveform_snr_db=1.0, log_mel_distance_db=1.5,
                               length_ref=1000, length_candidate=1100, frames_changed=1)
    moved.evaluate()
    assert not moved.passed
    assert "keep the duration predictor in FP32" in moved.reasons[0]
    assert any("length changed by +10.0 %" in r for r in moved.reasons)
    nan = precision.Fidelity(CPU, waveform_snr_db=math.nan, log_mel_distance_db=math.nan,
                             stage_snr_db={"vocoder": math.nan}).evaluate()
    assert not nan.passed and any("non-finite output from vocoder" in r for r in nan.reasons)


def test_int8_conversion_does_not_repeat_the_quantisers_advice(tiny_bundle_dir, tmp_path,
                                                                 caplog):
    import logging

    with caplog.at_level(logging.WARNING):
        convert(tiny_bundle_dir, tmp_path / "q", to="int8", stages=["vocoder"], measure=False)
        logging.warning("Please consider to run pre-processing, said someone else")
    # Ours is filtered only while quantize_dynamic runs; the same text afterwards is not.
    assert caplog.text.count("Please consider to run pre-processing") == 1


# -- the source is only read; nothing is left behind (issue 11: 1, 4, 5) ---------------


def _snapshot(root):
    """Names and SHA-256 of everything under ``root`` (links as their target text)."""
    import hashlib
    import os

    root = str(root)
    if os.path.isfile(root):
        return {".": hashlib.sha256(open(root, "rb").read()).hexdigest()}
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "-> " + os.readlink(p)
            elif os.path.isfile(p):
                out[rel] = hashlib.sha256(open(p, "rb").read()).hexdigest()
            else:
                out[rel] = "dir"
    return out


def test_int8_never_writes_into_the_source_bundle(tiny_bundle_dir, tmp_path):
    import shutil

    src = tmp_path / "src"
    shutil.copytree(tiny_bundle_dir, src)
    # ORT's shape inference used to write (and then unlink) this name beside the graph.
    (src / "onnx" / "vocoder-inferred.onnx").write_text("user notes")
    before = _snapshot(src)
    convert(src, tmp_path / "int8", to="int8", measure=False)
    assert (src / "onnx" / "vocoder-inferred.onnx").read_text() == "user notes"
    assert _snapshot(src) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["int8", "src"]  # no scratch left


def test_int8_never_writes_beside_a_single_source_file(tmp_path):
    d = tmp_path / "models"
    d.mkdir()
    src = d / "small.onnx"
    _small_model(src)
    (d / "small-inferred.onnx").write_text("user notes")
    before = _snapshot(d)
    convert(src, tmp_path / "small-int8.onnx", to="int8", measure=False)
    assert _snapshot(d) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models", "small-int8.onnx"]


def test_symbolic_links_in_the_source_are_not_followed(tiny_bundle_dir, tmp_path):
    import shutil

    secret = tmp_path / "secret"
    secret.write_text("PRIVATE KEY")
    (tmp_path / "secret_dir").mkdir()
    (tmp_path / "secret_dir" / "id").write_text("PRIVATE KEY")
    src = tmp_path / "src"
    shutil.copytree(tiny_bundle_dir, src)
    (src / "README").symlink_to(secret)
    (src / "extras").symlink_to(tmp_path / "secret_dir")
    with pytest.warns(UserWarning) as caught:
        r = convert(src, tmp_path / "out", to="fp16", measure=False)
    assert sorted(str(w.message).split(":")[0] for w in caught) == ["skipped README",
                                                                    "skipped extras"]
    out = _snapshot(tmp_path / "out")
    assert "README" not in out and not any(k.startswith("extras") for k in out)
    assert not any("PRIVATE KEY" in p.read_text(errors="ignore")
                   for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert "README" not in r.source_sha256 and any("README" in n for n in r.notes)
    # A link in place of a file the bundle needs is refused, before anything is written.
    (src / "onnx" / "tts.json").rename(tmp_path / "tts.json")
    (src / "onnx" / "tts.json").symlink_to(tmp_path / "tts.json")
    with pytest.raises(ValueError, match=r"onnx/tts.json is a symbolic link.*cp -rL"):
        convert(src, tmp_path / "out2", to="fp16", measure=False)
    assert not (tmp_path / "out2").exists()


_PAUSED_CONVERT = """
import sys, time
from pathlib import Path
from tts_kit.precision import conversion

real = conversion._convert_graph
calls = []

def paused(src, dst, *a, **k):
    calls.append(src)
    out = real(src, dst, *a, **k)
    if len(calls) == 2:  # two stages written into the temporary: a partial output exists
        Path(sys.argv[3]).write_text("paused")
        time.sleep(60)
    return out

conversion._convert_graph = paused
conversion.convert(sys.argv[1], sys.argv[2], to=sys.argv[4], measure=False)
"""


def _default_signal_handlers() -> None:
    """In the child: the signals' default dispositions. A suite started under ``nohup``
    (or in a background job) hands its children an ignored SIGHUP (or SIGINT), which
    tts_kit rightly leaves ignored; the test is about the default case."""
    import signal

    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.slow  # conversions in subprocesses, signalled: out of the quick loop
@pytest.mark.parametrize("sig, to", [("SIGTERM", "int8"), ("SIGHUP", "fp16"),
                                     ("SIGINT", "fp16")])
def test_a_terminated_conversion_leaves_no_temporaries(tiny_bundle_dir, tmp_path, sig, to):
    import signal
    import subprocess
    import sys
    import time

    work = tmp_path / "work"
    work.mkdir()
    marker = tmp_path / "paused"
    before = _snapshot(tiny_bundle_dir)
    proc = subprocess.Popen([sys.executable, "-c", _PAUSED_CONVERT, str(tiny_bundle_dir),
                             str(work / "out"), str(marker), to],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_signal_handlers)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert any(p.name.startswith(".out.tmp-") for p in work.iterdir())  # really partial
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    # The process still ends by the signal (Python re-raises SIGINT too), after the clean-up.
    assert proc.returncode == -getattr(signal, sig), err
    assert list(work.iterdir()) == []  # no destination, no temporary
    assert _snapshot(tiny_bundle_dir) == before
