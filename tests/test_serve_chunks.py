"""Chunk-level scheduling (`tts_kit.serve.chunked`): the job order without a server, then a
real server on 127.0.0.1 (tiny stand-in, ``--scheduling chunk``): the same WAV as request
scheduling, chunks in order under interleaving, a short request ahead of a long one's later
chunks, and workers freed when a client leaves."""

from __future__ import annotations

import asyncio
import collections
import functools
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from tts_kit.serve.chunked import ChunkRequest, ChunkScheduler, needed_at
from tts_kit.serve.worker import DeadlineExceeded

#: One client for every request (none kept alive between them, as with `httpx.get`):
#: `httpx.get` builds a TLS context per call, ~50 ms of CPU, which made the polling loops
#: here CPU-bound on the cores the server under test needs.
http = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))

LONG = "The meeting moved to the large room, and everyone came early. " * 32
MEDIUM = "The meeting moved to the large room, and everyone came early. " * 8


class _Pool:
    """What `ChunkScheduler` asks of a pool, without workers."""

    size, max_queue, closing, mean_latency_s = 2, 2, False, 1.0
    on_idle = None

    def take_idle(self, fits=None):
        return None


def test_first_chunks_go_ahead_and_later_chunks_by_when_they_are_needed():
    async def main():
        sched = ChunkScheduler(_Pool())
        old = sched.submit({}, t0=0.0)
        old.lengths, old.durations, old.first_audio_at = [50, 50, 50], [3.0], 1.0
        late = sched.submit({}, t0=0.5)
        late.lengths, late.durations, late.first_audio_at = [50, 50], [0.5], 2.0
        sched.jobs = [(old, 1), (old, 2), (late, 1), (late, 0)]
        order = []
        while sched.jobs:
            job = min(sched.jobs, key=sched._key)
            sched.jobs.remove(job)
            order.append((job[0] is old, job[1]))
        # A waiting request's first chunk first; then the chunk its client runs out of
        # audio for first: the late request (0.5 s played from t=2) before the old one's
        # (3 s from t=1), and the old one's chunk 2 last.
        assert order == [(False, 0), (False, 1), (True, 1), (True, 2)]
        with pytest.raises(Exception, match="queue is full"):
            for _ in range(3):
                sched.submit({}, t0=0.0)  # 2 workers + 2 queued, then refused

    asyncio.run(main())


class _Worker:
    def __init__(self, wid: int):
        self.id, self.pid, self.state, self.sent = wid, 2**22 + wid, "idle", []
        self.inbox: asyncio.Queue = asyncio.Queue()

    def send(self, msg):
        self.sent.append(msg)


def test_tiers_keep_later_chunks_off_the_workers_first_chunks_need():
    from lab.tiers import TieredScheduler

    from tts_kit.serve.worker import WorkerPool

    async def main():
        pool = _Pool()
        pool.size, pool.workers = 4, {i: _Worker(i) for i in range(4)}
        pool._idle = collections.deque(pool.workers.values())
        pool.take_idle = functools.partial(WorkerPool.take_idle, pool)
        sched = TieredScheduler(pool)
        a = sched.submit({}, t0=0.0)  # a first chunk: a foreground worker
        sched._planned(a, [10, 10, 10, 10])  # its later chunks: the background pair only
        b = sched.submit({}, t0=0.1)  # the other foreground worker, not behind a's chunks
        jobs = {w.id: (w.sent[0][1], w.sent[0][3]) for w in pool.workers.values() if w.sent}
        assert len(sched.background) == 2 and sched.slots == 2
        assert {jobs[i] for i in sched.background} == {(a.rid, 1), (a.rid, 2)}
        assert sorted(jobs[i] for i in set(jobs) - sched.background) == [(a.rid, 0), (b.rid, 0)]
        assert [k for _, k in sched.jobs] == [3]  # waits for a background worker
        for t in sched._tasks:
            t.cancel()

    asyncio.run(main())


def test_a_request_hands_its_chunks_on_in_order():
    async def main():
        req = ChunkRequest(0, {}, t0=0.0)
        req.lengths = [10, 10, 10]
        req.deliver(2, ("chunk", b"c", 0.2, {}))
        req.deliver(0, ("chunk", b"a", 0.2, {}))
        got = [(await req.next_message(None))[1]]
        waiter = asyncio.ensure_future(req.next_message(None))
        await asyncio.sleep(0.01)
        assert not waiter.done()  # chunk 1 is missing: chunk 2 waits
        req.deliver(1, ("chunk", b"b", 0.2, {}))
        got.append((await waiter)[1])
        got.append((await req.next_message(None))[1])
        assert got == [b"a", b"b", b"c"] and await req.next_message(None) == ("done",)
        late = ChunkRequest(1, {}, t0=0.0)
        with pytest.raises(DeadlineExceeded):  # nothing came before the deadline
            await late.next_message(time.monotonic() + 0.05)

    asyncio.run(main())


def test_needed_at_uses_measured_seconds_per_character():
    assert needed_at([1.0], [10, 10, 20], t=5.0, k=3) == pytest.approx(5.0 + 1.0 + 1.0 + 2.0)


class _Conn:
    def __init__(self):
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)


def test_a_chunk_job_renders_alone_and_stops_when_its_request_is_cancelled(tiny_bundle_dir):
    import collections
    import types

    from tts_kit.serve.worker import WorkerConfig, cancel_hook, run_job

    cfg = WorkerConfig(model=str(tiny_bundle_dir), threads=1, max_chunk_chars=80)
    engine = cfg.build_engine()
    running, cancel = [None], types.SimpleNamespace(value=-1)
    engine.add_stage_hook(cancel_hook(running, cancel))
    params = {"text": MEDIUM, "lang": "en", "voice": "M1", "steps": 2, "speed": 1.0,
              "seed": 4}
    conn, plans = _Conn(), collections.OrderedDict()
    run_job(engine, cfg, conn, ("job", 7, params, 2), plans, running)  # no chunk 0 first
    want = list(engine.stream(first_chunk_chars=50, max_chunk_chars=80, **params))[2]
    assert conn.sent[0][0] == "chunk" and conn.sent[0][1] == want.pcm16()
    cancel.value = 7  # the server ended request 7: its next job stops at the first stage run
    run_job(engine, cfg, conn, ("job", 7, params, 3), plans, running)
    assert conn.sent[1] == ("cancelled",) and running == [None]
    run_job(engine, cfg, conn, ("job", 8, params, 0), plans, running)  # another request
    assert conn.sent[2][0] == "plan" and conn.sent[3][0] == "chunk"


def _pcm(result) -> bytes:
    from tts_kit.models.synthesis import pcm16

    return pcm16(result.wav)


@pytest.fixture(scope="module")
def chunked(tiny_bundle_dir: Path, tmp_path_factory):
    from tts_kit.serve.config import ServeConfig
    from tts_kit.serve.launch import start_server

    cfg = ServeConfig(model=str(tiny_bundle_dir), workers=2, max_chars=5000,
                      scheduling="chunk", max_queue=4)
    with start_server(config=cfg, log_dir=tmp_path_factory.mktemp("serve")) as srv:
        yield srv


def _speech(url: str, **body) -> httpx.Response:
    return http.post(f"{url}/v1/audio/speech", json={"response_format": "wav", **body},
                     timeout=120)


@pytest.mark.slow  # a server of its own
def test_chunk_scheduling_gives_request_schedulings_audio_in_order(chunked, tiny_bundle_dir):
    from tts_kit.models.family import make_engine

    engine = make_engine(str(tiny_bundle_dir))
    # What request scheduling sends: one worker's stream, joined.
    want = {seed: _pcm(engine.synthesize(MEDIUM, steps=4, seed=seed, first_chunk_chars=50,
                                         max_chunk_chars=100))  # serve's defaults
            for seed in (1, 2, 3)}
    got: dict[int, bytes] = {}

    def send(seed: int) -> None:
        r = _speech(chunked.url, input=MEDIUM, steps=4, seed=seed)  # wav: the model's rate
        assert r.status_code == 200, r.text
        got[seed] = r.content[44:]

    threads = [threading.Thread(target=send, args=(s,)) for s in want]
    for t in threads:  # three multi-chunk requests on two workers: their chunks interleave
        t.start()
    for t in threads:
        t.join()
    assert got.keys() == want.keys()
    for seed in want:  # any chunk out of order, or on the wrong noise, changes the bytes
        same = got[seed] == want[seed]  # not the bytes: pytest's diff of them is slow
        assert same, seed


@pytest.mark.slow
def test_a_short_request_starts_before_long_ones_finish(chunked):
    url = chunked.url
    ends: dict[str, float] = {}
    firsts: dict[str, float] = {}

    def send(name: str, text: str, steps: int) -> None:
        t0 = time.monotonic()
        with http.stream("POST", f"{url}/v1/audio/speech", timeout=120,
                          json={"input": text, "steps": steps, "seed": 0,
                                "response_format": "wav"}) as r:
            assert r.status_code == 200
            for part in r.iter_raw():
                if name not in firsts and len(part) > 44:
                    firsts[name] = time.monotonic() - t0
        ends[name] = time.monotonic()

    longs = [threading.Thread(target=send, args=(f"long{i}", LONG, 16)) for i in range(2)]
    for t in longs:
        t.start()
    time.sleep(0.5)  # both long ones hold the two workers, their chunks queued
    short = threading.Thread(target=send, args=("short", "Hi there.", 16))
    t_short = time.monotonic()
    short.start()
    short.join()
    for t in longs:
        t.join()
    # Under request scheduling the short request waits for a whole long one (nine chunks);
    # here it takes the next free worker, ahead of the long ones' later chunks.
    assert ends["short"] < min(ends["long0"], ends["long1"]), (ends, t_short)
    assert firsts["short"] < 0.5 * (min(ends["long0"], ends["long1"]) - t_short)


@pytest.mark.slow
def test_a_client_gone_frees_every_worker_on_its_chunks(chunked):
    url = chunked.url
    with http.stream("POST", f"{url}/v1/audio/speech", timeout=60,
                      json={"input": LONG, "steps": 100, "seed": 0,
                            "response_format": "wav"}) as r:
        for part in r.iter_raw():
            if len(part) > 44:
                break  # audio came: leave
    t0 = time.monotonic()
    while time.monotonic() - t0 < 8.0:
        ws = http.get(f"{url}/health", timeout=10).json()["workers"]
        if all(w["state"] == "idle" for w in ws) and len(ws) == 2:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"workers still busy 8 s after the client left: {ws}")
    time.sleep(1.0)  # its queued chunks were dropped: nobody takes them now
    assert all(w["state"] == "idle" for w in http.get(f"{url}/health").json()["workers"])
    ok = _speech(url, input="Hi.", steps=1)
    assert ok.status_code == 200 and np.frombuffer(ok.content[44:], np.int16).size > 0


@pytest.mark.slow
def test_a_chunk_is_computed_as_the_engine_computes_it_alone(chunked, tiny_bundle_dir):
    """Issue 37's constraint: the first-chunk cut changes what one call says, not how it is
    computed. The server's first chunk of a cut request is, bit for bit, the engine's own
    render of that chunk's text alone with the same seed (no graph optimisation differs
    between the worker and the engine: exact bytes, not within float rounding)."""
    from tts_kit.models.family import make_engine
    from tts_kit.serve.config import ServeConfig

    text = "Well, that went better than expected, and everyone stayed late for the dinner."
    engine = make_engine(str(tiny_bundle_dir))
    head = engine.plan(text, first_chunk_chars=ServeConfig().first_chunk_chars).chunks[0]
    assert head != text  # the server cuts this request: chunk 0 is its head
    alone = engine.plan(head, steps=4, seed=7)
    want = engine.render_chunk(alone, 0).pcm16()
    r = _speech(chunked.url, input=text, steps=4, seed=7)  # wav: the model's rate
    assert r.status_code == 200, r.text
    assert r.content[44:44 + len(want)] == want
    r = _speech(chunked.url, input=head, steps=4, seed=7)
    assert r.status_code == 200 and r.content[44:] == want

