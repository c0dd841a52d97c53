# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Serving under load: workers, streaming, timeouts, and what p95 really is
#
# The deployment article serves Supertonic on a 2 vCPU box with a process pool, a 3 s
# timeout and a fallback WAV, and claims a p95 of about 200 ms under concurrent requests.
# Its pool function builds a new model inside every request, and its timeout answers the
# client while the computation goes on. Here a real `tts-kit serve` runs on 127.0.0.1: its
# worker processes each own a warmed-up engine, stream audio as it is synthesised, and
# keep real deadlines. A load test steps up the concurrency, and `serve-sweep` puts worker
# counts side by side, each on a fresh server. Every number below is measured in this run;
# none is typed in. (`bench/serving.py` measures the article's pattern itself against the
# workers: docs/benchmarks.md.)

# %% tags=["parameters"]
# Parameters: papermill, CI and `tts-kit report` override these.
model_dir = None  # a bundle directory; None: $TTS_KIT_MODEL_DIR, official cache, stand-in
quick = False  # True: the smallest settings (CI runs every notebook this way)

# %%
from IPython.display import display

from tts_kit import Bundle, resolve_model_dir
from tts_kit.notebook.widgets import banner, lesson

where, source = resolve_model_dir(model_dir)  # the one place the model is chosen
bundle = Bundle(where)
display(banner(bundle, source))
lesson(bundle, "How many worker processes serve best, and what p95 really is, for requests "
       "whose synthesis costs what the real model's does.", quick=quick)

# %% [markdown]
# ## A server, started from here
#
# Two worker processes, each owning one warmed-up engine with one intra-op thread (two
# workers x one thread = the two cores of the article's box). `/health` answers 200 only
# once every worker has synthesised its warm-up text.

# %%
import contextlib

from tts_kit.core import contract
from tts_kit.core.procfacts import usable_cores
from tts_kit.serve.launch import start_server

steps = 2 if quick else contract.DEFAULT_STEPS
requests = 2 if quick else 12  # quick: one request per client at the top level
levels = [1, 2] if quick else [1, 2, 4]
cores = usable_cores()
stack = contextlib.ExitStack()  # every server started below stops (SIGTERM) at the end
server = stack.enter_context(start_server(
    ["--model", str(where), "--workers", "2", "--threads", "1"]))
print("serving at", server.url, "on", cores, "usable core(s)")

# %% [markdown]
# ## One request, streamed
#
# The response is chunked: the first clause is synthesised and sent before the rest of
# the text is read by the model, so the first audio arrives well before the last.

# %%
from IPython.display import Audio, display

from tts_kit.serve.loadtest import DEFAULT_TEXT, read_metrics, speak

answer = speak(server.url, DEFAULT_TEXT, steps=steps, seed=0)
print(f"status {answer.status}: first audio after {answer.ttfa_s * 1000:.0f} ms, "
      f"the whole response after {answer.total_s * 1000:.0f} ms "
      f"({answer.ttfa_s / answer.total_s:.2f} of it)")
display(Audio(answer.content, rate=bundle.sample_rate))

# %% [markdown]
# ## The load test, live
#
# A closed loop: at each level a fixed number of clients each send their next request as
# soon as the last one ended. The left panel is redrawn after each level (latency and
# time-to-first-audio percentiles), the right one shows the pool's memory over time:
# summed RSS and PSS of the server and its workers, read from `/metrics`.

# %%
from tts_kit.notebook.widgets import live_loadtest

load = live_loadtest(server.url, title="2 workers x 1 thread", concurrency=levels,
                     requests=requests, body={"steps": steps, "seed": 0})
print(load.table())

# %% [markdown]
# ## RSS counts shared pages once per process; PSS divides them
#
# Each worker maps the same library and weight pages. RSS charges every page to every
# process that maps it; PSS (`/proc/PID/smaps_rollup`) charges a page shared by N
# processes 1/N to each, so the pool's PSS is what the pool really holds.

# %%
import pandas as pd

metrics = read_metrics(server.url)
rows = [{"process": k.split('process="')[1].split('"')[0],
         "RSS MB": v / 2**20,
         "PSS MB": metrics[k.replace("rss", "pss")] / 2**20}
        for k, v in metrics.items() if k.startswith("tts_kit_process_rss_bytes")]
print(f"pool: summed RSS {metrics['tts_kit_pool_rss_bytes'] / 2**20:.0f} MB, summed PSS "
      f"{metrics['tts_kit_pool_pss_bytes'] / 2**20:.0f} MB")
pd.DataFrame(rows).round(1)

# %% [markdown]
# ## One worker or two, each on a fresh server
#
# `serving_sweep` (`tts-kit serve-sweep`) starts a new server per configuration, loads it
# at the same levels, and recommends what meets a p95 target (here: the two-worker p95
# measured above at the highest level, doubled) inside a memory budget (the two-worker
# pool's PSS, plus half). Same bundle, text, steps and requests for all.

# %%
import os

from tts_kit.notebook import plots
from tts_kit.serve.sweep import serving_sweep
from tts_kit.tuning.records import select

# The highest concurrency at which requests finished: on a machine far busier than the
# lesson needs, a level's every request can pass the client's deadline (no p95 there).
finished = [r for r in load.records if r.get("p95_ms")]
if not finished:
    raise RuntimeError("no request of the load test finished within the client's deadline "
                       f"(load average {os.getloadavg()[0]:.1f} on {cores} cores): rerun on "
                       "a quieter machine")
top = finished[-1]
if top is not load.records[-1]:
    print(f"above concurrency {top['concurrency']} every request passed the client's "
          "deadline (a busy machine): the target comes from the highest level that finished")
target_ms = 2 * top["p95_ms"]
budget_mb = 1.5 * top["pool_pss_mb"]
# quick: the two-worker rows are the load test's above (the server started above has the
# same settings, levels and requests) instead of a fresh server (CI runs it so, to stay fast)
arch = serving_sweep(str(where), workers=[1] if quick else [1, 2], threads=[1],
                     concurrency=levels, requests=requests, body={"steps": steps, "seed": 0},
                     progress=False, p95_target_ms=target_ms, mem_budget_mb=budget_mb)
if quick:
    arch.records += [{"architecture": "workers", "workers": 2, "threads": 1,
                      "preset": "supertonic-default", "loading": "resident",
                      "status": "ok", **r} for r in load.records]
best, why = arch.recommend(target_ms, budget_mb)
print("recommendation:", why)
display(plots.architectures(arch.records))
# The figures that decide, rounded (every field: arch.table()); a table, not text, so a
# narrow window scrolls it instead of wrapping its columns.
pd.DataFrame(select(arch.records, [
    "workers", "concurrency", "status", "errors", "rps", "ttfa_p95_ms", "p50_ms",
    "p95_ms", "cpu_percent", "pool_pss_mb", "meets"])).round(1)

# %% [markdown]
# ## Oversubscription: workers x threads against the cores
#
# Each worker's sessions spin up their own intra-op threads. When workers x threads
# exceeds the cores, the threads fight for them: latency rises without any gain in
# throughput.

# %%
# Two workers x one thread is a configuration the sweep above served (same settings,
# text, steps and requests, on a fresh server): its record at the top level,
# not another server start; the larger thread counts each get a server of their own.
one = [dict(r) for r in arch.records
       if r["workers"] == 2 and r["concurrency"] == max(levels)]
over = serving_sweep(str(where), architectures=["workers"], workers=[2],
                     threads=[2] if quick else [2, 4], concurrency=[max(levels)],
                     requests=requests, body={"steps": steps, "seed": 0}, progress=False)
oversubscribed = one + over.records
for r in oversubscribed:
    r["threads x workers"] = (r["threads"] or 1) * r["workers"]
    r["cores"] = cores
pd.DataFrame(select(oversubscribed, ["workers", "threads", "threads x workers", "cores",
                                   "rps", "p50_ms", "p95_ms", "cpu_percent",
                                   "pool_pss_mb"])).round(1)

# %% [markdown]
# ## A real deadline: the late worker is killed and replaced
#
# One worker, a 2 s timeout, and a request far too long for it (2,000 characters read as
# one chunk, at 100 steps). The client gets a 503 with a one-line reason at the deadline;
# the worker running it is SIGKILLed (its computation stops, unlike `asyncio.wait_for`
# around `run_in_executor`), a new one warms up, and the next request is served.

# %%
import time

import httpx

strict = stack.enter_context(start_server(
    ["--model", str(where), "--workers", "1", "--timeout", "2", "--first-chunk-chars", "0",
     "--max-chunk-chars", "2500"]))
http = stack.enter_context(httpx.Client())  # one client for the polls below
before = http.get(f"{strict.url}/health").json()["workers"]
late = speak(strict.url, "The meeting moved to the large room, and everyone came early. " * 32,
             steps=100, seed=0)
print(f"late request: {late.status} after {late.total_s:.2f} s: {late.json()['error']}")
for _ in range(600):  # the replacement warms up
    after = http.get(f"{strict.url}/health").json()["workers"]
    if after and after[0]["state"] == "idle":
        break
    time.sleep(0.5)
print("worker pid before:", before[0]["pid"], "after:", after[0]["pid"])
nxt = speak(strict.url, "Back to normal.", steps=1)
print(f"next request: {nxt.status} after {nxt.total_s:.2f} s")
m = read_metrics(strict.url)
print("timeouts:", m["tts_kit_timeouts_total"], " restarts for timeouts:",
      m['tts_kit_worker_restarts_total{reason="timeout"}'])

# %% [markdown]
# ## What to conclude
#
# The cells below state the conclusions from this run's records.

# %%
stack.close()  # SIGTERM: each server drains, stops its workers, leaves no child
w1 = {r["concurrency"]: r for r in arch.records if r["workers"] == 1}
w = {r["concurrency"]: r for r in arch.records if r["workers"] == 2}
# The highest level at which one and two workers both finished requests (a busy machine
# can leave a level with none: nothing to compare there).
served = [c for c in sorted(w) if all((x.get(c) or {}).get("rps") for x in (w, w1))]
hi = served[-1] if served else max(levels)
print(f"- At concurrency {hi}, two workers served {w[hi]['rps'] / w1[hi]['rps']:.1f}x the "
      f"requests per second of one (p95 {w[hi]['p95_ms']:.0f} ms against "
      f"{w1[hi]['p95_ms']:.0f} ms) on {cores} usable core(s), for "
      f"{w[hi]['pool_pss_mb'] / w1[hi]['pool_pss_mb']:.1f}x the pool's PSS.")
print(f"- Streaming: first audio after {w[1]['ttfa_p95_ms']:.0f} ms (p95) of a "
      f"{w[1]['p95_ms']:.0f} ms response at concurrency 1.")
print(f"- The article's 'p95 about 200 ms': measured here at concurrency {hi}, p95 is "
      + ", ".join(f"{r['workers']} worker(s) {r['p95_ms']:.0f} ms" for r in arch.records
                  if r["concurrency"] == hi and r.get("p95_ms")) + ".")
print(f"- Recommendation for p95 <= {target_ms:.0f} ms within {budget_mb:.0f} MB: {why}")
print(f"- A real deadline: the late request got {late.status} at the deadline, its worker "
      f"was replaced (pid {before[0]['pid']} -> {after[0]['pid']}) and the next request got "
      f"{nxt.status}; a timeout around a thread or a process pool answers the client while "
      "the computation goes on.")
