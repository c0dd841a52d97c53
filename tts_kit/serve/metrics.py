"""The server's Prometheus metrics: requests by status and outcome, latencies, queue depth,
worker restarts, and the pool's memory and CPU read at each scrape (with the scrapes' cost)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tts_kit.serve.worker import RESTART_REASONS

#: Histogram buckets (seconds) of latency and time to first audio.
BUCKETS = (0.025, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0)
#: The ASGI scope key of a speech request's `RequestTally`.
TALLY = "tts_kit.tally"


class Metrics:
    """The server's Prometheus metrics, in a registry of their own."""

    def __init__(self, pool_pids: Any):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = r = CollectorRegistry()
        self.requests = Counter("tts_kit_requests", "Speech requests by HTTP status",
                                ["status"], registry=r)
        self.outcomes = Counter("tts_kit_request_outcomes", "Speech requests by HTTP status "
                                "and outcome", ["status", "outcome"], registry=r)
        self.latency = Histogram("tts_kit_request_seconds", "Arrival to last byte of a "
                                 "successful speech request", buckets=BUCKETS, registry=r)
        self.ttfa = Histogram("tts_kit_time_to_first_audio_seconds", "Arrival to the first "
                              "audio bytes of a successful speech request", buckets=BUCKETS,
                              registry=r)
        self.queue = Gauge("tts_kit_queue_depth", "Requests waiting for a worker", registry=r)
        self.in_flight = Gauge("tts_kit_requests_in_flight", "Speech requests from first "
                               "byte in to last byte out (or abandonment)", registry=r)
        self.restarts = Counter("tts_kit_worker_restarts", "Workers replaced, by reason",
                                ["reason"], registry=r)
        for reason in RESTART_REASONS:
            self.restarts.labels(reason)
        self.timeouts = Counter("tts_kit_timeouts", "Requests past their deadline", registry=r)
        self.cut_short = Counter("tts_kit_responses_cut_short", "Streamed responses aborted "
                                 "after their headers were sent (worker death, deadline)",
                                 registry=r)
        self.audio = Counter("tts_kit_audio_seconds", "Seconds of audio sent", registry=r)
        for status in ("200", "400", "429", "499", "500", "503"):
            self.requests.labels(status)
        r.register(_PoolCollector(pool_pids))

    def text(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)


class RequestTally:
    """One speech request: in flight from its creation to `close`, counted by its first
    `end` (the outcome from the status when not given).

    Example:
        >>> m = Metrics(lambda: [])
        >>> tally = RequestTally(m)
        >>> tally.end(200); tally.end(500); tally.close()
        >>> m.in_flight._value.get(), m.outcomes.labels("200", "completed")._value.get()
        (0.0, 1.0)
    """

    def __init__(self, metrics: Metrics):
        self.metrics, self.t0, self.status = metrics, time.monotonic(), None
        metrics.in_flight.inc()

    def end(self, status: int, outcome: str | None = None) -> None:
        if self.status is None:
            self.status = status
            outcome = outcome or ("completed" if status < 400 else "abandoned" if status == 499
                                  else "rejected" if status < 500 else "error")
            self.metrics.requests.labels(str(status)).inc()
            self.metrics.outcomes.labels(str(status), outcome).inc()

    def close(self, failed: bool = False) -> None:
        """The response ended; not counted yet: the client left (or, ``failed``, the
        server failed it)."""
        self.end(500, "error") if failed else self.end(499, "abandoned")
        self.metrics.in_flight.dec()


class CountRequests:
    """ASGI middleware: a `RequestTally` (``scope[TALLY]``) for each request to ``path``,
    closed when the app's call ends."""

    def __init__(self, app: Any, metrics: Metrics, path: str):
        self.app, self.metrics, self.path = app, metrics, path

    async def __call__(self, scope: dict, receive: Callable[[], Awaitable[dict]],
                       send: Callable[[dict], Awaitable[None]]) -> None:
        if scope["type"] != "http" or scope.get("path") != self.path:
            return await self.app(scope, receive, send)
        tally = scope[TALLY] = RequestTally(self.metrics)
        failed = False
        try:
            await self.app(scope, receive, send)
        except Exception:  # not CancelledError (the server stopped it: nobody waits)
            failed = True
            raise
        finally:
            tally.close(failed)


class _PoolCollector:
    """Per-process RSS and PSS, pool totals and CPU seconds, read at each scrape."""

    def __init__(self, pool_pids: Any):
        self.pool_pids = pool_pids  # () -> [(label, pid)]
        self.scrape_cpu_s = 0.0  # this collector's own CPU time, all scrapes so far

    def describe(self) -> list:
        return []

    def collect(self):
        from prometheus_client.core import CounterMetricFamily

        t0 = time.thread_time()
        families = list(self._families())
        self.scrape_cpu_s += time.thread_time() - t0
        yield from families
        yield CounterMetricFamily(
            "tts_kit_metrics_scrape_cpu_seconds", "CPU seconds the server spent reading the "
            "pool's memory and CPU for /metrics (the scraper's cost, not the serving's; "
            "included in tts_kit_pool_cpu_seconds)", value=self.scrape_cpu_s)

    def _families(self):
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
