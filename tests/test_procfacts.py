"""`tts_kit.core.procfacts`: cgroup limits from a fake cgroup directory, cores, memory, CPU time."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tts_kit.core import procfacts

LINUX = sys.platform.startswith("linux")


def _cgroup(tmp_path, **files: str):
    for name, text in files.items():
        (tmp_path / name.replace("_", ".")).write_text(text + "\n")
    return tmp_path


@pytest.mark.parametrize("cpu_max, quota", [
    ("150000 100000", 1.5), ("200000 100000", 2.0), ("50000 100000", 0.5),
    ("max 100000", None), ("garbage", None),
])
def test_cpu_quota_from_a_cgroup_dir(tmp_path, cpu_max, quota):
    assert procfacts.cgroup_cpu_quota(_cgroup(tmp_path, cpu_max=cpu_max)) == quota


def test_no_cpu_max_file_means_no_quota(tmp_path):
    assert procfacts.cgroup_cpu_quota(tmp_path) is None
    assert procfacts.cgroup_memory_limit_mb(tmp_path) is None


@pytest.mark.parametrize("memory_max, mb", [
    (str(512 * 2**20), 512.0), ("max", None), (str(2**62), None), ("nonsense", None),
])
def test_memory_limit_from_a_cgroup_dir(tmp_path, memory_max, mb):
    assert procfacts.cgroup_memory_limit_mb(_cgroup(tmp_path, memory_max=memory_max)) == mb


def test_usable_cores_are_capped_by_the_quota(tmp_path):
    affinity = len(procfacts.allowed_cpus())
    assert procfacts.usable_cores(_cgroup(tmp_path, cpu_max="max 100000")) == affinity
    assert procfacts.usable_cores(_cgroup(tmp_path, cpu_max="150000 100000")) == 1
    assert procfacts.usable_cores(_cgroup(tmp_path, cpu_max="50000 100000")) == 1  # at least 1
    assert procfacts.usable_cores(_cgroup(tmp_path, cpu_max=f"{400000 * affinity} 100000")) \
        == affinity  # a quota above the affinity does not add cores


def test_default_cpus_follow_the_usable_cores(monkeypatch):
    from tts_kit.tuning import tune

    monkeypatch.setattr(procfacts, "usable_cores", lambda root=None: 1)
    assert tune.default_cpus() == (1,)
    monkeypatch.setattr(procfacts, "usable_cores", lambda root=None: 3)
    assert tune.default_cpus() == (1, 2)


def test_cores_in_force_prefers_the_trial_then_the_usable_cores(monkeypatch):
    from tts_kit.runtime.sessions import cores_in_force

    monkeypatch.setenv(procfacts.CPUS_ENV, "3")
    assert procfacts.current_cpus() == 3 and cores_in_force() == 3
    monkeypatch.setenv(procfacts.CPUS_ENV, "zero")
    assert procfacts.current_cpus() is None
    monkeypatch.delenv(procfacts.CPUS_ENV)
    monkeypatch.setattr(procfacts, "usable_cores", lambda root=None: 1)
    assert cores_in_force() == 1


@pytest.mark.skipif(not LINUX, reason="/proc is Linux's")
def test_memory_facts_of_this_process_agree():
    rss, pss, peak = procfacts.rss_mb(), procfacts.pss_mb(), procfacts.peak_rss_mb()
    assert rss > 0 and peak >= rss * 0.99
    if pss is not None:  # smaps_rollup: Linux >= 4.14
        # Shared pages count in full in RSS and in part in PSS; a little slack for the
        # pages the two reads touched in between.
        assert 0 < pss <= rss * 1.05 + 1
    facts = procfacts.status_mb("VmRSS", "VmHWM", "RssAnon", "NoSuchField")
    assert set(facts) == {"VmRSS", "VmHWM", "RssAnon"}
    assert facts["VmHWM"] >= facts["VmRSS"] * 0.99


@pytest.mark.skipif(not LINUX, reason="/proc is Linux's")
def test_reset_peak_brings_the_high_water_mark_down():
    big = bytearray(64 * 2**20)
    big[:: 4096] = b"x" * len(big[:: 4096])  # touch every page
    del big
    procfacts.release_memory()
    before = procfacts.peak_rss_mb()
    assert procfacts.reset_peak_rss()
    assert procfacts.peak_rss_mb() < before - 32


def test_a_finished_process_has_no_facts():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert procfacts.rss_mb(proc.pid) is None
    assert procfacts.cpu_seconds(proc.pid) is None
    assert procfacts.status_mb("VmRSS", pid=proc.pid) == {}


def test_another_process_is_read_by_pid():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert procfacts.rss_mb(proc.pid) > 0
        assert procfacts.cpu_seconds(proc.pid) >= 0
    finally:
        proc.kill()
        proc.wait()


def test_glibc_is_loaded_once():
    assert procfacts.libc() is procfacts.libc()
    assert procfacts.malloc_trim() in (True, False)
    assert procfacts.mallopt(-3, 1024 * 1024) in (True, False)  # M_MMAP_THRESHOLD


def test_pinned_measurements_take_the_idlest_cores():
    # run_isolated(cpus=1) pinned every trial to the first core: two test workers (or two
    # sweeps) side by side then shared core 0 while core 1 idled.
    from tts_kit.core.procfacts import allowed_cpus, idlest_cpus

    assert idlest_cpus(1, [0, 1], busy=[100.0, 2.0]) == [1]
    assert idlest_cpus(2, [0, 1, 2, 3], busy=[90.0, 5.0, 60.0, 1.0]) == [1, 3]
    assert idlest_cpus(1, [0, 1], busy=[4.0, 1.0]) == [0]  # noise does not reorder idle cores
    assert idlest_cpus(3, [2, 5]) == [2, 5]
    assert set(idlest_cpus(1)) <= set(allowed_cpus())
