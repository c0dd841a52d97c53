"""Chunk-level scheduling (``--scheduling chunk``): a request's chunks are jobs any free worker
takes, the most urgent first (`needed_at`), and the client gets them in order; ``bench/lab``
registers other schedulers in `SCHEDULERS`."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Sequence
from typing import Any

from tts_kit.serve.worker import (
    CANCEL_GRACE_S,
    DeadlineExceeded,
    Overloaded,
    Worker,
    WorkerDied,
    WorkerPool,
)

#: Seconds of audio per character before a request has a measured chunk.
SECONDS_PER_CHAR = 0.07
#: How often a job's waiter looks whether its request ended (stops the job when so).
POLL_S = 0.1
#: What `ChunkScheduler._next` answers when it retired a worker that did not stop in time.
RETIRED: tuple = ("retired",)


def needed_at(durations: Sequence[float], lengths: Sequence[int], *, t: float,
              k: int) -> float:
    """When a client that started playing at ``t`` runs out of audio before chunk ``k``:
    measured ``durations`` (chunks 0..), the rest estimated from ``lengths`` (characters).

    Example:
        >>> needed_at([], [10, 20], t=0.0, k=1)
        0.7000000000000001
    """
    done = min(len(durations), k)
    chars = sum(lengths[:len(durations)])
    rate = sum(durations) / chars if chars and durations else SECONDS_PER_CHAR
    return t + sum(durations[:done]) + sum(lengths[j] * rate for j in range(done, k))


class ChunkRequest:
    """One request under chunk scheduling: its jobs' state and its reorder buffer."""

    def __init__(self, rid: int, params: dict[str, Any], t0: float):
        self.rid, self.params, self.t0 = rid, params, t0
        self.lengths: list[int] | None = None  # characters per chunk, once planned
        self.durations: list[float] = []  # seconds of chunks 0.. handed on, in order
        self.ready: dict[int, tuple] = {}  # finished chunks waiting for earlier ones
        self.next = 0  # the next chunk the client gets
        self.failure: BaseException | tuple | None = None
        self.running: dict[int, Worker] = {}
        self.started = False  # a worker took its first job
        self.ended = False
        self.first_audio_at: float | None = None
        self.changed = asyncio.Event()
        self.queued_at: dict[int, float] = {}  # chunk -> when its job was queued
        self.started_at: dict[int, float] = {}  # chunk -> when a worker took its job

    def deliver(self, k: int, msg: tuple) -> None:
        """A worker's answer to job ``k``: a chunk, or the request's failure."""
        if msg[0] == "chunk":
            self.ready[k] = msg
        elif self.failure is None:
            self.failure = msg
        self.changed.set()

    def fail(self, exc: BaseException) -> None:
        if self.failure is None:
            self.failure = exc
        self.changed.set()

    async def next_message(self, deadline: float | None) -> tuple:
        """The next chunk in order, ``("done",)`` after the last, or the failure (an
        ``("error", ...)`` message, or raised); `DeadlineExceeded` past ``deadline``."""
        while True:
            if self.next in self.ready:
                msg = self.ready.pop(self.next)
                self.next += 1
                self.durations.append(float(msg[2]))
                if self.first_audio_at is None:
                    self.first_audio_at = time.monotonic()
                return msg
            if self.failure is not None:
                if isinstance(self.failure, BaseException):
                    raise self.failure
                return self.failure
            if self.lengths is not None and self.next >= len(self.lengths):
                return ("done",)
            self.changed.clear()  # so a deadline already past times the wait out at once
            left = None if deadline is None else deadline - time.monotonic()
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                raise DeadlineExceeded("the request ran past its deadline") from None


class ChunkScheduler:
    """The job queue in front of a `WorkerPool`: at most ``slots + max_queue`` requests,
    one more is `Overloaded`."""

    def __init__(self, pool: WorkerPool):
        self.pool = pool
        self.requests: dict[int, ChunkRequest] = {}
        self.jobs: list[tuple[ChunkRequest, int]] = []
        self._next_rid = 0
        self._tasks: set[asyncio.Task] = set()
        self.slots = pool.size  # workers that take new requests (a lab scheduler's may be fewer)
        pool.on_idle = self.dispatch

    @property
    def waiting(self) -> int:
        """Requests no worker has started yet (the queue depth)."""
        return sum(1 for r in self.requests.values() if not r.started)

    def submit(self, params: dict[str, Any], t0: float) -> ChunkRequest:
        """Queue a request's first job; `Overloaded` when the server holds enough."""
        pool = self.pool
        if pool.closing:
            raise RuntimeError("server shutting down")
        if len(self.requests) >= self.slots + pool.max_queue:
            ahead = self.waiting + 1
            raise Overloaded(max(1, math.ceil(pool.mean_latency_s * ahead / self.slots)))
        req = ChunkRequest(self._next_rid, params, t0)
        self._next_rid += 1
        self.requests[req.rid] = req
        self._queue(req, [0])
        self.dispatch()
        return req

    def end(self, req: ChunkRequest, latency_s: float | None = None) -> None:
        """The request is over: drop its queued jobs, stop its running ones. Idempotent."""
        if latency_s is not None:
            self.pool.mean_latency_s = 0.8 * self.pool.mean_latency_s + 0.2 * latency_s
        if req.ended:
            return
        req.ended = True
        self.requests.pop(req.rid, None)
        self.jobs = [j for j in self.jobs if j[0] is not req]
        for w in req.running.values():
            w.cancel_job.value = req.rid

    def _key(self, job: tuple[ChunkRequest, int]) -> tuple:
        req, k = job
        if k == 0:
            return (0, req.rid, 0.0)
        t = req.first_audio_at or req.t0
        return (1, needed_at(req.durations, req.lengths or [], t=t, k=k), k)

    def describe(self) -> dict[str, Any]:
        """More for ``/health`` (a lab scheduler's figures)."""
        return {}

    def _queue(self, req: ChunkRequest, ks: Sequence[int]) -> None:
        now = time.monotonic()
        for k in ks:
            req.queued_at[k] = now
            self.jobs.append((req, k))

    def _answered(self, req: ChunkRequest, k: int, worker: Worker, **facts: Any) -> None:
        """Job ``k`` of ``req`` answered on ``worker`` (a lab scheduler's hook)."""

    def dispatch(self) -> None:
        """Give queued jobs to idle workers, the most urgent first."""
        while self.jobs and (w := self.pool.take_idle()) is not None:
            job = min(self.jobs, key=self._key)
            self.jobs.remove(job)
            self._start(w, [job], ("job", job[0].rid, job[0].params, job[1]))
            self._spawn(self._run(w, *job))

    def _start(self, w: Worker, jobs: list[tuple[ChunkRequest, int]], msg: tuple) -> None:
        """Mark ``jobs`` as running on ``w`` and send it ``msg``."""
        for req, k in jobs:
            req.started = True
            req.running[k] = w
            req.started_at[k] = time.monotonic()
        with contextlib.suppress(OSError, ValueError):  # dead: its "exit" comes
            w.send(msg)

    def _spawn(self, run: Any) -> None:
        task = asyncio.get_running_loop().create_task(run)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _next(self, w: Worker, stop_by: float | None) -> tuple | None:
        """``w``'s next message; None after a quiet poll; `RETIRED` (``w`` replaced) past
        the cancel grace ``stop_by``."""
        wait = POLL_S if stop_by is None else max(0.0, stop_by - time.monotonic())
        try:
            return await asyncio.wait_for(w.inbox.get(), wait)
        except asyncio.TimeoutError:
            if stop_by is not None and time.monotonic() >= stop_by:
                self.pool.retire(w, "abandoned")
                return RETIRED
            return None

    async def _run(self, w: Worker, req: ChunkRequest, k: int) -> None:
        """Wait for job ``k``'s answer on ``w``, then free ``w``."""
        stop_by = None
        try:
            while True:
                if req.ended and stop_by is None:
                    w.cancel_job.value = req.rid
                    stop_by = time.monotonic() + CANCEL_GRACE_S
                msg = await self._next(w, stop_by)
                if msg is RETIRED:
                    return
                if msg is None:
                    continue
                if msg[0] == "exit":  # died: the pool replaced it
                    req.fail(WorkerDied(f"worker {w.id} (pid {w.pid}) exited while "
                                        "synthesising"))
                    return
                if msg[0] == "plan":
                    self._planned(req, msg[1])
                    continue
                self._answered(req, k, w)
                req.running.pop(k, None)
                if not req.ended:
                    req.deliver(k, msg)
                break
            self.pool.release(w, counted=k == 0)
        finally:
            req.running.pop(k, None)

    def _planned(self, req: ChunkRequest, lengths: list[int]) -> None:
        if req.lengths is not None:  # said again (a failed batch rendered one by one)
            return
        req.lengths = list(lengths)
        req.changed.set()
        if not req.ended:
            self._queue(req, range(1, len(lengths)))
            self.dispatch()


class ChunkLease:
    """A chunk-scheduled request as `tts_kit.serve.streaming.relay` holds it (a `Lease`'s
    methods)."""

    def __init__(self, scheduler: ChunkScheduler, req: ChunkRequest):
        self.scheduler, self.req = scheduler, req

    async def next_message(self, deadline: float | None) -> tuple:
        return await self.req.next_message(deadline)

    def finish(self, latency_s: float | None = None) -> None:
        self.scheduler.end(self.req, latency_s)

    def gone(self) -> None:
        self.scheduler.end(self.req)

    abandon = gone


#: Chunk schedulers by ``--scheduling`` name; a lab module adds its own.
SCHEDULERS: dict[str, Any] = {"chunk": ChunkScheduler}


def scheduling_modes() -> tuple[str, ...]:
    """The ``workers`` architecture's scheduling modes: ``request``, then `SCHEDULERS`'.

    Example:
        >>> scheduling_modes()[:2]
        ('request', 'chunk')
    """
    return ("request", *SCHEDULERS)


__all__ = ["SCHEDULERS", "ChunkLease", "ChunkRequest", "ChunkScheduler",
           "needed_at", "scheduling_modes"]
