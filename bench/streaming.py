"""Streaming synthesis: memory against text length, and chunk-major against stage-major.

Each row is one fresh process (so peaks do not carry over) synthesising the same text:

1. memory: ``Engine.synthesize`` (the whole waveform, joined) against ``Engine.stream``
   (one chunk at a time, as ``tts-kit synth`` writes it) on texts of ``--memory-chars``
   characters, on the ``--memory-scale`` stand-in (tiny by default: the audio, not the
   model, is what grows). Peak RSS and the audio's length.
2. order: chunk-major (each chunk through the four stages) against stage-major (each
   stage over all chunks) under ``resident`` and ``paged`` loading on ``--scale`` (full
   by default): wall time, time to the first chunk, graph loads, peak RSS.

Targets: the stream's peak RSS grows by less than 50 MB from the shortest text to the
longest; under ``paged``, stage-major loads each graph once (4 loads) and takes less
wall time than chunk-major.

    python bench/streaming.py [--model DIR] [--scale full] [--chars 3000] [--steps 8]
                              [--memory-chars 10000,100000] [--memory-scale tiny]
                              [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _common import add_model_args, model_dir

_PROBE = r"""
import json, sys, time
from tts_kit import Engine
from tts_kit.core import events
from tts_kit.core.procfacts import peak_rss_mb
bundle, loading, mode, chars, steps = sys.argv[1:6]
chars, steps = int(chars), int(steps)
base = "The meeting moved to the large room, and everyone came early. "
text = (base * (chars // len(base) + 1))[:chars]
engine = Engine(bundle, loading=loading)
engine.synthesize("Warm up, please.", steps=1, seed=0)
before = peak_rss_mb()
t0 = time.perf_counter()
first = None
with events.recording() as log:
    if mode == "whole":
        audio = engine.synthesize(text, steps=steps, seed=0).duration_s
        first = time.perf_counter() - t0
    else:
        audio = 0.0
        for c in engine.stream(text, steps=steps, seed=0, order=mode):
            first = first if first is not None else time.perf_counter() - t0
            audio += c.duration_s
wall = time.perf_counter() - t0
loads = sum(1 for _, n in log if n.startswith("load "))
print(json.dumps({"loading": loading, "mode": mode, "chars": chars, "audio_s": audio,
                  "wall_s": wall, "first_s": first, "loads": loads,
                  "before_mb": before, "peak_rss_mb": peak_rss_mb()}))
"""


def _probe(bundle: Path, loading: str, mode: str, chars: int, steps: int) -> dict:
    run = subprocess.run([sys.executable, "-c", _PROBE, str(bundle), loading, mode,
                          str(chars), str(steps)], capture_output=True, text=True,
                         timeout=3600)
    if run.returncode != 0:
        return {"loading": loading, "mode": mode, "chars": chars,
                "error": (run.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    from tts_kit.core import contract
    from tts_kit.models.supertonic.standin import ensure_standin

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--chars", type=int, default=3000)
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--memory-chars", default="10000,100000")
    ap.add_argument("--memory-scale", default="tiny")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    bundle = model_dir(args)
    small = ensure_standin(args.memory_scale)

    print(f"memory: {small.name}, steps 1, one fresh process per row")
    print(f"{'mode':<8}{'chars':>9}{'audio s':>10}{'before MB':>11}{'peak MB':>9}")
    memory = []
    for chars in [int(c) for c in args.memory_chars.split(",")]:
        for mode in ("whole", "chunk"):
            r = _probe(small, "resident", mode, chars, 1)
            memory.append(r)
            if "error" in r:
                print(f"{mode:<8}{chars:>9}  error: {r['error']}")
                continue
            name = "stream" if mode == "chunk" else "whole"
            print(f"{name:<8}{chars:>9}{r['audio_s']:>10.0f}{r['before_mb']:>11.0f}"
                  f"{r['peak_rss_mb']:>9.0f}")
    streams = [r for r in memory if r["mode"] == "chunk" and "error" not in r]
    growth = (streams[-1]["peak_rss_mb"] - streams[0]["peak_rss_mb"]) if len(streams) > 1 \
        else None

    print(f"\norder: {bundle}, {args.chars} characters, steps {args.steps}")
    print(f"{'loading':<10}{'order':<7}{'wall s':>8}{'first s':>9}{'loads':>7}{'peak MB':>9}")
    order = []
    for loading in ("resident", "paged"):
        for mode in ("chunk", "stage"):
            r = _probe(bundle, loading, mode, args.chars, args.steps)
            order.append(r)
            if "error" in r:
                print(f"{loading:<10}{mode:<7}  error: {r['error']}")
                continue
            print(f"{loading:<10}{mode:<7}{r['wall_s']:>8.1f}{r['first_s']:>9.2f}"
                  f"{r['loads']:>7}{r['peak_rss_mb']:>9.0f}")

    def get(loading: str, mode: str) -> dict:
        return next((r for r in order if r["loading"] == loading and r["mode"] == mode), {})

    pc, ps = get("paged", "chunk"), get("paged", "stage")
    print("\ntargets")
    if growth is not None:
        print(f"  stream peak RSS growth, {streams[0]['chars']} -> {streams[-1]['chars']} "
              f"characters: {growth:.0f} MB (target < 50 MB): "
              f"{'met' if growth < 50 else 'MISSED'}")
    if "wall_s" in pc and "wall_s" in ps:
        print(f"  paged: stage-major loads {ps['loads']} (target 4), chunk-major "
              f"{pc['loads']}; wall {ps['wall_s']:.1f} s against {pc['wall_s']:.1f} s "
              f"({ps['wall_s'] / pc['wall_s']:.2f}x; target < 1): "
              f"{'met' if ps['loads'] == 4 and ps['wall_s'] < pc['wall_s'] else 'MISSED'}; "
              f"first audio {ps['first_s']:.1f} s against {pc['first_s']:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"memory": memory, "order": order},
                                              indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
