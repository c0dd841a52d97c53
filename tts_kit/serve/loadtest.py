"""``tts-kit loadtest``: closed-loop (fixed clients) or open-loop (Poisson arrivals) levels
against a speech server; per level its latency, throughput, errors and the server's CPU and
memory from ``/metrics`` (less what the scrapes cost, `SCRAPE_CPU_KEY`)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.core.textsafe import term_safe
from tts_kit.tuning import records as rk

#: The table of a load test (`tts_kit.tuning.records` keys).
LOAD_KEYS: tuple[str, ...] = (
    "mode", "concurrency", "rate", "requests", "ok", "errors", "timeouts", "rejected",
    rk.RPS, rk.AUDIO_RATE, rk.TTFA_P50_MS, rk.TTFA_P95_MS, rk.TTFA_P99_MS, rk.P50_MS, rk.P95_MS,
    rk.P99_MS, rk.CPU_PERCENT, rk.POOL_RSS_MB, rk.POOL_PSS_MB,
)
#: The server's counter of the CPU its /metrics scrapes cost (`tts_kit.serve.metrics`).
SCRAPE_CPU_KEY = "tts_kit_metrics_scrape_cpu_seconds_total"
#: The default request: three sentences, as in the benchmark's target (214 characters: one
#: chunk at the 300-character limit, which serve's first-chunk cut (50) splits into 30 + 183).
DEFAULT_TEXT = ("Supertonic runs on the device, so nothing you type ever leaves the machine. "
                "The quick brown fox jumps over the lazy dog. "
                "On a small server, memory decides what fits, and latency decides whether "
                "anyone waits for it.")
WAV_HEADER_BYTES = 44


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100, linear interpolation); None for no values.

    Example:
        >>> percentile([1, 2, 3, 4], 50), percentile([], 95)
        (2.5, None)
    """
    import numpy as np

    return float(np.percentile(values, q)) if len(values) else None


def _auth(api_key: str | None) -> dict[str, Any]:
    """The Authorization header as UTF-8 bytes (httpx would encode a str as ASCII and fail)."""
    return {"Authorization": b"Bearer " + api_key.encode()} if api_key else {}


@dataclass
class Outcome:
    """One request as the client saw it."""

    status: int  #: 0: no answer (connection error or client timeout)
    kind: str  #: ``ok``, ``error``, ``timeout`` or ``rejected``
    start: float
    ttfa_s: float | None = None
    latency_s: float | None = None
    audio_s: float = 0.0
    reason: str = ""  #: what the server said when it did not answer 200 (one short line)


def _read_metrics(text: str, labelled: bool = False) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if not math.isfinite(s.value) or s.value < 0:  # no gauge of ours is: garbage
                continue
            if not s.labels:
                out[s.name] = s.value
            elif labelled:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                out[f"{s.name}{{{labels}}}"] = s.value
    return out


@dataclass
class Spoken:
    """One request's answer: status, body, headers, time to first audio and in total."""

    status: int
    content: bytes
    headers: dict[str, str]
    ttfa_s: float | None
    total_s: float

    def json(self) -> Any:
        return json.loads(self.content)


def speak(url: str, text: str, api_key: str | None = None, timeout_s: float = 120.0,
          **body: Any) -> Spoken:
    """Send one ``POST /v1/audio/speech`` and time it as it streams in.

    Example:
        >>> speak("http://127.0.0.1:8000", "Hello there.", steps=2).status  # doctest: +SKIP
        200
    """
    import httpx

    body = {"response_format": "wav", **body}  # the server's default is mp3
    skip = WAV_HEADER_BYTES if body["response_format"] == "wav" else 0
    t0 = time.monotonic()
    ttfa = None
    parts = []
    with httpx.stream("POST", f"{url.rstrip('/')}/v1/audio/speech", json={"input": text, **body},
                      headers=_auth(api_key), timeout=timeout_s) as r:
        size = 0
        for part in r.iter_raw():
            parts.append(part)
            size += len(part)
            if ttfa is None and r.status_code == 200 and size > skip:
                ttfa = time.monotonic() - t0
        return Spoken(r.status_code, b"".join(parts), dict(r.headers), ttfa,
                      time.monotonic() - t0)


def read_metrics(url: str, api_key: str | None = None) -> dict[str, float]:
    """A server's ``/metrics`` as ``{name or name{labels}: value}``.

    Example:
        >>> read_metrics("http://127.0.0.1:8000")["tts_kit_pool_pss_bytes"]  # doctest: +SKIP
        412090368.0
    """
    import httpx

    r = httpx.get(f"{url.rstrip('/')}/metrics", headers=_auth(api_key), timeout=10.0)
    r.raise_for_status()
    return _read_metrics(r.text, labelled=True)


@dataclass
class LoadResult:
    """The records of a load test, one per level, and the server samples."""

    url: str
    records: list[dict[str, Any]] = field(default_factory=list)

    def table(self, keys: Sequence[str] = LOAD_KEYS) -> str:
        """The levels as a text table."""
        return rk.table(self.records, [k for k in keys if any(k in r for r in self.records)])

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "records": self.records}


class _Sampler:
    """Reads the server's pool gauges every ``every_s`` while a level runs."""

    def __init__(self, client: Any, url: str, every_s: float):
        self.client, self.url, self.every_s = client, url, every_s
        self.samples: list[dict[str, float]] = []

    async def scrape(self) -> dict[str, float] | None:
        try:
            r = await self.client.get(f"{self.url}/metrics", timeout=5.0)
            if r.status_code != 200:
                return None
            m = _read_metrics(r.text)
        except Exception:  # a busy (blocking) server may not answer: a gap, not a failure
            return None
        m["t"] = time.monotonic()
        self.samples.append(m)
        return m

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.scrape()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.every_s)


async def _one(client: Any, url: str, body: dict[str, Any], timeout_s: float,
               headers: dict[str, Any]) -> Outcome:
    import httpx

    t0 = time.monotonic()
    try:
        return await asyncio.wait_for(_send(client, url, body, headers, t0), timeout_s)
    except (asyncio.TimeoutError, httpx.TimeoutException):
        return Outcome(0, "timeout", t0, latency_s=time.monotonic() - t0)
    except httpx.HTTPError:
        return Outcome(0, "error", t0, latency_s=time.monotonic() - t0)


async def _send(client: Any, url: str, body: dict[str, Any], headers: dict[str, Any],
                t0: float) -> Outcome:
    """`_one`'s request, without its deadline."""
    ttfa = None
    size = 0
    body = {"response_format": "wav", **body}  # 16-bit PCM to count (the default is mp3)
    skip = WAV_HEADER_BYTES if body["response_format"] == "wav" else 0
    async with client.stream("POST", f"{url}/v1/audio/speech", json=body,
                             headers=headers) as r:
        if r.status_code != 200:
            said = await r.aread()
            kind = ("rejected" if r.status_code == 429 else
                    "timeout" if r.status_code == 503 else "error")
            return Outcome(r.status_code, kind, t0, latency_s=time.monotonic() - t0,
                           reason=_reason(r.status_code, said))
        hz = r.headers.get("x-sample-rate") or str(contract.SAMPLE_RATE)
        ok = hz.isascii() and hz.isdigit() and len(hz) < 8
        rate = int(hz) if ok and 0 < int(hz) <= 10**6 else 0
        if not rate:  # its audio cannot be measured: an error, said once
            return Outcome(200, "error", t0, latency_s=time.monotonic() - t0,
                           reason=f"X-Sample-Rate {term_safe(hz)[:40]!r}: not a "
                           "sample rate (whole Hz); is this a tts-kit server?")
        async for part in r.aiter_raw():
            size += len(part)
            if ttfa is None and size > skip:
                ttfa = time.monotonic() - t0
    latency = time.monotonic() - t0
    if "x-tts-fallback" in r.headers:
        return Outcome(200, "timeout", t0, ttfa, latency)
    audio = max(0, size - skip) / 2 / rate  # 16-bit mono at the model's rate
    return Outcome(200, "ok", t0, ttfa, latency, audio)


def _reason(status: int, body: bytes) -> str:
    """``HTTP 400: unknown voice 'Q7'``: the status and the server's message, one short line.

    Example:
        >>> _reason(400, b'{"error": {"message": "unknown voice"}}')
        'HTTP 400: unknown voice'
    """
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
        err = data.get("error", data) if isinstance(data, dict) else data
        text = str(err.get("message", err.get("detail", err)) if isinstance(err, dict) else err)
    except ValueError:
        pass
    text = " ".join(term_safe(text).split())[:200]
    return f"HTTP {status}: {text}" if text else f"HTTP {status}"


def _summary(outcomes: list[Outcome], wall_s: float, samples: list[dict[str, float]],
             cpu0: dict[str, float] | None, cpu1: dict[str, float] | None) -> dict[str, Any]:
    ok = [o for o in outcomes if o.kind == "ok"]
    lat = [o.latency_s * 1000 for o in ok if o.latency_s is not None]
    ttfa = [o.ttfa_s * 1000 for o in ok if o.ttfa_s is not None]
    kinds = collections.Counter(o.kind for o in outcomes)
    rec: dict[str, Any] = {
        "requests": len(outcomes), "ok": len(ok), "errors": kinds["error"],
        "timeouts": kinds["timeout"], "rejected": kinds["rejected"],
        rk.RPS: len(ok) / wall_s if wall_s > 0 else None,
        rk.AUDIO_RATE: sum(o.audio_s for o in ok) / wall_s if wall_s > 0 else None,
        rk.WALL_S: wall_s,
        rk.LATENCIES_MS: lat, rk.TTFA_MS: ttfa, rk.CPU_PERCENT: None,
        "reason": next((o.reason for o in outcomes if o.reason), None),
    }
    for q in (50, 95, 99):
        rec[f"p{q}_ms"] = percentile(lat, q)
        rec[f"ttfa_p{q}_ms"] = percentile(ttfa, q)
    cpu_key = "tts_kit_pool_cpu_seconds_total"
    if cpu0 and cpu1 and cpu_key in cpu0 and cpu_key in cpu1:
        span = cpu1["t"] - cpu0["t"]
        # Our own scrapes' cost is the load tester's, not the serving's: taken out.
        used = cpu1[cpu_key] - cpu0[cpu_key] - (
            cpu1.get(SCRAPE_CPU_KEY, 0.0) - cpu0.get(SCRAPE_CPU_KEY, 0.0))
        rec[rk.CPU_PERCENT] = 100 * used / span if span > 0 else None
    for key, gauge in ((rk.POOL_PSS_MB, "tts_kit_pool_pss_bytes"),
                       (rk.POOL_RSS_MB, "tts_kit_pool_rss_bytes")):
        rec[key] = max((s[gauge] / 2**20 for s in samples if gauge in s), default=None)
    t0 = samples[0]["t"] if samples else 0.0
    rec["timeline"] = [[round(s["t"] - t0, 3), s.get("tts_kit_pool_rss_bytes", 0) / 2**20,
                        s.get("tts_kit_pool_pss_bytes", 0) / 2**20] for s in samples]
    return rec


async def _level(url: str, spec: LoadSpec, mode: str, level: float, bar: Any,
                 seed: int) -> dict[str, Any]:
    import httpx

    requests, duration_s, timeout_s = spec.requests, spec.duration_s, spec.timeout_s
    bodies, headers = spec.bodies(), _auth(spec.api_key)

    limits = httpx.Limits(max_connections=max(4, int(level) * 2 + 4))
    async with httpx.AsyncClient(timeout=timeout_s, limits=limits) as client, \
            httpx.AsyncClient(timeout=5.0, headers=headers) as probe:
        sampler = _Sampler(probe, url, spec.sample_s)
        cpu0 = await sampler.scrape()
        stop = asyncio.Event()
        sampling = asyncio.create_task(sampler.run(stop))
        outcomes: list[Outcome] = []
        t0 = time.monotonic()
        end = None if duration_s is None else t0 + duration_s
        sent = 0

        def take() -> dict[str, Any] | None:
            nonlocal sent
            if sent >= requests or (end is not None and time.monotonic() >= end):
                return None
            body = bodies[sent % len(bodies)]
            sent += 1
            return body

        async def record(body: dict[str, Any]) -> None:
            outcomes.append(await _one(client, url, body, timeout_s, headers))
            bar.update(1)

        if mode == "closed":
            async def client_loop() -> None:
                while (body := take()) is not None:
                    await record(body)

            await asyncio.gather(*(client_loop() for _ in range(int(level))))
        else:
            rng = random.Random(seed)
            tasks = []
            while (body := take()) is not None:
                tasks.append(asyncio.create_task(record(body)))
                gap = rng.expovariate(level)  # --rate 1e-9: a gap of years
                if end is not None:  # the duration bounds the waits too, not only the sends
                    gap = min(gap, max(0.0, end - time.monotonic()))
                if sent < requests:  # no wait after the last request
                    await asyncio.sleep(gap)
            await asyncio.gather(*tasks)
        wall = time.monotonic() - t0
        stop.set()
        await sampling
        cpu1 = await sampler.scrape()
    rec = _summary(outcomes, wall, sampler.samples, cpu0, cpu1)
    rec.update(mode=mode, concurrency=int(level) if mode == "closed" else None,
               rate=float(level) if mode == "open" else None)
    return rec


def _run(coro: Any) -> Any:
    """``asyncio.run(coro)``, in a thread of its own under a running loop (a Jupyter kernel)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures as cf

    with cf.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@dataclass(frozen=True)
class LoadSpec:
    """What a load test sends (`run_load`): closed-loop levels, then open-loop ones.

    Example:
        >>> LoadSpec(texts=("Hi.",), body={"steps": 2}).bodies()
        [{'input': 'Hi.', 'steps': 2}]
    """

    concurrency: Sequence[int] = (1, 2, 4)  #: clients per closed-loop level
    requests: int = 20  #: most requests per level
    duration_s: float | None = None  #: most seconds per level (None: until ``requests``)
    rates: Sequence[float] = ()  #: arrivals per second of the open-loop levels
    texts: Sequence[str] = (DEFAULT_TEXT,)  #: request inputs, taken in turn
    body: dict[str, Any] | None = None  #: more request fields (``steps``, ``voice`` ...)
    timeout_s: float = 60.0  #: the client's deadline per request
    api_key: str | None = None
    sample_s: float = 0.5  #: how often ``/metrics`` is read during a level
    seed: int = 0  #: level ``i``'s arrivals draw from ``seed + i``

    def check(self) -> None:
        """TtsKitError for levels, requests or texts that cannot be sent."""
        if self.requests < 1:
            raise TtsKitError(f"requests must be >= 1, got {self.requests}")
        if any(int(c) < 1 for c in self.concurrency) or any(r <= 0 for r in self.rates):
            raise TtsKitError("concurrency levels must be >= 1 and rates above 0")
        if not self.concurrency and not self.rates:
            raise TtsKitError("give at least one concurrency level or rate")
        if not self.texts or not all(isinstance(t, str) and t.strip() for t in self.texts):
            raise TtsKitError("texts must be non-empty strings")

    def bodies(self) -> list[dict[str, Any]]:
        """The request bodies, one per text."""
        return [{"input": t, **(self.body or {})} for t in self.texts]


def run_load(url: str, spec: LoadSpec | None = None, *, progress: bool = True,
             on_level: Callable[[LoadResult], None] | None = None,
             **overrides: Any) -> LoadResult:
    """Load ``url`` level by level: each concurrency (closed loop), then each rate (open).

    ``overrides``: `LoadSpec` fields replacing ``spec``'s; ``progress``: a tqdm bar per
    level; ``on_level``: called with the result so far after each level. Records carry
    `LOAD_KEYS`, ``latencies_ms``, ``ttfa_ms`` and ``timeline`` (``[t, RSS MB, PSS MB]``).

    Example:
        >>> run_load("http://127.0.0.1:8000", concurrency=(1, 2), requests=4)  # doctest: +SKIP
    """
    from tqdm.auto import tqdm

    spec = dataclasses.replace(spec or LoadSpec(), **overrides)
    spec.check()
    result = LoadResult(url.rstrip("/"))
    levels = ([("closed", float(c)) for c in spec.concurrency]
              + [("open", float(r)) for r in spec.rates])
    for i, (mode, level) in enumerate(levels):
        name = f"c={int(level)}" if mode == "closed" else f"{level:g}/s"
        with tqdm(total=spec.requests, desc=f"loadtest {name}", unit="req", leave=False,
                  disable=not progress) as bar:
            rec = _run(_level(result.url, spec, mode, level, bar, spec.seed + i))
        result.records.append(rec)
        if on_level is not None:
            on_level(result)
    return result


__all__ = ["LOAD_KEYS", "DEFAULT_TEXT", "LoadResult", "LoadSpec", "Outcome", "percentile",
           "read_metrics", "speak", "Spoken", "run_load"]
