"""Priority tiers (issue 37, an experiment): first chunks on foreground workers, later
chunks on background workers the kernel runs only when a foreground one does not need the core.

Chunk scheduling already puts a waiting first chunk ahead of queued later chunks, but not
ahead of a later chunk already running: on two one-thread workers a request that arrives
while both render another request's 183-character chunk waits for one of them (seconds).
Nesting (`lab.nesting`) interrupts that chunk between two flow steps and pays for it in the
whole response. Here the pool has twice the workers: half are reniced to `NICE` (all their
threads: the nice value is per thread on Linux), and take only later chunks; the other half
take only first chunks. A first chunk then starts at once on a foreground worker and the
kernel gives it the core (weight 1024 against 15 at nice 19); the background workers use every
core no first chunk needs. Nothing is computed differently (same sessions, same threads):
the audio is bit for bit the same.

``python bench/serving.py --only workers+chunk,workers+chunk+tiers`` measures it (the label
gets 2 x ``--workers`` processes).

Example:
    >>> split([(0, "idle", False), (1, "idle", True)], later=True)
    1
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from lab.serve_lab import setting

from tts_kit.serve.chunked import SCHEDULERS, ChunkScheduler
from tts_kit.serve.worker import WORKER_HANDLERS, WorkerState

#: The background workers' nice value (``enable(..., nice=N)``; 19: the lowest priority).
NICE = int(setting("nice", 19))


def _renice(state: WorkerState, msg: tuple) -> None:
    """A worker's handler for ``("nice", value)``: every thread of it to that nice value."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, int(tid), msg[1])


def split(idle: list[tuple[int, str, bool]], *, later: bool) -> int | None:
    """Which idle worker takes a job: ``idle`` is ``(id, state, background)`` per worker in
    the idle queue; a later chunk takes a background one, a first chunk a foreground one."""
    return next((wid for wid, state, back in idle if state == "idle" and back == later), None)


class TieredScheduler(ChunkScheduler):
    """`ChunkScheduler` with half the pool reniced for later chunks (see the module doc)."""

    def __init__(self, pool: Any):
        super().__init__(pool)
        self.background: set[int] = set()

    def _tier(self) -> None:
        """Keep half the live workers in the background (a replacement starts at nice 0)."""
        live = {w.id: w for w in self.pool.workers.values() if w.state in ("idle", "busy")}
        self.background &= set(live)
        for w in live.values():
            if len(self.background) >= self.pool.size // 2:
                return
            if w.id not in self.background and w.state == "idle":
                with contextlib.suppress(OSError, ValueError):
                    w.send(("nice", NICE))
                    self.background.add(w.id)

    def _take(self, later: bool) -> Any:
        idle = self.pool._idle
        wid = split([(w.id, w.state, w.id in self.background) for w in idle], later=later)
        if wid is None:
            return None
        w = next(w for w in idle if w.id == wid)
        idle.remove(w)
        w.state = "busy"
        return w

    def dispatch(self) -> None:
        self._tier()
        if not self.background:  # a pool of one: no tiers
            super().dispatch()
            return
        for later in (False, True):  # each tier its own jobs, the most urgent first
            while True:
                jobs = [j for j in self.jobs if (j[1] > 0) == later]
                w = self._take(later) if jobs else None
                if w is None:
                    break
                job = min(jobs, key=self._key)
                self.jobs.remove(job)
                self._start(w, [job], ("job", job[0].rid, job[0].params, job[1]))
                self._spawn(self._run(w, *job))

SCHEDULERS["chunk+tiers"] = TieredScheduler
WORKER_HANDLERS["nice"] = _renice
