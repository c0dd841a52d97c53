"""Micro-batching in one process: CPU-seconds of chunks rendered as one batched call against
the same chunks rendered one by one (issue 27 item 4, the engine's side of ``serve --batch``).

On the ``full`` stand-in by default, one worker's settings (``--threads`` intra-op threads,
spinning off): ``--batch`` chunks of similar length (different texts, voices and seeds, the
same steps and speed) from `lab.batching.render_chunks` against
`render_chunk` for each, in alternating rounds; process CPU time (user + system), so other
jobs on a busy machine change the figure less than wall time. Prints both, the audio per
CPU-second of each and their ratio; also checks each batched chunk against its single render.

    python bench/batching.py [--model DIR] [--scale full] [--batch 4] [--steps 5]
                             [--threads 1] [--rounds 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from _common import add_model_args, model_dir

#: Chunks of about 50 characters, as chunk scheduling's first-chunk cut makes them.
TEXTS = ("Supertonic runs on the device, so nothing you type",
         "ever leaves the machine. The quick brown fox jumps.",
         "On a small server, memory decides what fits, and",
         "latency decides whether anyone waits for it, always.")


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    from lab.batching import render_chunks

    from tts_kit.serve.worker import WorkerConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--batch", type=int, default=4, help="chunks per batched call (1-4)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    model = str(model_dir(args))
    engine = WorkerConfig(model=model, threads=args.threads, spinning=False).build_engine()
    voices = engine.bundle.voices
    plans = [engine.plan(TEXTS[i % len(TEXTS)], voice=voices[i % len(voices)],
                         steps=args.steps, seed=i) for i in range(args.batch)]
    jobs = [(p, 0) for p in plans]
    batched = render_chunks(engine, jobs)  # warm-up, and the equality check
    alone = [engine.render_chunk(p, k) for p, k in jobs]
    diff = max(float(np.abs(a.samples - b.samples).max()) for a, b in zip(batched, alone))
    cpu: dict[str, list[float]] = {"alone": [], "batch": []}
    for r in range(args.rounds):
        for mode in ("alone", "batch") if r % 2 == 0 else ("batch", "alone"):
            c0 = time.process_time()
            if mode == "alone":
                for p, k in jobs:
                    engine.render_chunk(p, k)
            else:
                render_chunks(engine, jobs)
            cpu[mode].append(time.process_time() - c0)
    audio = sum(c.duration_s for c in alone)
    med = {m: statistics.median(v) for m, v in cpu.items()}
    load = os.getloadavg()
    print(f"bundle: {model}  chunks: {args.batch} of {[len(p.chunks[0]) for p in plans]} "
          f"characters  steps: {args.steps}  threads: {args.threads}  rounds: {args.rounds}  "
          f"load average: {load[0]:.2f}")
    for m in ("alone", "batch"):
        print(f"  {m:<6} CPU s per round {[round(x, 2) for x in cpu[m]]}, median "
              f"{med[m]:.3f}; {audio / med[m]:.3f} s of audio per CPU-second")
    gain = med["alone"] / med["batch"]
    print(f"batch / alone, audio per CPU-second: {gain:.3f}  (largest sample difference "
          f"batched vs alone: {diff:.2e})")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"cpu_s": cpu, "median_cpu_s": med, "audio_s": audio, "gain": gain,
             "max_abs_diff": diff, "loadavg": load, "batch": args.batch,
             "steps": args.steps, "threads": args.threads}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
