"""The serving architectures' backends: how a checked request becomes audio under
``workers``, ``threads``, ``blocking`` and ``article`` (`tts_kit.serve.app` says what each
one is).

Example:
    >>> sorted(BACKENDS)
    ['article', 'blocking', 'threads', 'workers']
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import os
from typing import TYPE_CHECKING, Any

from tts_kit.serve.chunked import SCHEDULERS, ChunkScheduler
from tts_kit.serve.metrics import Metrics
from tts_kit.serve.worker import WorkerConfig, WorkerPool

if TYPE_CHECKING:
    from tts_kit.serve.config import ServeConfig


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
    scheduler: ChunkScheduler | None = None

    async def start(self) -> None:
        def restarted(reason: str) -> None:
            self.metrics.restarts.labels(reason).inc()

        self.pool = WorkerPool(self.cfg.worker_config(), self.cfg.workers,
                               self.cfg.max_queue, self.cfg.max_requests, self.cfg.max_rss_mb,
                               restarted)
        self.scheduler = self._scheduler()
        sched = self.scheduler
        self.metrics.queue.set_function(
            (lambda: sched.waiting) if sched else (lambda: self.pool.queue_depth))
        await self.pool.start()
        self.ready = True

    def _scheduler(self) -> ChunkScheduler | None:
        """Chunk scheduling's job queue (`tts_kit.serve.chunked.SCHEDULERS`), when asked for
        and the model renders a chunk on its own (its capabilities say); else None (request
        scheduling, with a warning)."""
        if self.cfg.scheduling == "request":
            return None
        from tts_kit.models.resolve import open_model

        if not open_model(self.cfg.model).capabilities.chunk_jobs:
            print("tts-kit serve: warning: this model cannot render a chunk on its own; "
                  "scheduling whole requests", flush=True)
            return None
        return SCHEDULERS[self.cfg.scheduling](self.pool)

    async def stop(self) -> None:
        if hasattr(self, "pool"):
            await self.pool.stop()

    def processes(self) -> list[tuple[str, int]]:
        out = [("server", os.getpid())]
        if hasattr(self, "pool"):
            out += [(f"worker-{w['id']}", w["pid"]) for w in self.pool.describe()]
        return out

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workers": self.pool.describe() if hasattr(self, "pool") else []}
        if self.scheduler is not None:  # chunk scheduling: requests held, jobs queued
            out.update(requests=len(self.scheduler.requests), jobs=len(self.scheduler.jobs),
                       **self.scheduler.describe())
        return out


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


def article_synthesize(wc: WorkerConfig, params: dict[str, Any],
                       official: bool | None = None) -> tuple[bytes, float]:
    """The article's pool function: a new model for each request, the WAV in memory.

    As the article writes it: ``TTS(auto_download=False)`` of the official ``supertonic``
    package (every graph loaded, its own session options: ORT's default threads unless
    the configuration sets ``threads``), the voice style read, then ``synthesize`` on the
    text tts_kit normalised (the article normalises in the handler). Without the package,
    or for a model the package does not run, tts_kit's engine is built per request instead.
    ``official``: as `_official_tts` takes it (the server passes what it knows).
    """
    tts = _official_tts(wc, official)
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


def _official_tts(wc: WorkerConfig, official: bool | None = None) -> Any:
    """The official package's new ``TTS`` on the configuration's model, or None (no package,
    or a model the package does not run). ``official``: whether the model has an official
    reference implementation (`tts_kit.models.base.Capabilities.official_reference`), as
    the server knows it; None: open the model and ask it.
    """
    from tts_kit.models.resolve import open_model

    if official is None:
        official = open_model(wc.model).capabilities.official_reference
    if not official:
        return None
    try:
        import supertonic
    except ImportError:
        return None
    from tts_kit.models.supertonic.bundle import resolve_model_dir

    root, _ = resolve_model_dir(wc.model)
    return supertonic.TTS(model_dir=str(root), auto_download=False,
                          intra_op_num_threads=wc.threads,
                          inter_op_num_threads=None if wc.threads is None else 1)


BACKENDS = {"workers": WorkersBackend, "threads": InProcessBackend,
            "blocking": InProcessBackend, "article": ArticleBackend}
