"""`tts_kit.doctor` and ``tts-kit doctor``: each check's status logic from fake facts, the
checks under an emulated cgroup limit, the command's exit codes and JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tts_kit import doctor
from tts_kit.doctor import (
    GOMP_FIX,
    Check,
    cpu_features_status,
    cpu_quota_status,
    format_checks,
    libgomp_status,
    memory_status,
    model_status,
    ort_status,
    providers_status,
)

LINUX = sys.platform.startswith("linux")
NAMES = ["onnxruntime", "libgomp", "cpu features", "cpu quota", "execution providers", "model",
         "memory"]


def _cgroup(path: Path, cpu_max: str = "150000 100000", memory_mb: int | None = 512) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "cpu.max").write_text(cpu_max + "\n")
    (path / "memory.max").write_text(("max" if memory_mb is None else str(memory_mb * 2**20))
                                     + "\n")
    return path


# -- status logic from fakes ---------------------------------------------------------------


def test_a_check_has_one_of_four_statuses():
    with pytest.raises(ValueError, match="status must be one of"):
        Check("x", "bad", "")  # type: ignore[arg-type]
    assert Check("x", "ok", "fine").to_dict() == {"name": "x", "status": "ok", "found": "fine",
                                                  "fix": ""}


def test_onnxruntime_import_failures_name_the_package_or_libgomp():
    missing = ort_status(None, [], "ModuleNotFoundError: No module named 'onnxruntime'", [])
    assert missing.status == "fail" and "pip install onnxruntime" in missing.fix
    gomp = ort_status(None, [], "ImportError: libgomp.so.1: cannot open shared object file", [])
    assert gomp.status == "fail" and gomp.fix == GOMP_FIX and "apt-get install libgomp1" in gomp.fix


def test_onnxruntime_ok_and_two_packages_warn():
    ok = ort_status("1.22.0", ["CPUExecutionProvider"], None, ["onnxruntime 1.22.0"])
    assert ok.status == "ok" and not ok.fix
    assert "1.22.0" in ok.found and "CPUExecutionProvider" in ok.found
    both = ort_status("1.22.0", ["CPUExecutionProvider"], None,
                      ["onnxruntime 1.22.0", "onnxruntime-gpu 1.22.0"])
    assert both.status == "warn"
    assert "pip uninstall -y onnxruntime onnxruntime-gpu" in both.fix


def test_libgomp_logic():
    lib = "libonnxruntime.so.1"
    not_linked = libgomp_status({lib: ["libstdc++.so.6", "libc.so.6"]}, None, None, None)
    assert not_linked.status == "ok" and "not linked" in not_linked.found
    assert lib in not_linked.found
    loaded = libgomp_status({lib: ["libgomp.so.1"]}, None, "/usr/lib/libgomp.so.1", None)
    assert loaded.status == "ok" and "/usr/lib/libgomp.so.1" in loaded.found
    missing = libgomp_status({lib: ["libgomp.so.1"]}, None, None, None)
    assert missing.status == "fail" and missing.fix == GOMP_FIX
    import_failed = libgomp_status({lib: ["libgomp.so.1"]},
                                   "ImportError: libgomp.so.1: cannot open shared object file",
                                   None, None)
    assert import_failed.status == "fail" and import_failed.fix == GOMP_FIX
    assert libgomp_status({}, None, None, None).status == "skip"
    assert libgomp_status({lib: None}, None, None, None).status == "skip"


@pytest.mark.skipif(not LINUX, reason="ELF libraries")
def test_elf_needed_reads_the_installed_onnxruntime(tmp_path):
    libs = doctor.ort_libraries()
    assert libs, "onnxruntime ships shared libraries"
    needed = {p.name: doctor.elf_needed(p) for p in libs}
    assert all(n is not None for n in needed.values()), needed
    assert any("libc.so.6" in n or "libstdc++.so.6" in n for n in needed.values() if n)
    (tmp_path / "not-elf.so").write_bytes(b"hello")
    assert doctor.elf_needed(tmp_path / "not-elf.so") is None
    assert doctor.elf_needed(tmp_path / "absent.so") is None


def test_cpu_features_logic(tmp_path):
    assert cpu_features_status({"avx2", "avx512f", "avx512_vnni"}, "x86_64").status == "ok"
    assert cpu_features_status({"avx2", "avx_vnni"}, "x86_64").status == "ok"
    avx2 = cpu_features_status({"avx2"}, "x86_64")
    assert avx2.status == "warn" and "no VNNI" in avx2.found and "tts-kit convert" in avx2.fix
    old = cpu_features_status({"sse4_2"}, "x86_64")
    assert old.status == "warn" and "AVX2" in old.fix
    assert cpu_features_status({"asimd", "asimddp"}, "aarch64").status == "ok"
    assert cpu_features_status({"asimd"}, "aarch64").status == "warn"
    elsewhere = cpu_features_status(None, "arm64")
    assert elsewhere.status == "skip" and "not checked" in elsewhere.found
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512_vnni\n\nflags\t: other\n")
    assert doctor.cpu_flags(str(info)) == {"fpu", "sse", "avx2", "avx512_vnni"}
    assert doctor.cpu_flags(str(tmp_path / "absent")) is None


def test_cpu_quota_logic():
    throttled = cpu_quota_status(quota=1.5, affinity=16, physical=8, usable=1, cores_preset=1)
    assert throttled.status == "warn"
    assert "cgroup CPU quota 1.5 CPUs -> 1 usable core;" in throttled.found
    assert "starts 8 intra-op threads" in throttled.found and "gets 1 here" in throttled.found
    assert "intra_op_num_threads = 1" in throttled.fix and "--cpus 1;" in throttled.fix
    assert cpu_quota_status(None, 4, 4, 4, 4).status == "ok"
    assert "no cgroup CPU quota" in cpu_quota_status(None, 4, 4, 4, 4).found
    # A quota as large as the host's physical cores throttles nothing.
    assert cpu_quota_status(8.0, 16, 8, 8, 8).status == "ok"
    # No quota, but an affinity mask (taskset, cpuset) smaller than the host.
    pinned = cpu_quota_status(None, 2, 8, 2, 2)
    assert pinned.status == "warn" and "the affinity throttles" in pinned.found
    assert "--cpus 1,2;" in pinned.fix


def test_providers_logic():
    cpu, cuda = "CPUExecutionProvider", "CUDAExecutionProvider"
    assert providers_status([cpu], None, None).status == "ok"
    assert providers_status([cpu], None, "").status == "ok"
    gpu_no_ep = providers_status([cpu], None, "GPU 0: NVIDIA L4 (UUID: x)\nGPU 1: y")
    assert gpu_no_ep.status == "warn" and "onnxruntime-gpu" in gpu_no_ep.fix
    assert "GPU 0: NVIDIA L4" in gpu_no_ep.found and "GPU 1" not in gpu_no_ep.found
    assert providers_status([cuda, cpu], (True, "ok"), None).status == "ok"
    broken = providers_status([cuda, cpu], (False, "libcudnn.so.9: not found"), None)
    assert broken.status == "warn" and "libcudnn.so.9" in broken.found and "cuDNN" in broken.fix


def test_model_logic():
    real = model_status("/opt/m", "explicit path", None, 380.0, None, True)
    assert real.status == "ok" and "380 MB" in real.found and "all four graphs load" in real.found
    tiny = model_status("~/.cache/s", "stand-in (tiny)", {"scale": "tiny"}, 3.0, None, True)
    assert tiny.status == "warn" and "tts-kit fetch" in tiny.fix and "far smaller" in tiny.found
    full = model_status("~/.cache/s", "stand-in (full)", {"scale": "full"}, 380.0, None, None)
    assert "layer sizes" in full.found and "not checked" in full.found
    broken = model_status("/m", "explicit path", None, None, "vocoder.onnx is missing", None)
    assert broken.status == "fail" and "tts-kit info" in broken.fix
    unloadable = model_status("/m", "explicit path", None, 5.0, "unknown op Foo", False)
    assert unloadable.status == "fail" and "upgrade onnxruntime" in unloadable.fix
    assert model_status(None, "discovery", None, None, "no space", None).status == "fail"


def test_memory_logic():
    assert memory_status(None, 8000.0, 400.0).status == "ok"
    tight = memory_status(600.0, 8000.0, 400.0)
    assert tight.status == "warn" and "cgroup memory limit 600 MB" in tight.found
    assert "at least 800 MB" in tight.fix and "paged" in tight.fix
    # The host's free memory does not help past the container's limit ...
    assert memory_status(300.0, 64000.0, 400.0).status == "fail"
    # ... and a generous limit does not help when the host has no room.
    assert memory_status(64000.0, 300.0, 400.0).status == "fail"
    assert memory_status(512.0, 8000.0, None).status == "ok"


def test_format_checks_shows_the_fix_under_what_is_not_ok():
    text = format_checks([Check("a", "ok", "fine"), Check("b", "fail", "broken", "do X"),
                          Check("c", "skip", "not checked")])
    lines = text.splitlines()
    assert lines[0].startswith("ok    a") and lines[1].startswith("fail  b")
    assert lines[2].strip() == "fix: do X"
    assert lines[-1] == "3 checks: 1 ok, 0 warnings, 1 failed, 1 not checked"
    assert doctor.failed([Check("b", "fail", "x", "y")])


# -- this machine, under an emulated cgroup -------------------------------------------------


def test_run_checks_reports_an_emulated_cgroup(tmp_path, monkeypatch, tiny_bundle_dir):
    monkeypatch.setenv("TTS_KIT_CGROUP_ROOT", str(_cgroup(tmp_path / "cg")))
    # An 8-core host, so ONNX Runtime's default oversubscribes the 1.5-CPU quota anywhere.
    real_count = psutil.cpu_count
    monkeypatch.setattr(psutil, "cpu_count",
                        lambda logical=True: 8 if not logical else real_count(logical))
    checks = doctor.run_checks(model=tiny_bundle_dir, load=False)
    assert [c.name for c in checks] == NAMES
    by = {c.name: c for c in checks}
    quota = by["cpu quota"]
    assert quota.status == "warn", quota
    assert "cgroup CPU quota 1.5 CPUs -> 1 usable core" in quota.found
    assert "$TTS_KIT_CGROUP_ROOT=" in quota.found and 'threads gets 1 here' in quota.found
    assert "intra_op_num_threads = 1" in quota.fix
    memory = by["memory"]
    assert memory.status == "ok" and "cgroup memory limit 512 MB" in memory.found
    assert by["model"].status == "warn" and "(explicit path" in by["model"].found
    assert "loading not checked" in by["model"].found


def test_the_emulated_quota_reaches_presets_and_cpus_defaults(tmp_path, monkeypatch):
    from tts_kit.core import procfacts
    from tts_kit.report.spec import SweepSpec
    from tts_kit.runtime.sessions import cores_in_force
    from tts_kit.tuning import tune

    monkeypatch.setenv("TTS_KIT_CGROUP_ROOT", str(_cgroup(tmp_path / "cg")))
    monkeypatch.delenv(procfacts.CPUS_ENV, raising=False)
    assert procfacts.cgroup_cpu_quota() == 1.5 and procfacts.cgroup_memory_limit_mb() == 512
    assert procfacts.usable_cores() == 1 and cores_in_force() == 1
    assert tune.default_cpus() == (1,) and tune.default_cpus((1, 2)) == (1,)
    assert SweepSpec(cpus=[1, 2]).effective().cpus == [1]
    # A given cgroup directory is read alone: no quota there means none, whatever the host.
    _cgroup(tmp_path / "open", cpu_max="max 100000", memory_mb=None)
    monkeypatch.setenv("TTS_KIT_CGROUP_ROOT", str(tmp_path / "open"))
    assert procfacts.cgroup_cpu_quota() is None and procfacts.cgroup_memory_limit_mb() is None
    assert procfacts.usable_cores() == len(procfacts.allowed_cpus())


# -- the command ------------------------------------------------------------------------------


def _doctor(*args: str, cgroup: Path) -> subprocess.CompletedProcess:
    import os

    env = dict(os.environ, TTS_KIT_CGROUP_ROOT=str(cgroup))
    return subprocess.run([sys.executable, "-m", "tts_kit.cli", "doctor", *args],
                          capture_output=True, text=True, timeout=300, env=env)


def test_doctor_command_exits_0_without_failures_and_prints_the_quota(tmp_path, tiny_bundle_dir):
    proc = _doctor("--model", str(tiny_bundle_dir), cgroup=_cgroup(tmp_path / "cg"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    out = " ".join(proc.stdout.split())  # wrapped lines joined
    assert "cgroup CPU quota 1.5 CPUs -> 1 usable core" in out
    assert "cgroup memory limit 512 MB" in out and "all four graphs load" in out
    assert out.endswith("0 failed"), out[-200:]


def test_doctor_command_exits_1_when_a_check_fails_with_the_fix(tmp_path, tiny_bundle_dir):
    proc = _doctor("--model", str(tiny_bundle_dir), "--no-load",
                   cgroup=_cgroup(tmp_path / "cg", memory_mb=1))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    assert "fail memory cgroup memory limit 1 MB" in out and "the model does not fit" in out
    assert "fix: give it at least" in out and "1 failed" in out
    assert "Traceback" not in proc.stderr


def test_doctor_json(tmp_path, tiny_bundle_dir):
    proc = _doctor("--model", str(tiny_bundle_dir), "--no-load", "--json",
                   cgroup=_cgroup(tmp_path / "cg", memory_mb=1))
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is False
    assert [c["name"] for c in data["checks"]] == NAMES
    by = {c["name"]: c for c in data["checks"]}
    assert by["memory"]["status"] == "fail" and by["memory"]["fix"]
    assert "1.5 CPUs -> 1 usable core" in by["cpu quota"]["found"]
    assert all(set(c) == {"name", "status", "found", "fix"} for c in data["checks"])


def test_doctor_fails_on_a_broken_model(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = _doctor("--model", str(tmp_path / "empty"), "--no-load",
                   cgroup=_cgroup(tmp_path / "cg"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "fail  model" in proc.stdout and "tts-kit info --model DIR" in " ".join(
        proc.stdout.split())


def test_model_check_follows_the_one_resolver_for_a_piper_voice(tmp_path, monkeypatch):
    """$TTS_KIT_MODEL_DIR naming a Piper voice: doctor opens it as every command does
    (`tts_kit.models.resolve`) and names the path and where it came from when it is broken."""
    from tts_kit.doctor import check_model

    voice = tmp_path / "voice"
    voice.mkdir()
    (voice / "x.onnx").write_bytes(b"no graph")
    (voice / "x.onnx.json").write_text("{}", encoding="utf-8")
    monkeypatch.setenv("TTS_KIT_MODEL_DIR", str(voice))
    check, size_mb = check_model(None, load=False, ort_ok=True)
    assert check.status == "fail" and size_mb is None
    assert "($TTS_KIT_MODEL_DIR)" in check.found and "voice" in check.found
    assert "\n" not in check.found
