"""Session presets: JSON round-trips, what each really sets, that each builds a session that
runs, explain(), CUDA options."""

from __future__ import annotations

import json
import os

import numpy as np
import onnxruntime as ort
import pytest

from tts_kit.core import contract
from tts_kit.core.procfacts import CPUS_ENV
from tts_kit.runtime.measure import run_isolated
from tts_kit.runtime.sessions import (
    OPTION_DOCS,
    PRESETS,
    SessionPreset,
    cores_in_force,
    get_preset,
    set_malloc_mmap_threshold,
)

DEFAULT = ort.SessionOptions()
MODES = {"sequential": ort.ExecutionMode.ORT_SEQUENTIAL, "parallel": ort.ExecutionMode.ORT_PARALLEL}
LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def config_entry(so: ort.SessionOptions, key: str) -> str | None:
    try:
        return so.get_session_config_entry(key)
    except RuntimeError:  # ORT raises for keys never set
        return None


@pytest.fixture(autouse=True)
def _no_trial_cpus(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(CPUS_ENV, raising=False)


def test_the_shipped_presets_are_listed_and_sourced():
    assert list(PRESETS) == [
        "ort-default",
        "supertonic-default",
        "seed-2vcpu",
        "low-memory",
        "lean",
    ]
    for preset in PRESETS.values():
        assert preset.source, f"{preset.name} names no source"


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_round_trips_through_json(name: str):
    preset = get_preset(name)
    again = SessionPreset.from_dict(json.loads(json.dumps(preset.to_dict())))
    assert again == preset


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_really_sets_what_it_claims(name: str):
    preset = get_preset(name)
    so = preset.session_options()
    expected_threads = (
        cores_in_force() if preset.intra_op_num_threads == "cores" else preset.intra_op_num_threads
    )
    assert so.intra_op_num_threads == (expected_threads or DEFAULT.intra_op_num_threads)
    assert so.inter_op_num_threads == (
        preset.inter_op_num_threads or DEFAULT.inter_op_num_threads
    )
    mode = MODES[preset.execution_mode] if preset.execution_mode else DEFAULT.execution_mode
    assert so.execution_mode == mode
    level = (
        LEVELS[preset.graph_optimization_level]
        if preset.graph_optimization_level
        else DEFAULT.graph_optimization_level
    )
    assert so.graph_optimization_level == level
    for attr in ("enable_cpu_mem_arena", "enable_mem_pattern"):
        want = getattr(preset, attr)
        assert getattr(so, attr) == (getattr(DEFAULT, attr) if want is None else want)
    for key, value in preset.config_entries.items():
        assert config_entry(so, key) == value


def test_the_article_presets_carry_the_articles_options():
    seed = get_preset("seed-2vcpu").session_options()
    assert seed.intra_op_num_threads == cores_in_force()
    assert seed.inter_op_num_threads == 1
    assert seed.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert seed.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert seed.enable_cpu_mem_arena is True
    assert config_entry(seed, "session.dynamic_block_base") == "4"
    assert config_entry(seed, "session.intra_op.allow_spinning") == "0"
    low = get_preset("low-memory").session_options()
    assert low.enable_mem_pattern is False and low.enable_cpu_mem_arena is False
    official = get_preset("supertonic-default").session_options()
    assert official.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert official.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert official.intra_op_num_threads == 0  # threads left to ORT, as the package does
    nothing = get_preset("ort-default")
    assert nothing.set_options() == {}


def preset_threads(preset: dict) -> tuple[int, int]:
    """Child side: the threads two presets resolve to inside an isolated trial."""
    p = SessionPreset.from_dict(preset)
    return p.session_options().intra_op_num_threads, SessionPreset().threads()


def test_cores_and_unset_threads_follow_the_trial_cpus():
    m = run_isolated(preset_threads, get_preset("seed-2vcpu").to_dict(), cpus=1)
    assert m.status == "ok", m.error
    assert m.result == (1, 1)
    pinned = SessionPreset(intra_op_num_threads=3)
    m = run_isolated(preset_threads, pinned.to_dict(), cpus=1)
    assert m.result == (3, 1)  # a preset's own number wins over the trial's


def test_unknown_preset_name_lists_the_choices():
    with pytest.raises(ValueError, match="unknown session preset 'fast'.*lean"):
        get_preset("fast")


def test_get_preset_returns_a_copy():
    p = get_preset("seed-2vcpu")
    p.config_entries["session.dynamic_block_base"] = "8"
    assert get_preset("seed-2vcpu").config_entries["session.dynamic_block_base"] == "4"


@pytest.mark.parametrize(
    "bad",
    [
        {"execution_mode": "serial"},
        {"graph_optimization_level": "max"},
        {"intra_op_num_threads": "many"},
        {"intra_op_num_threads": -1},
        {"malloc_mmap_threshold_kb": 0},
        {"malloc_mmap_threshold_kb": "1M"},
    ],
)
def test_bad_values_fail_with_one_clear_line(bad: dict):
    with pytest.raises(ValueError, match="preset 'x'"):
        SessionPreset(name="x", **bad)


def test_config_values_become_the_strings_ort_wants():
    p = SessionPreset(config_entries={"session.disable_prepacking": True, "a.b": 4})
    assert p.config_entries == {"session.disable_prepacking": "1", "a.b": "4"}
    assert config_entry(p.session_options(), "session.disable_prepacking") == "1"


@pytest.mark.parametrize("name", list(PRESETS))
def test_explain_covers_every_option_set(name: str):
    preset = get_preset(name)
    lines = preset.explain()
    options = preset.set_options()
    if not options:
        assert len(lines) == 1 and "nothing set" in lines[0]
        return
    assert len(lines) == len(options)
    for line, key in zip(lines, options):
        assert line.startswith(f"{key} = ")
        assert OPTION_DOCS[key] in line
        assert "Why: " in line and not line.endswith("Why: not stated")


def test_the_mmap_threshold_is_applied_where_glibc_is():
    import platform

    applied = set_malloc_mmap_threshold(1024)
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert applied
    lean = get_preset("lean")
    assert lean.malloc_mmap_threshold_kb == 1024
    assert any(line.startswith("malloc_mmap_threshold_kb = 1024") for line in lean.explain())


@pytest.mark.parametrize("key, value", [
    ("session.disable_prepacking", "1"),
    ("session.intra_op.allow_spinning", "0"),
    ("session.inter_op.allow_spinning", "0"),
    ("graph_optimization_level", "basic"),
    ("session.use_ort_model_bytes_directly", "1"),
    ("session.dynamic_block_base", "4"),
])
def test_every_memory_option_is_explained_with_what_it_does(key: str, value: str):
    # The options bench/options.py varies; explain() must say what each does, not fall
    # back to the generic line for config keys it does not know.
    preset = SessionPreset(name="x", **(
        {key: value} if key == "graph_optimization_level" else {"config_entries": {key: value}}
    ))
    (line,) = preset.explain()
    assert line.startswith(f"{key} = {value}: {OPTION_DOCS[key]}. Why: ")
    assert "an ONNX Runtime session config entry" not in line


def test_cuda_puts_the_provider_first_with_its_options():
    p = get_preset("low-memory").cuda(
        gpu_mem_limit_mb=512, arena_extend_strategy="kSameAsRequested",
        cudnn_conv_algo_search="HEURISTIC",
    )
    assert p.providers == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert p.provider_options["CUDAExecutionProvider"] == {
        "gpu_mem_limit": str(512 * 1024 * 1024),
        "arena_extend_strategy": "kSameAsRequested",
        "cudnn_conv_algo_search": "HEURISTIC",
    }
    assert SessionPreset.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    explained = "\n".join(p.explain())
    assert "kSameAsRequested" in explained and "gpu_mem_limit" in explained
    chosen = p.provider_list()
    if "CUDAExecutionProvider" in ort.get_available_providers():
        assert chosen[0][0] == "CUDAExecutionProvider"
    else:
        assert chosen == ["CPUExecutionProvider"]
    with pytest.raises(ValueError, match="arena_extend_strategy"):
        p.cuda(arena_extend_strategy="kDouble")
    with pytest.raises(ValueError, match="cudnn_conv_algo_search"):
        p.cuda(cudnn_conv_algo_search="FAST")


def test_cuda_asks_cudnn_for_heuristics_unless_told_otherwise():
    # ORT's default (EXHAUSTIVE) benchmarks again at every new input shape: measured 4-5x
    # (FP32) and 9-13x (FP16) slower per call on an H200 when the text changes each call.
    p = get_preset("supertonic-default").cuda()
    assert p.provider_options["CUDAExecutionProvider"] == {"cudnn_conv_algo_search": "HEURISTIC"}
    assert "cudnn_conv_algo_search = HEURISTIC" in "\n".join(p.explain())
    asked = p.cuda(cudnn_conv_algo_search="EXHAUSTIVE")
    assert asked.provider_options["CUDAExecutionProvider"]["cudnn_conv_algo_search"] == "EXHAUSTIVE"
    # calling .cuda() again (another option) keeps the search already chosen
    again = asked.cuda(arena_extend_strategy="kSameAsRequested")
    assert again.provider_options["CUDAExecutionProvider"] == {
        "cudnn_conv_algo_search": "EXHAUSTIVE", "arena_extend_strategy": "kSameAsRequested"}


@pytest.fixture(scope="module")
def vocoder_run(tiny_bundle_dir):
    """The tiny vocoder's graph, a fixed latent, and its output under ORT's defaults."""
    path = str(tiny_bundle_dir / contract.GRAPHS["vocoder"].path)
    latent = np.random.default_rng(0).standard_normal((1, 144, 6)).astype(np.float32)
    (want,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, {"latent": latent}
    )
    return path, latent, want


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_builds_a_session_that_runs(name: str, vocoder_run):
    path, latent, want = vocoder_run
    preset = get_preset(name)
    sess = ort.InferenceSession(
        path, sess_options=preset.session_options(), providers=preset.provider_list()
    )
    assert sess.get_providers()[0] == "CPUExecutionProvider"
    (wav,) = sess.run(None, {"latent": latent})
    # The vocoder turns each latent frame into 3072 samples; options change speed and
    # memory, never the numbers beyond float rounding (fusions reorder the sums).
    assert wav.shape == (1, 3072 * latent.shape[2]) == want.shape
    assert np.isfinite(wav).all() and wav.std() > 0
    np.testing.assert_allclose(wav, want, rtol=1e-4, atol=1e-5)
    assert os.environ.get(CPUS_ENV) is None
