"""`tts_kit.core.atomic` changes the process's signal handlers only while its block runs."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time

import pytest

from tts_kit.core import atomic

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _handlers() -> dict[int, object]:
    return {sig: signal.getsignal(sig) for sig in SIGNALS}


def _outputs(tmp_path):
    return {
        "file": lambda: atomic.atomic_file(tmp_path / "out.txt"),
        "dir": lambda: atomic.atomic_dir(tmp_path / "out_dir"),
        "scratch": lambda: atomic.scratch_dir(tmp_path),
    }


@pytest.fixture(autouse=True)
def _default_handlers():
    """Default SIGTERM/SIGHUP dispositions (a suite run under nohup ignores SIGHUP)."""
    saved = {sig: signal.signal(sig, signal.SIG_DFL) for sig in atomic.GUARDED_SIGNALS}
    yield
    for sig, old in saved.items():
        signal.signal(sig, old)


@pytest.mark.parametrize("kind", ["file", "dir", "scratch"])
@pytest.mark.parametrize("raises", [False, True])
def test_the_handlers_are_the_callers_again_after_the_block(tmp_path, kind, raises):
    before = _handlers()
    with pytest.raises(RuntimeError) if raises else contextlib.nullcontext():
        with _outputs(tmp_path)[kind]():
            inside = _handlers()
            if raises:
                raise RuntimeError("boom")
    assert inside[signal.SIGTERM] is not before[signal.SIGTERM]  # taken over inside only
    assert _handlers() == before


def test_a_handler_someone_installed_stays_theirs(tmp_path):
    def mine(signum, frame):
        pass

    signal.signal(signal.SIGTERM, mine)
    with atomic.atomic_file(tmp_path / "out.txt"):
        assert signal.getsignal(signal.SIGTERM) is mine
    assert signal.getsignal(signal.SIGTERM) is mine


def test_nested_blocks_restore_once_at_the_outermost(tmp_path):
    before = _handlers()
    with atomic.atomic_dir(tmp_path / "a"):
        with atomic.atomic_file(tmp_path / "b.txt"):
            pass
        assert _handlers() != before  # still guarded: the outer block runs
    assert _handlers() == before


def test_outside_the_main_thread_nothing_is_touched(tmp_path):
    before = _handlers()
    errors: list[BaseException] = []
    seen: list[dict[int, object]] = []

    def work() -> None:
        try:
            with atomic.atomic_file(tmp_path / "t.txt") as tmp:
                tmp.write_text("x")
                seen.append(_handlers())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors
    assert seen == [before] and _handlers() == before
    assert (tmp_path / "t.txt").read_text() == "x"



_HOLD = """import fcntl, sys, time
f = open(sys.argv[1], "a+b")
fcntl.flock(f, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(0.5)
"""


def test_build_lock_makes_another_process_wait_its_turn(tmp_path):
    """Two processes that build one cache entry at once (a server's workers on a cold
    cache, a test run's workers): the second waits until the first is done."""
    lock = tmp_path / ".build.lock"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(lock)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        t0 = time.monotonic()
        with atomic.build_lock(lock):
            waited = time.monotonic() - t0
        assert holder.wait(timeout=30) == 0
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert waited > 0.2
