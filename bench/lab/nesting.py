"""A waiting request's first chunk rendered *inside* a running later chunk (a lab
experiment: scheduling ``chunk+nest``, loaded by `lab.serve_lab.enable("lab.nesting")`).

Under chunk scheduling a request that arrives while every worker renders a later chunk of
another request waits for one of those chunks to end: a long chunk (the three-sentence
text's second chunk is 183 characters, about 4x its first) is most of the time to first
audio under load (`bench/ttfa_trace.py`). So the scheduler may send a busy worker a
``("nested", request id, params, 0)`` job: the worker picks it up at the end of the stage
run in progress (a flow step, under a second), renders that first chunk, and goes back to
the later chunk where it left it. The later chunk's audio is unchanged (its noise and
state are its own: `tts_kit.models.engine_base.EngineBase.render_chunk`); it arrives a
first chunk's render later, while its client still has audio in hand (the scheduler
picks the running chunk needed last).

The nested job's answers go out as ``("nested", message)`` so the server can tell them
from the running job's. One level only: a nested job is never interrupted again. Any
other message that arrives while a job runs (``stop``) waits in ``pending`` for the
worker's main loop. `NestingScheduler` is the server's side: when no worker is free, a
waiting first chunk goes to the busy worker whose running single later chunk is needed last;
one nested chunk per worker; resident loadings only (paged ones would reload per switch).
The worker is freed once both are answered. Off in the server: on the quiet 2-core box it
cut TTFA p95 at concurrency 4 but served less audio per CPU-second (docs/benchmarks.md).

Example:
    >>> sent = []
    >>> class Pipe:
    ...     def send(self, msg): sent.append(msg)
    >>> Nested(Pipe()).send(("plan", [30, 183]))
    >>> sent
    [('nested', ('plan', [30, 183]))]
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from tts_kit.serve.chunked import RETIRED, SCHEDULERS, ChunkRequest, ChunkScheduler
from tts_kit.serve.worker import (
    CANCEL_GRACE_S,
    WORKER_HANDLERS,
    WORKER_HOOKS,
    Worker,
    WorkerDied,
    WorkerState,
    run_job,
)


class Nested:
    """The worker's pipe as a nested job sees it: answers wrapped as ``("nested", msg)``."""

    def __init__(self, conn: Any):
        self.conn = conn

    def send(self, msg: tuple) -> None:
        self.conn.send(("nested", msg))


def nesting_hook(conn: Any, running: list, pending: list,
                 run_nested: Callable[[tuple], None]) -> Callable[..., None]:
    """A stage hook that runs a waiting ``("nested", ...)`` job between two stage runs of
    the chunk job running now (``running[0]``, its request id), then restores it.

    Messages other than ``nested`` that arrive meanwhile go to ``pending``, in order.
    ``run_nested(msg)`` renders the nested job (answering through `Nested`).
    """
    depth = [0]

    def run_waiting(stage: str, feeds: Any, out: Any) -> None:
        if depth[0] or running[0] is None:
            return
        while conn.poll(0):
            msg = conn.recv()
            if msg[0] != "nested":
                pending.append(msg)
                continue
            depth[0], saved = 1, running[0]
            try:
                run_nested(msg)
            finally:
                depth[0], running[0] = 0, saved

    return run_waiting


def _run_nested(state: WorkerState, msg: tuple) -> None:
    run_job(state.engine, state.cfg, Nested(state.conn), msg, state.plans, state.running)


def _hook(state: WorkerState) -> Callable[..., None]:
    return nesting_hook(state.conn, state.running, state.pending,
                        lambda msg: _run_nested(state, msg))


class NestingScheduler(ChunkScheduler):
    """Chunk scheduling that nests a waiting first chunk in a busy worker (the module doc)."""

    def __init__(self, pool: Any, nest: bool = True):
        super().__init__(pool)
        self.nest = nest and str(getattr(getattr(pool, "cfg", None), "loading",
                                         "resident")).startswith("resident")
        self.single: dict[int, tuple[ChunkRequest, int]] = {}  # worker id -> its one job
        self.nested: dict[int, ChunkRequest] = {}  # worker id -> the first chunk nested in it

    def dispatch(self) -> None:
        while self.jobs:
            job = min(self.jobs, key=self._key)
            w = self.pool.take_idle()
            if w is None:
                if job[1] == 0 and self._nest(job[0]):
                    continue
                return
            self.jobs.remove(job)
            self._start(w, [job], ("job", job[0].rid, job[0].params, job[1]))
            self.single[w.id] = job
            self._spawn(self._run(w, *job))

    def _nest(self, req: ChunkRequest) -> bool:
        """Send ``req``'s first chunk into a busy worker's running later chunk (the one
        needed last: its client has the most audio in hand). True when sent."""
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
        self._answered(req, 0, w, nested=True)
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

    async def _run(self, w: Worker, req: ChunkRequest, k: int) -> None:
        """Wait for job ``k``'s answer on ``w`` and for a first chunk nested in it; free
        ``w`` after both."""
        stop_by, done = None, False
        try:
            while not done or w.id in self.nested:
                if req.ended and not done and stop_by is None and w.id not in self.nested:
                    w.cancel_job.value = req.rid
                    stop_by = time.monotonic() + CANCEL_GRACE_S
                msg = await self._next(w, stop_by)
                if msg is RETIRED:
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
                    self._answered(req, k, w)
                    req.running.pop(k, None)
                    if not req.ended:
                        req.deliver(k, msg)
            del self.single[w.id]
            self.pool.release(w, counted=k == 0)
        finally:
            if self.single.get(w.id) == (req, k):  # not the next job release gave it
                del self.single[w.id]
            req.running.pop(k, None)


SCHEDULERS["chunk+nest"] = NestingScheduler
WORKER_HANDLERS["nested"] = _run_nested  # a nested job that came after its host ended
if _hook not in WORKER_HOOKS:
    WORKER_HOOKS.append(_hook)

__all__ = ["Nested", "NestingScheduler", "nesting_hook"]
