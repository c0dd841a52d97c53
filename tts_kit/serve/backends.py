"""How a checked request becomes audio: `WorkersBackend`; ``bench/lab`` registers other
architectures in `BACKENDS` (one that does not stream answers whole, ``answer(...)``)."""

from __future__ import annotations

import os
from typing import Any

from tts_kit.serve.chunked import SCHEDULERS, ChunkScheduler
from tts_kit.serve.metrics import Metrics
from tts_kit.serve.worker import WorkerPool, load_lab


class Backend:
    """How an architecture turns a checked request into audio (``cfg``: a `ServeConfig`)."""

    streams = False
    metrics: Metrics  # the server's, set once the backend exists (they read its processes)

    def __init__(self, cfg: Any):
        self.cfg = cfg
        self.ready = False
        self.error: str | None = None

    async def start(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    async def stop(self) -> None:
        pass

    def processes(self) -> list[tuple[str, int]]:
        return [("server", os.getpid())]

    def describe(self) -> dict[str, Any]:
        return {}


class WorkersBackend(Backend):
    """tts_kit's worker processes: streamed audio, real deadlines."""

    streams = True
    pool: WorkerPool | None = None  # once started
    scheduler: ChunkScheduler | None = None

    async def start(self) -> None:
        def restarted(reason: str) -> None:
            self.metrics.restarts.labels(reason).inc()

        cfg = self.cfg
        self.pool = pool = WorkerPool(cfg.worker_config(), cfg.workers, cfg.max_queue,
                                      cfg.max_requests, cfg.max_rss_mb, restarted)
        self.scheduler = sched = self._scheduler()
        self.metrics.queue.set_function(lambda: sched.waiting if sched else pool.queue_depth)
        await pool.start()
        self.ready = True

    def _scheduler(self) -> ChunkScheduler | None:
        """Chunk scheduling's job queue; None for request scheduling or a model that cannot."""
        if self.cfg.scheduling == "request":
            return None
        from tts_kit.models.resolve import open_model

        if not open_model(self.cfg.model).capabilities.chunk_jobs:
            print("tts-kit serve: warning: this model cannot render a chunk on its own; "
                  "scheduling whole requests", flush=True)
            return None
        return SCHEDULERS[self.cfg.scheduling](self.pool)

    async def stop(self) -> None:
        if self.pool is not None:
            await self.pool.stop()

    def processes(self) -> list[tuple[str, int]]:
        workers = self.pool.describe() if self.pool is not None else []
        return super().processes() + [(f"worker-{w['id']}", w["pid"]) for w in workers]

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workers": self.pool.describe() if self.pool is not None else []}
        if self.scheduler is not None:  # chunk scheduling: requests held, jobs queued
            out.update(requests=len(self.scheduler.requests), jobs=len(self.scheduler.jobs),
                       **self.scheduler.describe())
        return out


#: Backends by ``--architecture`` name; a lab module adds its own (`tts_kit.serve.worker.LAB_ENV`).
BACKENDS: dict[str, type[Backend]] = {"workers": WorkersBackend}


def architectures() -> tuple[str, ...]:
    """The ``--architecture`` names: ``workers`` and those the lab modules register.

    Example:
        >>> architectures()[0]
        'workers'
    """
    load_lab()
    return tuple(BACKENDS)


__all__ = ["BACKENDS", "Backend", "WorkersBackend", "architectures"]
