"""The measurement harness: accuracy, budget, timeout, errors, crashes, events, pinning."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import psutil
import pytest

from tts_kit.core import events
from tts_kit.core.procfacts import allowed_cpus, current_cpus
from tts_kit.runtime.measure import run_isolated

MB = 1024 * 1024


# Child functions live at module level: a spawned process imports them by name.
def allocate(mb: int) -> int:
    """Allocate and touch ``mb`` MiB, hold it briefly so the sampler sees it."""
    a = np.ones(mb * MB // 8)
    time.sleep(0.05)
    return int(a.nbytes // MB)


def sleep_for(seconds: float) -> None:
    time.sleep(seconds)


def fail(message: str) -> None:
    raise ValueError(message)


def segfault() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(5)


def exit_hard() -> None:
    os._exit(3)


def marked_phases() -> str:
    events.mark("first")
    time.sleep(0.02)
    events.mark("second")
    time.sleep(0.02)
    events.mark("third")
    return "marked"


def affinity_and_cpus() -> tuple[int, int | None, str | None]:
    return len(os.sched_getaffinity(0)), current_cpus(), os.environ.get("OMP_NUM_THREADS")


def spin(seconds: float) -> int:
    end = time.time() + seconds
    n = 0
    while time.time() < end:
        n += 1
    return n


# A grandchild: allocate and touch MB MiB, say so, then hold it until killed or told.
_HOLD = ("import sys, time; b = b'x' * ({mb} * 2**20); print('ready', flush=True); "
         "time.sleep({hold})")


def _start_holders(n: int, mb: int, hold: float, pidfile: str | None = None,
                   ) -> list[subprocess.Popen]:
    procs = [subprocess.Popen([sys.executable, "-c", _HOLD.format(mb=mb, hold=hold)],
                              stdout=subprocess.PIPE, text=True) for _ in range(n)]
    if pidfile:  # before they allocate: a budget kill may come at any moment from here
        with open(pidfile, "a") as fh:
            fh.write("".join(f"{p.pid}\n" for p in procs))
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return procs


def grandchildren_allocate(n: int, mb: int) -> int:
    """Start ``n`` processes holding ``mb`` MiB each, keep them a while, end them."""
    procs = _start_holders(n, mb, hold=60)
    time.sleep(0.5)  # many sampling intervals with all of them resident
    for p in procs:
        p.kill()
        p.wait()
    return n


def _forked_sleeper(pidfile: str) -> None:
    """A plain fork of the child that sleeps (no exec: it shares the child's pages)."""
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    with open(pidfile, "a") as fh:
        fh.write(f"{pid}\n")


def _double_forked_daemon(pidfile: str) -> None:
    """A grandchild that detaches (fork, setsid, fork): an orphan in a session of its own."""
    if os.fork() == 0:
        os.setsid()
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        with open(pidfile, "a") as fh:
            fh.write(f"{pid}\n")
        os._exit(0)


def fork_and_hang(pidfile: str, mb: int = 0) -> None:
    """Start descendants of every kind, write their pids to ``pidfile``, then hang."""
    _start_holders(2, mb, hold=60, pidfile=pidfile)
    _forked_sleeper(pidfile)
    _double_forked_daemon(pidfile)
    time.sleep(60)


def leave_a_child_running() -> int:
    """Return at once, leaving a subprocess that sleeps 30 s."""
    return _start_holders(1, 0, hold=30)[0].pid


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _leftovers(pidfile) -> list[int]:
    """The descendants that wrote their pids and are still alive (after a short grace)."""
    pids = [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []
    assert pids, "the workload should have written its descendants' pids"
    deadline = time.time() + 3
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _kill_all(pids: list[int], since: float = 0.0) -> None:
    """Kill what this test started and left alive (so a failing test leaves no sleeper);
    only processes started since ``since`` and running this file's code, never a recycled
    pid of someone else's."""
    for pid in pids:
        try:
            p = psutil.Process(pid)
            cmd = " ".join(p.cmdline())
            if p.create_time() >= since - 1 and ("time.sleep" in cmd or "spawn_main" in cmd):
                p.kill()
        except psutil.Error:
            pass


@pytest.fixture
def pidfile(tmp_path):
    """Where a forking workload writes its descendants' pids; any left alive at the end
    (a failing test) are killed, so no sleeper outlives the test."""
    path, since = tmp_path / "pids", time.time()
    yield path
    if path.exists():
        _kill_all([int(x) for x in path.read_text().split()], since)


def test_the_peak_counts_the_grandchildren_of_a_forking_workload():
    """3 x 100 MB in subprocesses: the tree's peak, not the child's 20-odd MB."""
    m = run_isolated(grandchildren_allocate, 3, 100)
    assert m.status == "ok", m.error
    assert m.peak_rss_mb >= 300, (m.peak_rss_mb, m.max_processes)
    assert max(rss for _, rss in m.timeline) >= 300
    assert m.max_processes == 4
    assert m.peak_pss_mb >= 290 or np.isnan(m.peak_pss_mb)


def test_a_timeout_kills_every_descendant(pidfile):
    # 3 s is ample on a quiet machine; on a loaded one (load 15 on 2 cores) the child may
    # not have started its descendants by then, so the test tries once more with longer.
    for timeout_s in (3, 20):
        m = run_isolated(fork_and_hang, str(pidfile), timeout_s=timeout_s)
        assert m.status == "timeout", m.error
        if pidfile.exists() and len(pidfile.read_text().split()) >= 4:
            break
    assert _leftovers(pidfile) == [], "descendants survived the timeout"


def test_the_budget_applies_to_the_tree_and_an_oom_kill_kills_it_all(pidfile):
    m = run_isolated(fork_and_hang, str(pidfile), 150, mem_budget_mb=250, timeout_s=30)
    assert m.status == "oom", (m.status, m.error, m.peak_rss_mb)
    assert "process tree" in m.error and m.oom_rss_mb > 250
    assert _leftovers(pidfile) == []


def test_what_a_returning_workload_left_running_is_killed_without_waiting():
    t0 = time.time()
    m = run_isolated(leave_a_child_running)
    took = time.time() - t0
    assert m.status == "ok", m.error
    left = [m.result] if _alive(m.result) else []
    _kill_all(left, t0)
    assert left == [] and took < 8, took


def test_peak_minus_baseline_matches_a_300_mb_allocation():
    m = run_isolated(allocate, 300)
    assert m.status == "ok", m.error
    assert m.result == 300
    assert m.peak_rss_mb - m.baseline_rss_mb == pytest.approx(300, rel=0.10)
    assert m.baseline_rss_mb > 0
    assert m.timeline, "the parent took no RSS samples"
    assert max(rss for _, rss in m.timeline) <= m.peak_rss_mb + 1


def test_ru_maxrss_of_a_big_parent_does_not_leak_into_the_child():
    # A spawned child of a parent holding 400 MB: its ru_maxrss would say >= 400 MB.
    ballast = np.ones(400 * MB // 8)
    m = run_isolated(sum, [1, 2])
    del ballast
    assert m.result == 3
    assert m.peak_rss_mb < 300


def test_budget_kills_the_child_and_reports_oom():
    m = run_isolated(allocate, 300, mem_budget_mb=200)
    assert m.status == "oom"
    assert m.oom_rss_mb is not None and m.oom_rss_mb > 200
    assert m.peak_rss_mb >= m.oom_rss_mb
    assert "200" in m.error
    assert m.result is None


def test_sleeping_past_the_timeout_reports_timeout():
    m = run_isolated(sleep_for, 30, timeout_s=1.0)
    assert m.status == "timeout"
    assert 1.0 <= m.wall_s < 10


def test_an_exception_comes_back_as_error_with_its_message():
    m = run_isolated(fail, "bad input 42")
    assert m.status == "error"
    assert m.error == "ValueError: bad input 42"


def test_a_segfault_is_reported_not_raised():
    m = run_isolated(segfault, timeout_s=20)
    assert m.status == "error"
    assert "SIGSEGV" in m.error and "11" in m.error
    assert m.exitcode == -signal.SIGSEGV


def test_an_exit_without_result_is_reported():
    m = run_isolated(exit_hard, timeout_s=20)
    assert m.status == "error"
    assert "code 3" in m.error


def test_events_arrive_in_order_inside_the_run():
    m = run_isolated(marked_phases)
    assert m.result == "marked"
    assert [name for _, name in m.events] == ["first", "second", "third"]
    times = [t for t, _ in m.events]
    assert times == sorted(times)
    assert all(0 <= t <= m.wall_s for t in times)
    assert times[0] >= m.work_start_s


def test_cpus_pins_the_child_and_sets_its_thread_hints():
    m = run_isolated(affinity_and_cpus, cpus=1)
    assert m.result == (1, 1, "1")
    assert m.cpus == 1
    unpinned = run_isolated(affinity_and_cpus)
    assert unpinned.result[0] == len(allowed_cpus())
    assert unpinned.result[1] is None


def test_cpu_percent_tells_a_busy_loop_from_a_sleep_and_is_capped_by_the_pin():
    busy = run_isolated(spin, 0.3, cpus=1)
    idle = run_isolated(sleep_for, 0.3, cpus=1)
    assert busy.status == idle.status == "ok"
    # Pinned to one core, the child cannot use more than one core's time.
    assert 0 < busy.cpu_percent <= 110
    assert idle.cpu_percent < 10 < busy.cpu_percent


def test_too_many_cpus_is_refused_before_spawning():
    with pytest.raises(ValueError, match="cpus="):
        run_isolated(sum, [1], cpus=len(allowed_cpus()) + 1)


def test_lambdas_and_closures_are_refused_with_a_type_error():
    with pytest.raises(TypeError, match="module level"):
        run_isolated(lambda: 1)

    def local() -> int:
        return 1

    with pytest.raises(TypeError, match="module level"):
        run_isolated(local)


def _process_state() -> tuple[dict[str, str], object]:
    return dict(os.environ), sys.modules.get("__main__")


@pytest.mark.parametrize("cpus", [None, 1])
def test_a_measurement_leaves_the_environment_and_main_module_as_they_were(cpus, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # the caller's own, kept
    monkeypatch.delenv("TTS_KIT_CPUS", raising=False)
    before = _process_state()
    assert run_isolated(fail, "no", cpus=cpus).status == "error"
    assert _process_state() == before


def test_a_spawn_that_raises_still_restores_the_environment_and_main_module(monkeypatch):
    import multiprocessing.process

    seen = {}

    def broken_start(self):
        seen["omp"] = os.environ.get("OMP_NUM_THREADS")
        seen["main"] = sys.modules.get("__main__")
        raise OSError("no more processes")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", broken_start)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = _process_state()
    with pytest.raises(OSError, match="no more processes"):
        run_isolated(sum, [1], cpus=1)
    assert seen["omp"] == "1" and seen["main"] is not before[1]  # the child's view at start
    assert _process_state() == before


def test_sampling_lists_the_tree_ten_times_a_second_not_at_every_sample(monkeypatch):
    """Listing the descendants reads every process on the machine (psutil's ppid_map,
    milliseconds of CPU each); at a 10 ms interval that was about a quarter of a core
    spent watching each trial. The tree is listed every `0.1`, its
    listed processes sampled at every interval."""
    from tts_kit.runtime.measure import _ProcTree as ProcTree

    listings = []
    real = ProcTree.members
    monkeypatch.setattr(ProcTree, "members", lambda self: listings.append(1) or real(self))
    m = run_isolated(time.sleep, 1.5, sample_ms=10)
    assert m.status == "ok", m.error
    # Was one listing per sample (60 in 1.5 s at load 13, 150 on a quiet machine); the
    # sampling still ran at every interval it could.
    assert len(m.timeline) > 10
    assert len(listings) <= m.wall_s / ProcTree.LIST_EVERY_S + 5, (len(listings), m.wall_s)
