"""OpenAI's ``response_format``s and their streaming encoders (PyAV, fed chunk by chunk;
``pcm`` is 24 kHz as OpenAI documents it), and `sse`, OpenAI's server-sent events.

Example:
    >>> enc = Encoder("flac", 44100)
    >>> audio = enc.feed(bytes(8820)) + enc.close()
    >>> audio[:4], MEDIA_TYPES["mp3"], output_rate("pcm", 44100)
    (b'fLaC', 'audio/mpeg', 24000)
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

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
        >>> output_rate("opus", 44100), output_rate("mp3", 44100)
        (48000, 44100)
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
    `close` flushes the rest."""

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
    """The async iterator of PCM ``body`` (`tts_kit.serve.streaming.relay`) in ``fmt``;
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


__all__ = ["MEDIA_TYPES", "PCM_RATE", "Encoder", "encoded", "output_rate", "sse",
           "sse_event"]
