"""Priority tiers (a lab experiment: scheduling ``chunk+tiers``, loaded by
`lab.serve_lab.enable("lab.tiers")`; issue 37).

Half the pool's workers are reniced to `BACKGROUND_NICE` (every thread) and take later
chunks only; the other half take first chunks only. A request that arrives while every
worker renders someone's long later chunk no longer waits for it: its first chunk starts
at once on a foreground worker and the kernel gives it the core. Nothing is computed
differently. Start the server with twice the workers it would have (bench/serving.py does);
a background worker counts no requests toward `--max-requests` (it takes later chunks only).
Not in the package: on the quiet 2-core box it cut TTFA p95 at concurrency 4 by 12-25 %
for 1.8x the workers' memory, which a 2 GB box does not have (docs/benchmarks.md).

Example:
    >>> renice(2**22 + 1, 19)  # no such process: nothing happens
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from tts_kit.serve.chunked import SCHEDULERS, ChunkScheduler
from tts_kit.serve.worker import WorkerPool

#: The background tier's nice value: the lowest priority (weight 15 against 1,024 at nice 0).
BACKGROUND_NICE = 19


def renice(pid: int, nice: int) -> None:
    """Every thread of process ``pid`` to ``nice`` (per thread on Linux; else nothing)."""
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, int(tid), nice)


class TieredScheduler(ChunkScheduler):
    """Chunk scheduling with half the workers in a reniced background tier."""

    def __init__(self, pool: WorkerPool):
        super().__init__(pool)
        self.background: set[int] = set()  # worker ids reniced
        self.slots = max(1, pool.size // 2)

    def describe(self) -> dict[str, Any]:
        return {"background": sorted(self.background)}

    def dispatch(self) -> None:
        """First chunks to foreground workers, later chunks to background ones."""
        self._tier()
        for later in (False, True):
            while True:
                jobs = [j for j in self.jobs if (j[1] > 0) == later]
                w = self.pool.take_idle(lambda w: (w.id in self.background) == later) \
                    if jobs else None  # noqa: B023
                if w is None:
                    break
                job = min(jobs, key=self._key)
                self.jobs.remove(job)
                self._start(w, [job], ("job", job[0].rid, job[0].params, job[1]))
                self._spawn(self._run(w, *job))

    def _tier(self) -> None:
        """Keep half the live workers in the background (a replacement starts in front)."""
        live = {w.id: w for w in self.pool.workers.values() if w.state in ("idle", "busy")}
        self.background &= set(live)
        idle = [w for w in live.values() if w.id not in self.background and w.state == "idle"]
        for w in idle[:max(0, self.pool.size // 2 - len(self.background))]:
            renice(w.pid, BACKGROUND_NICE)
            self.background.add(w.id)


SCHEDULERS["chunk+tiers"] = TieredScheduler
