"""The serving architectures tts_kit's workers were measured against (a lab experiment,
loaded by `lab.serve_lab.enable("lab.backends")`; bench/serving.py runs them):

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

Each registers in `tts_kit.serve.backends.BACKENDS` and answers a request whole
(`WholeBackend.answer`). Not in the package: the workers served more, sooner, in less
memory than all three (docs/benchmarks.md, "Serving").

Example:
    >>> sorted(BACKENDS)
    ['article', 'blocking', 'threads', 'workers']
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import dataclasses
import os
import time
from typing import Any

from tts_kit.serve.backends import BACKENDS, Backend
from tts_kit.serve.guard import error_json
from tts_kit.serve.streaming import MEDIA_TYPES, Encoder, output_rate, sse_event
from tts_kit.serve.worker import WorkerConfig


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Any:
    from fastapi.responses import Response

    return Response(error_json(status, message), status_code=status,
                    media_type="application/json", headers=headers)


class WholeBackend(Backend):
    """A backend that answers a request whole, at the end; the engine's threads are
    ORT's default unless ``threads`` is set (the workers' share of the cores is theirs)."""

    def __init__(self, cfg: Any):
        super().__init__(cfg)
        self.busy = 0  # requests served in this process, queued ones included

    def worker_config(self) -> WorkerConfig:
        return dataclasses.replace(self.cfg.worker_config(), threads=self.cfg.threads)

    def processes(self) -> list[tuple[str, int]]:
        import psutil

        out = super().processes()
        with contextlib.suppress(psutil.Error):
            out += [("child", c.pid) for c in psutil.Process().children(recursive=True)]
        return out

    async def stop(self) -> None:
        if hasattr(self, "executor"):
            self.executor.shutdown(wait=True, cancel_futures=True)

    async def synthesize(self, params: dict[str, Any]) -> tuple[bytes, float]:
        raise NotImplementedError  # pragma: no cover - overridden

    async def answer(self, server: Any, params: dict[str, Any], fmt: str, tally: Any,
                     events: bool = False) -> Any:
        """The response to a checked request (``server``: the app's `_Server`; ``events``:
        as OpenAI's ``stream_format=sse``)."""
        from fastapi.responses import Response

        cfg, metrics = self.cfg, self.metrics
        if self.busy >= cfg.workers + cfg.max_queue:
            tally.end(429)
            return _error(429, "server busy: the queue is full; retry after 1 s",
                          {"Retry-After": "1"})
        self.busy += 1
        metrics.queue.set(max(0, self.busy - cfg.workers))
        try:
            wav, seconds = await self.synthesize(params)
        except asyncio.TimeoutError:
            return server.timed_out(tally)
        except ValueError as exc:
            tally.end(400)
            return _error(400, str(exc).splitlines()[0])
        except Exception as exc:
            tally.end(500)
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return _error(500, f"synthesis failed: {why}")
        finally:
            self.busy -= 1
            metrics.queue.set(max(0, self.busy - cfg.workers))
        if fmt != "wav":
            enc = Encoder(fmt, server.sample_rate)
            wav = enc.feed(wav[44:]) + enc.close()
        latency = time.monotonic() - tally.t0
        metrics.latency.observe(latency)
        metrics.ttfa.observe(latency)
        metrics.audio.inc(seconds)
        tally.end(200)
        if events:
            wav = sse_event(wav) + sse_event(None)
        return Response(wav, media_type="text/event-stream" if events else MEDIA_TYPES[fmt],
                        headers={"X-Sample-Rate": str(output_rate(fmt, server.sample_rate))})


class InProcessBackend(WholeBackend):
    """One engine in the server process: ``blocking`` (in the handler) or ``threads``."""

    async def start(self) -> None:
        def build():
            engine = self.worker_config().build_engine()
            engine.synthesize("Warming up the model, once.", steps=2, seed=0)
            return engine

        self.engine = await asyncio.to_thread(build)
        self.executor = cf.ThreadPoolExecutor(self.cfg.workers, thread_name_prefix="tts")
        self.ready = True

    def synth_wav(self, params: dict[str, Any]) -> tuple[bytes, float]:
        res = self.engine.synthesize(max_chunk_chars=self.cfg.max_chunk_chars, **params)
        return res.wav_bytes(), res.duration_s

    async def synthesize(self, params: dict[str, Any]) -> tuple[bytes, float]:
        if self.cfg.architecture == "blocking":
            return self.synth_wav(params)  # the event loop waits here
        fut = asyncio.get_running_loop().run_in_executor(self.executor, self.synth_wav, params)
        return await asyncio.wait_for(fut, self.cfg.timeout_s)


class ArticleBackend(WholeBackend):
    """The article's pattern: a process pool building a new engine per request."""

    def worker_config(self) -> WorkerConfig:
        return dataclasses.replace(super().worker_config(), spinning=None)  # the article's own

    async def start(self) -> None:
        import multiprocessing as mp

        from tts_kit.models.resolve import open_model

        self.official = open_model(self.cfg.model).capabilities.official_reference
        self.executor = cf.ProcessPoolExecutor(self.cfg.workers,
                                               mp_context=mp.get_context("spawn"))
        # Start the pool's processes (imports), as the article's server does at start-up.
        await asyncio.gather(*(asyncio.get_running_loop().run_in_executor(
            self.executor, _article_warm) for _ in range(self.cfg.workers)))
        self.ready = True

    async def synthesize(self, params: dict[str, Any]) -> tuple[bytes, float]:
        fut = asyncio.get_running_loop().run_in_executor(
            self.executor, article_synthesize, self.worker_config(), params, self.official)
        # As in the article: the client gets the fallback, the work goes on.
        return await asyncio.wait_for(fut, self.cfg.timeout_s)


def _article_warm() -> int:
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
    ``official``: as `official_tts` takes it (the server passes what it knows).
    """
    tts = official_tts(wc, official)
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


def official_tts(wc: WorkerConfig, official: bool | None = None) -> Any:
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


BACKENDS.update(threads=InProcessBackend, blocking=InProcessBackend, article=ArticleBackend)
