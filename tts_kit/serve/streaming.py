"""A streamed answer: OpenAI's formats, encoded chunk by chunk (`Encoder`) or as server-sent
events (`sse`); its worker freed (`Lease`) on every path; cut short after its headers, its
connection aborted (`CutShort`), so the client sees an error, not a short 200."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from tts_kit.serve.worker import DeadlineExceeded, WorkerDied, WorkerPool

try:  # FastAPI passes a Response through as it is (the serve extra installs it)
    from starlette.responses import Response as _Response
except ImportError:  # pragma: no cover - serving needs the extra anyway
    _Response = object  # type: ignore[assignment,misc]

#: OpenAI's ``response_format`` values and the Content-Type each is sent with.
MEDIA_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "aac": "audio/aac",
               "flac": "audio/flac", "wav": "audio/wav", "pcm": "audio/L16"}
#: format: (container, encoder, the encoder's sample rate or None for the model's).
_CODECS = {"mp3": ("mp3", "libmp3lame", None), "aac": ("adts", "aac", None),
           "opus": ("ogg", "libopus", 48000), "flac": ("flac", "flac", None)}
#: OpenAI's ``pcm``: "raw samples in 24kHz (16-bit signed, low-endian)".
PCM_RATE = 24000


def output_rate(fmt: str, sample_rate: int) -> int:
    """The rate ``fmt`` is sent at for a model of ``sample_rate`` Hz.

    Example:
        >>> output_rate("opus", 44100), output_rate("mp3", 44100), output_rate("pcm", 44100)
        (48000, 44100, 24000)
    """
    return PCM_RATE if fmt == "pcm" else (_CODECS.get(fmt, ("", "", None))[2] or sample_rate)


class _Sink:
    """A write-only file for the muxer (not seekable: headers are written up front)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: Any) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        return out


class Encoder:
    """16-bit mono PCM in (`feed`), ``fmt``'s bytes out as soon as the encoder has them;
    `close` flushes the rest.

    Example:
        >>> enc = Encoder("flac", 44100)
        >>> (enc.feed(bytes(8820)) + enc.close())[:4]
        b'fLaC'
    """

    def __init__(self, fmt: str, sample_rate: int):
        self.fmt, self.sample_rate = fmt, sample_rate
        self.rate = output_rate(fmt, sample_rate)
        self.resampler: Any = None
        if fmt == "wav" or (fmt == "pcm" and sample_rate == PCM_RATE):
            return
        import av

        kind = "s16"  # pcm: resampled only
        if fmt in _CODECS:
            container, codec, _ = _CODECS[fmt]
            self.sink = _Sink()
            self.out = av.open(self.sink, mode="w", format=container,  # ~0.1 s Ogg pages
                               options={"page_duration": "100000"} if container == "ogg" else {},
                               container_options={"flush_packets": "1"})
            self.stream = self.out.add_stream(codec, rate=self.rate, layout="mono")
            kind = self.stream.codec_context.format.name
        self.resampler = av.AudioResampler(format=kind, layout="mono", rate=self.rate)

    def _encode(self, frame: Any) -> bytes:
        frames = self.resampler.resample(frame)
        if self.fmt == "pcm":
            return b"".join(f.to_ndarray().astype("<i2").tobytes() for f in frames)
        for resampled in frames:
            self.out.mux(self.stream.encode(resampled))
        return self.sink.take()

    def feed(self, pcm: bytes) -> bytes:
        """The encoded bytes ready after ``pcm`` (may be empty)."""
        if self.resampler is None or not pcm:
            return pcm
        import av
        import numpy as np

        frame = av.AudioFrame.from_ndarray(np.frombuffer(pcm, "<i2").reshape(1, -1),
                                           format="s16", layout="mono")
        frame.sample_rate = self.sample_rate
        return self._encode(frame)

    def close(self) -> bytes:
        """The rest: the encoder's buffered frames and the container's trailer."""
        if self.resampler is None:
            return b""
        tail = self._encode(None)
        if self.fmt == "pcm":
            return tail
        self.out.mux(self.stream.encode(None))
        self.out.close()
        return tail + self.sink.take()


async def encoded(body: Any, fmt: str, sample_rate: int) -> Any:
    """The async iterator of PCM ``body`` (`relay`) in ``fmt``;
    closing it closes ``body``."""
    enc = Encoder(fmt, sample_rate)  # in a thread: a long chunk's mp3 would hold up the
    try:  # event loop, every other connection's disconnects included
        async for pcm in body:
            out = await asyncio.to_thread(enc.feed, pcm)
            if out:
                yield out
        tail = await asyncio.to_thread(enc.close)
        if tail:
            yield tail
    finally:
        await body.aclose()


def sse_event(audio: bytes | None) -> bytes:
    """One of OpenAI's speech events (``stream_format="sse"``): ``audio`` in base64 in a
    ``speech.audio.delta``; None: the last, ``speech.audio.done`` (no tokens counted).

    Example:
        >>> sse_event(b"hi")
        b'data: {"type": "speech.audio.delta", "audio": "aGk="}\\n\\n'
    """
    usage = dict.fromkeys(("input_tokens", "output_tokens", "total_tokens"), 0)
    event = ({"type": "speech.audio.done", "usage": usage} if audio is None else
             {"type": "speech.audio.delta", "audio": base64.b64encode(audio).decode()})
    return b"data: " + json.dumps(event).encode() + b"\n\n"


async def sse(body: Any) -> Any:
    """``body``'s bytes as `sse_event`s, the done event after the last (none if ``body``
    is cut short); closing it closes ``body``."""
    try:
        async for part in body:
            yield sse_event(part)
        yield sse_event(None)
    finally:
        await body.aclose()


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


__all__ = ["MEDIA_TYPES", "PCM_RATE", "AudioStream", "ClientGone", "CutShort", "Encoder",
           "Lease", "OneLineCutShort", "disconnected", "encoded", "output_rate", "relay", "sse",
           "sse_event", "unless_gone"]
