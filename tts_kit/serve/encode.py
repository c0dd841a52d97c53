"""The audio formats a speech request may ask for, as OpenAI's API names them, and their
streaming encoders.

``wav`` and ``pcm`` (16-bit mono at the model's rate, ``X-Sample-Rate``) need no encoder;
``mp3`` (LAME), ``aac`` (ADTS frames), ``opus`` (Ogg pages, 48 kHz) and ``flac`` go through
PyAV's bundled FFmpeg encoders, fed chunk by chunk, so every format streams.

Example:
    >>> enc = Encoder("flac", 44100)
    >>> audio = enc.feed(bytes(8820)) + enc.close()
    >>> audio[:4], MEDIA_TYPES["mp3"]
    (b'fLaC', 'audio/mpeg')
"""

from __future__ import annotations

from typing import Any

#: OpenAI's ``response_format`` values and the Content-Type each is sent with.
MEDIA_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "aac": "audio/aac",
               "flac": "audio/flac", "wav": "audio/wav", "pcm": "audio/L16"}
#: format: (container, encoder, the encoder's sample rate or None for the model's).
_CODECS = {"mp3": ("mp3", "libmp3lame", None), "aac": ("adts", "aac", None),
           "opus": ("ogg", "libopus", 48000), "flac": ("flac", "flac", None)}


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
    """16-bit mono PCM in (`feed`, any length), ``fmt``'s bytes out as soon as the
    encoder has them; `close` flushes the rest. ``wav`` and ``pcm`` pass the PCM through."""

    def __init__(self, fmt: str, sample_rate: int):
        self.fmt, self.sample_rate = fmt, sample_rate
        if fmt not in _CODECS:
            return
        import av

        container, codec, rate = _CODECS[fmt]
        self.sink = _Sink()
        self.out = av.open(self.sink, mode="w", format=container,  # ~0.1 s Ogg pages
                           options={"page_duration": "100000"} if container == "ogg" else {},
                           container_options={"flush_packets": "1"})
        self.stream = self.out.add_stream(codec, rate=rate or sample_rate, layout="mono")
        self.resampler = av.AudioResampler(format=self.stream.codec_context.format.name,
                                           layout="mono", rate=rate or sample_rate)

    def _encode(self, frame: Any) -> bytes:
        for resampled in self.resampler.resample(frame):
            self.out.mux(self.stream.encode(resampled))
        return self.sink.take()

    def feed(self, pcm: bytes) -> bytes:
        """The encoded bytes ready after ``pcm`` (may be empty)."""
        if self.fmt not in _CODECS or not pcm:
            return pcm
        import av
        import numpy as np

        frame = av.AudioFrame.from_ndarray(np.frombuffer(pcm, "<i2").reshape(1, -1),
                                           format="s16", layout="mono")
        frame.sample_rate = self.sample_rate
        return self._encode(frame)

    def close(self) -> bytes:
        """The rest: the encoder's buffered frames and the container's trailer."""
        if self.fmt not in _CODECS:
            return b""
        tail = self._encode(None)
        self.out.mux(self.stream.encode(None))
        self.out.close()
        return tail + self.sink.take()


async def encoded(body: Any, fmt: str, sample_rate: int) -> Any:
    """The async iterator of PCM ``body`` (`tts_kit.serve.streaming.relay`) in ``fmt``;
    closing it closes ``body``."""
    enc = Encoder(fmt, sample_rate)
    try:
        async for pcm in body:
            out = enc.feed(pcm)
            if out:
                yield out
        tail = enc.close()
        if tail:
            yield tail
    finally:
        await body.aclose()


__all__ = ["MEDIA_TYPES", "Encoder", "encoded"]
