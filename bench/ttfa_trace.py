"""Where time to first audio went, from chunk scheduling's per-job timelines.

Reads a trace that ``python bench/serving.py --trace DIR`` (or any server run with
``TTS_KIT_JOB_TRACE=FILE``) wrote (`lab.jobtrace`), and prints per request its
first chunk's queue wait and render, and the chunks the workers were running when it
arrived; then, for the requests that arrived while others ran (the loaded levels), the
wait's and render's p50/p95 and how often the wait sat behind a later chunk.

    python bench/ttfa_trace.py DIR/workers+chunk.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from lab.jobtrace import summarize

    from tts_kit.serve.loadtest import percentile

    path = Path((argv or sys.argv[1:])[0])
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    per = summarize(rows)
    print(f"{'rid':>4} {'arrived':>8} {'wait':>6} {'render':>6} nested  behind "
          "(request, chunk, characters, seconds run)")
    for s in per:
        print(f"{s['rid']:>4} {s['arrived']:>8.2f} {s['wait_s']:>6.2f} {s['render_s']:>6.2f} "
              f"{'yes' if s['nested'] else '-':>6}  {s['behind']}")
    loaded = [s for s in per if s["behind"]]
    if loaded:
        waits = [s["wait_s"] * 1000 for s in loaded]
        renders = [s["render_s"] * 1000 for s in loaded]
        later = sum(1 for s in loaded if any(b[1] > 0 for b in s["behind"]))
        print(f"\n{len(loaded)} requests arrived while others ran: wait p50 "
              f"{percentile(waits, 50):.0f} ms, p95 {percentile(waits, 95):.0f} ms; first "
              f"chunk render p50 {percentile(renders, 50):.0f} ms, p95 "
              f"{percentile(renders, 95):.0f} ms; {later} arrived behind a later chunk")
    return 0


if __name__ == "__main__":
    sys.exit(main())
