"""Worker processes, each owning one warmed-up `Engine` and serving one request (or chunk
job) at a time over a pipe, and `WorkerPool`, which queues requests for them and replaces them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import importlib
import math
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tts_kit.core.errors import TtsKitError
from tts_kit.core.procfacts import die_with_parent, release_memory, rss_mb

#: The text every worker synthesises once before it says ready.
WARMUP_TEXT = "Warming up the model, once."
#: Worker restart reasons, as counted in ``tts_kit_worker_restarts_total``.
RESTART_REASONS = ("timeout", "crash", "max_requests", "max_rss", "abandoned")
#: The normaliser's warning when it drops text: the server answers 400 with it, not audio.
DROPPED = "the model cannot say"
#: Seconds an abandoned request's worker has to stop at its next chunk before it is killed.
CANCEL_GRACE_S = 2.0
#: Modules (comma-separated) the server and its workers import (`load_lab`): ``bench/lab``
#: experiments registering in `WORKER_HANDLERS`, `WORKER_HOOKS` or the SCHEDULERS.
LAB_ENV = "TTS_KIT_SERVE_LAB"


@dataclass
class WorkerState:
    """What a worker's message handlers share (``running[0]``: the chunk job's request id;
    ``pending``: messages put off for the main loop)."""

    engine: Any
    cfg: WorkerConfig
    conn: Any
    plans: collections.OrderedDict
    running: list
    pending: list


#: Message kinds beyond ``job``, ``synth`` and ``stop``: kind -> handler(state, message).
WORKER_HANDLERS: dict[str, Callable[[WorkerState, tuple], None]] = {}
#: Stage hooks every worker installs after the cancel hook: factory(state) -> hook.
WORKER_HOOKS: list[Callable[[WorkerState], Callable[..., None]]] = []


def load_lab() -> None:
    """Import the modules `LAB_ENV` names (none in production)."""
    from tts_kit.core.settings import settings

    for name in (settings().serve_lab or "").split(","):
        if name.strip():
            importlib.import_module(name.strip())


@dataclass
class WorkerConfig:
    """What every worker's engine is built from (sent to the worker: plain data only)."""

    model: str | None  #: bundle directory or ``piper:NAME`` (None: discovered)
    preset: str = "supertonic-default"
    loading: str = "resident"
    threads: int | None = None  #: intra-op threads per session (None: the preset's)
    order: str = "chunk"
    first_chunk_chars: int | None = 50  #: cut at a clause to this length (None: no cut)
    max_chunk_chars: int | None = None  #: None: the engine's 300
    spinning: bool | None = None  #: None: as the preset says

    def preset_obj(self) -> Any:
        """The `SessionPreset`, with ``threads`` and ``spinning`` applied.

        Example:
            >>> WorkerConfig(None, threads=2, spinning=False).preset_obj().config_entries[
            ...     "session.intra_op.allow_spinning"]
            '0'
        """
        from tts_kit.runtime.sessions import get_preset

        preset = get_preset(self.preset)
        if self.threads:
            preset = preset.replace(intra_op_num_threads=self.threads)
        if self.spinning is not None:
            flag = "1" if self.spinning else "0"
            preset = preset.replace(config_entries={
                **preset.config_entries, "session.intra_op.allow_spinning": flag,
                "session.inter_op.allow_spinning": flag})
        return preset

    def build_engine(self) -> Any:
        """A new engine (Supertonic or Piper) from this configuration, not warmed up."""
        from tts_kit.models.family import make_engine

        return make_engine(self.model, preset=self.preset_obj(), loading=self.loading)


class Overloaded(Exception):
    """The queue is full; ``retry_after_s`` estimates when a place frees up."""

    def __init__(self, retry_after_s: int):
        super().__init__(f"server busy: the queue is full; retry after {retry_after_s} s")
        self.retry_after_s = retry_after_s


class WorkerDied(Exception):
    """The worker running the request exited (crash, OOM kill, SIGKILL)."""


class DeadlineExceeded(Exception):
    """The request's deadline passed (its worker, if it had one, was killed)."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _dropping(make: Callable[..., Any], **kwargs: Any) -> tuple[Any, str | None]:
    """``make(**kwargs)`` and the first line of its `DROPPED` warning (None: nothing dropped)."""
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        made = make(**kwargs)
    dropped = [str(x.message) for x in heard if DROPPED in str(x.message)]
    return made, dropped[0].splitlines()[0] if dropped else None


class JobCancelled(Exception):
    """The server asked the running chunk job to stop (its request ended)."""


def run_job(engine: Any, cfg: WorkerConfig, conn: Any, msg: tuple, plans: Any,
             running: list) -> None:
    """One chunk job (``("job", request id, params, k)``): chunk ``k`` of the request.

    The plan is kept per request (``plans``, the last 16); chunk 0's job first answers
    ``("plan", chunk lengths)``. Then ``("chunk", pcm16, seconds, timings)``, an
    ``("error", status, line)``, or ``("cancelled",)`` when the server stopped it.
    """
    _, rid, params, k = msg
    running[0] = rid
    try:
        planned = plans.get(rid)
        if planned is None:
            planned, dropped = _dropping(engine.plan, first_chunk_chars=cfg.first_chunk_chars,
                                         max_chunk_chars=cfg.max_chunk_chars, **params)
            if dropped:
                conn.send(("error", 400, dropped))
                return
            plans[rid] = planned
            while len(plans) > 16:
                plans.popitem(last=False)
        if k == 0:
            conn.send(("plan", [len(c) for c in planned.chunks]))
        part = engine.render_chunk(planned, k)
        conn.send(("chunk", part.pcm16(), part.duration_s, part.timings))
    except JobCancelled:
        conn.send(("cancelled",))
    except Exception as exc:  # a ValueError is the request's fault
        conn.send(("error", 400 if isinstance(exc, ValueError) else 500, _one_line(exc)))
    finally:
        running[0] = None


def cancel_hook(running: list, cancel_job: Any) -> Callable[..., None]:
    """A stage hook that stops the running chunk job (``running[0]``, a request id) once
    the server names its request in ``cancel_job``."""

    def stop_if_cancelled(stage: str, feeds: Any, out: Any) -> None:
        if running[0] is not None and cancel_job.value == running[0]:
            raise JobCancelled

    return stop_if_cancelled


def worker_main(conn: Any, cfg: WorkerConfig, cancel: Any, cancel_job: Any) -> None:
    """A worker process's body. ``cancel``: set when nobody waits for the request (checked
    between chunks); ``cancel_job``: the request id whose chunk job must stop (checked after
    every stage run)."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        engine = cfg.build_engine()
        engine.synthesize(WARMUP_TEXT, steps=2, seed=0)
    except Exception as exc:  # a bad model or preset: the server reports it and stops
        conn.send(("fatal", _one_line(exc)))
        return
    conn.send(("ready", os.getpid(), engine.bundle.sample_rate))
    state = WorkerState(engine, cfg, conn, collections.OrderedDict(), running=[None], pending=[])
    engine.add_stage_hook(cancel_hook(state.running, cancel_job))
    load_lab()
    for make_hook in WORKER_HOOKS:
        engine.add_stage_hook(make_hook(state))
    while True:
        try:
            msg = state.pending.pop(0) if state.pending else conn.recv()
        except (EOFError, OSError):
            return
        if msg[0] == "stop":
            return
        if msg[0] == "job":
            run_job(engine, cfg, conn, msg, state.plans, state.running)
            continue
        if msg[0] in WORKER_HANDLERS:
            WORKER_HANDLERS[msg[0]](state, msg)
            continue
        cancel.clear()  # set only for the request before this one
        try:
            parts, dropped = _dropping(engine.stream, first_chunk_chars=cfg.first_chunk_chars,
                                       order=cfg.order, max_chunk_chars=cfg.max_chunk_chars,
                                       **msg[1])
            if dropped:  # the client would get audio without those words and not know it
                parts.close()
                conn.send(("error", 400, dropped))
                continue
        except Exception as exc:  # a ValueError is the request's fault
            conn.send(("error", 400 if isinstance(exc, ValueError) else 500, _one_line(exc)))
            continue
        try:
            end: tuple = ("done",)
            with parts:
                for part in parts:
                    if cancel.is_set():
                        end = ("cancelled",)
                        break
                    conn.send(("chunk", part.pcm16(), part.duration_s, part.timings))
            conn.send(end)
        except Exception as exc:
            conn.send(("error", 500, _one_line(exc)))
        del parts
        gc.collect()
        release_memory()


class Worker:
    """One worker process, its pipe, and the thread that reads the pipe into the loop."""

    def __init__(self, wid: int, cfg: WorkerConfig, loop: asyncio.AbstractEventLoop,
                 on_message: Callable[[Worker, tuple], None]):
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.id = wid
        self.loop = loop
        self.conn, child = ctx.Pipe()
        self.cancel = ctx.Event()
        self.cancel_job = ctx.Value("q", -1, lock=False)  # chunk jobs: the request to stop
        self.proc = ctx.Process(target=worker_main,
                                args=(child, cfg, self.cancel, self.cancel_job), daemon=True,
                                name=f"tts-kit-worker-{wid}")
        self.proc.start()
        child.close()
        self.pid: int = self.proc.pid or 0
        self.requests = 0
        self.abandoned = False  # its request's client went away; being reclaimed
        self.state = "starting"  # starting, idle, busy, retiring, dead
        self.inbox: asyncio.Queue[tuple] = asyncio.Queue()
        self._on_message = on_message
        threading.Thread(target=self._read, daemon=True,
                         name=f"tts-kit-worker-{wid}-reader").start()

    def _read(self) -> None:
        while True:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                msg = ("exit",)
            with contextlib.suppress(RuntimeError):  # the loop is closed: shutting down
                self.loop.call_soon_threadsafe(self._on_message, self, msg)
            if msg[0] == "exit":
                return

    def send(self, msg: tuple) -> None:
        self.conn.send(msg)

    def kill(self) -> None:
        """SIGKILL now: the computation stops with the process."""
        with contextlib.suppress(OSError, ValueError):
            self.proc.kill()

    def stop(self, wait_s: float = 5.0) -> None:
        """Ask it to exit, then kill it if it has not; reap it either way."""
        with contextlib.suppress(OSError, ValueError, BrokenPipeError):
            self.conn.send(("stop",))
        self.proc.join(wait_s)
        if self.proc.is_alive():
            self.kill()
            self.proc.join(5.0)
        with contextlib.suppress(OSError):
            self.conn.close()


class WorkerPool:
    """N workers, an idle list, a bounded queue of waiting requests (``max_queue``), and
    replacement; a worker is recycled after ``max_requests`` or past ``max_rss_mb`` (None:
    never), and ``on_restart`` hears each replacement's reason (`RESTART_REASONS`)."""

    def __init__(self, cfg: WorkerConfig, workers: int = 1, max_queue: int = 8,
                 max_requests: int | None = None, max_rss_mb: float | None = None,
                 on_restart: Callable[[str], None] | None = None):
        if workers < 1:
            raise TtsKitError(f"workers must be >= 1, got {workers}")
        if max_queue < 0:
            raise TtsKitError(f"max_queue must be >= 0, got {max_queue}")
        self.cfg = cfg
        self.size = workers
        self.max_queue = max_queue
        self.max_requests = max_requests
        self.max_rss_mb = max_rss_mb
        self.on_restart = on_restart or (lambda reason: None)
        #: Called whenever a worker goes idle with nobody queued (chunk-level scheduling).
        self.on_idle: Callable[[], None] | None = None
        self.workers: dict[int, Worker] = {}
        self._idle: collections.deque[Worker] = collections.deque()
        self._waiters: collections.deque[asyncio.Future[Worker]] = collections.deque()
        self._next_id = 0
        self._ready = asyncio.Event()
        self.fatal: str | None = None
        self.closing = False
        self.mean_latency_s = 1.0  # for Retry-After; updated as requests finish

    async def start(self) -> None:
        """Spawn the workers; returns once all are warmed up (raises if one cannot be)."""
        for _ in range(self.size):
            self._spawn()
        await self._ready.wait()
        if self.fatal:
            raise RuntimeError(f"a worker could not start: {self.fatal}")

    def _spawn(self) -> Worker:
        w = Worker(self._next_id, self.cfg, asyncio.get_running_loop(), self._message)
        self._next_id += 1
        self.workers[w.id] = w
        return w

    def _message(self, w: Worker, msg: tuple) -> None:
        kind = msg[0]
        if kind == "ready":
            w.pid = msg[1]
            w.state = "idle"
            if not self._ready.is_set() and all(x.state != "starting"
                                                for x in self.workers.values()):
                self._ready.set()
            self._hand_out(w)
        elif kind == "fatal":
            self.fatal = msg[1]
            self._ready.set()
        elif kind == "exit":
            was = w.state
            w.state = "dead"
            self.workers.pop(w.id, None)
            with contextlib.suppress(ValueError):
                self._idle.remove(w)
            w.inbox.put_nowait(msg)
            if was != "retiring":  # a retiring worker is reaped by its stop()
                asyncio.get_running_loop().run_in_executor(None, w.proc.join, 5.0)
            if was in ("idle", "busy", "starting") and not self.closing and not self.fatal:
                self.on_restart("crash")
                self._spawn()
        else:
            w.inbox.put_nowait(msg)

    async def stop(self) -> None:
        """Stop every worker (each finishes nothing more; all are reaped)."""
        self.closing = True
        for fut in self._waiters:
            if not fut.done():
                fut.set_exception(RuntimeError("server shutting down"))
        await asyncio.gather(*(asyncio.to_thread(w.stop) for w in list(self.workers.values())))

    @property
    def queue_depth(self) -> int:
        """Requests waiting for a worker now."""
        return sum(1 for f in self._waiters if not f.done())

    async def acquire(self, timeout_s: float | None) -> Worker:
        """An idle worker, waiting in the queue at most ``timeout_s``; `Overloaded` when
        the queue is full, `DeadlineExceeded` past ``timeout_s``."""
        if self.closing:
            raise RuntimeError("server shutting down")
        if (w := self.take_idle()) is not None:
            return w
        if self.queue_depth >= self.max_queue:
            ahead = self.queue_depth + 1
            raise Overloaded(max(1, math.ceil(self.mean_latency_s * ahead / self.size)))
        fut: asyncio.Future[Worker] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            return await asyncio.wait_for(asyncio.shield(fut), timeout_s)
        except (asyncio.CancelledError, asyncio.TimeoutError) as exc:  # client gone, or late
            if fut.done() and not fut.cancelled() and not fut.exception():
                self.release(fut.result(), counted=False)  # handed one at the last moment
            fut.cancel()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise DeadlineExceeded("waited in the queue past the deadline") from None
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(fut)

    def _hand_out(self, w: Worker) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                w.state = "busy"
                fut.set_result(w)
                return
        w.state = "idle"
        self._idle.append(w)
        if self.on_idle is not None:
            self.on_idle()

    def take_idle(self, fits: Callable[[Worker], bool] | None = None) -> Worker | None:
        """An idle worker (one that ``fits``), now marked busy, or None (chunk scheduling)."""
        for w in list(self._idle):
            if w.state != "idle" or fits is None or fits(w):
                self._idle.remove(w)
            if w.state == "idle" and (fits is None or fits(w)):
                w.state = "busy"
                return w
        return None

    def release(self, w: Worker, latency_s: float | None = None, counted: bool = True) -> None:
        """A worker finished a request: recycle it if due, else give it the next one
        (``counted`` False: the request never reached it)."""
        if latency_s is not None:
            self.mean_latency_s = 0.8 * self.mean_latency_s + 0.2 * latency_s
        if w.state == "dead":
            return
        w.requests += int(counted)
        reason = ("max_requests" if self.max_requests and w.requests >= self.max_requests
                  else "max_rss" if self.max_rss_mb and (rss_mb(w.pid) or 0.0) > self.max_rss_mb
                  else None)
        if reason and not self.closing:
            self.retire(w, reason)
            return
        self._hand_out(w)

    def abandon(self, w: Worker) -> None:
        """Nobody waits for ``w``'s request: it stops at its next chunk and serves the next
        one, or is killed and replaced after `CANCEL_GRACE_S`. A no-op unless busy."""
        if w.state != "busy" or w.abandoned:
            return
        w.abandoned = True
        w.cancel.set()
        asyncio.get_running_loop().create_task(self._reclaim(w))

    async def _reclaim(self, w: Worker) -> None:
        async def last() -> str:
            while True:
                kind = (await w.inbox.get())[0]
                if kind in ("exit", "done", "error", "cancelled"):
                    return kind

        try:
            if await asyncio.wait_for(last(), CANCEL_GRACE_S) != "exit":  # exit: replaced
                w.abandoned = False
                self.release(w)
        except asyncio.TimeoutError:
            if w.state == "busy":
                self.retire(w, "abandoned")

    def retire(self, w: Worker, reason: str) -> None:
        """Replace ``w``: a new worker starts, ``w`` is stopped (killed for a timeout or an
        abandoned request)."""
        w.state = "retiring"
        self.workers.pop(w.id, None)
        with contextlib.suppress(ValueError):
            self._idle.remove(w)
        if reason in ("timeout", "abandoned"):
            w.kill()
        self.on_restart(reason)
        self._spawn()
        asyncio.get_running_loop().run_in_executor(None, w.stop, 2.0)

    async def next_message(self, w: Worker, deadline: float | None) -> tuple:
        """The worker's next message before ``deadline`` (``time.monotonic()``);
        `DeadlineExceeded` (the worker is killed and replaced) or `WorkerDied`."""
        left = None if deadline is None else deadline - time.monotonic()
        try:
            if left is not None and left <= 0:
                raise asyncio.TimeoutError
            msg = await asyncio.wait_for(w.inbox.get(), left)
        except asyncio.TimeoutError:
            self.retire(w, "timeout")
            raise DeadlineExceeded("the request ran past its deadline") from None
        if msg[0] == "exit":
            raise WorkerDied(f"worker {w.id} (pid {w.pid}) exited while synthesising")
        return msg

    def describe(self) -> list[dict[str, Any]]:
        """Each worker: id, pid, state, requests served."""
        return [{"id": w.id, "pid": w.pid, "state": w.state, "requests": w.requests}
                for w in self.workers.values()]


__all__ = ["WorkerConfig", "WorkerPool", "Worker", "Overloaded", "WorkerDied",
           "DeadlineExceeded", "RESTART_REASONS", "worker_main"]
