"""A streamed answer that frees its worker (`Lease`) on every path and, cut short after its
headers, aborts the connection (`CutShort`), so the client sees an error, not a short 200."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from tts_kit.serve.worker import DeadlineExceeded, WorkerDied, WorkerPool

try:  # FastAPI passes a Response through as it is (the serve extra installs it)
    from starlette.responses import Response as _Response
except ImportError:  # pragma: no cover - serving needs the extra anyway
    _Response = object  # type: ignore[assignment,misc]


class CutShort(Exception):
    """A response whose headers were sent could not be finished (the connection is aborted)."""


class ClientGone(Exception):
    """The client disconnected before its answer was ready."""


class Lease:
    """One request's hold on a worker: `finish` (released, counted) or `abandon` (stopped)."""

    def __init__(self, pool: WorkerPool, worker: Any):
        self.pool, self.worker = pool, worker
        self.settled = False

    async def next_message(self, deadline: float | None) -> tuple:
        """The worker's next message (`WorkerPool.next_message`)."""
        return await self.pool.next_message(self.worker, deadline)

    def finish(self, latency_s: float | None = None) -> None:
        """The worker sent its last message: free it for the next request."""
        if not self.settled:
            self.settled = True
            self.pool.release(self.worker, latency_s)

    def gone(self) -> None:
        """The worker ended on its own (died, or was killed for the deadline)."""
        self.settled = True

    def abandon(self) -> None:
        """Nobody waits for the rest: stop the worker's request (no-op once settled)."""
        if not self.settled:
            self.settled = True
            self.pool.abandon(self.worker)


async def disconnected(receive: Callable[[], Awaitable[dict]]) -> None:
    """Returns when the ASGI client disconnects (call once the request body was read)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def unless_gone(receive: Callable[[], Awaitable[dict]], work: Awaitable[Any]) -> Any:
    """``await work``, unless the client disconnects first (or this is cancelled): then
    ``work`` is cancelled and `ClientGone` raised."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(disconnected(receive))
    try:
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        finished = task.done()
        if not finished:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
    if not finished:
        raise ClientGone
    return task.result()


class AudioStream(_Response):  # type: ignore[misc,valid-type]
    """The streamed ASGI response of a worker's chunks; ``body`` raises `CutShort` to abort."""

    def __init__(self, lease: Lease, body: AsyncIterator[bytes], media_type: str,
                 headers: dict[str, str]):
        self.lease, self.body = lease, body
        self.background = None
        self.raw_headers = [(b"content-type", media_type.encode())] + [
            (k.lower().encode(), v.encode("latin-1")) for k, v in headers.items()]

    async def _send_all(self, send: Callable[[dict], Awaitable[None]]) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": self.raw_headers})
        async for part in self.body:
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]],
                       send: Callable[[dict], Awaitable[None]]) -> None:
        try:
            with contextlib.suppress(ClientGone, OSError):  # OSError: a send to a closed socket
                await unless_gone(receive, self._send_all(send))
        finally:
            with contextlib.suppress(BaseException):
                await self.body.aclose()  # type: ignore[attr-defined]
            self.lease.abandon()  # a no-op when the last chunk went out


async def relay(lease: Any, msg: tuple, *, header: bytes, metrics: Any, t0: float,
                deadline: float | None, done: Callable[..., None]) -> AsyncIterator[bytes]:
    """The body: ``header``, then the chunks from ``msg`` (the first) to the last, from a
    `Lease` or a `tts_kit.serve.chunked.ChunkLease`; ``done``: `RequestTally.end`. One that
    cannot be finished is counted and raises `CutShort`.
    """
    if header:
        yield header
    first_audio = True
    while True:
        if msg[0] == "chunk":
            yield msg[1]
            metrics.audio.inc(msg[2])
            if first_audio:
                metrics.ttfa.observe(time.monotonic() - t0)
                first_audio = False
        elif msg[0] == "done":
            latency = time.monotonic() - t0
            metrics.latency.observe(latency)
            done(200)
            lease.finish(latency)
            return
        else:  # an error after the first chunk
            lease.finish()
            _cut(metrics, done, 500, f"synthesis failed after audio was sent: {msg[-1]}")
        try:
            msg = await lease.next_message(deadline)
        except DeadlineExceeded:
            lease.gone()  # killed and replaced by next_message (chunks: stopped)
            metrics.timeouts.inc()
            _cut(metrics, done, 503, "the deadline passed after audio was sent", "deadline")
        except WorkerDied as exc:
            lease.gone()
            _cut(metrics, done, 500, str(exc))


def _cut(metrics: Any, done: Callable[..., None], status: int, why: str,
         outcome: str = "error") -> None:
    metrics.cut_short.inc()
    done(status, outcome)
    raise CutShort(f"response cut short: {why}")


class OneLineCutShort(logging.Filter):
    """A `CutShort` in uvicorn's log: one line, no traceback (an expected ending)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        while exc is not None and not isinstance(exc, CutShort):
            group = getattr(exc, "exceptions", None)  # an ExceptionGroup (3.11+)
            exc = exc.__cause__ or exc.__context__ or (group[0] if group else None)
        if isinstance(exc, CutShort):
            record.msg, record.args = f"tts-kit serve: {exc}; connection aborted", ()
            record.exc_info = record.exc_text = None
        return True


__all__ = ["AudioStream", "ClientGone", "CutShort", "Lease", "OneLineCutShort",
           "disconnected", "relay", "unless_gone"]
