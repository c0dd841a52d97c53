"""`tts-kit serve`: a real server on 127.0.0.1 in a subprocess, a real HTTP client (httpx),
the tiny stand-in. Each server start spawns and warms its workers (a few seconds), so
the tests share one server where they can."""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import psutil
import pytest
import soundfile as sf

from tts_kit.serve.launch import start_server

#: One client for every request (none kept alive between them, as with `httpx.get`):
#: `httpx.get` builds a TLS context per call, ~50 ms of CPU, which made the polling loops
#: here CPU-bound on the cores the server under test needs.
http = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))

pytest.importorskip("fastapi")

#: ~2,000 characters: nine chunks; at 100 steps about 9 s on the tiny stand-in.
LONG = "The meeting moved to the large room, and everyone came early. " * 32
SHORT = "Hello there. This is a short test."


def _args(bundle: Path, *extra: str) -> list[str]:
    return ["--model", str(bundle), *extra]


@pytest.fixture(scope="module")
def server(tiny_bundle_dir: Path, tmp_path_factory):
    """One server for the tests that do not need their own, started from a `ServeConfig`
    sent as JSON (``--config-json -``); the tests below with their own servers use flags."""
    from tts_kit.serve.config import ServeConfig

    cfg = ServeConfig(model=str(tiny_bundle_dir), workers=2, max_queue=1, max_chars=5000)
    with start_server(config=cfg, log_dir=tmp_path_factory.mktemp("serve")) as handle:
        yield handle


def _speech(url: str, timeout: float = 60.0, headers: dict | None = None,
            **body) -> httpx.Response:
    body.setdefault("input", SHORT)
    body.setdefault("response_format", "wav")  # the default is mp3
    return http.post(f"{url}/v1/audio/speech", json=body, timeout=timeout, headers=headers)


def _metrics(url: str, headers: dict | None = None) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = http.get(f"{url}/metrics", timeout=10, headers=headers).text
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = s.name + ("{" + ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                            + "}" if s.labels else "")
            out[key] = s.value
    return out


def _workers(url: str, headers: dict | None = None) -> list[dict]:
    return http.get(f"{url}/health", timeout=10, headers=headers).json()["workers"]


def _gone(pid: int, within_s: float) -> bool:
    """The process exited (or is a zombie) within ``within_s`` (SIGKILL is not instant
    on a busy machine: the process must be scheduled to die)."""
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def _wait_workers(url: str, n: int, timeout_s: float = 60.0,
                  headers: dict | None = None) -> list[dict]:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        ws = _workers(url, headers)
        if len([w for w in ws if w["state"] == "idle"]) == n:
            return ws
        time.sleep(0.2)
    raise AssertionError(f"workers not back to {n} idle: {_workers(url)}")


def test_openai_request_returns_a_valid_wav(server):
    r = _speech(server.url, model="tts-1", voice="F1", response_format="wav", speed=1.1,
                lang="en", steps=2, seed=3)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "audio/wav"
    assert r.headers.get("transfer-encoding") == "chunked"
    wav, sr = sf.read(io.BytesIO(r.content), dtype="float32")
    assert sr == 44100 and wav.ndim == 1 and 1.0 < len(wav) / sr < 10.0
    pcm = _speech(server.url, voice="F1", response_format="pcm", speed=1.1, steps=2, seed=3)
    assert pcm.status_code == 200 and pcm.headers["x-sample-rate"] == "24000"  # OpenAI's
    assert len(pcm.content) // 2 == round((len(r.content) - 44) / 2 * 24000 / 44100)


def test_voices_and_health(server):
    v = http.get(f"{server.url}/voices").json()
    assert "M1" in v["voices"] and "en" in v["languages"] and v["sample_rate"] == 44100
    h = http.get(f"{server.url}/health").json()
    assert h["status"] == "ready" and len(h["workers"]) == 2


def test_first_bytes_arrive_before_the_last_chunk_is_synthesised(server):
    body = {"input": LONG, "steps": 20, "seed": 0, "response_format": "wav"}
    t0 = time.monotonic()
    first = None
    size = 0
    with http.stream("POST", f"{server.url}/v1/audio/speech", json=body, timeout=60) as r:
        assert r.status_code == 200
        for part in r.iter_raw():
            if first is None and size + len(part) > 44:  # audio, not only the header
                first = time.monotonic() - t0
            size += len(part)
    total = time.monotonic() - t0
    # Nine chunks at 20 steps: the first (cut at a clause) is a small part of the work.
    assert first is not None and first < 0.4 * total, (first, total)
    assert size > 44 + 2 * 44100 * 60  # over a minute of audio came


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"input": ""}, 400, "input is empty"),
    ({"input": "x" * 5001}, 400, "more than this server's 5,000"),
    ({"input": "Hi.", "voice": "Nobody"}, 400, "unknown voice"),
    ({"input": "Hi.", "lang": "xx"}, 400, "unknown lang"),
    ({"input": "Hi.", "steps": 0}, 400, "steps must be an integer in 1..100"),
    ({"input": "Hi.", "speed": 9}, 400, "speed must be a number in 0.7..2"),
    ({"input": "Hi.", "seed": -1}, 400, "seed must be an integer >= 0"),
    ({"input": "Hi.", "response_format": "ogg"}, 400, "use one of mp3, opus, aac"),
    ({"input": "Hi.", "response_format": {}}, 400, "unknown response_format '{}'"),
    ({"input": "Hi.", "colour": "blue"}, 400, "unknown field(s) ['colour']"),
    ({"input": "⍼⍼⍼ ⍼⍼"}, 400, ""),  # nothing speakable: the engine's own words
    ({"input": "x" * 70000}, 413, "larger than"),
])
def test_bad_requests_get_one_line_json_4xx(server, body, status, words):
    r = _speech(server.url, **body)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    assert r.text.count("\n") == 1 and "Traceback" not in r.text
    assert words in r.json()["error"]["message"]


def test_non_json_body_and_unknown_path(server):
    r = http.post(f"{server.url}/v1/audio/speech", content=b"{not json", timeout=10)
    assert r.status_code == 400 and "not JSON" in r.json()["error"]["message"]
    r = http.get(f"{server.url}/v2/nothing", timeout=10)
    assert r.status_code == 404 and r.text.count("\n") == 1


@pytest.mark.slow  # ~13 s: three 100-step renders hold the workers; the full run keeps it
def test_overload_gets_429_with_retry_after(server):
    # Two workers busy, one request queued: the next ones are refused at once. The busy
    # requests must outlast the 0.6 s this takes to queue on any machine: on this project's
    # box the tiny stand-in renders LONG at four flow steps in 0.23 s (the refusal then never
    # came), at 100 steps in about 2.7 s: the slowest step count holds a worker for seconds.
    results: list[httpx.Response] = []

    def send():
        results.append(_speech(server.url, input=LONG, steps=100, seed=0, timeout=120))

    threads = [threading.Thread(target=send) for _ in range(3)]
    for t in threads:
        t.start()
        time.sleep(0.2)
    t0 = time.monotonic()
    r = _speech(server.url, timeout=10)
    assert r.status_code == 429, r.text
    assert time.monotonic() - t0 < 1.0  # refused, not queued
    assert int(r.headers["retry-after"]) >= 1 and "queue is full" in r.json()["error"]["message"]
    for t in threads:
        t.join()
    assert [x.status_code for x in results] == [200, 200, 200]


def test_metrics_parse_and_count_what_was_sent(server):
    before = _metrics(server.url)
    for _ in range(2):
        assert _speech(server.url, steps=1).status_code == 200
    assert _speech(server.url, input="").status_code == 400
    after = _metrics(server.url)

    def delta(key):
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert delta("tts_kit_requests_total{status=200}") == 2
    assert delta("tts_kit_requests_total{status=400}") == 1
    assert delta("tts_kit_request_seconds_count") == 2
    assert delta("tts_kit_time_to_first_audio_seconds_count") == 2
    assert delta("tts_kit_audio_seconds_total") > 1.0
    workers = [k for k in after if k.startswith("tts_kit_process_pss_bytes") and "worker" in k]
    assert len(workers) == 2
    assert after["tts_kit_pool_pss_bytes"] <= after["tts_kit_pool_rss_bytes"]
    assert after["tts_kit_pool_cpu_seconds_total"] > 0


IN_FLIGHT = "tts_kit_requests_in_flight"
COMPLETED = "tts_kit_request_outcomes_total{outcome=completed,status=200}"
ABANDONED = "tts_kit_request_outcomes_total{outcome=abandoned,status=499}"


def _wait_metrics(url: str, ok, timeout_s: float = 20.0) -> dict[str, float]:
    """The metrics once ``ok(metrics)`` holds (the server counts a request's end after its
    client saw it); the last ones read when it never does."""
    end = time.monotonic() + timeout_s
    m = _metrics(url)
    while not ok(m) and time.monotonic() < end:
        time.sleep(0.1)
        m = _metrics(url)
    return m


def test_a_stream_is_in_flight_until_its_last_byte_and_then_counted(server):
    """Issue 38: the gauge fell to 0 when the handler returned the stream, before any audio
    left; the request counts once, as completed, after its last byte."""
    before = _metrics(server.url)
    body = {"input": LONG, "steps": 20, "seed": 0, "response_format": "wav"}
    with httpx.Client(timeout=60) as client, client.stream(
            "POST", f"{server.url}/v1/audio/speech", json=body) as r:
        assert r.status_code == 200
        parts = r.iter_raw()
        got = len(next(parts))  # the WAV header, audio on its way
        during = _metrics(server.url)
        for part in parts:  # read slowly: the server is still sending
            got += len(part)
            time.sleep(0.01)
    assert got > 44
    assert during[IN_FLIGHT] >= 1, during[IN_FLIGHT]
    assert during.get(COMPLETED, 0) == before.get(COMPLETED, 0)  # not counted mid-stream
    after = _wait_metrics(server.url, lambda m: m[IN_FLIGHT] == 0)
    assert after[IN_FLIGHT] == 0
    assert after[COMPLETED] - before.get(COMPLETED, 0) == 1


def test_a_stream_whose_client_leaves_is_counted_abandoned(server):
    """Issue 38: a client that read its first chunk and closed the connection was never
    counted; it is a 499 ``abandoned`` once the server notices, and no longer in flight."""
    before = _metrics(server.url)
    body = {"input": LONG, "steps": 100, "seed": 0,  # ~9 s of work: left mid-stream
            "response_format": "wav"}
    with httpx.Client(timeout=60) as client, client.stream(
            "POST", f"{server.url}/v1/audio/speech", json=body) as r:
        assert r.status_code == 200
        parts = r.iter_raw()  # kept: a dropped iterator closes the connection at once
        next(parts)
        assert _metrics(server.url)[IN_FLIGHT] >= 1
    # The client and its connection are closed here, with chunks still to come.
    after = _wait_metrics(server.url, lambda m: m.get(ABANDONED, 0) > before.get(ABANDONED, 0)
                          and m[IN_FLIGHT] == 0)
    assert after.get(ABANDONED, 0) - before.get(ABANDONED, 0) == 1
    assert (after["tts_kit_requests_total{status=499}"]
            - before.get("tts_kit_requests_total{status=499}", 0)) == 1
    assert after[IN_FLIGHT] == 0
    assert after.get(COMPLETED, 0) == before.get(COMPLETED, 0)
    _wait_workers(server.url, 2)  # its worker freed for the tests after this one


@pytest.mark.slow  # its own server (7-12 s): out of the quick loop
def test_a_sigkilled_worker_is_replaced_and_only_its_request_fails(tiny_bundle_dir, tmp_path):
    # One chunk of ~2,000 characters at 100 steps (seconds of work): the worker dies before
    # any audio left, so the request can still get its 500 (once the first chunk is sent the
    # 200 is on the wire, and a crash can only cut the stream short). With the default
    # short first chunk, a quiet machine sent it before the kill landed.
    with start_server(_args(tiny_bundle_dir, "--workers", "2", "--max-chars", "5000",
                            "--first-chunk-chars", "0", "--max-chunk-chars", "2500"),
                      log_dir=tmp_path) as server:
        _sigkill_a_busy_worker(server)


def _sigkill_a_busy_worker(server) -> None:
    before = _metrics(server.url)["tts_kit_worker_restarts_total{reason=crash}"]
    result: list[httpx.Response] = []
    t = threading.Thread(target=lambda: result.append(
        _speech(server.url, input=LONG, steps=100, seed=0, timeout=60)))
    t.start()
    deadline = time.monotonic() + 10
    busy = []
    while not busy and time.monotonic() < deadline:
        busy = [w for w in _workers(server.url) if w["state"] == "busy"]
        time.sleep(0.05)
    assert busy, _workers(server.url)
    os.kill(busy[0]["pid"], signal.SIGKILL)
    t.join()
    assert result[0].status_code == 500 and "exited" in result[0].json()["error"]["message"]
    workers = _wait_workers(server.url, 2)
    assert busy[0]["pid"] not in [w["pid"] for w in workers]
    assert _speech(server.url, steps=1).status_code == 200
    after = _metrics(server.url)["tts_kit_worker_restarts_total{reason=crash}"]
    assert after == before + 1


@pytest.mark.slow  # its own server (7-12 s): out of the quick loop
def test_a_timeout_kills_the_worker_and_the_next_request_succeeds(tiny_bundle_dir, tmp_path):
    fallback = tmp_path / "sorry.wav"
    sf.write(fallback, np.zeros(4410, np.float32), 44100)
    # One chunk of ~2,000 characters at 100 steps (~9 s): no audio before the deadline.
    # Request scheduling kills the late worker; chunk scheduling stops its job at the next
    # stage run instead (tests/test_serve_chunks.py).
    with start_server(_args(tiny_bundle_dir, "--workers", "1", "--timeout", "2",
                            "--scheduling", "request",
                            "--first-chunk-chars", "0", "--max-chunk-chars", "2500",
                            "--fallback-wav", str(fallback)), log_dir=tmp_path) as srv:
        pid = _workers(srv.url)[0]["pid"]
        t0 = time.monotonic()
        r = _speech(srv.url, input=LONG, steps=100, seed=0)
        assert time.monotonic() - t0 < 5.0  # the deadline, not the 9 s of work
        assert r.status_code == 200 and r.headers["x-tts-fallback"] == "timeout"
        assert r.content == fallback.read_bytes()
        assert _gone(pid, 5.0), f"worker {pid} still runs after its deadline"
        new = _wait_workers(srv.url, 1)  # the replacement, warmed up
        assert new[0]["pid"] != pid
        ok = _speech(srv.url, input="Hi.", steps=1)
        assert ok.status_code == 200 and "x-tts-fallback" not in ok.headers
        m = _metrics(srv.url)
        assert m["tts_kit_timeouts_total"] == 1
        assert m["tts_kit_worker_restarts_total{reason=timeout}"] == 1


@pytest.mark.slow  # its own server (7-12 s): out of the quick loop
def test_recycling_after_n_requests_and_the_api_key(tiny_bundle_dir, tmp_path):
    key = {"Authorization": "Bearer s3cret"}
    with start_server(_args(tiny_bundle_dir, "--workers", "1", "--max-requests", "2",
                            "--api-key", "s3cret"), log_dir=tmp_path) as srv:
        assert _speech(srv.url).status_code == 401
        bad = _speech(srv.url, headers={"Authorization": "Bearer s3creT"})
        assert bad.status_code == 401 and bad.text.count("\n") == 1
        assert http.get(f"{srv.url}/metrics").status_code == 401
        assert http.get(f"{srv.url}/health").status_code == 200  # probes need no key
        first = _workers(srv.url, key)[0]["pid"]
        for _ in range(2):
            assert _speech(srv.url, headers=key, steps=1).status_code == 200
        workers = _wait_workers(srv.url, 1, headers=key)
        assert workers[0]["pid"] != first and workers[0]["requests"] == 0
        assert _speech(srv.url, headers=key, steps=1).status_code == 200
        m = _metrics(srv.url, headers=key)
        assert m["tts_kit_worker_restarts_total{reason=max_requests}"] == 1


@pytest.mark.slow  # its own server (7-12 s): out of the quick loop
def test_sigterm_drains_and_leaves_no_child(tiny_bundle_dir, tmp_path):
    with start_server(_args(tiny_bundle_dir, "--workers", "2"), log_dir=tmp_path) as srv:
        children = psutil.Process(srv.pid).children(recursive=True)
        assert len(children) >= 2
        result: list[httpx.Response] = []
        t = threading.Thread(target=lambda: result.append(
            _speech(srv.url, input=LONG, steps=4, seed=0, timeout=60)))
        t.start()
        time.sleep(0.5)  # in flight
        # uvicorn drains, stops the workers, then re-raises the signal it caught: the
        # exit status says "ended by SIGTERM", as for any process that honours it.
        assert srv.stop() in (0, -signal.SIGTERM)
        t.join()
        assert result[0].status_code == 200 and len(result[0].content) > 44 + 2 * 44100 * 60
        time.sleep(0.5)
        alive = [c.pid for c in children if c.is_running() and c.status() != "zombie"]
        assert alive == []


# -- the load test and the serving sweep ---------------------------------------------------


def test_loadtest_closed_and_open_loop_record_what_was_sent(server, tmp_path, capsys):
    import json

    from tts_kit.cli import main

    out = tmp_path / "load.json"
    rc = main(["loadtest", server.url, "--concurrency", "1,2", "--rate", "4", "--requests",
               "4", "--steps", "1", "--json", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert rc == 0 and "ttfa95 ms" in text and "PSS MB" in text, text
    recs = json.loads(out.read_text())["records"]
    assert [(r["mode"], r["concurrency"], r["rate"]) for r in recs] == [
        ("closed", 1, None), ("closed", 2, None), ("open", None, 4.0)]
    for r in recs:
        assert r["requests"] == r["ok"] == 4 and r["errors"] == r["timeouts"] == 0
        assert 0 < r["ttfa_p50_ms"] <= r["p50_ms"] <= r["p95_ms"] <= r["p99_ms"]
        assert r["rps"] > 0 and r["audio_rate"] > 0 and len(r["latencies_ms"]) == 4
        assert r["pool_pss_mb"] > 0 and r["pool_rss_mb"] >= r["pool_pss_mb"]
        assert r["cpu_percent"] is not None and r["cpu_percent"] > 0


def test_loadtest_bounds_a_level_in_time(server):
    from tts_kit.serve.loadtest import run_load

    t0 = time.monotonic()
    res = run_load(server.url, concurrency=[1], requests=1000, duration_s=1.0,
                   body={"steps": 1}, progress=False)
    assert time.monotonic() - t0 < 10
    assert 1 <= res.records[0]["requests"] < 1000


def test_loadtest_says_when_no_server_answers(capsys):
    from tts_kit.cli import main
    from tts_kit.serve.launch import free_port

    assert main(["loadtest", f"http://127.0.0.1:{free_port()}", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "no server answers" in err and err.count("\n") == 1


def test_no_load_level_is_one_line_before_any_server(capsys, monkeypatch):
    import tts_kit.serve.launch as launch
    from tts_kit.cli import main
    from tts_kit.serve.launch import free_port

    def no_server(*a, **k):
        raise AssertionError("a server was started")

    monkeypatch.setattr(launch, "start_server", no_server)
    for cmd in (["loadtest", f"http://127.0.0.1:{free_port()}"], ["serve-sweep"]):
        assert main([*cmd, "--concurrency", "", "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "at least one" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("rate", ["0", "fast", "inf"])
def test_a_bad_rate_is_one_line_before_anything_starts(rate, capsys):
    from tts_kit.cli import main
    from tts_kit.serve.launch import free_port

    for cmd in (["loadtest", f"http://127.0.0.1:{free_port()}"], ["serve-sweep"]):
        assert main([*cmd, "--rate", rate, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "--rate" in err and err.count("\n") == 1, err


@pytest.mark.slow
def test_serving_sweep_starts_a_server_per_configuration_and_recommends(tiny_bundle_dir,
                                                                         tmp_path, lab_backends):
    from tts_kit.serve.sweep import serving_sweep

    res = serving_sweep(str(tiny_bundle_dir), architectures=["workers", "article"],
                        workers=[1], concurrency=[1], rates=[4.0], requests=2,
                        body={"steps": 1}, progress=False, log_dir=str(tmp_path))
    assert [(r["architecture"], r["mode"]) for r in res.records] == [
        ("workers", "closed"), ("workers", "open"), ("article", "closed"), ("article", "open")]
    assert all(r["status"] == "ok" and r["ok"] == 2 for r in res.records)
    assert [r["rate"] for r in res.records if r["mode"] == "open"] == [4.0, 4.0]
    best, why = res.recommend(p95_target_ms=None, mem_budget_mb=None)
    assert best is not None and best["architecture"] in why and "req/s" in why
    none, why = res.recommend(p95_target_ms=0.001, mem_budget_mb=None)
    assert none is None and "no configuration meets p95 <= 0 ms" in why
    assert "meets" in res.table()


def test_the_article_pattern_runs_the_official_package_per_request(tiny_bundle_dir):
    """The reference architecture (`lab.backends`) is the article's code: a new official
    ``TTS`` per call, on the text tts_kit normalised, seeded the way the package draws its
    noise."""
    supertonic = pytest.importorskip("supertonic")
    from lab.backends import article_synthesize

    from tts_kit.serve.app import request_params
    from tts_kit.serve.worker import WorkerConfig
    from tts_kit.text import normalize

    body = {"input": "It costs $5 at 10:30.", "lang": "en", "voice": "F1", "steps": 2,
            "speed": 1.1, "seed": 7}
    wav, seconds = article_synthesize(WorkerConfig(model=str(tiny_bundle_dir)),
                                      request_params(body))
    got, sr = sf.read(io.BytesIO(wav), dtype="float32")

    tts = supertonic.TTS(model_dir=str(tiny_bundle_dir), auto_download=False)
    np.random.seed(7)
    want, dur = tts.synthesize(normalize(body["input"], lang="en"),
                               voice_style=tts.get_voice_style("F1"), total_steps=2,
                               speed=1.1, lang="en")
    want = np.asarray(want, dtype=np.float32).reshape(-1)
    assert sr == tts.sample_rate and got.shape == want.shape
    assert np.max(np.abs(got - np.clip(want, -1, 1))) <= 1.5 / 32768  # 16-bit rounding
    assert seconds == pytest.approx(float(np.sum(dur)))


def test_serve_config_round_trips_through_json_and_names_unknown_settings(tmp_path, capsys):
    from tts_kit.cli import main
    from tts_kit.core.errors import TtsKitError
    from tts_kit.serve.config import ServeConfig
    from tts_kit.serve.launch import read_config

    cfg = ServeConfig(model="piper:x", preset="lean", loading="paged", threads=2, workers=3,
                      architecture="threads", max_queue=0, timeout_s=1.5, fallback_wav="a.wav",
                      max_requests=9, max_rss_mb=512.0, api_key="k", host="0.0.0.0", port=1,
                      max_chars=10, max_body_bytes=100, first_chunk_chars=None,
                      max_chunk_chars=40, order="stage", lang="ko")
    assert ServeConfig.from_json(cfg.to_json()) == cfg
    (tmp_path / "serve.json").write_text(cfg.to_json())
    assert read_config(str(tmp_path / "serve.json")) == cfg
    with pytest.raises(TtsKitError, match="unknown setting.*workerz"):
        ServeConfig.from_json('{"workerz": 2}')
    with pytest.raises(TtsKitError, match="not JSON"):
        ServeConfig.from_json("workers=2")
    (tmp_path / "bad.json").write_text('{"workers": 0}')
    assert main(["serve", "--config-json", str(tmp_path / "bad.json")]) == 2
    assert '"workers" 0: give a whole number from 1 to 1024' in capsys.readouterr().err


def test_waiting_for_a_server_builds_one_client_not_one_per_poll(monkeypatch):
    """`wait_ready` polls ``/health`` through one client: each `httpx.get` builds a TLS
    context first (~50 ms of CPU, even for plain HTTP), five a second while a server warms."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tts_kit.serve.launch import wait_ready

    polls: list[str] = []

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):  # 503 twice (warming up), then ready
            polls.append(self.path)
            body = b'{"status": "ready"}' if len(polls) > 2 else b"{}"
            self.send_response(200 if len(polls) > 2 else 503)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    def per_call(*args, **kwargs):
        raise AssertionError("httpx.get builds a new client (and TLS context) per poll")

    monkeypatch.setattr(httpx, "get", per_call)
    with ThreadingHTTPServer(("127.0.0.1", 0), Health) as srv:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            got = wait_ready(f"http://127.0.0.1:{srv.server_address[1]}", timeout_s=30)
        finally:
            srv.shutdown()
    assert got == {"status": "ready"} and polls == ["/health"] * 3


def test_the_stand_in_note_of_every_serve_start_imports_no_onnx():
    """`tts-kit serve` on a stand-in prints its scale note: that must not import onnx (the
    graph builders' dependency, 1.5 CPU-s) in every server process."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from tts_kit.models.supertonic.standin import scale_note\n"
            "assert 'NOT realistic' in scale_note('tiny')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'onnx'))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[]"
