"""Serving architectures under load, as ratios to the deployment article's pattern.

On the ``full`` stand-in by default. Each architecture gets a fresh ``tts-kit serve``
(`tts_kit.serve.sweep.serving_sweep`) on the same bundle, preset, text and requests,
loaded in a closed loop at each concurrency; all of them are measured in this one run:

- ``article``: the article's pattern as written, the reference: a process pool of
  ``--workers`` whose function builds a new model for each request (the official
  ``supertonic`` package's ``TTS(auto_download=False)``: every graph loaded, ORT's
  default threads, as the article's code does);
- ``workers``: tts_kit's worker processes (``--workers``, each one warmed-up engine,
  ``--threads`` intra-op threads), audio streamed chunk by chunk, a request's chunks all
  on the worker that took it (request scheduling);
- ``workers+chunk``: the same server build with chunk-level scheduling (a request's
  chunks are jobs for any free worker, first chunks first: `tts_kit.serve.chunked`);
- ``workers+chunk+300``: chunk scheduling with the engine's 300-character chunks (serve's
  default is 100 since issue 37: a worker frees sooner for a new request's first chunk);
- ``workers+chunk+tiers``: chunk scheduling with a background tier (`lab.tiers`, an
  experiment: twice ``--workers`` processes, half reniced for later chunks only; issue 37);
- ``workers+chunk+nest``: chunk scheduling with nesting (`lab.nesting`, an experiment):
  a waiting request's first chunk runs inside a busy worker's running chunk between two
  stage runs instead of waiting for it to end (``--trace DIR``, `lab.jobtrace`, and
  ``bench/ttfa_trace.py`` show where the first chunk's time went);
- ``workers+batch``: chunk scheduling with micro-batching (`lab.batching`, ``--batch``,
  default 4: a free worker takes up to that many similar queued chunks as one batched
  call, waiting up to ``--batch-wait-ms`` for them; issue 27 item 4, an experiment that
  did not win, so not in ``serve``);
- ``threads``: one engine in the server, ``--workers`` executor threads;
- ``blocking``: one engine, synthesis inside the async handler (``--workers`` x
  ``--threads`` intra-op threads, since it is the only one running).

Then ``workers`` x1 and x2 on memory-mapped weights (``resident+mmap``), at
concurrency 1, for what a second worker adds to the pool's PSS.

Targets: ``workers`` throughput >= 3x the article pattern's at concurrency 4; for the
three-sentence text, ``workers`` time to first audio p95 at concurrency 1 <= 0.35x its
whole-response p95; two ``resident+mmap`` workers' PSS <= 1.35x one's. Issue 27: for the
three-sentence text, TTFA p95 at the top concurrency <= 2x TTFA p95 at concurrency 1, and
audio-seconds per CPU-second of the pool (server and workers, less what the load
tester's own ``/metrics`` scrapes cost the server) >= 1.25x request scheduling's, both
for the scheduling the server uses by default. Micro-batching is reported against
unbatched chunk scheduling (audio-seconds per CPU-second, TTFA p95, throughput) with a
verdict: it wins when it serves more than `TIE_REL` more audio per CPU-second without less
throughput.

    python bench/serving.py [--model DIR] [--scale full] [--concurrency 1,2,4]
                            [--requests 8] [--steps 8] [--workers 2] [--threads 1]
                            [--text TEXT] [--batch 4] [--batch-wait-ms 2] [--json OUT]
    python bench/serving.py --recipes fp32,int8-pw,fp16 [--rounds 2] [--copies DIR] ...

``--recipes``: instead of the architectures, ``workers`` with chunk scheduling on each
recipe's converted copy, audio-seconds per CPU-second as ratios to FP32
(`_serving_recipes`; the conversions are one-time preparation, outside the run).

``--peer``: instead, ``tts-kit serve`` then supertonic-server (pyproject's ``peer`` extra,
``pip install supertonic-server``; ``--peer-python`` for a venv of its own), both with
their defaults on the same bundle, the official ``openai`` client streaming 16 requests a
text set at concurrency 1 and 4, and issue 37's table (`_peer`):

    python bench/serving.py --peer [--peer-python /path/to/venv/bin/python] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from _common import add_model_args, model_dir, ratio
from lab.serve_lab import enable

#: Micro-batching wins when it serves more than this much more audio per CPU-second than
#: unbatched chunk scheduling (the sweep's noise), without less throughput.
from tts_kit.serve.sweep import TIE_REL

REFERENCE = "article"
#: Measured only when ``--only`` names them (a comparison for issue 27's TTFA target).
ON_REQUEST = ("workers+chunk+nest", "workers+chunk+tiers", "workers+chunk+300")
THROUGHPUT_TARGET = 3.0
TTFA_TARGET = 0.35
PSS_TARGET = 1.35
#: Issue 27: TTFA p95 at the top concurrency over TTFA p95 at concurrency 1, at most.
TTFA_SPREAD_TARGET = 2.0
#: Issue 27: audio-seconds per CPU-second of the pool over request scheduling's, at least.
AUDIO_PER_CPU_TARGET = 1.25
#: Each architecture measured: label, architecture, scheduling (``chunk+nest``: nesting a
#: waiting first chunk inside a running later chunk, `lab.nesting`; ``chunk+batch``:
#: micro-batching, `lab.batching`).
PLAN = (("article", "article", "request"),
        ("workers", "workers", "request"),
        ("workers+chunk", "workers", "chunk"),
        ("workers+chunk+300", "workers", "chunk"),
        ("workers+chunk+nest", "workers", "chunk+nest"),
        ("workers+chunk+tiers", "workers", "chunk+tiers"),
        ("workers+batch", "workers", "chunk+batch"),
        ("threads", "threads", "request"),
        ("blocking", "blocking", "request"))
#: The lab modules a scheduling or an architecture needs in the server
#: (`lab.serve_lab.enable`; ``threads``, ``blocking``, ``article``: `lab.backends`).
LAB = {"chunk+nest": ["lab.nesting"], "chunk+batch": ["lab.batching"],
       "chunk+tiers": ["lab.tiers"]}
LAB_ARCH = {"threads": ["lab.backends"], "blocking": ["lab.backends"],
            "article": ["lab.backends"]}
#: Labels that change one server setting (issue 37: the engine's 300-character chunks,
#: serve's default before it cut later chunks at 100 so a first chunk waits less).
SETTINGS = {"workers+chunk+300": {"max_chunk_chars": 0}}
#: The article's claim (seed 000): p95 about 200 ms on 2 vCPU under concurrent requests.
CLAIMED_P95_MS = 200.0


def _article_load_s(model: str, loads: int = 3) -> float | None:
    """Median seconds of the article pattern's per-request model build (its pool function
    without the synthesis), in a fresh process with the imports already done."""
    import subprocess

    code = (
        "import statistics, sys, time\n"
        "from tts_kit.models.resolve import open_model\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
        "from lab.backends import official_tts\n"
        "from tts_kit.serve.worker import WorkerConfig\n"
        "wc = WorkerConfig(model=sys.argv[1])\n"
        "official = open_model(sys.argv[1]).capabilities.official_reference\n"
        "ts = []\n"
        f"for _ in range({loads}):\n"
        "    t = time.perf_counter(); tts = official_tts(wc, official)\n"
        "    if tts is None: sys.exit(3)\n"
        "    tts.get_voice_style('M1'); ts.append(time.perf_counter() - t); del tts\n"
        "print(statistics.median(ts))\n")
    proc = subprocess.run([sys.executable, "-c", code, model], capture_output=True, text=True,
                          timeout=600)
    try:
        return float(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else None
    except (ValueError, IndexError):
        return None


def audio_per_cpu_s(r: dict) -> float | None:
    """Seconds of audio served per CPU-second of the pool (server and workers), or None.

    Example:
        >>> audio_per_cpu_s({"audio_rate": 6.0, "cpu_percent": 150.0})
        4.0
    """
    rate, cpu = r.get("audio_rate"), r.get("cpu_percent")
    return rate / (cpu / 100) if rate and cpu else None


def scheduling_targets(at, top: int, three_sentences: bool, check) -> list[dict]:
    """Issue 27's ratios, request and chunk scheduling side by side: TTFA p95 at ``top``
    concurrency over TTFA p95 at 1 (three-sentence text only), and audio-seconds per
    CPU-second of the pool over request scheduling's at ``top``."""
    out = []
    base = audio_per_cpu_s(at("workers", top))
    for label in ("workers", "workers+chunk", "workers+chunk+nest"):
        hi, lo = at(label, top), at(label, 1)
        if not hi:
            continue
        spread = ratio(hi.get("ttfa_p95_ms"), lo.get("ttfa_p95_ms")) if three_sentences \
            else "-"
        out.append(check(f"{label}: TTFA p95 at concurrency {top} / at 1", spread,
                         f"<= {TTFA_SPREAD_TARGET:g}",
                         None if spread == "-" else float(spread) <= TTFA_SPREAD_TARGET))
        mine = audio_per_cpu_s(hi)
        per_cpu = ratio(mine, base)
        out.append(check(f"{label}: audio-s per CPU-s at {top} / request scheduling's"
                         + (f" ({mine:.2f} / {base:.2f})" if mine and base else ""), per_cpu,
                         f">= {AUDIO_PER_CPU_TARGET:g}",
                         None if per_cpu == "-" else float(per_cpu) >= AUDIO_PER_CPU_TARGET))
    return out


def batching_targets(at, conc: list[int], check) -> list[dict]:
    """Micro-batching against unbatched chunk scheduling at each concurrency, measured in
    the same run: audio-seconds per CPU-second, TTFA p95 and throughput as ratios, and
    whether it wins (`TIE_REL`)."""
    out = []
    for c in conc:
        b, ref = at("workers+batch", c), at("workers+chunk", c)
        if not b or not ref:
            continue
        mine, base = audio_per_cpu_s(b), audio_per_cpu_s(ref)
        per_cpu = ratio(mine, base)
        out.append(check(f"batch / chunk: audio-s per CPU-s at {c}"
                         + (f" ({mine:.2f} / {base:.2f})" if mine and base else ""), per_cpu,
                         f"> {1 + TIE_REL:g}", None if per_cpu == "-" else
                         float(per_cpu) > 1 + TIE_REL and (b.get("rps") or 0) >= (
                             ref.get("rps") or 0)))
        out.append(check(f"batch / chunk: TTFA p95 at {c}",
                         ratio(b.get("ttfa_p95_ms"), ref.get("ttfa_p95_ms")), "-", None))
        out.append(check(f"batch / chunk: throughput at {c}",
                         ratio(b.get("rps"), ref.get("rps")), "-", None))
    return out


def main(argv: list[str] | None = None) -> int:
    from tts_kit.core import contract
    from tts_kit.serve.config import ServeConfig
    from tts_kit.serve.loadtest import DEFAULT_TEXT
    from tts_kit.serve.sweep import SWEEP_KEYS, serving_sweep
    from tts_kit.tuning.records import table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--concurrency", default="1,2,4")
    ap.add_argument("--requests", type=int, default=None,
                    help="requests per level (default 8; --peer: 16)")
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads per worker")
    ap.add_argument("--preset", default="supertonic-default")
    ap.add_argument("--text", default=None,
                    help="the request text (default: three sentences, DEFAULT_TEXT); a short "
                    "one shows the per-request model load of the article pattern at its worst")
    ap.add_argument("--batch", type=int, default=4,
                    help="workers+batch: chunks per batched call, at most 4")
    ap.add_argument("--batch-wait-ms", type=float, default=2.0,
                    help="workers+batch: how long a free worker waits for a batch to fill")
    ap.add_argument("--json", default=None)
    ap.add_argument("--trace", default=None,
                    help="folder for chunk scheduling's per-job timelines, LABEL.jsonl each "
                    "(lab.jobtrace; read them with bench/ttfa_trace.py)")
    ap.add_argument("--only", default=None,
                    help="comma-separated labels to measure (default all but "
                    + ", ".join(ON_REQUEST) + ": " + ", ".join(label for label, *_ in PLAN
                                                        if label not in ON_REQUEST)
                    + ", and the mmap pair)")
    ap.add_argument("--recipes", default=None,
                    help="instead of the architectures: workers+chunk on converted copies "
                    "(e.g. fp32,int8-pw,fp16), audio-s per CPU-s as ratios to fp32 "
                    "(bench/_serving_recipes.py)")
    ap.add_argument("--rounds", type=int, default=2, help="--recipes: alternating rounds")
    ap.add_argument("--peer", action="store_true",
                    help="instead: tts-kit serve vs supertonic-server, same client and texts")
    ap.add_argument("--peer-python", default=None,
                    help="--peer: the python that has supertonic-server (default this one)")
    ap.add_argument("--copies", default=None,
                    help="--recipes: keep the converted copies here (reused when present)")
    args = ap.parse_args(argv)
    if args.peer:
        from _peer import run_peer

        args.requests = args.requests or 16
        return run_peer(str(model_dir(args)), args)
    args.requests = args.requests or 8
    conc = [int(c) for c in args.concurrency.split(",")]
    model = str(model_dir(args))
    body = {"steps": args.steps, "seed": 0}
    common = dict(presets=[args.preset], concurrency=conc, requests=args.requests,
                  texts=[args.text or DEFAULT_TEXT], body=body, progress=True, timeout_s=600.0)
    if args.recipes:
        return _recipes(model, args, common)
    t0 = time.time()
    records = []
    only = set(args.only.split(",")) if args.only else None
    # The article's code sets no thread count: its TTS() gets ORT's default (one per core).
    sizes = {"article": (args.workers, None), "blocking": (1, args.workers * args.threads)}
    plan = [row for row in PLAN if row[0] in only] if only else [
        row for row in PLAN if row[0] not in ON_REQUEST]
    for label, arch, sched in plan:
        n, th = sizes.get(arch, (args.workers, args.threads))
        server = ServeConfig(scheduling=sched, **SETTINGS.get(label, {}))
        n *= 2 if sched == "chunk+tiers" else 1  # the same foreground, and a background tier
        lab = LAB.get(sched, []) + LAB_ARCH.get(arch, [])
        if args.trace and arch == "workers":  # the server inherits it (`lab.jobtrace.ENV`)
            Path(args.trace).mkdir(parents=True, exist_ok=True)
            os.environ["TTS_KIT_JOB_TRACE"] = str(Path(args.trace) / f"{label}.jsonl")
            lab.append("lab.jobtrace")  # last: it wraps the schedulers the others add
        enable(*lab, batch=args.batch, batch_wait_ms=args.batch_wait_ms)
        res = serving_sweep(model, architectures=[arch], workers=[n], threads=[th],
                            loadings=["resident"], server=server, **common)
        batch = {"batch_size": args.batch if sched == "chunk+batch" else 1} \
            if sched.startswith("chunk") else {}  # as the sweep's records said before lab
        records += [{**r, **batch, "label": label} for r in res.records]
    mmap = []
    for n in (1, 2) if only is None or "mmap" in only else ():
        res = serving_sweep(model, architectures=["workers"], workers=[n],
                            threads=[args.threads], loadings=["resident+mmap"],
                            **{**common, "concurrency": [1]})
        mmap += [{**r, "label": "workers"} for r in res.records]
    wall = time.time() - t0

    text = args.text or DEFAULT_TEXT
    print(f"\nbundle: {model}  text: {text[:40]!r}... ({len(text)} characters)  "
          f"steps: {args.steps}  requests per level: {args.requests}  "
          f"cpus: {os.cpu_count()}  wall: {wall:.0f} s\n")
    print(table(records + mmap, ["label", *SWEEP_KEYS[1:-1]]))

    def at(label: str, c: int, loading: str = "resident") -> dict:
        return next((r for r in records + mmap if r["label"] == label
                     and r.get("concurrency") == c and r["loading"] == loading), {})

    keys = [("rps", "rps"), ("ttfa_p95_ms", "ttfa95"), ("p95_ms", "p95"),
            ("pool_pss_mb", "PSS")]
    print(f"\nratios to the article pattern ({REFERENCE}) at each concurrency "
          "(measured in this run; rps: higher is better, the others lower)")
    print(f"{'architecture':<14}{'conc':>5}" + "".join(f"{h:>9}" for _, h in keys))
    ratios = []
    for arch, *_ in plan:
        for c in conc:
            r, ref = at(arch, c), at(REFERENCE, c)
            row = {"architecture": arch, "concurrency": c,
                   **{k: ratio(r.get(k), ref.get(k)) for k, _ in keys}}
            ratios.append(row)
            print(f"{arch:<14}{c:>5}" + "".join(f"{row[k]:>9}" for k, _ in keys))

    top = max(conc)
    w_top, a_top = at("workers", top), at(REFERENCE, top)
    w1 = at("workers", 1)
    m2 = next((r for r in mmap if r["workers"] == 2), {})
    m1 = next((r for r in mmap if r["workers"] == 1), {})

    def check(name: str, value: str, target: str, ok: bool | None) -> dict:
        verdict = "-" if ok is None else ("met" if ok else "MISSED")
        print(f"  {name:<58} {value:>7}  target {target:<7} {verdict}")
        return {"name": name, "value": value, "target": target, "met": ok}

    def num(v: str) -> float | None:
        return None if v == "-" else float(v)

    print("\ntargets")
    thr = ratio(w_top.get("rps"), a_top.get("rps"))
    # The TTFA target is stated for the three-sentence text (one chunk has nothing to cut).
    ttfa = ratio(w1.get("ttfa_p95_ms"), w1.get("p95_ms")) if text == DEFAULT_TEXT else "-"

    pss = ratio(m2.get("pool_pss_mb"), m1.get("pool_pss_mb"))
    targets = [
        check(f"workers / article throughput at concurrency {top}", thr,
              f">= {THROUGHPUT_TARGET:g}", None if num(thr) is None
              else num(thr) >= THROUGHPUT_TARGET),
        check("workers TTFA p95 / whole-response p95 at concurrency 1"
              + ("" if text == DEFAULT_TEXT else " (three-sentence text only)"), ttfa,
              f"<= {TTFA_TARGET:g}", None if num(ttfa) is None else num(ttfa) <= TTFA_TARGET),
        check("PSS of 2 resident+mmap workers / PSS of 1", pss, f"<= {PSS_TARGET:g}",
              None if num(pss) is None else num(pss) <= PSS_TARGET),
    ]
    targets += scheduling_targets(at, top, text == DEFAULT_TEXT, check)
    targets += batching_targets(at, conc, check)
    load_s = _article_load_s(model)

    def cpu_s(r: dict) -> float | None:
        # CPU-seconds per request: the pool's CPU (server + workers) over its throughput.
        return (r["cpu_percent"] / 100 / r["rps"]) if r.get("cpu_percent") and r.get("rps") \
            else None

    cw, ca = cpu_s(w_top), cpu_s(a_top)
    if load_s and cw and ca:
        print(f"  (CPU-seconds per request at concurrency {top}: article {ca:.2f}, workers "
              f"{cw:.2f}, a ratio of {ca / cw:.2f}; the article's extra {ca - cw:.2f} s per "
              f"request holds its model build, {load_s:.2f} s wall on ORT's default threads "
              "measured alone in a fresh process)")
    if m1 and m2:
        print(f"  (summed RSS of the same pools: {m1.get('pool_rss_mb') or 0:.0f} and "
              f"{m2.get('pool_rss_mb') or 0:.0f} MB; PSS {m1.get('pool_pss_mb') or 0:.0f} and "
              f"{m2.get('pool_pss_mb') or 0:.0f} MB: RSS counts the mapped weights once per "
              "process)")

    print(f"\nthe article's claim: p95 about {CLAIMED_P95_MS:.0f} ms on 2 vCPU under "
          "concurrent requests. Measured here (p95 of the whole response):")
    claim = []
    for arch, *_ in plan:
        cells = []
        for c in conc:
            p95 = at(arch, c).get("p95_ms")
            cells.append(f"c={c}: {p95:.0f} ms ({p95 / CLAIMED_P95_MS:.1f}x)" if p95 else
                         f"c={c}: -")
            claim.append({"architecture": arch, "concurrency": c, "p95_ms": p95})
        print(f"  {arch:<10} " + ", ".join(cells))
    audio = w1.get("audio_rate") and w1.get("rps") and w1["audio_rate"] / w1["rps"]
    if audio:
        print(f"  (one response is {audio:.1f} s of audio; at concurrency 1 a p95 of "
              f"{CLAIMED_P95_MS:.0f} ms would need {audio / (CLAIMED_P95_MS / 1000):.0f}x "
              "real time per request)")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"records": records + mmap, "ratios": ratios, "targets": targets,
             "claim": claim, "article_load_s": load_s,
             "cpu_s_per_request": {"article": ca, "workers": cw}, "wall_s": wall}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def _recipes(model: str, args: argparse.Namespace, common: dict) -> int:
    """``--recipes``: the same server on converted copies (`_serving_recipes`)."""
    from _serving_recipes import recipes_run

    print(f"load average: {os.getloadavg()[0]:.2f}")
    out = recipes_run(model, [r.strip() for r in args.recipes.split(",") if r.strip()], args,
                      common, audio_per_cpu_s)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
