"""Device probes: answers without a GPU, and the same answer in or out of a child process."""

from __future__ import annotations

import onnxruntime as ort
import pytest

from tts_kit.runtime import devices


def test_providers_are_the_measured_ones_this_build_lists():
    have = devices.available_providers()
    assert devices.CPU in have
    assert set(have) <= set(devices.MEASURED_PROVIDERS) & set(ort.get_available_providers())


def test_without_the_cuda_provider_the_probe_names_the_package(monkeypatch):
    monkeypatch.setattr(ort, "get_available_providers", lambda: [devices.CPU])
    ok, why = devices.probe_cuda()
    assert not ok and "install onnxruntime-gpu" in why
    assert devices.cuda_usable() == (ok, why)


def test_gpu_memory_without_nvidia_smi(monkeypatch):
    monkeypatch.setattr(devices.shutil, "which", lambda name: None)
    assert devices.gpu_memory_mb() == (None, "nvidia-smi not found")
    assert devices.gpu_list() is None


@pytest.mark.skipif(devices.CUDA not in ort.get_available_providers(),
                    reason="needs onnxruntime-gpu")
def test_probe_in_a_child_agrees_with_the_probe_here():  # pragma: no cover - GPU machines
    assert devices.probe_cuda(timeout_s=120) == devices.cuda_usable()
