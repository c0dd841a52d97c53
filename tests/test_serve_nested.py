"""A waiting first chunk rendered inside a running later chunk (`lab.nesting`): in
the worker (the nested job's audio and the running one's both unchanged), then behind a
real one-worker server on 127.0.0.1 (tiny stand-in): a request that arrives while the only
worker renders another request's last, long chunk gets its first audio before that
request ends, and both WAVs are request scheduling's."""

from __future__ import annotations

import collections
import threading
import time
import types
from pathlib import Path

import httpx
import pytest

#: One client for every request (none kept alive between them, as with `httpx.get`):
#: `httpx.get` builds a TLS context per call, ~50 ms of CPU, which made the polling loops
#: here CPU-bound on the cores the server under test needs.
http = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))

#: Two chunks at the server's first-chunk cut (50): 36 characters, then 210.
LONG_LAST = "The meeting moved to the large room, and everyone came early. " * 4
PARAMS = {"lang": "en", "voice": "M1", "steps": 4, "speed": 1.0}


class _Pipe:
    """A worker's pipe: what the server sent (``inbox``) and what the worker answered."""

    def __init__(self, inbox: list[tuple]):
        self.inbox, self.sent = list(inbox), []

    def poll(self, timeout: float = 0.0) -> bool:
        return bool(self.inbox)

    def recv(self) -> tuple:
        return self.inbox.pop(0)

    def send(self, msg: tuple) -> None:
        self.sent.append(msg)


def test_a_nested_first_chunk_runs_between_stage_runs_and_changes_no_audio(tiny_bundle_dir):
    from lab.nesting import Nested, nesting_hook

    from tts_kit.serve.worker import WorkerConfig, cancel_hook, run_job

    cfg = WorkerConfig(model=str(tiny_bundle_dir), threads=1)
    engine = cfg.build_engine()
    a = {**PARAMS, "text": LONG_LAST, "seed": 3}
    b = {**PARAMS, "text": "Hi there, how are you?", "seed": 5}
    pipe, pending = _Pipe([("stop",), ("nested", 9, b, 0)]), []
    running, cancel = [None], types.SimpleNamespace(value=-1)
    plans: collections.OrderedDict = collections.OrderedDict()
    engine.add_stage_hook(cancel_hook(running, cancel))
    engine.add_stage_hook(nesting_hook(
        pipe, running, pending, lambda m: run_job(engine, cfg, Nested(pipe), m, plans,
                                                   running)))
    run_job(engine, cfg, pipe, ("job", 7, a, 1), plans, running)  # A's long last chunk
    kinds = [(m[0], m[1][0]) if m[0] == "nested" else (m[0],) for m in pipe.sent]
    # B's plan and chunk came out while A's chunk ran (between two of its stage runs), then
    # A's chunk; the "stop" that came meanwhile waits for the worker's main loop.
    assert kinds == [("nested", "plan"), ("nested", "chunk"), ("chunk",)], kinds
    assert pending == [("stop",)] and running == [None] and 9 in plans
    want_a = list(engine.stream(first_chunk_chars=50, **a))
    want_b = list(engine.stream(first_chunk_chars=50, **b))
    assert pipe.sent[1][1][1] == want_b[0].pcm16()
    assert pipe.sent[2][1] == want_a[1].pcm16()
    # A nested job whose request ended stops at its first stage run; A's chunk goes on.
    pipe.inbox, pipe.sent, cancel.value = [("nested", 11, b, 0)], [], 11
    run_job(engine, cfg, pipe, ("job", 7, a, 1), plans, running)
    assert pipe.sent[1] == ("nested", ("cancelled",))
    assert pipe.sent[2][0] == "chunk" and pipe.sent[2][1] == want_a[1].pcm16()


@pytest.fixture(scope="module")
def one_worker(tiny_bundle_dir: Path, tmp_path_factory):
    import os

    from lab.serve_lab import enable

    from tts_kit.serve.config import ServeConfig
    from tts_kit.serve.launch import start_server

    saved = dict(os.environ)
    enable("lab.nesting")  # the server and its worker load the experiment
    cfg = ServeConfig(model=str(tiny_bundle_dir), workers=1, threads=1,
                      scheduling="chunk+nest", max_chunk_chars=0)  # the engine's 300: long chunks
    try:
        with start_server(config=cfg, log_dir=tmp_path_factory.mktemp("serve")) as srv:
            yield srv
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.mark.slow  # a server of its own
def test_first_audio_does_not_wait_for_a_running_long_chunk(one_worker, tiny_bundle_dir):
    from tts_kit.models.synthesis import pcm16
    from tts_kit.serve.worker import WorkerConfig

    url, steps = one_worker.url, 100  # A's 210-character chunk runs for a while
    firsts: dict[str, float] = {}
    ends: dict[str, float] = {}
    audio: dict[str, bytes] = {}
    a_started = threading.Event()

    def send(name: str, text: str, seed: int) -> None:
        body = {"input": text, "steps": steps, "seed": seed, "response_format": "wav"}
        parts = []
        with http.stream("POST", f"{url}/v1/audio/speech", timeout=120, json=body) as r:
            assert r.status_code == 200
            for part in r.iter_raw():
                if part and name not in firsts:
                    firsts[name] = time.monotonic()
                    a_started.set()
                parts.append(part)
        ends[name] = time.monotonic()
        audio[name] = b"".join(parts)[44:]  # the model's rate, without the header

    a = threading.Thread(target=send, args=("a", LONG_LAST, 1))
    a.start()
    assert a_started.wait(60)  # A's first chunk played: its last (long) chunk runs now
    send("b", "Hi there.", 2)
    a.join()
    # Before: the one worker finished A's long chunk first, so B's first audio came after
    # A's end; now B's first chunk runs inside it, between two flow steps.
    assert firsts["b"] < ends["a"], (firsts, ends)
    engine = WorkerConfig(model=str(tiny_bundle_dir), threads=1).build_engine()  # the server's
    for name, text, seed in (("a", LONG_LAST, 1), ("b", "Hi there.", 2)):
        want = pcm16(engine.synthesize(text, steps=steps, seed=seed, first_chunk_chars=50).wav)
        same = audio[name] == want  # not the bytes themselves: pytest's diff of them is slow
        assert same, name


class _Worker:
    def __init__(self, wid: int):
        self.id, self.pid, self.state, self.requests, self.sent = wid, 0, "busy", 0, []
        self.cancel_job = types.SimpleNamespace(value=-1)

    def send(self, msg: tuple) -> None:
        self.sent.append(msg)


class _BusyPool:
    """Two busy workers, no idle one (what `ChunkScheduler` asks of a pool)."""

    size, max_queue, closing, mean_latency_s, on_idle = 2, 8, False, 1.0, None

    def __init__(self, loading: str = "resident"):
        self.cfg = types.SimpleNamespace(loading=loading, first_chunk_chars=50)
        self.workers = {0: _Worker(0), 1: _Worker(1)}

    def take_idle(self):
        return None


def _running(sched, pool, firsts_played_at: tuple[float, float]) -> list:
    """Requests A (worker 0) and B (worker 1), each rendering its chunk 1 of 2; B's client
    started playing later, so B's chunk is needed last."""
    reqs, nest, sched.nest = [], sched.nest, False  # set up without nesting
    for wid, t in enumerate(firsts_played_at):
        req = sched.submit({"text": "x" * 200}, t0=0.0)
        sched.jobs.clear()
        req.lengths, req.durations, req.first_audio_at = [30, 180], [2.0], t
        req.started, req.running[1] = True, pool.workers[wid]
        sched.single[wid] = (req, 1)
        reqs.append(req)
    sched.nest = nest
    return reqs


def test_a_waiting_first_chunk_nests_in_the_later_chunk_needed_last():
    import asyncio

    from lab.nesting import NestingScheduler

    async def main():
        pool = _BusyPool()
        sched = NestingScheduler(pool)
        _running(sched, pool, (1.0, 5.0))
        c = sched.submit({"text": "Hi."}, t0=6.0)
        # Worker 1's chunk is needed at 5 + 2 s, worker 0's at 1 + 2 s: C goes into 1's.
        assert pool.workers[1].sent == [("nested", c.rid, {"text": "Hi."}, 0)]
        assert sched.nested == {1: c} and not sched.jobs and c.running[0] is pool.workers[1]
        d = sched.submit({"text": "Yo."}, t0=6.1)
        assert pool.workers[0].sent[-1][:2] == ("nested", d.rid)
        e = sched.submit({"text": "Hey."}, t0=6.2)  # one nested job per worker: E waits
        assert sched.jobs == [(e, 0)]
        sched._nested_answer(pool.workers[1], ("chunk", b"pcm", 0.5, {}))
        # C's answer frees worker 1's slot: E goes in at once; C has its chunk.
        assert sched.nested[1] is e and c.ready[0][1] == b"pcm"
        assert pool.workers[1].requests == 1

    asyncio.run(main())


@pytest.mark.parametrize("loading,nest", [("paged", True), ("resident", False)])
def test_no_nesting_under_paged_loading_or_when_off(loading, nest):
    import asyncio

    from lab.nesting import NestingScheduler

    async def main():
        pool = _BusyPool(loading)
        sched = NestingScheduler(pool, nest=nest)
        _running(sched, pool, (1.0, 5.0))
        c = sched.submit({"text": "Hi."}, t0=6.0)
        assert sched.jobs == [(c, 0)] and not any(w.sent for w in pool.workers.values())

    asyncio.run(main())


def test_nesting_is_a_lab_experiment_not_in_the_server():
    # Measured on the quiet 2-core box: nesting cut TTFA p95 at concurrency 4 but served
    # less audio per CPU-second and doubled the whole response's p95, so it left the server
    # for bench/lab: no flag, no setting, no hook in the worker unless a lab script loads it.
    from lab.nesting import NestingScheduler

    from tts_kit.cli import _parser
    from tts_kit.serve.config import ServeConfig

    assert "nest" not in ServeConfig.__dataclass_fields__
    with pytest.raises(SystemExit):
        _parser().parse_args(["serve", "--nest"])
    assert NestingScheduler(_BusyPool(), nest=False).nest is False


def test_a_scheduling_no_module_registered_is_a_one_line_error():
    from tts_kit.core.errors import TtsKitError
    from tts_kit.serve.config import ServeConfig

    with pytest.raises(TtsKitError, match="'chunk\\+later': unknown scheduling") as err:
        ServeConfig(scheduling="chunk+later").check()
    assert "\n" not in str(err.value)
