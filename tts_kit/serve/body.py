"""A speech request's body, checked (`check_body`), OpenAI's voice names on the model's
voices (`voice_aliases`), and the WAV header of a streamed answer."""

import json
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.serve.encode import MEDIA_TYPES

if TYPE_CHECKING:
    from tts_kit.serve.config import ServeConfig


def wav_header(sample_rate: int) -> bytes:
    """A streamed 16-bit mono WAV's header: its length unknown, the sizes 0xFFFFFFFF.

    Example:
        >>> len(wav_header(44100)), wav_header(44100)[40:44]
        (44, b'\\xff\\xff\\xff\\xff')
    """
    return (b"RIFF\xff\xff\xff\xffWAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
            + b"data\xff\xff\xff\xff")


#: OpenAI's voice names, each with the Supertonic voice it sounds closest to.
OPENAI_VOICES = {"alloy": "F1", "ash": "M1", "ballad": "M2", "cedar": "M3", "coral": "F2",
                 "echo": "M4", "fable": "M5", "marin": "F3", "nova": "F4", "onyx": "M1",
                 "sage": "F5", "shimmer": "F1", "verse": "M2"}


def voice_aliases(voices: list[str], spec: str | None = None) -> dict[str, str]:
    """OpenAI's voice names (and ``spec``'s, ``alloy=F1,echo=M1``) on the model's
    ``voices``: a missing one falls back to the first of the same letter, else in turn.

    Example:
        >>> voice_aliases(["F1", "M1"], "nova=M1")["nova"], voice_aliases(["0", "1"])["ash"]
        ('M1', '1')
    """
    aliases = {}
    for i, (name, want) in enumerate(OPENAI_VOICES.items()):
        aliases[name] = want if want in voices else next(
            (v for v in voices if v[:1] == want[0]), voices[i % len(voices)])
    for pair in filter(None, (spec or "").split(",")):
        name, _, voice = (p.strip() for p in pair.partition("="))
        if not name or voice not in voices:
            raise TtsKitError(f"--voice-map {pair.strip()[:40]!r}: give NAME=VOICE pairs, "
                              f"VOICE one of this model's: {', '.join(voices)}")
        aliases[name] = voice
    return aliases


class RequestError(Exception):
    """A bad request: HTTP ``status``, a one-line message and the field at fault."""

    def __init__(self, status: int, message: str, param: str | None = None):
        super().__init__(message)
        self.status, self.param = status, param


def check_body(raw: bytes, cfg: "ServeConfig", voices: list[str],
               languages: Sequence[str] = contract.LANGUAGES,
               aliases: dict[str, str] | None = None) -> dict[str, Any]:
    """The request body, checked; `RequestError` (400) naming the problem and the fix.

    ``voices`` and ``languages`` are the model's, ``aliases`` other voice names; the
    defaults are ``M1`` (else the first voice), ``--lang`` (else the model's first), mp3.

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
        raise RequestError(400, f"unknown field(s) {extra}; known: {sorted(known)}", extra[0])
    text = body.get("input")
    if not isinstance(text, str):
        raise RequestError(400, "input must be a string (the text to synthesise)", "input")
    if not text.strip():
        raise RequestError(400, "input is empty; give at least one word to synthesise",
                           "input")
    if len(text) > cfg.max_chars:
        raise RequestError(400, f"input has {len(text):,} characters, more than this server's "
                           f"{cfg.max_chars:,}; split it into several requests", "input")
    voice = body.get("voice", "M1" if "M1" in voices else voices[0])
    voice = voice.get("id") if isinstance(voice, dict) else voice  # OpenAI's {"id": ...}
    voice = (aliases or {}).get(voice, voice) if isinstance(voice, str) else voice
    if voice not in voices:
        raise RequestError(400, f"unknown voice {str(body.get('voice'))[:40]!r}; GET /voices "
                           f"lists them: {', '.join([*voices, *(aliases or {})])}", "voice")
    fmt = body.get("response_format", "mp3")
    if fmt not in MEDIA_TYPES:
        raise RequestError(400, f"response_format {str(fmt)[:20]!r} is not supported; use "
                           f"one of {', '.join(MEDIA_TYPES)}", "response_format")
    stream_format = body.get("stream_format", "audio")
    if stream_format not in ("audio", "sse"):
        raise RequestError(400, f"stream_format {str(stream_format)[:20]!r} is not supported; "
                           "use audio (the default) or sse", "stream_format")
    if not isinstance(body.get("instructions", ""), str):
        raise RequestError(400, "instructions must be a string (it is accepted and ignored)",
                           "instructions")
    lang = body.get("lang", cfg.lang if cfg.lang in languages else languages[0])
    if lang not in languages:
        raise RequestError(400, f"unknown lang {str(lang)[:20]!r}; this model speaks: "
                           f"{', '.join(languages)}", "lang")
    steps = body.get("steps", contract.DEFAULT_STEPS)
    if isinstance(steps, bool) or not isinstance(steps, int) or not (
            contract.MIN_STEPS <= steps <= contract.MAX_STEPS):
        raise RequestError(400, f"steps must be an integer in {contract.MIN_STEPS}.."
                           f"{contract.MAX_STEPS}, got {steps!r}", "steps")
    speed = body.get("speed", contract.DEFAULT_SPEED)
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not (
            contract.MIN_SPEED <= speed <= contract.MAX_SPEED):
        raise RequestError(400, f"speed must be a number in {contract.MIN_SPEED:g}.."
                           f"{contract.MAX_SPEED:g}, got {speed!r}", "speed")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise RequestError(400, f"seed must be an integer >= 0 or null, got {seed!r}", "seed")
    return {"input": text, "voice": voice, "response_format": fmt, "lang": lang,
            "stream_format": stream_format, "steps": steps, "speed": float(speed), "seed": seed,
            "ignored": ["instructions"] if body.get("instructions") else []}


def request_params(body: dict[str, Any]) -> dict[str, Any]:
    """The `Engine.stream` arguments of a checked request body.

    Example:
        >>> request_params({"input": "Hi.", "voice": "F1", "speed": 1.1, "lang": "en",
        ...                 "steps": 3, "seed": 2})["voice"]
        'F1'
    """
    return {"text": body["input"], "lang": body["lang"], "voice": body["voice"],
            "steps": body["steps"], "speed": body["speed"], "seed": body["seed"]}


__all__ = ["OPENAI_VOICES", "RequestError", "check_body", "request_params", "voice_aliases",
           "wav_header"]
