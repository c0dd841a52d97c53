"""The load tester's own /metrics scrapes are not counted as serving CPU (issue 27).

Reading the pool's PSS walks page tables: about 20 CPU-ms per 500 MB worker, twice a
second while a load test runs, which made the pool's audio per CPU-second look 10-20 %
worse than the serving was.
"""

from __future__ import annotations

import os

import pytest

from tts_kit.serve.loadtest import SCRAPE_CPU_KEY, _summary
from tts_kit.serve.metrics import Metrics


def _scrape(metrics: Metrics) -> dict[str, float]:
    from tts_kit.serve.loadtest import _read_metrics

    return _read_metrics(metrics.text().decode())


def test_the_server_counts_what_its_scrapes_cost():
    m = Metrics(lambda: [("server", os.getpid())])
    first = _scrape(m)
    for _ in range(5):
        last = _scrape(m)
    assert 0 < first[SCRAPE_CPU_KEY] < last[SCRAPE_CPU_KEY]
    # The scrapes ran in this process: the pool's CPU includes them.
    assert last["tts_kit_pool_cpu_seconds_total"] >= last[SCRAPE_CPU_KEY]


def test_the_load_tester_takes_the_scrapes_out_of_the_pool_cpu():
    cpu0 = {"t": 0.0, "tts_kit_pool_cpu_seconds_total": 10.0, SCRAPE_CPU_KEY: 1.0}
    cpu1 = {"t": 10.0, "tts_kit_pool_cpu_seconds_total": 20.0, SCRAPE_CPU_KEY: 3.0}
    rec = _summary([], 10.0, [], cpu0, cpu1)
    assert rec["cpu_percent"] == pytest.approx(80.0)  # 10 CPU-s less the scrapes' 2
    # A server without the counter (an older tts_kit): the pool's CPU as it is.
    old = {k: v for k, v in cpu1.items() if k != SCRAPE_CPU_KEY}
    rec = _summary([], 10.0, [], {"t": 0.0, "tts_kit_pool_cpu_seconds_total": 10.0}, old)
    assert rec["cpu_percent"] == pytest.approx(100.0)
