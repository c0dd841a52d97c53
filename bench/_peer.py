"""``bench/serving.py --peer``: ``tts-kit serve`` beside the server people use today,
supertonic-server (PyPI; FastAPI on the official ``supertonic`` package, sentence streaming,
one synthesis at a time by default), in one run (issue 37 item 4): both servers up, each
level measured on one then on the other (the idle one costs nothing), so the load of a
busy machine drifting during the run weighs on both alike.

Both serve the same bundle with their defaults (the peer's ``--model-dir`` on it, its hub
download off), both get the same texts from the official ``openai`` client, streamed
(``with_streaming_response``, ``response_format="pcm"``, voice ``alloy``), ``--requests``
a text set at concurrency 1 and 4 in a closed loop. Installs nothing: the peer comes from
pyproject's ``peer`` extra (``pip install supertonic-server``), in this interpreter or in
``--peer-python``'s (a venv of its own: it brings uvicorn[standard]'s uvloop/httptools).

Targets (issue 37): TTFA p95 at c=4 <= 0.5x the peer's on both sets and <= 2x our own c=1
figure on three sentences; audio-seconds per second at c=4 >= 1.35x the peer's.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

THREE = ("Supertonic runs on the device, so nothing you type ever leaves the machine. "
         "The quick brown fox jumps over the lazy dog. On a small server, memory decides "
         "what fits, and latency decides whether anyone waits for it.")
TEXT_SETS = {"one sentence": THREE.split(". ")[0] + ".", "three sentences": THREE}
LEVELS = (1, 4)
TTFA_VS_PEER, TTFA_SPREAD, THROUGHPUT_VS_PEER = 0.5, 2.0, 1.35


def _peer_missing(python: str) -> str | None:
    """Why the peer cannot start from ``python`` (None: it can)."""
    probe = subprocess.run([python, "-c", "import supertonic_server"], capture_output=True)
    if probe.returncode == 0:
        return None
    return (f"supertonic-server is not importable from {python}: pip install "
            "supertonic-server (pyproject's `peer` extra), or give --peer-python a venv's "
            "python that has it")


@contextlib.contextmanager
def peer_server(model: str, python: str, log_dir: str):
    """supertonic-server on a free port, serving ``model``; yields its base URL."""
    import httpx

    from tts_kit.serve.launch import free_port

    port = free_port()
    log = open(Path(log_dir) / f"peer-{port}.log", "wb")
    proc = subprocess.Popen(
        [python, "-m", "supertonic_server", "--host", "127.0.0.1", "--port", str(port),
         "--model-dir", model, "--no-ui", "--log-level", "warning"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "SUPERTONIC_AUTO_DOWNLOAD": "false"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:  # /healthz answers once the model is loaded and warmed up
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the peer did not start; see {log.name}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            time.sleep(0.5)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _one(client, text: str, rate: int) -> dict:
    t0 = time.monotonic()
    ttfa, size = None, 0
    with client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="alloy", input=text, response_format="pcm") as r:
        for part in r.iter_bytes():
            if part and ttfa is None:
                ttfa = time.monotonic() - t0
            size += len(part)
    # pcm's rate: ours says 24 kHz (OpenAI's), the peer sends the model's without a header
    hz = int(r.headers.get("x-sample-rate", rate))
    return {"status": r.status_code, "ttfa_s": ttfa, "audio_s": size / 2 / hz}


def load(url: str, text: str, concurrency: int, requests: int, rate: int) -> dict:
    """``requests`` streamed requests, ``concurrency`` at a time (a closed loop)."""
    import openai

    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0,
                           timeout=600)
    _one(client, text, rate)  # warm: the first request of a text pays its own start-up
    todo, lock, done = list(range(requests)), threading.Lock(), []

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                todo.pop()
            try:
                done.append(_one(client, text, rate))
            except openai.APIError as exc:
                done.append({"status": getattr(exc, "status_code", 0), "ttfa_s": None,
                             "audio_s": 0.0, "error": str(exc)[:200]})

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    ttfa = [d["ttfa_s"] for d in done if d["ttfa_s"] is not None]
    return {"requests": len(done), "ok": sum(d["status"] == 200 for d in done),
            "audio_s_per_s": sum(d["audio_s"] for d in done) / wall,
            "ttfa_p95_s": float(np.percentile(ttfa, 95)) if ttfa else None,
            "errors": [d["error"] for d in done if "error" in d][:3]}


def _measure(urls: dict[str, str], requests: int, rate: int) -> dict[str, dict]:
    """Each level on each server in turn (the other one idle), so a machine whose load
    drifts during the run weighs on both alike."""
    out: dict[str, dict] = {name: {} for name in urls}
    for label, text in TEXT_SETS.items():
        for c in LEVELS:
            for name, url in urls.items():
                print(f"  {name}: {label}, concurrency {c} ...", flush=True)
                out[name][f"{label}|{c}"] = load(url, text, c, requests, rate)
    return out


def _cell(a: float | None, b: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if a is None or b is None else fmt.format(a) + " vs " + fmt.format(b)


def table(ours: dict, peer: dict) -> tuple[str, list[dict]]:
    """The issue's table and the targets, from the two servers' results."""
    rows = ["| text set | audio-seconds per second, c=4 (tts_kit / peer) | TTFA p95 c=4 "
            "(tts_kit vs peer) | TTFA p95 c=1 |", "|---|---|---|---|"]
    checks = []
    for label in TEXT_SETS:
        o4, p4, o1, p1 = (ours[f"{label}|4"], peer[f"{label}|4"], ours[f"{label}|1"],
                          peer[f"{label}|1"])
        thr = o4["audio_s_per_s"] / p4["audio_s_per_s"] if p4["audio_s_per_s"] else None
        t4 = (o4["ttfa_p95_s"] / p4["ttfa_p95_s"]
              if o4["ttfa_p95_s"] and p4["ttfa_p95_s"] else None)
        rows.append(f"| {label} | **{thr:.2f}x** | {_cell(o4['ttfa_p95_s'], p4['ttfa_p95_s'])}"
                    f" s ({t4:.2f}x) | {_cell(o1['ttfa_p95_s'], p1['ttfa_p95_s'])} s |"
                    if thr and t4 else f"| {label} | - | - | - |")
        checks += [{"check": f"{label}: TTFA p95 c=4 vs peer", "value": t4,
                    "target": TTFA_VS_PEER, "ok": t4 is not None and t4 <= TTFA_VS_PEER},
                   {"check": f"{label}: audio-s/s c=4 vs peer", "value": thr,
                    "target": THROUGHPUT_VS_PEER,
                    "ok": thr is not None and thr >= THROUGHPUT_VS_PEER}]
        if label == "three sentences" and o4["ttfa_p95_s"] and o1["ttfa_p95_s"]:
            spread = o4["ttfa_p95_s"] / o1["ttfa_p95_s"]
            checks.append({"check": f"{label}: TTFA p95 c=4 vs our c=1", "value": spread,
                           "target": TTFA_SPREAD, "ok": spread <= TTFA_SPREAD})
    every = all(r["ok"] == r["requests"] for res in (ours, peer) for r in res.values())
    checks.append({"check": "every request 200", "value": every, "target": True, "ok": every})
    return "\n".join(rows), checks


def run_peer(model: str, args) -> int:
    """Measure ``tts-kit serve`` then the peer, print the table; 2 when the peer is missing."""
    from tts_kit.models.resolve import open_model
    from tts_kit.serve.config import ServeConfig
    from tts_kit.serve.launch import start_server

    rate = open_model(model).sample_rate
    python = args.peer_python or sys.executable
    why = _peer_missing(python)
    if why:
        print(f"bench/serving.py --peer: error: {why}", file=sys.stderr)
        return 2
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="peer-bench-") as logs:
        with start_server(config=ServeConfig(model=model), log_dir=logs) as srv, \
                peer_server(model, python, logs) as url:
            res = _measure({"tts_kit": srv.url, "peer": url}, args.requests, rate)
    ours, peer = res["tts_kit"], res["peer"]
    text, checks = table(ours, peer)
    load = os.getloadavg()
    print(f"\nbundle: {model}  requests per level: {args.requests}  cpus: {os.cpu_count()}  "
          f"wall: {time.time() - t0:.0f} s  load after: {load[0]:.2f} {load[1]:.2f}\n")
    print(text + "\n")
    for c in checks:
        value = c["value"] if isinstance(c["value"], bool) or c["value"] is None \
            else f"{c['value']:.2f}"
        print(f"  {'PASS' if c['ok'] else 'MISS'}  {c['check']}: {value} (target "
              f"{c['target']})")
    if args.json:
        Path(args.json).write_text(json.dumps({"tts_kit": ours, "peer": peer,
                                               "checks": checks}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
