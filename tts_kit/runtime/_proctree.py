"""The process tree of one child `tts_kit.runtime.measure.run_isolated` watches.

Example:
    >>> import subprocess, sys
    >>> child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    >>> class Handle:  # what ProcTree needs of a multiprocessing.Process
    ...     pid = child.pid
    ...     exitcode = None
    ...     def is_alive(self): return child.poll() is None
    ...     def kill(self): child.kill()
    >>> tree = ProcTree(Handle())
    >>> rss, pss, n = tree.sample(pss=False)
    >>> n
    1
    >>> tree.kill(root=True); child.wait() < 0
    True
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import psutil

from tts_kit.core import procfacts


class ProcTree:
    """The child and every process it started, sampled and killed together; kept as
    ``psutil.Process`` once seen, so a recycled pid is never signalled."""

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
        """Every process of the tree seen so far or now and of its group, but the child."""
        if alive:
            self.members()
        found = {p.pid: p for p in self.seen.values() if p.pid != self.pid}
        if hasattr(os, "getpgid"):
            for p in self._group():
                if p.pid != self.pid:
                    found.setdefault(p.pid, p)
        return found

    def _group(self) -> list[psutil.Process]:
        """Processes in the child's own process group (an orphan that escaped the tree)."""
        out = []
        for p in psutil.process_iter():
            try:
                if (p.pid != os.getpid() and os.getpgid(p.pid) == self.pid
                        and (self.start_time is None or p.create_time() >= self.start_time)):
                    out.append(p)
            except (psutil.Error, OSError):
                continue
        return out

    def kill(self, root: bool) -> None:
        """SIGKILL every descendant (then the child when ``root``), stopped first until a
        listing finds nobody new; wait briefly."""
        alive = self.proc.exitcode is None and self.proc.is_alive()
        if root and alive:
            try:
                _signal(self.seen.get(self.pid) or psutil.Process(self.pid), stop=True)
            except psutil.Error:  # gone already
                pass
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
    try:
        proc.suspend() if stop else proc.kill()
    except psutil.Error:
        pass


def _dead(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True
