"""A speech request's body, checked (`check_body`), and the WAV header of a streamed answer.

Example:
    >>> len(wav_header(44100))
    44
"""

import json
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tts_kit.core import contract

if TYPE_CHECKING:
    from tts_kit.serve.config import ServeConfig


def wav_header(sample_rate: int, frames: int | None = None) -> bytes:
    """A 16-bit mono WAV header; ``frames`` None: unknown length (streaming), sizes 0xFFFFFFFF.

    Example:
        >>> len(wav_header(44100)), wav_header(44100, 0)[40:44]
        (44, b'\\x00\\x00\\x00\\x00')
    """
    data = 0xFFFFFFFF if frames is None else frames * 2
    riff = 0xFFFFFFFF if frames is None else 36 + data
    return (b"RIFF" + struct.pack("<I", riff) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
            + b"data" + struct.pack("<I", data))


class RequestError(Exception):
    """A bad request: HTTP ``status`` and a one-line message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def check_body(raw: bytes, cfg: "ServeConfig", voices: list[str],
               languages: Sequence[str] = contract.LANGUAGES,
               sample_rate: int = contract.SAMPLE_RATE) -> dict[str, Any]:
    """The request body, checked; `RequestError` (400) naming the problem and the fix.

    ``voices`` and ``languages`` are the model's (a Piper voice speaks one language with its
    own speakers); without ``voice`` a request gets ``M1`` when the model has it, else the
    first voice; without ``lang`` the server's ``--lang`` when the model speaks it, else
    the model's first language.

    Example:
        >>> from tts_kit.serve.config import ServeConfig
        >>> cfg = ServeConfig()
        >>> check_body(b'{"input": "Hi.", "voice": "M1"}', cfg, ["M1"])["steps"]
        8
        >>> check_body(b'{"input": ""}', cfg, ["M1"])
        Traceback (most recent call last):
        ...
        tts_kit.serve.body.RequestError: input is empty; give at least one word to synthesise
    """
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise RequestError(400, "the body is not JSON; send a JSON object such as "
                           '{"input": "Hello.", "voice": "M1"}') from None
    if not isinstance(body, dict):
        raise RequestError(400, "the body must be a JSON object with at least \"input\"")
    known = {"model", "input", "voice", "response_format", "speed", "lang", "steps", "seed",
             "stream_format", "instructions"}
    extra = sorted(set(body) - known)
    if extra:
        raise RequestError(400, f"unknown field(s) {extra}; known: {sorted(known)}")
    text = body.get("input")
    if not isinstance(text, str):
        raise RequestError(400, "input must be a string (the text to synthesise)")
    if not text.strip():
        raise RequestError(400, "input is empty; give at least one word to synthesise")
    if len(text) > cfg.max_chars:
        raise RequestError(400, f"input has {len(text):,} characters, more than this server's "
                           f"{cfg.max_chars:,}; split it into several requests")
    voice = body.get("voice", "M1" if "M1" in voices else voices[0])
    if voice not in voices:
        raise RequestError(400, f"unknown voice {str(voice)[:40]!r}; GET /voices lists them: "
                           f"{', '.join(voices)}")
    fmt = body.get("response_format", "wav")
    if fmt not in ("wav", "pcm"):
        raise RequestError(400, f"response_format {str(fmt)[:20]!r} is not supported; use wav "
                           f"or pcm (16-bit mono, {sample_rate / 1000:g} kHz)")
    lang = body.get("lang", cfg.lang if cfg.lang in languages else languages[0])
    if lang not in languages:
        raise RequestError(400, f"unknown lang {str(lang)[:20]!r}; this model speaks: "
                           f"{', '.join(languages)}")
    steps = body.get("steps", contract.DEFAULT_STEPS)
    if isinstance(steps, bool) or not isinstance(steps, int) or not (
            contract.MIN_STEPS <= steps <= contract.MAX_STEPS):
        raise RequestError(400, f"steps must be an integer in {contract.MIN_STEPS}.."
                           f"{contract.MAX_STEPS}, got {steps!r}")
    speed = body.get("speed", contract.DEFAULT_SPEED)
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not (
            contract.MIN_SPEED <= speed <= contract.MAX_SPEED):
        raise RequestError(400, f"speed must be a number in {contract.MIN_SPEED:g}.."
                           f"{contract.MAX_SPEED:g}, got {speed!r}")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise RequestError(400, f"seed must be an integer >= 0 or null, got {seed!r}")
    return {"input": text, "voice": voice, "response_format": fmt, "lang": lang,
            "steps": steps, "speed": float(speed), "seed": seed}


__all__ = ["RequestError", "check_body", "wav_header"]
