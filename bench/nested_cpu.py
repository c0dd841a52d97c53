"""Does nesting cost CPU? A later chunk rendered with another request's first chunk nested
in it (`lab.nesting`) against the two rendered one after the other, in one worker's
engine (the worker's own `run_job` and hooks), alternating rounds, process CPU time.

    python bench/nested_cpu.py [--model DIR] [--scale full] [--rounds 2] [--steps 8]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import types

from _common import add_model_args, model_dir


class _Pipe:
    """The worker's pipe: ``inbox`` is what the server sent; answers are dropped."""

    def __init__(self) -> None:
        self.inbox: list[tuple] = []

    def poll(self, timeout: float = 0.0) -> bool:
        return bool(self.inbox)

    def recv(self) -> tuple:
        return self.inbox.pop(0)

    def send(self, msg: tuple) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    from lab.nesting import Nested, nesting_hook

    from tts_kit.serve.loadtest import DEFAULT_TEXT
    from tts_kit.serve.worker import WorkerConfig, cancel_hook, run_job

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args(argv)
    cfg = WorkerConfig(model=str(model_dir(args)), threads=1)
    eng = cfg.build_engine()
    eng.synthesize("Warm up.", steps=2, seed=0)
    body = {"lang": "en", "voice": "M1", "steps": args.steps, "speed": 1.0,
            "text": DEFAULT_TEXT}
    a, b = {**body, "seed": 1}, {**body, "seed": 2}
    pipe, pending, running = _Pipe(), [], [None]
    plans: collections.OrderedDict = collections.OrderedDict()
    eng.add_stage_hook(cancel_hook(running, types.SimpleNamespace(value=-1)))
    eng.add_stage_hook(nesting_hook(pipe, running, pending, lambda m: run_job(
        eng, cfg, Nested(pipe), m, plans, running)))
    run_job(eng, cfg, pipe, ("job", 1, a, 0), plans, running)  # A planned: chunk 1 next
    print(f"load average: {os.getloadavg()[0]:.2f}")
    cpu: dict[str, list[float]] = {"nested": [], "apart": []}
    for rnd in range(args.rounds):
        for mode in cpu:
            rid = 10 + 2 * rnd + (mode == "apart")  # a fresh request: planned again
            t = time.process_time()
            if mode == "nested":
                pipe.inbox = [("nested", rid, b, 0)]
            run_job(eng, cfg, pipe, ("job", 1, a, 1), plans, running)
            if mode == "apart":
                run_job(eng, cfg, pipe, ("job", rid, b, 0), plans, running)
            cpu[mode].append(time.process_time() - t)
    for mode, v in cpu.items():
        print(f"{mode:>7}: " + ", ".join(f"{x:.2f}" for x in v) + " CPU-s")
    print(f"nested / apart: {sum(cpu['nested']) / sum(cpu['apart']):.2f}  "
          f"(load average after: {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
