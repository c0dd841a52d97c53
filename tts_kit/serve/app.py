"""The HTTP server: FastAPI on uvicorn, one backend per serving architecture.

Endpoints: ``POST /v1/audio/speech`` (the OpenAI-compatible body plus ``lang``,
``steps``, ``seed``; ``wav`` or ``pcm``, streamed with chunked transfer), ``GET /health``
(200 once warmed up, 503 before), ``GET /voices``, ``GET /metrics`` (Prometheus text).

Architectures (`ARCHITECTURES`), so their costs can be measured side by side:

- ``workers``: tts_kit's worker processes (`tts_kit.serve.worker.WorkerPool`): each owns
  a warmed-up engine; audio streamed as chunks are synthesised; real deadlines.
- ``threads``: one engine in the server process, requests in a thread executor; the
  whole WAV at the end; a deadline answers the client but the thread runs on.
- ``blocking``: one engine in the server process, synthesis inside the async handler:
  the event loop (health checks, other clients) waits for every synthesis.
- ``article``: the deployment article's pattern as written: a process pool of
  ``--workers`` processes whose function builds a new model for each request (the
  official ``supertonic`` package's ``TTS(auto_download=False)``, every graph loaded,
  ORT's default threads unless ``--threads`` is given; tts_kit's engine when the package
  is missing or the model is not a Supertonic bundle), ``asyncio.wait_for`` around it
  (the client gets the fallback, the computation goes on), the WAV from memory.

Example:
    >>> cfg = ServeConfig(workers=2, threads=1)
    >>> cfg.architecture, cfg.host
    ('workers', '127.0.0.1')
"""


import asyncio
import concurrent.futures as cf
import contextlib
import hmac
import json
import os
import struct
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.serve.worker import (
    RESTART_REASONS,
    DeadlineExceeded,
    Overloaded,
    WorkerConfig,
    WorkerDied,
    WorkerPool,
    request_params,
)

ARCHITECTURES = ("workers", "threads", "blocking", "article")
#: Environment variable holding the API key when ``--api-key`` is not given.
API_KEY_ENV = "TTS_KIT_API_KEY"
#: Histogram buckets (seconds) of latency and time to first audio.
BUCKETS = (0.025, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0)


@dataclass
class ServeConfig:
    """Everything `create_app` needs; the ``tts-kit serve`` flags map onto it one to one."""

    model: str | None = None
    preset: str = "supertonic-default"
    loading: str = "resident"
    threads: int | None = None
    workers: int = 1
    architecture: str = "workers"
    max_queue: int = 8
    timeout_s: float | None = None
    fallback_wav: str | None = None
    max_requests: int | None = None
    max_rss_mb: float | None = None
    api_key: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    max_chars: int = 4096
    max_body_bytes: int = 65536
    first_chunk_chars: int | None = 50
    max_chunk_chars: int | None = None
    order: str = "chunk"
    lang: str = "en"

    def check(self) -> None:
        """One-line ValueError for a setting that cannot work."""
        if self.architecture not in ARCHITECTURES:
            raise TtsKitError(f"unknown architecture '{self.architecture}'; use one of: "
                             f"{', '.join(ARCHITECTURES)}")
        if self.max_chunk_chars is not None and self.max_chunk_chars < 1:
            raise TtsKitError("--max-chunk-chars must be >= 1")
        for name in ("workers", "max_chars", "max_body_bytes"):
            if getattr(self, name) < 1:
                raise TtsKitError(f"--{name.replace('_', '-')} must be >= 1")
        if self.max_queue < 0:
            raise TtsKitError("--max-queue must be >= 0")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise TtsKitError("--timeout must be above 0 seconds")
        if self.threads is not None and self.threads < 1:
            raise TtsKitError("--threads must be >= 1")
        if self.fallback_wav:
            import soundfile as sf

            try:
                sf.info(self.fallback_wav)
            except Exception as exc:
                raise TtsKitError(f"--fallback-wav {self.fallback_wav}: not a readable audio "
                                 f"file ({str(exc).splitlines()[0]}); give a WAV file") from None

    def worker_config(self) -> WorkerConfig:
        return WorkerConfig(model=self.model, preset=self.preset, loading=self.loading,
                            threads=self.threads, order=self.order,
                            first_chunk_chars=self.first_chunk_chars,
                            max_chunk_chars=self.max_chunk_chars)

    def to_json(self) -> str:
        """This configuration as JSON: how it reaches a server in another process.

        Example:
            >>> ServeConfig.from_json(ServeConfig(workers=2).to_json()) == ServeConfig(workers=2)
            True
        """
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "ServeConfig":
        """The configuration `to_json` wrote; TtsKitError for bad JSON or an unknown field."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise TtsKitError(f"server configuration: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise TtsKitError("server configuration: expected a JSON object of settings")
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise TtsKitError(f"server configuration: unknown setting(s) {', '.join(unknown)}")
        return cls(**data)


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


def check_body(raw: bytes, cfg: ServeConfig, voices: list[str],
               languages: Sequence[str] = contract.LANGUAGES,
               sample_rate: int = contract.SAMPLE_RATE) -> dict[str, Any]:
    """The request body, checked; `RequestError` (400) naming the problem and the fix.

    ``voices`` and ``languages`` are the model's (a Piper voice speaks one language with its
    own speakers); without ``voice`` a request gets ``M1`` when the model has it, else the
    first voice; without ``lang`` the server's ``--lang`` when the model speaks it, else
    the model's first language.

    Example:
        >>> cfg = ServeConfig()
        >>> check_body(b'{"input": "Hi.", "voice": "M1"}', cfg, ["M1"])["steps"]
        5
        >>> check_body(b'{"input": ""}', cfg, ["M1"])
        Traceback (most recent call last):
        ...
        tts_kit.serve.app.RequestError: input is empty; give at least one word to synthesise
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


# -- metrics -------------------------------------------------------------------------


class Metrics:
    """The server's Prometheus metrics, in a registry of their own."""

    def __init__(self, pool_pids: Any):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("tts_kit_requests", "Speech requests by HTTP status",
                                ["status"], registry=r)
        self.latency = Histogram("tts_kit_request_seconds", "Arrival to last byte of a "
                                 "successful speech request", buckets=BUCKETS, registry=r)
        self.ttfa = Histogram("tts_kit_time_to_first_audio_seconds", "Arrival to the first "
                              "audio bytes of a successful speech request", buckets=BUCKETS,
                              registry=r)
        self.queue = Gauge("tts_kit_queue_depth", "Requests waiting for a worker", registry=r)
        self.in_flight = Gauge("tts_kit_requests_in_flight", "Requests being served",
                               registry=r)
        self.restarts = Counter("tts_kit_worker_restarts", "Workers replaced, by reason",
                                ["reason"], registry=r)
        for reason in RESTART_REASONS:
            self.restarts.labels(reason)
        self.timeouts = Counter("tts_kit_timeouts", "Requests past their deadline", registry=r)
        self.audio = Counter("tts_kit_audio_seconds", "Seconds of audio sent", registry=r)
        for status in ("200", "400", "429", "500", "503"):
            self.requests.labels(status)
        r.register(_PoolCollector(pool_pids))

    def text(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class _PoolCollector:
    """Per-process RSS and PSS, pool totals and CPU seconds, read at each scrape."""

    def __init__(self, pool_pids: Any):
        self.pool_pids = pool_pids  # () -> [(label, pid)]

    def describe(self) -> list:
        return []

    def collect(self):
        import psutil
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        from tts_kit.core.procfacts import pss_mb, rss_mb

        rss = GaugeMetricFamily("tts_kit_process_rss_bytes", "RSS of each serving process",
                                labels=["process", "pid"])
        pss = GaugeMetricFamily("tts_kit_process_pss_bytes", "PSS of each serving process "
                                "(shared pages divided among their sharers)",
                                labels=["process", "pid"])
        tot_rss = tot_pss = 0.0
        for label, pid in self.pool_pids():
            r, p = rss_mb(pid), pss_mb(pid)
            if r is not None:
                rss.add_metric([label, str(pid)], r * 2**20)
                tot_rss += r
            if p is not None:
                pss.add_metric([label, str(pid)], p * 2**20)
                tot_pss += p
        yield rss
        yield pss
        yield GaugeMetricFamily("tts_kit_pool_rss_bytes", "Summed RSS of the server and its "
                                "workers (shared pages counted once per process)",
                                value=tot_rss * 2**20)
        yield GaugeMetricFamily("tts_kit_pool_pss_bytes", "Summed PSS of the server and its "
                                "workers (what the pool really holds)", value=tot_pss * 2**20)
        me = psutil.Process()
        t = me.cpu_times()
        cpu = t.user + t.system + t.children_user + t.children_system  # reaped children too
        for child in me.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                ct = child.cpu_times()
                cpu += ct.user + ct.system
        yield CounterMetricFamily("tts_kit_pool_cpu_seconds", "CPU seconds of the server and "
                                  "all its workers, live and gone", value=cpu)


# -- backends ------------------------------------------------------------------------


class Backend:
    """How an architecture turns a checked request into audio."""

    streams = False

    def __init__(self, cfg: ServeConfig, metrics_ref: list):
        self.cfg = cfg
        self.ready = False
        self.error: str | None = None
        self._metrics_ref = metrics_ref

    @property
    def metrics(self) -> Metrics:
        return self._metrics_ref[0]

    async def start(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    async def stop(self) -> None:
        pass

    def processes(self) -> list[tuple[str, int]]:
        import psutil

        me = psutil.Process()
        out = [("server", me.pid)]
        with contextlib.suppress(psutil.Error):
            out += [("child", c.pid) for c in me.children(recursive=True)]
        return out

    def describe(self) -> dict[str, Any]:
        return {}


class WorkersBackend(Backend):
    """tts_kit's worker processes: streamed audio, real deadlines."""

    streams = True

    async def start(self) -> None:
        def restarted(reason: str) -> None:
            self.metrics.restarts.labels(reason).inc()

        self.pool = WorkerPool(self.cfg.worker_config(), self.cfg.workers, self.cfg.max_queue,
                               self.cfg.max_requests, self.cfg.max_rss_mb, restarted)
        self.metrics.queue.set_function(lambda: self.pool.queue_depth)
        await self.pool.start()
        self.ready = True

    async def stop(self) -> None:
        if hasattr(self, "pool"):
            await self.pool.stop()

    def processes(self) -> list[tuple[str, int]]:
        out = [("server", os.getpid())]
        if hasattr(self, "pool"):
            out += [(f"worker-{w['id']}", w["pid"]) for w in self.pool.describe()]
        return out

    def describe(self) -> dict[str, Any]:
        return {"workers": self.pool.describe() if hasattr(self, "pool") else []}


class InProcessBackend(Backend):
    """One engine in the server process: ``blocking`` (in the handler) or ``threads``."""

    def __init__(self, cfg: ServeConfig, metrics_ref: list):
        super().__init__(cfg, metrics_ref)
        self.in_flight = 0

    async def start(self) -> None:
        def build():
            engine = self.cfg.worker_config().build_engine()
            engine.synthesize("Warming up the model, once.", steps=2, seed=0)
            return engine

        self.engine = await asyncio.to_thread(build)
        self.executor = cf.ThreadPoolExecutor(self.cfg.workers, thread_name_prefix="tts")
        self.ready = True

    async def stop(self) -> None:
        if hasattr(self, "executor"):
            self.executor.shutdown(wait=True, cancel_futures=True)

    def synth_wav(self, params: dict[str, Any]) -> tuple[bytes, float]:
        res = self.engine.synthesize(max_chunk_chars=self.cfg.max_chunk_chars, **params)
        return res.wav_bytes(), res.duration_s


class ArticleBackend(Backend):
    """The article's pattern: a process pool building a new engine per request."""

    async def start(self) -> None:
        import multiprocessing as mp

        self.executor = cf.ProcessPoolExecutor(self.cfg.workers,
                                               mp_context=mp.get_context("spawn"))
        # Start the pool's processes (imports), as the article's server does at start-up.
        wc = self.cfg.worker_config()
        await asyncio.gather(*(asyncio.get_running_loop().run_in_executor(
            self.executor, _article_warm, wc) for _ in range(self.cfg.workers)))
        self.ready = True

    async def stop(self) -> None:
        if hasattr(self, "executor"):
            self.executor.shutdown(wait=True, cancel_futures=True)


def _article_warm(wc: WorkerConfig) -> int:
    import tts_kit.models.supertonic.engine  # noqa: F401  (the imports, not the model: the article loads per call)

    return os.getpid()


def article_synthesize(wc: WorkerConfig, params: dict[str, Any]) -> tuple[bytes, float]:
    """The article's pool function: a new model for each request, the WAV in memory.

    As the article writes it: ``TTS(auto_download=False)`` of the official ``supertonic``
    package (every graph loaded, its own session options: ORT's default threads unless
    the configuration sets ``threads``), the voice style read, then ``synthesize`` on the
    text tts_kit normalised (the article normalises in the handler). Without the package,
    or for another model family, tts_kit's engine is built per request instead.
    """
    tts = _official_tts(wc)
    if tts is None:
        engine = wc.build_engine()
        res = engine.synthesize(**params)
        return res.wav_bytes(), res.duration_s
    import io

    import numpy as np
    import soundfile as sf

    from tts_kit.text import normalize

    style = tts.get_voice_style(params["voice"])
    text = normalize(params["text"], lang=params["lang"])
    if params.get("seed") is not None:  # the package draws its noise from numpy's global
        np.random.seed(params["seed"] % 2**32)
    wav, dur = tts.synthesize(text, voice_style=style, total_steps=params["steps"],
                              speed=params["speed"], lang=params["lang"])
    buf = io.BytesIO()
    sf.write(buf, np.asarray(wav, dtype=np.float32).reshape(-1), tts.sample_rate,
             format="WAV", subtype="PCM_16")
    return buf.getvalue(), float(np.sum(dur))


def _official_tts(wc: WorkerConfig) -> Any:
    """The official package's new ``TTS`` on the configuration's bundle, or None."""
    from tts_kit.models.family import is_piper
    from tts_kit.models.supertonic.bundle import resolve_model_dir

    if is_piper(wc.model):
        return None
    try:
        import supertonic
    except ImportError:
        return None
    root, _ = resolve_model_dir(wc.model)
    return supertonic.TTS(model_dir=str(root), auto_download=False,
                          intra_op_num_threads=wc.threads,
                          inter_op_num_threads=None if wc.threads is None else 1)


BACKENDS = {"workers": WorkersBackend, "threads": InProcessBackend,
            "blocking": InProcessBackend, "article": ArticleBackend}


# -- the app -------------------------------------------------------------------------


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Any:
    from fastapi.responses import Response

    body = json.dumps({"error": message}, ensure_ascii=False) + "\n"
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def create_app(cfg: ServeConfig) -> Any:
    """The FastAPI application for ``cfg`` (its backend starts in the background at start-up).

    Example:
        >>> app = create_app(ServeConfig(architecture="threads"))  # doctest: +SKIP
    """
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response, StreamingResponse

    from tts_kit.models.family import model_label, open_model

    cfg.check()
    bundle = open_model(cfg.model)  # a Supertonic bundle or a Piper voice
    voices = list(bundle.voices)
    languages = [bundle.language] if bundle.family == "piper" else list(contract.LANGUAGES)
    sample_rate = bundle.sample_rate
    fallback = open(cfg.fallback_wav, "rb").read() if cfg.fallback_wav else None
    api_key = (cfg.api_key or os.environ.get(API_KEY_ENV) or "").encode()
    metrics_ref: list = [None]
    backend = BACKENDS[cfg.architecture](cfg, metrics_ref)
    metrics_ref[0] = Metrics(backend.processes)
    metrics = metrics_ref[0]
    state: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async def start() -> None:
            try:
                await backend.start()
            except Exception as exc:
                backend.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                print(f"tts-kit serve: error: {backend.error}", flush=True)
                os.kill(os.getpid(), 15)  # nothing to serve: stop like on SIGTERM

        state["start"] = asyncio.create_task(start())
        yield
        state["start"].cancel()
        await backend.stop()

    app = FastAPI(title="tts_kit", lifespan=lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.backend = backend
    app.state.metrics = metrics
    app.state.model_label = model_label(bundle)

    @app.middleware("http")
    async def auth(request: Request, call_next: Any) -> Any:
        if api_key and request.url.path != "/health":
            given = request.headers.get("authorization", "")
            token = given[7:] if given.lower().startswith("bearer ") else ""
            # Constant time: the comparison takes as long however much of the key matches.
            if not hmac.compare_digest(token.encode(), api_key):
                return _error(401, "missing or wrong API key; send Authorization: Bearer KEY",
                              {"WWW-Authenticate": "Bearer"})
        return await call_next(request)

    @app.exception_handler(404)
    async def not_found(request: Request, exc: Exception) -> Any:
        return _error(404, f"no such endpoint {request.url.path[:80]}; use POST "
                      "/v1/audio/speech, GET /health, /voices or /metrics")

    @app.exception_handler(405)
    async def bad_method(request: Request, exc: Exception) -> Any:
        return _error(405, f"{request.method} is not allowed on {request.url.path[:80]}")

    @app.get("/health")
    async def health() -> Any:
        body = {"status": "ready" if backend.ready else "starting",
                "architecture": cfg.architecture, **backend.describe()}
        if backend.error:
            body.update(status="failed", error=backend.error)
        return JSONResponse(body, status_code=200 if backend.ready else 503)

    @app.get("/voices")
    async def list_voices() -> Any:
        return {"voices": voices, "languages": languages,
                "sample_rate": sample_rate}

    @app.get("/metrics")
    async def prom() -> Any:
        from prometheus_client import CONTENT_TYPE_LATEST

        return Response(metrics.text(), media_type=CONTENT_TYPE_LATEST)

    async def read_body(request: Request) -> bytes:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > cfg.max_body_bytes:
            raise RequestError(413, f"body of {int(length):,} bytes is larger than "
                               f"{cfg.max_body_bytes:,}; send less text per request")
        raw = b""
        async for part in request.stream():
            raw += part
            if len(raw) > cfg.max_body_bytes:
                raise RequestError(413, f"body larger than {cfg.max_body_bytes:,} bytes; "
                                   "send less text per request")
        return raw

    def done(status: int) -> None:
        metrics.requests.labels(str(status)).inc()

    def timed_out() -> Any:
        metrics.timeouts.inc()
        if fallback is not None:
            done(200)
            return Response(fallback, media_type="audio/wav",
                            headers={"X-TTS-Fallback": "timeout"})
        done(503)
        return _error(503, f"synthesis took longer than the {cfg.timeout_s:g} s timeout; "
                      "retry with a shorter input")

    @app.post("/v1/audio/speech")
    async def speech(request: Request) -> Any:
        t0 = time.monotonic()
        deadline = None if cfg.timeout_s is None else t0 + cfg.timeout_s
        if not backend.ready:
            done(503)
            return _error(503, "the server is warming up; retry when GET /health says ready",
                          {"Retry-After": "1"})
        try:
            body = check_body(await read_body(request), cfg, voices, languages, sample_rate)
        except RequestError as exc:
            done(exc.status)
            return _error(exc.status, str(exc))
        params = request_params(body)
        fmt = body["response_format"]
        metrics.in_flight.inc()
        try:
            if isinstance(backend, WorkersBackend):
                return await _stream_from_worker(backend, params, fmt, t0, deadline)
            return await _whole(backend, params, fmt, t0)
        finally:
            metrics.in_flight.dec()

    async def _stream_from_worker(backend: WorkersBackend, params: dict[str, Any], fmt: str,
                                  t0: float, deadline: float | None) -> Any:
        pool = backend.pool
        try:
            w = await pool.acquire(None if deadline is None else deadline - time.monotonic())
        except Overloaded as exc:
            done(429)
            return _error(429, str(exc), {"Retry-After": str(exc.retry_after_s)})
        except DeadlineExceeded:
            return timed_out()
        except RuntimeError as exc:
            done(503)
            return _error(503, str(exc))
        w.send(("synth", params))
        try:
            first = await pool.next_message(w, deadline)
            if first[0] == "error":
                pool.release(w)
                done(first[1])
                return _error(first[1], first[2])
            msg = await pool.next_message(w, deadline)  # the first chunk
        except DeadlineExceeded:
            return timed_out()
        except WorkerDied as exc:
            done(500)
            return _error(500, f"{exc}; the worker was replaced; retry")
        if msg[0] == "error":
            pool.release(w)
            done(msg[1])
            return _error(msg[1], msg[2])

        async def body() -> AsyncIterator[bytes]:
            nonlocal msg
            finished = False
            ended = False  # the worker sent its last message (done or error): free again
            try:
                if fmt == "wav":
                    yield wav_header(sample_rate)
                first_audio = True
                while True:
                    if msg[0] == "chunk":
                        yield msg[1]
                        metrics.audio.inc(msg[2])
                        if first_audio:
                            metrics.ttfa.observe(time.monotonic() - t0)
                            first_audio = False
                    elif msg[0] == "done":
                        finished = ended = True
                        break
                    else:  # an error after the first chunk: the response is cut short
                        ended = True
                        raise RuntimeError(str(msg[-1]))
                    msg = await pool.next_message(w, deadline)
            except DeadlineExceeded:
                metrics.timeouts.inc()
                done(503)
                return  # headers are gone: the stream ends short (the worker was killed)
            except (WorkerDied, RuntimeError):
                done(500)
                return
            finally:
                if finished:
                    latency = time.monotonic() - t0
                    metrics.latency.observe(latency)
                    done(200)
                    pool.release(w, latency)
                elif ended:
                    pool.release(w)
                elif w.state == "busy":  # the client went away: drain, then reuse it
                    asyncio.get_running_loop().create_task(_drain(pool, w, deadline))

        media = "audio/wav" if fmt == "wav" else "audio/L16"
        return StreamingResponse(body(), media_type=media,
                                 headers={"X-Sample-Rate": str(sample_rate)})

    async def _whole(backend: Backend, params: dict[str, Any], fmt: str, t0: float) -> Any:
        slots = cfg.workers + cfg.max_queue
        busy = state.setdefault("busy", 0)
        if busy >= slots:
            done(429)
            return _error(429, "server busy: the queue is full; retry after 1 s",
                          {"Retry-After": "1"})
        state["busy"] = busy + 1
        metrics.queue.set(max(0, state["busy"] - cfg.workers))
        try:
            loop = asyncio.get_running_loop()
            if cfg.architecture == "blocking":
                wav, seconds = backend.synth_wav(params)  # the event loop waits here
            else:
                if cfg.architecture == "threads":
                    fut = loop.run_in_executor(backend.executor, backend.synth_wav, params)
                else:
                    fut = loop.run_in_executor(backend.executor, article_synthesize,
                                               cfg.worker_config(), params)
                # As in the article: the client gets the fallback, the work goes on.
                wav, seconds = await asyncio.wait_for(fut, cfg.timeout_s)
        except asyncio.TimeoutError:
            return timed_out()
        except ValueError as exc:
            done(400)
            return _error(400, str(exc).splitlines()[0])
        except Exception as exc:
            done(500)
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return _error(500, f"synthesis failed: {why}")
        finally:
            state["busy"] -= 1
            metrics.queue.set(max(0, state["busy"] - cfg.workers))
        if fmt == "pcm":
            wav = wav[44:]
        latency = time.monotonic() - t0
        metrics.latency.observe(latency)
        metrics.ttfa.observe(latency)
        metrics.audio.inc(seconds)
        done(200)
        return Response(wav, media_type="audio/wav" if fmt == "wav" else "audio/L16",
                        headers={"X-Sample-Rate": str(sample_rate)})

    return app


async def _drain(pool: WorkerPool, w: Any, deadline: float | None) -> None:
    """Read a worker's remaining messages of an abandoned request, then reuse it."""
    with contextlib.suppress(DeadlineExceeded, WorkerDied):
        while True:
            msg = await pool.next_message(w, deadline)
            if msg[0] in ("done", "error"):
                pool.release(w)
                return


def run_server(cfg: ServeConfig) -> None:
    """Serve ``cfg`` with uvicorn until SIGTERM/SIGINT (which drain, then stop the workers)."""
    import uvicorn

    app = create_app(cfg)
    config = uvicorn.Config(app, host=cfg.host, port=cfg.port, log_level="warning",
                            access_log=False, timeout_graceful_shutdown=30,
                            lifespan="on")
    print(f"tts-kit serve: {app.state.model_label}, {cfg.architecture} x{cfg.workers} on "
          f"http://{cfg.host}:{cfg.port} (warming up; GET /health says when ready)", flush=True)
    uvicorn.Server(config).run()


def config_dict(cfg: ServeConfig) -> dict[str, Any]:
    """The configuration as a JSON-ready dict, the API key left out."""
    d = asdict(cfg)
    d["api_key"] = bool(d["api_key"])
    return d


__all__ = ["ARCHITECTURES", "API_KEY_ENV", "ServeConfig", "RequestError", "check_body",
           "create_app", "run_server", "wav_header", "config_dict", "article_synthesize"]
