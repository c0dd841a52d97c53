"""The HTTP server (FastAPI on uvicorn): ``POST /v1/audio/speech`` in OpenAI's shape, its
body checked (`check_body`), and ``GET /v1/models``, ``/health``, ``/voices``, ``/metrics``."""

import asyncio
import contextlib
import json
import logging
import os
import struct
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.core.settings import settings as current_settings
from tts_kit.serve.backends import BACKENDS
from tts_kit.serve.chunked import ChunkLease
from tts_kit.serve.config import ServeConfig
from tts_kit.serve.guard import (
    HttpVersionCheck,
    KeyCheck,
    QuietAcceptErrors,
    error_json,
    exposure_warning,
    has_key,
    header_timeout_protocol,
    run_uvicorn,
)
from tts_kit.serve.metrics import TALLY, CountRequests, Metrics, RequestTally
from tts_kit.serve.streaming import (
    MEDIA_TYPES,
    AudioStream,
    ClientGone,
    Lease,
    OneLineCutShort,
    encoded,
    output_rate,
    relay,
    sse,
    unless_gone,
)
from tts_kit.serve.worker import DeadlineExceeded, Overloaded, WorkerDied

log = logging.getLogger("uvicorn.error")


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
    aliases = {name: want if want in voices else next(
        (v for v in voices if v[:1] == want[0]), voices[i % len(voices)])
        for i, (name, want) in enumerate(OPENAI_VOICES.items())}
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


def check_body(raw: bytes, cfg: ServeConfig, voices: list[str],
               languages: Sequence[str] = contract.LANGUAGES,
               aliases: dict[str, str] | None = None) -> dict[str, Any]:
    """The request body, checked against the model's ``voices`` and ``languages`` (and
    ``aliases``); `RequestError` (400) naming the problem and the fix.

    Example:
        >>> check_body(b'{"input": "Hi.", "voice": "M1"}', ServeConfig(), ["M1"])["steps"]
        8
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
    fmt = body.get("response_format", "mp3")
    stream_format = body.get("stream_format", "audio")
    lang = body.get("lang", cfg.lang if cfg.lang in languages else languages[0])
    for field, value, allowed, fix in (
            ("voice", voice, voices, "GET /voices lists them: "
             + ", ".join([*voices, *(aliases or {})])),
            ("response_format", fmt, MEDIA_TYPES, "use one of " + ", ".join(MEDIA_TYPES)),
            ("stream_format", stream_format, ("audio", "sse"), "use audio (the default) or sse"),
            ("lang", lang, languages, "this model speaks: " + ", ".join(languages))):
        if not isinstance(value, str) or value not in allowed:  # a default is never refused
            raise RequestError(400, f"unknown {field} {str(body[field])[:40]!r}; {fix}", field)
    if not isinstance(body.get("instructions", ""), str):
        raise RequestError(400, "instructions must be a string (it is accepted and ignored)",
                           "instructions")
    steps = body.get("steps", contract.DEFAULT_STEPS)
    speed = body.get("speed", contract.DEFAULT_SPEED)
    for field, value, kinds, what, low, high in (
            ("steps", steps, int, "an integer", contract.MIN_STEPS, contract.MAX_STEPS),
            ("speed", speed, (int, float), "a number", contract.MIN_SPEED, contract.MAX_SPEED)):
        if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
            raise RequestError(400, f"{field} must be {what} in {low:g}..{high:g}, "
                               f"got {value!r}", field)
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise RequestError(400, f"seed must be an integer >= 0 or null, got {seed!r}", "seed")
    return {"input": text, "voice": voice, "response_format": fmt, "lang": lang,
            "stream_format": stream_format, "steps": steps, "speed": float(speed), "seed": seed,
            "ignored": ["instructions"] if body.get("instructions") else []}


def request_params(body: dict[str, Any]) -> dict[str, Any]:
    """The `Engine.stream` arguments of a checked request body.

    Example:
        >>> request_params(check_body(b'{"input": "Hi."}', ServeConfig(), ["F1"]))["voice"]
        'F1'
    """
    return {"text": body["input"], "lang": body["lang"], "voice": body["voice"],
            "steps": body["steps"], "speed": body["speed"], "seed": body["seed"]}


def _error(status: int, message: str, tally: RequestTally | None = None, *,
           outcome: str | None = None, headers: dict[str, str] | None = None,
           param: str | None = None) -> Any:
    """The JSON error answer, counted in ``tally`` (if given) as ``outcome``."""
    from fastapi.responses import Response

    if tally is not None:
        tally.end(status, outcome)
    return Response(error_json(status, message, param), status_code=status,
                    media_type="application/json", headers=headers)


class _Server:
    """What `create_app`'s routes share (configuration, model facts, backend, metrics)."""

    def __init__(self, cfg: ServeConfig):
        from tts_kit.models.family import model_label
        from tts_kit.models.resolve import open_model

        cfg.check()
        model = open_model(cfg.model)  # any family: the routes ask it, never its family
        self.cfg = cfg
        self.voices = list(model.voices)
        self.aliases = voice_aliases(self.voices, cfg.voice_map)
        self.languages = list(model.languages)
        self.sample_rate = model.sample_rate
        self.label = model_label(model)
        self.fallback = open(cfg.fallback_wav, "rb").read() if cfg.fallback_wav else None
        self.api_key = (cfg.api_key or current_settings().api_key or "").encode()
        self.backend = BACKENDS[cfg.architecture](cfg)
        self.metrics = self.backend.metrics = Metrics(self.backend.processes)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        asyncio.get_running_loop().set_exception_handler(QuietAcceptErrors())

        async def start() -> None:
            try:
                await self.backend.start()
                cfg, server = self.cfg, getattr(app.state, "uvicorn", None)
                while server is not None and not server.started:  # --port 0: bound yet?
                    await asyncio.sleep(0.05)
                socks = [s for x in getattr(server, "servers", ()) for s in x.sockets]
                port = socks[0].getsockname()[1] if socks else cfg.port
                print(f"tts-kit serve: ready on http://{cfg.host}:{port} "
                      f"({cfg.architecture} x{cfg.workers} warm)", flush=True)
            except Exception as exc:
                self.backend.error = (str(exc).splitlines()[0] if str(exc)
                                      else type(exc).__name__)
                print(f"tts-kit serve: error: {self.backend.error}", flush=True)
                os.kill(os.getpid(), 15)  # nothing to serve: stop like on SIGTERM

        starting = asyncio.create_task(start())
        yield
        starting.cancel()
        await self.backend.stop()

    async def http_error(self, request: Any, exc: Any) -> Any:
        """Starlette's own errors (no such route, a wrong method) in OpenAI's shape."""
        message = {404: f"no such endpoint {request.url.path[:80]}; use POST /v1/audio/speech"
                        ", GET /v1/models, /health, /voices or /metrics",
                   405: f"{request.method} is not allowed on {request.url.path[:80]}"}
        return _error(exc.status_code, message.get(exc.status_code, str(exc.detail)),
                      headers=exc.headers)  # 405: Allow

    async def bug(self, request: Any, exc: Exception) -> Any:
        """An exception nothing caught: a bug. Its traceback goes to the log, not out."""
        return _error(500, "internal error: a bug in tts-kit serve (its log has the "
                      "traceback); retry, and report it if it happens again")

    async def health(self, request: Any) -> Any:
        """Ready or not; with the API key (or on a server without one) also the workers."""
        from fastapi.responses import JSONResponse

        backend = self.backend
        body: dict[str, Any] = {"status": "failed" if backend.error else
                                "ready" if backend.ready else "starting"}
        if has_key(request.scope, self.api_key):  # PIDs, counts, errors are for the operator
            body.update(architecture=self.cfg.architecture, **backend.describe())
            if backend.error:
                body["error"] = backend.error
        return JSONResponse(body, status_code=200 if backend.ready else 503)

    async def list_voices(self) -> Any:
        return {"voices": self.voices, "aliases": self.aliases, "languages": self.languages,
                "sample_rate": self.sample_rate}

    async def models(self) -> Any:
        """OpenAI's model list: every name a client may send as ``model`` works."""
        return {"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "tts_kit"}
            for name in ("tts-1", "tts-1-hd", "gpt-4o-mini-tts", "gpt-4o-mini-tts-2025-12-15",
                         "tts-kit")]}

    async def prom(self) -> Any:
        from fastapi.responses import Response
        from prometheus_client import CONTENT_TYPE_LATEST

        return Response(self.metrics.text(), media_type=CONTENT_TYPE_LATEST)

    async def read_body(self, request: Any) -> bytes:
        limit = self.cfg.max_body_bytes
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > limit:
            raise RequestError(413, f"body of {int(length):,} bytes is larger than "
                               f"{limit:,}; send less text per request")
        async def read() -> bytes:
            raw = b""
            async for part in request.stream():
                raw += part
                if len(raw) > limit:
                    raise RequestError(413, f"body larger than {limit:,} bytes; "
                                       "send less text per request")
            return raw

        try:
            return await asyncio.wait_for(read(), self.cfg.body_timeout_s)
        except asyncio.TimeoutError:
            raise RequestError(408, f"the body did not arrive within "
                               f"{self.cfg.body_timeout_s:g} s; send it at once") from None

    def timed_out(self, tally: RequestTally) -> Any:
        from fastapi.responses import Response

        self.metrics.timeouts.inc()
        if self.fallback is not None:
            tally.end(200, "deadline")
            return Response(self.fallback, media_type="audio/wav",
                            headers={"X-TTS-Fallback": "timeout"})
        return _error(503, f"synthesis took longer than the {self.cfg.timeout_s:g} s timeout; "
                      "retry with a shorter input", tally, outcome="deadline")

    async def speech(self, request: Any) -> Any:
        """A speech request; its `RequestTally` (`CountRequests`) counts how it ends."""
        tally: RequestTally = request.scope[TALLY]
        deadline = None if self.cfg.timeout_s is None else tally.t0 + self.cfg.timeout_s
        if not self.backend.ready:
            return _error(503, "the server is warming up; retry when GET /health says ready",
                          tally, outcome="rejected", headers={"Retry-After": "1"})
        from starlette.requests import ClientDisconnect

        try:
            body = check_body(await self.read_body(request), self.cfg, self.voices,
                              self.languages, self.aliases)
        except ClientDisconnect:
            log.warning("tts-kit serve: a client disconnected while sending its request body")
            return _error(499, "client disconnected", tally)
        except RequestError as exc:
            return _error(exc.status, str(exc), tally, param=exc.param)
        params, fmt, events = (request_params(body), body["response_format"],
                               body["stream_format"] == "sse")
        if self.backend.streams:
            answer = await self.stream_from_worker(request, params, fmt, tally, deadline,
                                                   events)
        else:  # a lab backend answers whole (`tts_kit.serve.backends.BACKENDS`)
            answer = await self.backend.answer(self, params, fmt, tally, events)
        if body["ignored"]:
            answer.headers["X-TTS-Ignored"] = ",".join(body["ignored"])
        return answer

    async def stream_from_worker(self, request: Any, params: dict[str, Any], fmt: str,
                                 tally: RequestTally, deadline: float | None,
                                 events: bool = False) -> Any:
        """Queue for a worker (or the request's first chunk job), wait for the first chunk,
        then stream the rest (``events``: as server-sent events); the lease frees the
        workers on every path, a client that leaves first included."""
        pool, scheduler = self.backend.pool, self.backend.scheduler
        try:
            if scheduler is not None:
                lease: Any = ChunkLease(scheduler, scheduler.submit(params, tally.t0))
            else:
                lease = Lease(pool, await unless_gone(request.receive, pool.acquire(
                    None if deadline is None else deadline - time.monotonic())))
        except ClientGone:
            return _error(499, "client disconnected while queued", tally)
        except Overloaded as exc:
            return _error(429, str(exc), tally, headers={"Retry-After": str(exc.retry_after_s)})
        except DeadlineExceeded:
            return self.timed_out(tally)
        except RuntimeError as exc:
            return _error(503, str(exc), tally, outcome="rejected")  # shutting down
        handed = False  # to the response, which then owns the lease
        try:
            if scheduler is None:
                lease.worker.send(("synth", params))
            first = await unless_gone(request.receive, lease.next_message(deadline))
            handed = True
        except ClientGone:
            return _error(499, "client disconnected before the first audio", tally)
        except DeadlineExceeded:
            lease.gone()  # killed and replaced (chunks: stopped)
            return self.timed_out(tally)
        except WorkerDied as exc:
            lease.gone()
            return _error(500, f"{exc}; the worker was replaced; retry", tally)
        finally:
            if not handed:
                lease.abandon()  # no-op where the worker already ended
        if first[0] == "error":
            lease.finish()
            return _error(first[1], first[2], tally)
        body = relay(lease, first, header=wav_header(self.sample_rate) if fmt == "wav" else b"",
                     metrics=self.metrics, t0=tally.t0, deadline=deadline, done=tally.end)
        if fmt != "wav":
            body = encoded(body, fmt, self.sample_rate)
        return AudioStream(lease, sse(body) if events else body,
                           "text/event-stream" if events else MEDIA_TYPES[fmt],
                           {"X-Sample-Rate": str(output_rate(fmt, self.sample_rate))})


def create_app(cfg: ServeConfig) -> Any:
    """The FastAPI application for ``cfg`` (its backend starts in the background at start-up).

    Example:
        >>> app = create_app(ServeConfig(workers=2))  # doctest: +SKIP
    """
    from fastapi import FastAPI, Request
    from starlette.exceptions import HTTPException

    server = _Server(cfg)
    app = FastAPI(title="tts_kit", lifespan=server.lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.model_label = server.label
    app.add_middleware(CountRequests, metrics=server.metrics, path="/v1/audio/speech")
    app.add_middleware(KeyCheck, key=server.api_key)  # outside: no key, not counted
    app.add_middleware(HttpVersionCheck)  # the outermost: an HTTP/9.9 request goes no further
    app.exception_handler(HTTPException)(server.http_error)
    app.exception_handler(Exception)(server.bug)  # Starlette's plain-text 500 otherwise
    app.get("/voices")(server.list_voices)
    app.get("/v1/models")(server.models)
    app.get("/metrics")(server.prom)

    @app.get("/health")
    async def health(request: Request) -> Any:
        return await server.health(request)
    app.add_route("/v1/audio/speech", server.speech, methods=["POST"])

    return app


def run_server(cfg: ServeConfig) -> None:
    """Serve ``cfg`` with uvicorn until SIGTERM/SIGINT (which drain, then stop the workers)."""
    import uvicorn

    app = create_app(cfg)
    config = uvicorn.Config(app, host=cfg.host, port=cfg.port, log_level="warning",
                            access_log=False, timeout_graceful_shutdown=30,
                            lifespan="on", limit_concurrency=cfg.limit_concurrency,
                            timeout_keep_alive=5,
                            http=header_timeout_protocol(cfg.header_timeout_s))
    logging.getLogger("uvicorn.error").addFilter(OneLineCutShort())
    warning = exposure_warning(cfg.host, bool(cfg.api_key or current_settings().api_key))
    if warning:
        print(f"tts-kit serve: warning: {warning}", flush=True)
    print(f"tts-kit serve: {app.state.model_label}, {cfg.architecture} x{cfg.workers} on "
          f"http://{cfg.host}:{cfg.port} (warming up; GET /health says when ready)", flush=True)
    app.state.uvicorn = uvicorn.Server(config)  # the port it bound: `_Server.lifespan`
    run_uvicorn(app.state.uvicorn)


__all__ = ["OPENAI_VOICES", "RequestError", "check_body", "create_app", "request_params",
           "run_server", "voice_aliases", "wav_header"]
