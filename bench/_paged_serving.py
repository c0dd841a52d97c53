"""``bench/paged.py --serving``: resident and paged loading behind ``tts-kit serve``, side
by side: each worker's OS peak RSS (``VmHWM``: the kernel's high-water mark, no sampling
gaps), its RSS once idle, the request p50 and the worker's CPU-seconds per request.

Each loading gets a fresh server (one worker, ``--threads`` intra-op threads, chunk
scheduling, the three-sentence text), in alternating rounds (``resident paged, resident
paged``) so a busy machine's drift falls on both; figures are medians over the rounds.
The peak covers the worker's whole life: its warm-up, and every request's chunks (under
chunk scheduling each chunk is one pass through the four stages, so a paged worker loads
and releases every stage once per chunk).

Example:
    >>> hwm_mb(0) is None
    True
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any


def hwm_mb(pid: int) -> float | None:
    """The OS peak RSS (``VmHWM``) of process ``pid`` in MB, or None when unreadable.

    Example:
        >>> hwm_mb(os.getpid()) > 0
        True
    """
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


def _cpu_s(procs: list[Any]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except Exception:  # gone: counts nothing more
            pass
    return total


def serve_once(model: str, loading: str, preset: str, threads: int, requests: int,
               steps: int) -> dict[str, float]:
    """One server, one worker under ``loading``: its peak, idle RSS, p50 and CPU/request."""
    import httpx
    import psutil

    from tts_kit.serve.config import ServeConfig
    from tts_kit.serve.launch import start_server
    from tts_kit.serve.loadtest import DEFAULT_TEXT

    cfg = ServeConfig(model=model, loading=loading, workers=1, threads=threads,
                      preset=preset, scheduling="chunk")
    with start_server(config=cfg) as srv:
        workers = [k for k in psutil.Process(srv.pid).children(recursive=True)
                   if "python" in k.name()]
        cpu0, latency = _cpu_s(workers), []
        for i in range(requests):
            t0 = time.perf_counter()
            r = httpx.post(f"{srv.url}/v1/audio/speech", timeout=900,
                           json={"input": DEFAULT_TEXT, "steps": steps, "seed": i,
                                 "response_format": "wav"})
            if r.status_code != 200:
                raise RuntimeError(f"{loading}: HTTP {r.status_code}: {r.text[:200]}")
            latency.append(time.perf_counter() - t0)
        cpu = _cpu_s(workers) - cpu0
        peaks = [hwm_mb(k.pid) or 0.0 for k in workers]
        idle = [k.memory_info().rss / 2**20 for k in workers]
    return {"peak_mb": max(peaks), "idle_mb": max(idle), "p50_s": statistics.median(latency),
            "cpu_s_per_request": cpu / requests}


def serving_rows(model: str, loadings: list[str], preset: str, threads: int, requests: int,
                 steps: int, rounds: int) -> dict[str, dict[str, Any]]:
    """Every loading in ``rounds`` alternating rounds; per loading the medians and rounds."""
    runs: dict[str, list[dict[str, float]]] = {x: [] for x in loadings}
    for rnd in range(max(1, rounds)):
        for loading in loadings:
            row = serve_once(model, loading, preset, threads, requests, steps)
            runs[loading].append(row)
            print(f"  round {rnd + 1} {loading}: peak {row['peak_mb']:.0f} MB, idle "
                  f"{row['idle_mb']:.0f} MB, p50 {row['p50_s']:.2f} s, CPU/request "
                  f"{row['cpu_s_per_request']:.2f} s", flush=True)
    return {x: {**{k: statistics.median(r[k] for r in rs) for k in rs[0]}, "rounds": rs}
            for x, rs in runs.items()}


def print_serving(rows: dict[str, dict[str, Any]], reference: str, peak_target: float,
                  p50_target: float) -> None:
    """The table, ratios to ``reference``, and the issue's two targets for ``paged``."""
    ref = rows[reference]
    print(f"\n{'loading (serve)':<22}{'peak':>7}{'idle':>7}{'p50 s':>8}{'CPU/req':>9}"
          f"{'x peak':>8}{'x p50':>7}{'x CPU':>7}")
    for name, r in rows.items():
        print(f"{name:<22}{r['peak_mb']:>7.0f}{r['idle_mb']:>7.0f}{r['p50_s']:>8.2f}"
              f"{r['cpu_s_per_request']:>9.2f}{r['peak_mb'] / ref['peak_mb']:>8.3f}"
              f"{r['p50_s'] / ref['p50_s']:>7.2f}"
              f"{r['cpu_s_per_request'] / ref['cpu_s_per_request']:>7.2f}")
    print("(MB; peak = the worker's VmHWM over its life, warm-up included; medians over the "
          "rounds; CPU/req = the worker's CPU-seconds per request, the figure that holds on "
          "a busy machine)")
    paged = rows.get("paged")
    if paged:
        pk, p50 = paged["peak_mb"] / ref["peak_mb"], paged["p50_s"] / ref["p50_s"]
        print(f"target paged serving peak <= {peak_target} x resident: {pk:.3f} "
              f"({'met' if pk <= peak_target else 'MISSED'})")
        print(f"target paged serving p50 <= {p50_target} x resident: {p50:.2f} "
              f"({'met' if p50 <= p50_target else 'MISSED'})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
