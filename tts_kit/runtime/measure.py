"""Measure one function in a fresh process tree: peak RSS, RSS timeline, events, CPU, status.
An overrun, timeout, exception or crash comes back as a status, and nothing the work started
outlives it (docs/guide.md, "Measuring in a fresh process tree")."""

from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psutil

from tts_kit.core import procfacts
from tts_kit.core.errors import TtsKitError
from tts_kit.core.procfacts import CPUS_ENV
from tts_kit.core.settings import settings as current_settings

# Guards os.environ and sys.modules['__main__'] while a child is spawned (`_spawn_scope`).
_SPAWN_LOCK = threading.Lock()
# How long the parent waits for a child that said "done" to exit before killing it.
_EXIT_GRACE_S = 10.0
# How often the tree's PSS is read (smaps_rollup walks page tables: slower than RSS).
_PSS_EVERY_S = 0.1
# prctl(2) option: orphaned descendants are reparented to this process, not to init.
_PR_SET_CHILD_SUBREAPER = 36


class _ProcTree:
    """The child and its descendants, kept as ``psutil.Process`` (a recycled pid is safe)."""

    #: Seconds between two listings in `sample` (at every 10 ms a quarter of a core).
    LIST_EVERY_S = 0.1

    def __init__(self, proc: Any):
        self.proc = proc
        self.pid: int = proc.pid
        self.seen: dict[int, psutil.Process] = {}
        self.start_time: float | None = None
        self._listed: list[psutil.Process] = []
        self._listed_at = -math.inf

    def members(self) -> list[psutil.Process]:
        """The child (first) and its live descendants now; [] once the child is gone."""
        try:
            root = self.seen.get(self.pid) or psutil.Process(self.pid)
            self.start_time = self.start_time or root.create_time()
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return []
        for p in procs:
            self.seen.setdefault(p.pid, p)
        return procs

    def sample(self, pss: bool) -> tuple[float | None, float | None, int]:
        """(summed RSS, summed PSS or None, processes) of the tree; RSS None once gone."""
        now = time.monotonic()
        if not self._listed or now - self._listed_at >= self.LIST_EVERY_S:
            self._listed, self._listed_at = self.members(), now
        procs = self._listed
        rss_total, pss_total, n = 0.0, 0.0 if pss else None, 0
        for i, p in enumerate(procs):
            rss = procfacts.rss_mb(p.pid)
            if rss is None:  # exited (or a zombie) between the listing and the read
                if i == 0:
                    return None, None, 0
                continue
            rss_total += rss
            n += 1
            if pss_total is not None:
                value = procfacts.pss_mb(p.pid)
                pss_total = None if value is None else pss_total + value
        return (rss_total if n else None), pss_total, n

    def _listing(self, alive: bool) -> dict[int, psutil.Process]:
        """The tree seen so far or now and the child's group (escaped orphans), less the child."""
        if alive:
            self.members()
        found = dict(self.seen)
        for p in psutil.process_iter():
            with contextlib.suppress(psutil.Error, OSError):
                if (p.pid not in found and p.pid != os.getpid() and os.getpgid(p.pid) == self.pid
                        and (self.start_time is None or p.create_time() >= self.start_time)):
                    found[p.pid] = p
        found.pop(self.pid, None)
        return found

    def kill(self, root: bool) -> None:
        """SIGSTOP descendants until none is new, SIGKILL them (and the child: ``root``)."""
        alive = self.proc.exitcode is None and self.proc.is_alive()
        if root and alive:
            with contextlib.suppress(psutil.Error):  # gone already
                (self.seen.get(self.pid) or psutil.Process(self.pid)).suspend()
        victims: dict[int, psutil.Process] = {}
        for _ in range(20):
            new = {pid: p for pid, p in self._listing(alive).items() if pid not in victims}
            for p in new.values():
                _signal(p, stop=True)
            victims.update(new)
            if not new:
                break
        # Descendants first: a parent killed first would orphan them to init mid-listing.
        for p in victims.values():
            _signal(p, stop=False)
        if root and self.proc.is_alive():
            self.proc.kill()
        # Until each is dead or a zombie (its memory is freed; its reaping is its parent's).
        deadline = time.time() + 2.0
        while any(not _dead(p) for p in victims.values()) and time.time() < deadline:
            time.sleep(0.01)
        self.seen = {self.pid: self.seen[self.pid]} if self.pid in self.seen else {}


def _signal(proc: psutil.Process, stop: bool) -> None:
    """SIGSTOP (``stop``) or SIGKILL ``proc``, if it is still there."""
    with contextlib.suppress(psutil.Error):
        proc.suspend() if stop else proc.kill()


def _dead(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


@dataclass
class Measurement:
    """What `run_isolated` observed. Memory in MiB, times in seconds from the child's start."""

    #: ``ok``, ``oom`` (over the budget, or SIGKILLed from outside as by the kernel's OOM
    #: killer), ``timeout`` or ``error`` (exception or crash).
    status: str = "ok"
    error: str = ""  #: one line: the child's exception, or what ended it
    result: Any = None  #: ``fn``'s return value (only when ``ok``)
    #: The tree's peak: the child's own high-water mark or the largest summed sample.
    peak_rss_mb: float = math.nan
    peak_pss_mb: float = math.nan  #: largest summed PSS, read about every 100 ms
    max_processes: int = 0  #: most processes in one sample (1: the child alone)
    baseline_rss_mb: float = math.nan  #: the child's RSS after imports, before ``fn``
    #: ``(t, rss_mb)``: the tree's summed RSS every ``sample_ms``.
    timeline: list[tuple[float, float]] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)  #: the child's marks
    wall_s: float = math.nan  #: from the start to the result (or death), parent's view
    work_start_s: float = math.nan  #: when ``fn`` was called
    work_s: float = math.nan  #: ``fn``'s own wall time; NaN when it did not finish
    #: CPU time during ``fn`` / ``work_s`` x 100 (an unfinished child: over its lifetime).
    cpu_percent: float = math.nan
    cpus: int | None = None  #: cores pinned to (None: not pinned)
    mem_budget_mb: float | None = None
    oom_rss_mb: float | None = None  #: the tree's RSS when killed for the budget
    exitcode: int | None = None  #: negative: the signal that ended it
    traceback: str = ""  #: the child's traceback when ``fn`` raised

    @property
    def ok(self) -> bool:
        """True when ``fn`` returned normally."""
        return self.status == "ok"


def run_isolated(
    fn: Callable[..., Any],
    *args: Any,
    cpus: int | None = None,
    mem_budget_mb: float | None = None,
    sample_ms: float = 10,
    timeout_s: float | None = None,
    **kwargs: Any,
) -> Measurement:
    """Run ``fn(*args, **kwargs)`` in a fresh spawned process and measure it; ``fn`` must be
    importable by name, its arguments and result must pickle.

    Example:
        >>> run_isolated(sum, [1, 2, 3]).result
        6
    """
    _check_importable(fn)
    pinned: list[int] | None = None
    if cpus is not None:
        cores = procfacts.allowed_cpus()
        if isinstance(cpus, bool) or not isinstance(cpus, int) or cpus < 1:
            raise TtsKitError(f"cpus must be a positive integer, got {cpus!r}")
        if cpus > len(cores):
            raise TtsKitError(f"cpus={cpus} but this process may only use {len(cores)} "
                              f"core(s) ({cores}); ask for at most {len(cores)}")
        pinned = procfacts.idlest_cpus(cpus, cores)
    for name, value in (("mem_budget_mb", mem_budget_mb), ("timeout_s", timeout_s),
                        ("sample_ms", sample_ms)):
        if value is not None and not value > 0:
            raise TtsKitError(f"{name} must be positive, got {value!r}")
    try:
        payload = pickle.dumps((fn, args, kwargs))
    except Exception as exc:
        raise TypeError(
            f"run_isolated: cannot pickle {getattr(fn, '__name__', fn)!r} or its arguments "
            f"({type(exc).__name__}: {exc}); pass plain data (paths, dicts, numbers)"
        ) from exc

    # Spawn re-runs the caller's script in the child (its imports in the baseline): only
    # when the function or an argument lives in __main__.
    needs_main = b"__main__" in payload
    ctx = mp.get_context("spawn")
    recv_conn, send_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(send_conn, payload, pinned),
                       name="tts_kit.runtime.measure", daemon=True)
    current_settings()  # this process's settings, read before the child's are set below
    # Set before exec so OpenMP and ORT read them as the libraries load.
    child_env = {CPUS_ENV: None if cpus is None else str(cpus)}
    if cpus is not None:
        child_env["OMP_NUM_THREADS"] = str(cpus)
    with _spawn_scope(child_env, hide_main=not needs_main):
        t0 = time.time()
        proc.start()
    send_conn.close()  # so a dead child reads as EOF instead of a silent pipe
    tree = _ProcTree(proc)
    try:
        w = _Watcher(proc, recv_conn, t0, Measurement(cpus=cpus, mem_budget_mb=mem_budget_mb),
                     tree)
        w.sample_until_done(mem_budget_mb, sample_ms / 1000.0, timeout_s)
        w.reap()
        return w.result()
    finally:
        # Whatever happened (the caller's Ctrl-C included), nothing of the tree survives.
        tree.kill(root=True)
        if proc.is_alive():
            proc.join(5)
        recv_conn.close()
        if proc.exitcode is not None:
            proc.close()


@contextlib.contextmanager
def _spawn_scope(env: dict[str, str | None], hide_main: bool) -> Iterator[None]:
    """Under a lock, set what a child spawned now inherits (``env``, ``__main__``); restore."""
    with _SPAWN_LOCK:
        saved = {k: os.environ.get(k) for k in env}
        real_main = sys.modules.get("__main__")
        try:
            _set_environ(env)
            if hide_main and real_main is not None:
                sys.modules["__main__"] = types.ModuleType("__main__")
            yield
        finally:
            if real_main is not None:
                sys.modules["__main__"] = real_main
            _set_environ(saved)


def _set_environ(env: dict[str, str | None]) -> None:
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _check_importable(fn: Callable[..., Any]) -> None:
    """Refuse, before spawning, functions a spawned child cannot import."""
    if not callable(fn):
        raise TypeError(f"run_isolated needs a function, got {type(fn).__name__}")
    qualname = getattr(fn, "__qualname__", "") or ""
    module = getattr(fn, "__module__", None)
    if "<lambda>" in qualname or "<locals>" in qualname:
        raise TypeError(f"run_isolated cannot run {qualname!r}: lambdas and nested functions "
                        "cannot be imported by a spawned process; define it at module level "
                        "in an importable module")
    if module == "__main__" and getattr(sys.modules.get("__main__"), "__file__", None) is None:
        raise TypeError(f"run_isolated cannot run {qualname!r}: it was defined interactively "
                        "(notebook or REPL), so a spawned process cannot import it; move it "
                        "to a .py module")


class _Watcher:
    """Parent side of one child: its messages, the tree's samples, budget and timeout."""

    def __init__(self, proc: Any, conn: Any, t0: float, m: Measurement, tree: _ProcTree):
        self.proc, self.conn, self.t0, self.m, self.tree = proc, conn, t0, m, tree
        self.done: dict[str, Any] | None = None
        self.eof = False
        self.killed_for: str | None = None
        self.last_cpu: float | None = None
        self.peak_seen = math.nan
        self.peak_work = math.nan  # largest summed sample while fn ran (after the baseline)
        self.kill_hwm: float | None = None

    def drain(self, wait: float) -> None:
        """Read the child's messages for up to ``wait`` seconds (events, baseline, done)."""
        deadline = time.time() + wait
        while not self.eof and self.done is None:
            left = max(0.0, deadline - time.time())
            try:
                if not self.conn.poll(left):
                    return
                msg = self.conn.recv()
            except (EOFError, OSError):
                self.eof = True
                return
            kind = msg[0]
            if kind == "event":
                self.m.events.append((msg[1] - self.t0, msg[2]))
            elif kind == "baseline":
                self.m.baseline_rss_mb = msg[1]
                self.m.work_start_s = msg[2] - self.t0
            elif kind == "done":
                self.done = msg[1]

    def _kill(self, why: str, error: str) -> None:
        self.kill_hwm = procfacts.peak_rss_mb(self.proc.pid)
        self.tree.kill(root=True)
        self.killed_for, self.m.error = why, error

    def _record(self, rss: float, pss: float | None, n_procs: int, now: float) -> None:
        m = self.m
        m.timeline.append((now - self.t0, rss))
        m.max_processes = max(m.max_processes, n_procs)
        self.peak_seen = _nanmax(self.peak_seen, rss)
        if not math.isnan(m.work_start_s):
            self.peak_work = _nanmax(self.peak_work, rss)
        m.peak_pss_mb = _nanmax(m.peak_pss_mb, pss)
        self.last_cpu = procfacts.cpu_seconds(self.proc.pid) or self.last_cpu

    def sample_until_done(self, budget: float | None, interval: float,
                          timeout_s: float | None) -> None:
        """Sample every ``interval`` s until the child reports, dies, or overruns a limit."""
        pss_every = max(1, round(_PSS_EVERY_S / interval))
        n_samples = 0
        while True:
            rss, pss, n_procs = self.tree.sample(pss=n_samples % pss_every == 0)
            n_samples += 1
            now = time.time()
            if rss is not None:
                self._record(rss, pss, n_procs, now)
                if budget is not None and rss > budget:
                    what = ("RSS" if n_procs <= 1
                            else f"RSS of the process tree ({n_procs} processes)")
                    self._kill("oom", f"{what} {rss:.1f} MB passed the {budget:g} MB budget")
                    self.m.oom_rss_mb = rss
                    break
            if timeout_s is not None and now - self.t0 > timeout_s:
                self._kill("timeout", f"still running after {timeout_s:g} s")
                break
            self.drain(interval)
            if self.done is not None or self.eof or not self.proc.is_alive():
                self.drain(0)
                break
        self.m.wall_s = time.time() - self.t0

    def reap(self) -> None:
        """Collect the last messages and end the child and whatever it left running."""
        proc, tree = self.proc, self.tree
        self.drain(0)  # events sent just before the end
        if self.done is None and self.killed_for is None:
            # Pipe closed or process gone without a result: give a dying child a moment.
            tree.kill(root=False)  # its descendants do not get that moment
            proc.join(2.0)
            self.drain(0)
        if self.done is not None and self.killed_for is None:
            self.m.wall_s = self.done["t_end"] - self.t0
            # fn returned: what it started and left running is killed now, so the child's
            # exit does not wait on it (multiprocessing joins its children at exit).
            tree.kill(root=False)
            proc.join(_EXIT_GRACE_S)
            if proc.is_alive():
                proc.kill()
        proc.join(5.0)
        tree.kill(root=False)  # orphans of a child that died or was killed
        self.m.exitcode = proc.exitcode

    def result(self) -> Measurement:
        """The measurement: the child's report, or why it ended without one."""
        m, done = self.m, self.done
        if done is not None and self.killed_for is None:
            m.status = done["status"]
            m.error = done.get("error", "")
            m.traceback = done.get("traceback", "")
            m.result = done.get("result")
            m.peak_rss_mb = _nanmax(done["peak_rss_mb"], self.peak_work)
            m.work_s = done["work_s"]
            if done["work_s"] > 0:
                m.cpu_percent = 100.0 * done["cpu_s"] / done["work_s"]
            return m
        # Killed by us, crashed, or exited without reporting.
        m.peak_rss_mb = _nanmax(self.kill_hwm, self.peak_seen)
        if self.last_cpu is not None and m.wall_s > 0:
            m.cpu_percent = 100.0 * self.last_cpu / m.wall_s
        code = self.proc.exitcode
        if self.killed_for is not None:
            m.status = self.killed_for
        elif code is not None and code < 0:
            sig = -code
            name = signal.Signals(sig).name if sig in set(signal.Signals) else f"signal {sig}"
            m.status, m.error = "error", f"killed by signal {sig} ({name})"
            if sig == signal.SIGKILL:
                m.status = "oom"
                m.error += " from outside the harness (on Linux usually the kernel OOM killer)"
        else:
            m.status, m.error = "error", f"child exited with code {code} before reporting a result"
        return m


def _child_main(conn: Any, payload: bytes, pinned: list[int] | None) -> None:
    """Child side: pin, import, mark the baseline, run, report. Never raises."""
    from tts_kit.core import events

    _contain_descendants()
    if pinned is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, pinned)
    lock = threading.Lock()

    def send(msg: tuple[Any, ...]) -> None:
        with lock:
            conn.send(msg)

    def forward(t: float, name: str) -> None:
        send(("event", t, name))

    report: dict[str, Any]
    try:
        fn, args, kwargs = pickle.loads(payload)
    except BaseException as exc:  # the function's module failed to import
        send(("done", {**_end_stats(0.0, 0.0), "status": "error", "error": _one_line(exc)}))
        conn.close()
        return
    events.add_listener(forward)
    baseline = procfacts.rss_mb()
    cpu0 = procfacts.cpu_seconds()
    start = time.time()
    send(("baseline", baseline, start))
    try:
        result = fn(*args, **kwargs)
        report = {"status": "ok", "result": result}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are the work's too
        report = {"status": "error", "error": _one_line(exc), "traceback": traceback.format_exc()}
    events.remove_listener(forward)
    report.update(_end_stats(start, cpu0))
    try:
        send(("done", report))
    except Exception as exc:  # the result does not pickle
        report.pop("result", None)
        report.update(status="error", error=f"result could not be sent: {_one_line(exc)}")
        send(("done", report))
    conn.close()


def _contain_descendants() -> None:
    """Child side: its own process group (Ctrl-C reaches only the parent), subreaper on Linux."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    if sys.platform.startswith("linux"):
        lib = procfacts.libc()
        if lib is not None and hasattr(lib, "prctl"):
            lib.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _end_stats(start: float, cpu0: float) -> dict[str, float]:
    end = time.time()
    return {
        "t_end": end,
        "work_s": end - start if start else 0.0,
        "cpu_s": procfacts.cpu_seconds() - cpu0,
        "peak_rss_mb": procfacts.peak_rss_mb(),
    }


def _nanmax(*values: float | None) -> float:
    """The largest of ``values`` that is a number (None and NaN skipped), else NaN."""
    return max((v for v in values if v is not None and not math.isnan(v)), default=math.nan)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
