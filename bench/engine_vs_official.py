"""tts_kit's Engine against the official `supertonic` package, on the same bundle.

Both load the same bundle (the `full` stand-in by default) with the same thread settings
and synthesise the same text with the same steps. Runs alternate between the two, each
in a fresh process; each process reports its median latency over the timed calls and
its peak RSS (the kernel's high-water mark, VmHWM). Prints the ratios
tts_kit / official (target: <= 1.0 each).

    python bench/engine_vs_official.py [--model DIR] [--rounds 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

TEXT = (
    "The quick brown fox jumps over the lazy dog, and then it runs far away into the "
    "green forest to rest."
)


def child(which: str, model: str, threads: int, steps: int, calls: int) -> dict:
    # VmHWM, not ru_maxrss: a child's ru_maxrss can inherit its parent's high-water mark.
    from tts_kit.core.procfacts import peak_rss_mb

    t0 = time.perf_counter()
    if which == "tts_kit":
        from tts_kit import Engine
        from tts_kit.runtime.sessions import get_preset

        preset = get_preset("supertonic-default").replace(
            intra_op_num_threads=threads, inter_op_num_threads=1
        )
        engine = Engine(model, preset=preset)

        def synth():
            return engine.synthesize(TEXT, lang="en", voice="M1", steps=steps, seed=0).wav
    else:
        from supertonic import TTS

        tts = TTS(model_dir=model, auto_download=False, intra_op_num_threads=threads,
                  inter_op_num_threads=1)
        style = tts.get_voice_style("M1")

        def synth():
            return tts.synthesize(TEXT, voice_style=style, lang="en", total_steps=steps)[0]
    load_s = time.perf_counter() - t0
    synth()  # warm-up, as a server would have
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        synth()
        times.append(time.perf_counter() - t)
    return {"which": which, "load_s": load_s, "p50_s": statistics.median(times),
            "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    from tts_kit.core import contract

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="bundle (default: the full stand-in)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.model, args.threads, args.steps, args.calls)))
        return
    if args.model is None:
        from tts_kit.models.supertonic.standin import ensure_standin

        args.model = str(ensure_standin("full"))
    runs: dict[str, list[dict]] = {"tts_kit": [], "official": []}
    for r in range(args.rounds):
        order = ("tts_kit", "official") if r % 2 == 0 else ("official", "tts_kit")
        for which in order:
            out = subprocess.run(
                [sys.executable, __file__, "--child", which, "--model", args.model,
                 "--threads", str(args.threads), "--steps", str(args.steps),
                 "--calls", str(args.calls)],
                capture_output=True, text=True, check=True,
            )
            runs[which].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"model {args.model}; threads {args.threads}; steps {args.steps}; "
          f"{args.rounds} rounds x {args.calls} timed calls, alternating processes")
    print(f"{'':<10} {'p50 latency s':>14} {'peak RSS MB':>12} {'load s':>8}")
    med = {}
    for which, rs in runs.items():
        med[which] = {k: statistics.median(r[k] for r in rs) for k in ("p50_s", "peak_rss_mb",
                                                                      "load_s")}
        m = med[which]
        print(f"{which:<10} {m['p50_s']:>14.3f} {m['peak_rss_mb']:>12.1f} {m['load_s']:>8.2f}")
    lat = med["tts_kit"]["p50_s"] / med["official"]["p50_s"]
    mem = med["tts_kit"]["peak_rss_mb"] / med["official"]["peak_rss_mb"]
    print(f"ratio tts_kit/official: latency {lat:.3f}, peak RSS {mem:.3f} (target <= 1.0 each)")


if __name__ == "__main__":
    main()
