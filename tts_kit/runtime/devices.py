"""What execution devices this machine offers (ONNX Runtime providers, CUDA, GPU memory),
and `environment`, the fingerprint reports and sweep records carry."""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import onnxruntime as ort

from tts_kit.core import procfacts

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
#: Providers the measurements know how to compare (others, e.g. Azure, are skipped).
MEASURED_PROVIDERS: tuple[str, ...] = (CPU, CUDA)


def available_providers() -> list[str]:
    """The providers of `MEASURED_PROVIDERS` that this ONNX Runtime build lists.

    Example:
        >>> "CPUExecutionProvider" in available_providers()
        True
    """
    have = set(ort.get_available_providers())
    return [p for p in MEASURED_PROVIDERS if p in have]


def gpu_memory_mb(pid: int | None = None) -> tuple[float | None, str]:
    """GPU memory in MiB ``pid`` (default: this process) holds, and how it was read:
    ``nvidia-smi`` per process, else (containers hide PIDs) device-wide; None without.

    Example:
        >>> isinstance(gpu_memory_mb()[1], str)
        True
    """
    pid = os.getpid() if pid is None else pid
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, "nvidia-smi not found"

    def query(what: str) -> str:
        return subprocess.run([smi, f"--query-{what}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=10, check=True).stdout

    try:
        for line in query("compute-apps=pid,used_memory").splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[0] == str(pid):
                return float(parts[1]), "nvidia-smi per-process used_memory"
        total = sum(float(x) for x in query("gpu=memory.used").split())
        return total, "nvidia-smi device memory.used (all processes)"
    except (subprocess.SubprocessError, OSError, ValueError) as exc:
        return None, f"nvidia-smi failed: {exc}"


def gpu_list() -> str | None:
    """The GPUs ``nvidia-smi -L`` lists, one per line; None without ``nvidia-smi``.

    Example:
        >>> gpu_list() is None or isinstance(gpu_list(), str)
        True
    """
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    return subprocess.run([smi, "-L"], capture_output=True, text=True).stdout.strip()


def one_node_model(op: str = "Relu", shape: Sequence[int] = (1,), weight: Any = None) -> bytes:
    """A serialised one-node graph, ``op`` of a float ``x`` (and ``weight``, a float32 array
    of the same shape), to probe, warm up or time ONNX Runtime.

    Example:
        >>> ort.InferenceSession(one_node_model()).get_inputs()[0].name
        'x'
    """
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node(op, ["x"] if weight is None else ["x", "w"], ["y"])], "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))],
        [] if weight is None else [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def cuda_usable() -> tuple[bool, str]:
    """Whether a session really runs on CUDA here; creates a CUDA context in this process.

    Example:
        >>> isinstance(cuda_usable()[0], bool)
        True
    """
    if CUDA not in ort.get_available_providers():
        return False, (f"this onnxruntime {ort.__version__} has no CUDAExecutionProvider "
                       "(install onnxruntime-gpu instead of onnxruntime)")
    try:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        sess = ort.InferenceSession(one_node_model(), sess_options=so, providers=[CUDA, CPU])
    except Exception as exc:
        return False, f"CUDA session failed: {type(exc).__name__}: {exc}"
    if sess.get_providers()[0] != CUDA:
        return False, "CUDAExecutionProvider is listed but fell back to CPU (CUDA/cuDNN libraries?)"
    return True, "ok"


def probe_cuda(timeout_s: float = 300) -> tuple[bool, str]:
    """`cuda_usable`, asked in a fresh process (a context here would inflate GPU figures).

    Example:
        >>> probe_cuda()  # doctest: +SKIP
        (False, 'this onnxruntime 1.22.0 has no CUDAExecutionProvider (install ...)')
    """
    if CUDA not in ort.get_available_providers():
        return cuda_usable()
    from tts_kit.runtime.measure import run_isolated

    probe = run_isolated(cuda_usable, timeout_s=timeout_s)
    return probe.result if probe.ok else (False, probe.error)


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        for line in text.splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    if sys.platform == "darwin":
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"],
                                 capture_output=True, text=True, timeout=5, check=False)
            if out.stdout.strip():
                return out.stdout.strip()
    return platform.processor() or platform.machine() or "unknown"


def environment() -> dict[str, Any]:
    """The fingerprint of this machine and software stack: CPU, limits, memory, versions.

    Example:
        >>> sorted(environment())[:4]
        ['cgroup_cpu_quota', 'cgroup_memory_limit_mb', 'cpu_count', 'cpu_model']
    """
    import numpy
    import psutil

    limit = procfacts.cgroup_memory_limit_mb()
    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count() or 1,
        "cpus_available": len(procfacts.allowed_cpus()),
        "cpus_usable": procfacts.usable_cores(),
        "cgroup_cpu_quota": procfacts.cgroup_cpu_quota(),
        "cgroup_memory_limit_mb": None if limit is None else round(limit, 1),
        "os": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "onnxruntime": ort.__version__,
        "numpy": numpy.__version__,
        "providers": list(ort.get_available_providers()),
        "memory_total_mb": round(psutil.virtual_memory().total / 2**20, 1),
    }
