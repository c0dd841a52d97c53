"""Chunk-level scheduling (``tts-kit serve --scheduling chunk``): a request's chunks are jobs,
any free worker takes the next one, and the client gets them in order.

A request's first job plans it (normalises, chunks) and renders chunk 0; its plan comes back
at once, and chunks 1.. become jobs that other workers may take while chunk 0 renders. A
chunk renders to the same audio on any worker (its noise depends only on the seed and its
index: `tts_kit.models.engine_base.EngineBase.render_chunk`), so the WAV is the one request
scheduling gives for the same seed.

Which job next (`ChunkScheduler`): the first chunk of a waiting request before any later
chunk (time to first audio), in arrival order; later chunks earliest-deadline-first, the
deadline being when the client will have played the audio before that chunk (its request's
first audio plus the seconds of the chunks before it, measured, or estimated from their
characters). Each request has a reorder buffer (`ChunkRequest`): chunks finished out of
order wait there for the ones before them.

Nesting (an experiment, off unless ``nest=True`` or ``tts-kit serve --nest``; resident
loadings only):
when no worker is free, a waiting first chunk is sent to the busy worker whose running
single later chunk is needed last, which renders it between two stage runs and then goes
on (`tts_kit.serve.nested`); one nested chunk per worker, answered as ``("nested", msg)``.
The worker is freed once both are answered.

Cancellation: a client that leaves, a passed deadline or a failed chunk ends the request
(`ChunkScheduler.end`): its queued jobs are dropped and its running ones stopped after the
stage run in progress (the worker's ``cancel_job``); a worker that does not stop within
`tts_kit.serve.worker.CANCEL_GRACE_S` is killed and replaced.

Micro-batching (``batch`` above 1, ``tts-kit serve --batch N``; an experiment, off by
default): a free worker takes the most urgent job and up to N-1 more of the same language,
steps and speed whose characters are within `tts_kit.serve.batching.SIMILAR_LENGTH` of it,
in urgency order, no more than the queue's share per worker (the queued matches over the
pool's workers, rounded up), and renders them as one batched call
(`tts_kit.serve.batching`). When the batch is not full and no other worker is free, it
waits up to ``batch_wait_ms`` after the job was queued for more to arrive. A batch of one
request's chunks is stopped like a single job; a batch mixing requests runs to its end, the
chunks of requests that ended discarded.

Example:
    >>> needed_at([1.0, 2.0], [30, 30, 30], t=10.0, k=2)
    13.0
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Sequence
from typing import Any

from tts_kit.serve.batching import SIMILAR_LENGTH
from tts_kit.serve.jobtrace import JobTrace
from tts_kit.serve.worker import (
    CANCEL_GRACE_S,
    DeadlineExceeded,
    Overloaded,
    Worker,
    WorkerDied,
    WorkerPool,
)

#: Seconds of audio per character before a request has a measured chunk (English speech at
#: speed 1 runs at 0.05-0.1 s per character).
SECONDS_PER_CHAR = 0.07
#: How often a job's waiter looks whether its request ended (stops the job when so).
POLL_S = 0.1
#: What `ChunkScheduler._next` answers when it retired a worker that did not stop in time.
_RETIRED: tuple = ("retired",)
#: The scheduling modes of the ``workers`` architecture.
SCHEDULING = ("request", "chunk")


def needed_at(durations: Sequence[float], lengths: Sequence[int], *, t: float,
              k: int) -> float:
    """When a client that started playing at ``t`` runs out of audio before chunk ``k``.

    ``durations``: seconds of the chunks measured so far, in order from chunk 0 (a prefix);
    the rest are estimated from ``lengths`` (characters per chunk) at the measured seconds
    per character (`SECONDS_PER_CHAR` before any).

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
        self.behind: list = []  # what the workers ran when chunk 0 was queued (trace)

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
        ``("error", status, line)`` message, or `WorkerDied` raised); `DeadlineExceeded`
        once ``deadline`` (``time.monotonic()``) passes first."""
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
            self.changed.clear()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise DeadlineExceeded("the request ran past its deadline")
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                raise DeadlineExceeded("the request ran past its deadline") from None


class ChunkScheduler:
    """The job queue in front of a `WorkerPool` (see the module doc).

    At most ``workers + max_queue`` requests at once; one more gets `Overloaded`.
    """

    def __init__(self, pool: WorkerPool, batch: int = 1, batch_wait_ms: float = 0.0,
                 nest: bool = False):
        self.pool = pool
        self.batch, self.batch_wait_s = max(1, int(batch)), max(0.0, batch_wait_ms) / 1000
        self.requests: dict[int, ChunkRequest] = {}
        self.jobs: list[tuple[ChunkRequest, int]] = []
        self._next_rid = 0
        self._tasks: set[asyncio.Task] = set()
        self._timer: asyncio.TimerHandle | None = None
        self.batched = 0  # chunks that ran in a batch of more than one
        self.trace = JobTrace.from_env()  # per-job timelines (`tts_kit.serve.jobtrace`)
        self.nest = nest and str(getattr(getattr(pool, "cfg", None), "loading",
                                         "resident")).startswith("resident")
        self.single: dict[int, tuple[ChunkRequest, int]] = {}  # worker id -> its one job
        self.nested: dict[int, ChunkRequest] = {}  # worker id -> the first chunk nested in it
        pool.on_idle = self.dispatch

    @property
    def waiting(self) -> int:
        """Requests no worker has started yet (the queue depth)."""
        return sum(1 for r in self.requests.values() if not r.started)

    def submit(self, params: dict[str, Any], t0: float) -> ChunkRequest:
        """Queue a request's first job; `Overloaded` when the server holds enough."""
        if self.pool.closing:
            raise RuntimeError("server shutting down")
        pool = self.pool
        if len(self.requests) >= pool.size + pool.max_queue:
            ahead = self.waiting + 1
            raise Overloaded(max(1, math.ceil(pool.mean_latency_s * ahead / pool.size)))
        req = ChunkRequest(self._next_rid, params, t0)
        self._next_rid += 1
        self.requests[req.rid] = req
        self._queue(req, [0])
        self.dispatch()
        return req

    def end(self, req: ChunkRequest, latency_s: float | None = None) -> None:
        """The request is over (answered, failed, or nobody waits): drop its queued jobs,
        stop its running ones. Idempotent."""
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

    def _queue(self, req: ChunkRequest, ks: Sequence[int]) -> None:
        now = time.monotonic()
        for k in ks:
            req.queued_at[k] = now
            self.jobs.append((req, k))
        if self.trace.on and 0 in ks:
            req.behind = [[r.rid, j, self._length(r, j),
                           round(now - r.started_at.get(j, now), 3)]
                          for r in self.requests.values() for j in r.running]

    def _traced(self, req: ChunkRequest, k: int, worker: Worker, nested: bool = False
                ) -> None:
        """Job ``k`` of ``req`` answered: its timeline to the trace (when on)."""
        if not self.trace.on:
            return
        at = self.trace.at
        self.trace.record({
            "rid": req.rid, "k": k, "chars": self._length(req, k), "worker": worker.id,
            "arrived": at(req.t0), "queued": at(req.queued_at.get(k)),
            "started": at(req.started_at.get(k)), "done": at(time.monotonic()),
            "nested": nested, "behind": req.behind if k == 0 else []})

    def dispatch(self) -> None:
        """Give queued jobs to idle workers, the most urgent first (with ``batch``, up to
        that many similar jobs to one worker)."""
        while self.jobs:
            batch = self._next_batch() if self.batch > 1 else [min(self.jobs, key=self._key)]
            if batch is None:  # waiting for the batch to fill
                return
            w = self.pool.take_idle()
            if w is None:
                if batch[0][1] == 0 and self._nest(batch[0][0]):
                    continue
                return
            for job in batch:
                self.jobs.remove(job)
                req, k = job
                req.started = True
                req.running[k] = w
                req.started_at[k] = time.monotonic()
            req, k = batch[0]
            self.batched += len(batch) if len(batch) > 1 else 0
            msg = (("job", req.rid, req.params, k) if len(batch) == 1 else
                   ("batch", [(r.rid, r.params, j) for r, j in batch]))
            with contextlib.suppress(OSError, ValueError):  # dead: its "exit" comes
                w.send(msg)
            if len(batch) == 1:
                self.single[w.id] = (req, k)
            run = self._run(w, req, k) if len(batch) == 1 else self._run_batch(w, batch)
            task = asyncio.get_running_loop().create_task(run)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _nest(self, req: ChunkRequest) -> bool:
        """Send ``req``'s first chunk into a busy worker's running later chunk (the one
        needed last: its client has the most audio in hand), when nesting is on and one
        runs (`tts_kit.serve.nested`). True when sent."""
        hosts = [(self._key(job), wid) for wid, job in self.single.items()
                 if job[1] > 0 and wid not in self.nested and not job[0].ended]
        if not self.nest or not hosts:
            return False
        wid = max(hosts)[1]
        w = self.pool.workers.get(wid)
        if w is None or w.state != "busy":
            return False
        self.jobs.remove((req, 0))
        req.started, req.running[0], self.nested[wid] = True, w, req
        req.started_at[0] = time.monotonic()
        with contextlib.suppress(OSError, ValueError):  # dead: its "exit" comes
            w.send(("nested", req.rid, req.params, 0))
        return True

    def _nested_answer(self, w: Worker, msg: tuple) -> None:
        """A message of the first chunk nested in ``w``'s job (its plan, then its chunk,
        error or ``cancelled``)."""
        req = self.nested.get(w.id)
        if req is None:
            return
        if msg[0] == "plan":
            self._planned(req, msg[1])
            return
        del self.nested[w.id]
        req.running.pop(0, None)
        self._traced(req, 0, w, nested=True)
        w.requests += 1
        if not req.ended:
            req.deliver(0, msg)
        self.dispatch()

    def _nested_lost(self, w: Worker) -> None:
        """``w`` died or was retired with a first chunk nested in it: that request fails."""
        req = self.nested.pop(w.id, None)
        if req is not None:
            req.running.pop(0, None)
            req.fail(WorkerDied(f"worker {w.id} (pid {w.pid}) exited while synthesising"))

    def _length(self, req: ChunkRequest, k: int) -> int:
        """Job ``k``'s characters: planned, or for a first chunk not yet planned, its text
        up to the worker's first-chunk cut."""
        if req.lengths is not None:
            return req.lengths[k]
        wc = getattr(self.pool, "cfg", None)
        cut = getattr(wc, "first_chunk_chars", None) or getattr(wc, "max_chunk_chars", None)
        text = str(req.params.get("text", ""))
        return max(1, min(len(text), cut or 300))

    def _next_batch(self) -> list[tuple[ChunkRequest, int]] | None:
        """The next batch for a free worker (the module doc), or None to wait for it to fill
        (a timer dispatches again)."""
        ordered = sorted(self.jobs, key=self._key)
        head = ordered[0]

        def shared(job: tuple[ChunkRequest, int]) -> tuple:
            p = job[0].params
            return (p.get("lang"), p.get("steps"), p.get("speed"))

        n = self._length(*head)
        mates = [j for j in ordered[1:] if shared(j) == shared(head)
                 and max(n, m := self._length(*j)) <= SIMILAR_LENGTH * min(n, m)]
        size = min(self.batch, math.ceil((len(mates) + 1) / max(1, self.pool.size)))
        batch = [head, *mates[:size - 1]]
        idle = sum(1 for w in self.pool.workers.values() if w.state == "idle")
        waited = time.monotonic() - head[0].queued_at.get(head[1], 0.0)
        if len(batch) < self.batch and idle == 1 and waited < self.batch_wait_s:
            if self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(
                    self.batch_wait_s - waited, self._wake)
            return None
        return batch

    def _wake(self) -> None:
        self._timer = None
        self.dispatch()

    async def _next(self, w: Worker, stop_by: float | None) -> tuple | None:
        """``w``'s next message; None when a poll passed without one; `_RETIRED` when the
        cancel grace ``stop_by`` passed (``w`` is then retired: killed and replaced)."""
        wait = POLL_S if stop_by is None else max(0.0, stop_by - time.monotonic())
        try:
            return await asyncio.wait_for(w.inbox.get(), wait)
        except asyncio.TimeoutError:
            if stop_by is not None and time.monotonic() >= stop_by:
                self.pool.retire(w, "abandoned")
                return _RETIRED
            return None

    async def _run_batch(self, w: Worker, batch: list[tuple[ChunkRequest, int]]) -> None:
        """Wait for every item of a batch on ``w`` (``("item", i, message)`` answers), hand
        each chunk to its request (dropped when that request ended), then free ``w``."""
        left = set(range(len(batch)))
        rids = {req.rid for req, _ in batch}
        stop_by = None
        try:
            while left:
                if stop_by is None and len(rids) == 1 and batch[0][0].ended:
                    w.cancel_job.value = batch[0][0].rid  # one request's batch: stop it
                    stop_by = time.monotonic() + CANCEL_GRACE_S
                msg = await self._next(w, stop_by)
                if msg is _RETIRED:
                    return
                if msg is None:
                    continue
                if msg[0] == "exit":
                    for i in left:
                        batch[i][0].fail(WorkerDied(f"worker {w.id} (pid {w.pid}) exited "
                                                    "while synthesising"))
                    return
                if msg[0] != "item":
                    continue
                _, i, inner = msg
                req, k = batch[i]
                if inner[0] == "plan":
                    self._planned(req, inner[1])
                    continue
                left.discard(i)
                if not req.ended:
                    req.deliver(k, inner)
            firsts = sum(1 for _, k in batch if k == 0)
            w.requests += max(0, firsts - 1)  # release counts one
            self.pool.release(w, counted=firsts > 0)
        finally:
            for req, k in batch:
                req.running.pop(k, None)

    async def _run(self, w: Worker, req: ChunkRequest, k: int) -> None:
        """Wait for job ``k``'s answer on ``w`` (and for a first chunk nested in it); free
        ``w`` after both (or kill it when the request ended and the job does not stop
        within the grace)."""
        stop_by, done = None, False
        try:
            while not done or w.id in self.nested:
                if req.ended and not done and stop_by is None and w.id not in self.nested:
                    w.cancel_job.value = req.rid
                    stop_by = time.monotonic() + CANCEL_GRACE_S
                msg = await self._next(w, stop_by)
                if msg is _RETIRED:
                    self._nested_lost(w)
                    return
                if msg is None:
                    continue
                if msg[0] == "exit":  # died: the pool replaced it
                    if not done:
                        req.fail(WorkerDied(f"worker {w.id} (pid {w.pid}) exited while "
                                            "synthesising"))
                    self._nested_lost(w)
                    return
                if msg[0] == "nested":
                    self._nested_answer(w, msg[1])
                elif msg[0] == "plan":
                    self._planned(req, msg[1])
                elif not done:
                    done = True
                    self._traced(req, k, w)
                    req.running.pop(k, None)
                    if not req.ended:
                        req.deliver(k, msg)
            del self.single[w.id]
            self.pool.release(w, counted=k == 0)
        finally:
            if self.single.get(w.id) == (req, k):  # not the next job release gave it
                del self.single[w.id]
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
    """What `tts_kit.serve.streaming.relay` and `AudioStream` hold of a chunk-scheduled
    request: its chunks in order, and its end on every path."""

    def __init__(self, scheduler: ChunkScheduler, req: ChunkRequest):
        self.scheduler, self.req = scheduler, req

    async def next_message(self, deadline: float | None) -> tuple:
        return await self.req.next_message(deadline)

    def finish(self, latency_s: float | None = None) -> None:
        self.scheduler.end(self.req, latency_s)

    def gone(self) -> None:
        self.scheduler.end(self.req)

    def abandon(self) -> None:
        self.scheduler.end(self.req)


__all__ = ["SCHEDULING", "ChunkLease", "ChunkRequest", "ChunkScheduler", "needed_at"]
