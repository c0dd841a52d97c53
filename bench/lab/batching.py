"""Micro-batching for chunk scheduling (a lab experiment: scheduling ``chunk+batch``, loaded by
`lab.serve_lab.enable("lab.batching", batch=N, batch_wait_ms=MS)`).

The server's side (`BatchScheduler`): a free worker takes the most urgent job and up to
N-1 more of the same language, steps and speed whose characters are within
`SIMILAR_LENGTH` of it, in urgency order, no more than the queue's share per worker (the
queued matches over the pool's workers, rounded up). When the batch is not full and no other
worker is free, it waits up to ``batch_wait_ms`` after the job was queued for more to
arrive. The worker's side: such a batch comes as one message,
``("batch", [(request id, params, k), ...])``. The worker plans each request (once: plans are
kept, as for single jobs), answers ``("plan", chunk lengths)`` for every chunk 0 at once, then
renders all of them with `render_chunks` (one batched
call where the model's capabilities say ``batching``; one by one otherwise). Every answer is
tagged with the item's place in the batch: ``("item", i, message)``, the message being what a
single job answers (``plan``, ``chunk``, ``error``, ``cancelled``).

Cancellation: a batch of one request's chunks stops after the stage run in progress when that
request ends (as a single job does); a batch mixing requests runs to its end and the server
discards the chunks of requests that ended. A batch that fails as a whole (one chunk's
duration refused, say) is rendered again chunk by chunk, so only the bad chunk's request
gets the error.

Measured not to win on this project's 2-core machine, so the server left it off, then
out (docs/benchmarks.md, ``serve/batching.py``, has the measurements).

Example:
    >>> class Conn:
    ...     def send(self, msg): print(msg)
    >>> Tagged(Conn(), 2).send(("cancelled",))
    ('item', 2, ('cancelled',))
"""

from __future__ import annotations

import asyncio
import math
import time
import warnings
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

from lab.serve_lab import job_length, setting
from tts_kit.core.errors import TtsKitError
from tts_kit.serve.chunked import RETIRED, SCHEDULERS, ChunkRequest, ChunkScheduler
from tts_kit.serve.sweep import TIE_REL
from tts_kit.serve.worker import (
    CANCEL_GRACE_S,
    DROPPED,
    WORKER_HANDLERS,
    JobCancelled,
    Worker,
    WorkerDied,
    WorkerState,
    run_job,
)
from tts_kit.tuning.records import AUDIO_PER_CPU_S, BATCH_SIZE, CONCURRENCY, RPS, TTFA_P95_MS

#: The most chunk jobs one batch may hold (``--batch``).
MAX_BATCH = 4
#: The longest a free worker waits for a batch to fill (``--batch-wait-ms``).
MAX_BATCH_WAIT_MS = 10.0
#: Chunks share a batch when the longer has at most this many times the other's characters.
SIMILAR_LENGTH = 1.5


class Tagged:
    """A pipe end that tags every message with the item's place in its batch."""

    def __init__(self, conn: Any, i: int):
        self.conn, self.i = conn, i

    def send(self, msg: tuple) -> None:
        self.conn.send(("item", self.i, msg))


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _plan(engine: Any, cfg: Any, plans: OrderedDict, rid: int, params: dict[str, Any],
          dropped: str) -> Any:
    """The request's plan (kept in ``plans``), or the ``("error", ...)`` message for it
    (``dropped``: what the normaliser's warning says when it drops text: a 400)."""
    planned = plans.get(rid)
    if planned is not None:
        return planned
    try:
        with warnings.catch_warnings(record=True) as heard:
            warnings.simplefilter("always")
            planned = engine.plan(first_chunk_chars=cfg.first_chunk_chars,
                                  max_chunk_chars=cfg.max_chunk_chars, **params)
    except ValueError as exc:
        return ("error", 400, _line(exc))
    except Exception as exc:
        return ("error", 500, _line(exc))
    lost = [str(x.message) for x in heard if dropped in str(x.message)]
    if lost:
        return ("error", 400, lost[0].splitlines()[0])
    plans[rid] = planned
    while len(plans) > 16:
        plans.popitem(last=False)
    return planned


def render_chunks(engine: Any, jobs: Sequence[tuple[Any, int]]) -> list[Any]:
    """Several planned chunks, ``(plan, k)`` each (from ``engine.plan``; plans of different
    requests, voices and seeds may mix), as ``engine.render_chunk`` renders each alone, in
    order.

    Where the model's capabilities say ``batching``, chunks the family can run in one call
    (for Supertonic: the same language, steps and speed, no caller noise) run as one batch:
    padded to the longest, masked, each chunk's noise drawn for its own length from its own
    (seed, index). Each chunk's audio equals its ``render_chunk`` to float rounding; its
    timings are its share of the batch's (divided by the batch size). Anything else renders
    one by one.
    """
    for plan, k in jobs:
        if plan.config is None:
            raise TtsKitError("render_chunks takes plans from engine.plan(...)")
        if not 0 <= k < len(plan.chunks):
            raise TtsKitError(f"chunk {k} is not in the plan's {len(plan.chunks)} chunk(s)")
    groups: dict[Hashable, list[int]] = {}
    caps = getattr(engine.bundle, "capabilities", None)
    for i, (plan, _) in enumerate(jobs):
        key = batch_key(plan.config) if caps is not None and caps.batching else None
        groups.setdefault(i if key is None else ("batch", key), []).append(i)
    out: list[Any] = [None] * len(jobs)
    for members in groups.values():
        if len(members) == 1:
            plan, k = jobs[members[0]]
            out[members[0]] = engine.render_chunk(plan, k)
            continue
        t0 = time.perf_counter()
        wavs, timings = render_batch(engine, [jobs[i] for i in members])
        share = {s: v / len(members) for s, v in timings.items()}
        share["total"] = (time.perf_counter() - t0) / len(members)
        for i, wav in zip(members, wavs):
            out[i] = engine._audio_chunk(jobs[i][0], jobs[i][1], wav, dict(share))
    return [c for c in out if c is not None]


def batch_key(cfg: Any) -> Hashable | None:
    """What chunks must share to run in one batched call (Supertonic, the one model whose
    capabilities say ``batching``): one language, steps and speed; a caller's noise (a
    source called with the batch's lengths) keeps a chunk alone (None)."""
    return None if cfg.noise is not None else (cfg.lang, cfg.steps, float(cfg.speed))


def render_batch(engine: Any, jobs: Sequence[tuple[Any, int]]) -> tuple[list[Any], dict]:
    """Planned chunks of one `batch_key` as one batch (the engine's ``_synthesize_chunks``:
    padded, masked, each chunk's noise from its own (seed, index)): each waveform (no
    pause) and the batch's stage timings."""
    from tts_kit.models.supertonic.engine import chunk_rng

    cfg = jobs[0][0].config
    timings: dict[str, float] = {}
    wavs = engine._synthesize_chunks(
        [plan.chunks[k] for plan, k in jobs], cfg.lang, [plan.work[0] for plan, _ in jobs],
        cfg.steps, cfg.speed, [chunk_rng(plan.work[1], k) for plan, k in jobs], timings)
    return wavs, timings


def run_batch(state: WorkerState, msg: tuple) -> None:
    """One ``("batch", items)`` message in a worker (see the module doc); every item gets
    exactly one final answer (``chunk``, ``error`` or ``cancelled``), chunk 0s a ``plan``
    before it. A batch that fails as a whole is rendered again item by item."""
    engine, cfg, conn, plans, running = (state.engine, state.cfg, state.conn, state.plans,
                                         state.running)
    items = msg[1]
    jobs: list[tuple[int, Any, int]] = []  # (place, plan, k) of the items planned
    for i, (rid, params, k) in enumerate(items):
        planned = _plan(engine, cfg, plans, rid, params, DROPPED)
        if isinstance(planned, tuple):
            Tagged(conn, i).send(planned)
            continue
        if k == 0:
            Tagged(conn, i).send(("plan", [len(c) for c in planned.chunks]))
        jobs.append((i, planned, k))
    rids = {items[i][0] for i, _, _ in jobs}
    running[0] = rids.pop() if len(rids) == 1 else None  # one request: it may be stopped
    try:
        parts = render_chunks(engine, [(p, k) for _, p, k in jobs])
    except JobCancelled:
        for i, _, _ in jobs:
            Tagged(conn, i).send(("cancelled",))
        return
    except Exception:  # one bad chunk fails the batch: each alone, each its own answer
        running[0] = None
        for i, _, _ in jobs:
            run_job(engine, cfg, Tagged(conn, i), ("job", *items[i]), plans, running)
        return
    finally:
        running[0] = None
    for (i, _, _), part in zip(jobs, parts):
        Tagged(conn, i).send(("chunk", part.pcm16(), part.duration_s, part.timings))


class BatchScheduler(ChunkScheduler):
    """Chunk scheduling with micro-batches (the module doc). ``batch``, ``batch_wait_ms``:
    default the `lab.serve_lab.enable` settings (4 and 2 ms); a model whose capabilities
    do not say ``batching`` gets batches of one, with a warning."""

    def __init__(self, pool: Any, batch: int | None = None,
                 batch_wait_ms: float | None = None):
        super().__init__(pool)
        batch = int(setting("batch", 4) if batch is None else batch)
        wait = setting("batch_wait_ms", 2.0) if batch_wait_ms is None else batch_wait_ms
        if not (1 <= batch <= MAX_BATCH and 0 <= wait <= MAX_BATCH_WAIT_MS):
            raise TtsKitError(f"batch {batch}, wait {wait} ms: give a batch from 1 to "
                              f"{MAX_BATCH} and a wait from 0 to {MAX_BATCH_WAIT_MS:g} ms")
        model = getattr(getattr(pool, "cfg", None), "model", "")
        if batch > 1 and model != "" and not _batches(model):
            print("tts-kit serve: warning: this model cannot run chunks in one batched call; "
                  "batch ignored", flush=True)
            batch = 1
        self.batch, self.batch_wait_s = batch, wait / 1000
        self._timer: asyncio.TimerHandle | None = None
        self.batched = 0  # chunks that ran in a batch of more than one

    def describe(self) -> dict[str, Any]:
        return {"batch": self.batch, "batched": self.batched}

    def dispatch(self) -> None:
        while self.jobs:
            batch = self._next_batch() if self.batch > 1 else [min(self.jobs, key=self._key)]
            if batch is None:  # waiting for the batch to fill
                return
            w = self.pool.take_idle()
            if w is None:
                return
            for job in batch:
                self.jobs.remove(job)
            req, k = batch[0]
            if len(batch) == 1:
                self._start(w, batch, ("job", req.rid, req.params, k))
                self._spawn(self._run(w, req, k))
                continue
            self.batched += len(batch)
            self._start(w, batch, ("batch", [(r.rid, r.params, j) for r, j in batch]))
            self._spawn(self._run_batch(w, batch))

    def _next_batch(self) -> list[tuple[ChunkRequest, int]] | None:
        """The next batch for a free worker (the module doc), or None to wait for it to fill
        (a timer dispatches again)."""
        ordered = sorted(self.jobs, key=self._key)
        head = ordered[0]

        def shared(job: tuple[ChunkRequest, int]) -> tuple:
            p = job[0].params
            return (p.get("lang"), p.get("steps"), p.get("speed"))

        n = job_length(self, *head)
        mates = [j for j in ordered[1:] if shared(j) == shared(head)
                 and max(n, m := job_length(self, *j)) <= SIMILAR_LENGTH * min(n, m)]
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
                if msg is RETIRED:
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


def _batches(model: Any) -> bool:
    from tts_kit.models.resolve import open_model

    return bool(open_model(model).capabilities.batching)


def batching_verdict(records: Sequence[dict[str, Any]]) -> list[str]:
    """Each micro-batched configuration against the same one unbatched (``batch_size``
    1), at each closed-loop level: audio-seconds per CPU-second, TTFA p95 and throughput
    as ratios, and whether batching won (more audio per CPU-second by more than
    `tts_kit.serve.sweep.TIE_REL`, the sweep's noise, without less throughput).

    Example:
        >>> base = {"architecture": "workers", "workers": 2, "threads": 1, "preset": "p",
        ...         "loading": "resident", "concurrency": 4, "status": "ok"}
        >>> one = {"audio_per_cpu_s": 2.0, "ttfa_p95_ms": 500, "rps": 1}
        >>> four = {"audio_per_cpu_s": 2.1, "ttfa_p95_ms": 600, "rps": 1}
        >>> for line in batching_verdict([{**base, "batch_size": 1, **one},
        ...                               {**base, "batch_size": 4, **four}]):
        ...     print(line)
        batch 4 at concurrency 4: audio/CPU-s 1.05x, TTFA p95 1.20x, rps 1.00x of unbatched: no win
    """
    def same(r: dict[str, Any]) -> tuple:
        return (r.get("architecture"), r.get("workers"), r.get("threads"), r.get("preset"),
                r.get("loading"), r.get(CONCURRENCY))

    def x(a: Any, b: Any) -> str:
        return f"{a / b:.2f}x" if a and b else "-"

    ok = [r for r in records if r.get("status") == "ok" and r.get(CONCURRENCY)]
    plain = {same(r): r for r in ok if r.get(BATCH_SIZE) == 1}
    lines = []
    for r in ok:
        ref = plain.get(same(r))
        if (r.get(BATCH_SIZE) or 1) <= 1 or ref is None:
            continue
        gain = (r.get(AUDIO_PER_CPU_S) or 0) / (ref.get(AUDIO_PER_CPU_S) or float("inf"))
        wins = gain > 1 + TIE_REL and (r.get(RPS) or 0) >= (ref.get(RPS) or 0)
        lines.append(f"batch {r[BATCH_SIZE]} at concurrency {r[CONCURRENCY]}: audio/CPU-s "
                     f"{x(r.get(AUDIO_PER_CPU_S), ref.get(AUDIO_PER_CPU_S))}, TTFA p95 "
                     f"{x(r.get(TTFA_P95_MS), ref.get(TTFA_P95_MS))}, rps "
                     f"{x(r.get(RPS), ref.get(RPS))} of unbatched: "
                     + ("wins" if wins else "no win"))
    return lines


SCHEDULERS["chunk+batch"] = BatchScheduler
WORKER_HANDLERS["batch"] = run_batch

__all__ = ["MAX_BATCH", "MAX_BATCH_WAIT_MS", "SIMILAR_LENGTH", "BatchScheduler", "Tagged",
           "batching_verdict", "render_chunks", "run_batch"]
