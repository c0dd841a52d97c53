"""Micro-batching (issue 27 item 4; a lab experiment, `lab.batching`): chunks of different
requests in one batched call give each the audio it gets alone (engine, worker, no server),
then a real server on 127.0.0.1 (tiny stand-in, scheduling ``chunk+batch``, batch 4): two
requests' chunks in order and equal to unbatched ones, and a client that leaves mid-batch
frees its slot while the other request completes."""

from __future__ import annotations

import collections
import threading
import time
import types
from pathlib import Path

import httpx
import numpy as np
import pytest

#: One client for every request (none kept alive between them, as with `httpx.get`):
#: `httpx.get` builds a TLS context per call, ~50 ms of CPU, which made the polling loops
#: here CPU-bound on the cores the server under test needs.
http = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))

MEDIUM = "The meeting moved to the large room, and everyone came early. " * 4


@pytest.fixture(scope="module")
def engine(tiny_bundle_dir: Path):
    from tts_kit.models.family import make_engine

    return make_engine(str(tiny_bundle_dir))


def test_a_batch_of_chunks_equals_each_chunk_rendered_alone(engine):
    from lab.batching import render_chunks

    a = engine.plan("Hello there, my friend. How are you today?", steps=3, seed=7,
                    max_chunk_chars=30)
    b = engine.plan("The meeting moved to the large room.", voice="F1", steps=3, seed=2)
    c = engine.plan("Good morning.", steps=3, seed=None)  # fresh noise: alone vs batch differ
    slow = engine.plan("Slower, please.", steps=3, seed=1, speed=0.8)  # cannot share the call
    jobs = [(a, 1), (b, 0), (slow, 0), (a, 0)]
    calls = []
    remove = engine.add_stage_hook(lambda stage, feeds, out: calls.append(
        (stage, feeds["noisy_latent"].shape[0] if stage == "vector_estimator" else 1)))
    try:
        got = render_chunks(engine, jobs)
    finally:
        remove()
    # One batched flow per step for the three chunks that share steps and speed, one for
    # the slower chunk alone.
    assert sorted(n for s, n in calls if s == "vector_estimator") == [1] * 3 + [3] * 3
    assert [(p.index, p.text, p.last) for p in got] == [
        (1, a.chunks[1], True), (0, b.chunks[0], True), (0, slow.chunks[0], True),
        (0, a.chunks[0], False)]
    for (plan, k), part in zip(jobs, got):
        alone = engine.render_chunk(plan, k).samples
        assert part.samples.shape == alone.shape
        np.testing.assert_allclose(part.samples, alone, atol=1e-5, rtol=0)
    assert set(got[0].timings) >= {"vector_estimator", "vocoder", "total"}
    assert len(render_chunks(engine, [(c, 0)])) == 1


def test_a_model_without_batching_renders_one_by_one(engine, monkeypatch):
    from lab.batching import render_chunks

    from tts_kit.models.base import Capabilities

    a = engine.plan("Hello there.", steps=2, seed=0)
    b = engine.plan("Good morning.", steps=2, seed=1)
    bundle = types.SimpleNamespace(**{k: getattr(engine.bundle, k) for k in (
        "sample_rate", "voice", "indexer")}, capabilities=Capabilities(batching=False))
    monkeypatch.setattr(engine, "bundle", bundle)
    monkeypatch.setattr("lab.batching.render_batch", lambda *a: pytest.fail("batched"))
    assert [p.text for p in render_chunks(engine, [(a, 0), (b, 0)])] == ["Hello there.",
                                                                        "Good morning."]


class _Pool:
    """What `BatchScheduler` asks of a pool when it forms batches, without workers."""

    max_queue, closing, mean_latency_s, on_idle = 8, False, 1.0, None
    cfg = types.SimpleNamespace(first_chunk_chars=50, max_chunk_chars=None)

    def __init__(self, size: int, idle: int):
        self.size = size
        self.workers = {i: types.SimpleNamespace(state="idle" if i < idle else "busy")
                        for i in range(size)}

    def take_idle(self):
        return None


def test_a_free_worker_takes_similar_jobs_up_to_its_share_and_waits_briefly():
    import asyncio

    from lab.batching import BatchScheduler

    async def main():
        sched = BatchScheduler(_Pool(size=1, idle=1), batch=3, batch_wait_ms=10)
        p = {"lang": "en", "steps": 5, "speed": 1.0}
        a = sched.submit({**p, "text": "x" * 500}, t0=0.0)
        b = sched.submit({**p, "text": "y" * 500, "steps": 8}, t0=0.0)  # other steps
        a.lengths, b.lengths = [40, 60, 61, 200, 45], [40, 40]
        sched.jobs = [(a, 1), (a, 2), (b, 1), (a, 3), (a, 4)]
        # The most urgent (a's chunk 1, 60 characters) and the next ones within 1.5x of it
        # and of the same steps: not b's (8 steps), not a's 200-character chunk 3.
        assert sched._next_batch() == [(a, 1), (a, 2), (a, 4)]
        sched.batch = 4  # not full now, one worker free, just queued: wait for more
        a.queued_at[1] = time.monotonic()
        assert sched._next_batch() is None and sched._timer is not None
        await asyncio.sleep(0.03)  # the timer ran dispatch (no worker taken: the stub's)
        assert sched._timer is None
        a.queued_at[1] = time.monotonic() - 0.011  # waited its 10 ms: goes as it is
        assert sched._next_batch() == [(a, 1), (a, 2), (a, 4)]
        # Four workers: each takes its share of the three matches (one), not all of them.
        spread = BatchScheduler(_Pool(size=4, idle=2), batch=4, batch_wait_ms=10)
        spread.jobs = list(sched.jobs)
        assert spread._next_batch() == [(a, 1)]

    asyncio.run(main())


class _Conn:
    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)


def test_a_worker_batch_answers_each_item_and_plans_first(tiny_bundle_dir, engine):
    from lab.batching import run_batch

    from tts_kit.serve.worker import WorkerConfig, WorkerState, cancel_hook

    cfg = WorkerConfig(model=str(tiny_bundle_dir), threads=1, max_chunk_chars=80)
    worker = cfg.build_engine()
    running, cancel = [None], types.SimpleNamespace(value=-1)
    worker.add_stage_hook(cancel_hook(running, cancel))
    p1 = {"text": MEDIUM, "lang": "en", "voice": "M1", "steps": 2, "speed": 1.0, "seed": 4}
    p2 = {**p1, "text": "Hi there, all of you.", "voice": "F1", "seed": 9}
    bad = {**p1, "text": "Hello 안녕하세요 world."}  # the model cannot say it: 400, alone
    conn, plans = _Conn(), collections.OrderedDict()
    state = WorkerState(worker, cfg, conn, plans, running, [])
    run_batch(state, ("batch", [(1, p1, 0), (2, p2, 0), (3, bad, 0)]))
    kinds = [(m[1], m[2][0]) for m in conn.sent]
    assert kinds[:2] == [(0, "plan"), (1, "plan")] and (2, "error") in kinds
    assert sorted(k for k in kinds if k[1] == "chunk") == [(0, "chunk"), (1, "chunk")]
    want = {0: list(engine.stream(first_chunk_chars=50, max_chunk_chars=80, **p1))[0],
            1: list(engine.stream(first_chunk_chars=50, max_chunk_chars=80, **p2))[0]}
    for _, i, msg in conn.sent:
        if msg[0] == "chunk":
            got = np.frombuffer(msg[1], np.int16).astype(int)
            ref = np.frombuffer(want[i].pcm16(), np.int16).astype(int)
            assert got.shape == ref.shape and np.abs(got - ref).max() <= 1
    # One request's batch stops when the server ends that request.
    cancel.value = 1
    conn.sent.clear()
    run_batch(state, ("batch", [(1, p1, 1), (1, p1, 2)]))
    assert conn.sent == [("item", 0, ("cancelled",)), ("item", 1, ("cancelled",))]
    assert running == [None]


@pytest.fixture(scope="module")
def batched(tiny_bundle_dir: Path, tmp_path_factory):
    import os

    from lab.serve_lab import enable

    from tts_kit.serve.config import ServeConfig
    from tts_kit.serve.launch import start_server

    saved = dict(os.environ)
    enable("lab.batching", batch=4, batch_wait_ms=10)  # the server and its worker load it
    cfg = ServeConfig(model=str(tiny_bundle_dir), workers=1, max_chars=5000, threads=1,
                      scheduling="chunk+batch", max_chunk_chars=80, max_queue=4)
    try:
        with start_server(config=cfg, log_dir=tmp_path_factory.mktemp("serve")) as srv:
            yield srv
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.mark.slow  # a server of its own
def test_batched_requests_get_their_chunks_in_order(batched, engine):
    # One worker, so the two requests' later chunks queue and share batches.
    want = {seed: list(engine.stream(MEDIUM, steps=3, seed=seed, first_chunk_chars=50,
                                     max_chunk_chars=80)) for seed in (1, 2)}
    got: dict[int, bytes] = {}

    def send(seed: int) -> None:
        r = http.post(f"{batched.url}/v1/audio/speech", timeout=120, json={
            "input": MEDIUM, "steps": 3, "seed": seed, "response_format": "wav"})
        assert r.status_code == 200, r.text
        got[seed] = r.content[44:]  # the model's rate, without the header

    threads = [threading.Thread(target=send, args=(s,)) for s in want]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed, parts in want.items():  # in order, each chunk on its own noise, to rounding
        ref = np.concatenate([np.frombuffer(p.pcm16(), np.int16) for p in parts]).astype(int)
        pcm = np.frombuffer(got[seed], np.int16).astype(int)
        assert pcm.shape == ref.shape and np.abs(pcm - ref).max() <= 1, seed
    assert http.get(f"{batched.url}/health", timeout=10).json()["batched"] >= 2


@pytest.mark.slow
def test_a_client_gone_mid_batch_frees_its_slot_and_the_other_completes(batched, engine):
    url = batched.url
    other: dict[str, object] = {}

    def send_other() -> None:
        r = http.post(f"{url}/v1/audio/speech", timeout=120, json={
            "input": MEDIUM, "steps": 3, "seed": 5, "response_format": "wav"})
        other["status"], other["pcm"] = r.status_code, r.content[44:]

    t = threading.Thread(target=send_other)
    with http.stream("POST", f"{url}/v1/audio/speech", timeout=60,
                      json={"input": MEDIUM, "steps": 3, "seed": 0,
                            "response_format": "wav"}) as r:
        t.start()
        for part in r.iter_raw():
            if len(part) > 44:
                break  # the first audio came, later chunks queued with the other's: leave
    t.join(120)
    assert other.get("status") == 200
    ref = np.concatenate([np.frombuffer(p.pcm16(), np.int16) for p in engine.stream(
        MEDIUM, steps=3, seed=5, first_chunk_chars=50, max_chunk_chars=80)]).astype(int)
    pcm = np.frombuffer(other["pcm"], np.int16).astype(int)
    assert pcm.shape == ref.shape and np.abs(pcm - ref).max() <= 1
    deadline = time.monotonic() + 10  # the leaver's request slot and its jobs are gone
    while time.monotonic() < deadline:
        health = http.get(f"{url}/health", timeout=10).json()
        if health["requests"] == 0 and all(w["state"] == "idle" for w in health["workers"]):
            break
        time.sleep(0.1)
    assert health["requests"] == 0 and health["jobs"] == 0 and health["batch"] == 4, health
    assert all(w["state"] == "idle" for w in health["workers"]), health
