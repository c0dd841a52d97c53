"""Load policies side by side: peak RSS, idle RSS between requests, p50 latency, as ratios.

On the ``full`` stand-in by default. Every policy is measured in this one run, each in
its own fresh process (`tts_kit.runtime.measure.run_isolated` running
`lab.probe_policy.probe_policy`) on the same bundle, cores, text and number of
requests. Before that, the external-data copies are made (so no policy pays for them
inside its timings) and the stage costs are measured
(`tts_kit.tuning.stage_costs.stage_costs`);
the two budgets come from them:

- ``budget`` A: every stage but the vector estimator fits (it is run paged beside them);
- ``budget`` B: duration predictor + text encoder + vector estimator fit, not the vocoder
  too, so the least-recently-used rule churns on the pipeline's cyclic order.

Rows besides the three policies show what the release step contributes: ``notrim``
(no ``malloc_trim``), ``noext`` (sessions parsed from the one-file graph) and both off,
which is the article's plain "delete it, gc.collect()". ``mmap`` keeps weights as
file-backed pages (its anonymous peak is printed too).

Last, a ``paged`` trial (`tts_kit.tuning.tune.trial`) on an empty external-data cache
and again on the one it filled: the copies are made by the trial's one-time preparation,
outside its figures, so both peaks should agree.

``paged`` loads optimised, pre-packed copies made once (issue 27:
`tts_kit.runtime.session_files.optimised_copy`); ``paged+noopt`` is the paged load before
that (each load optimises and pre-packs the graph again).

Targets: ``paged`` peak RSS <= 0.6 x ``resident`` and p50 <= 1.2 x ``resident`` (issue 27;
the peak target was 0.75 before); idle RSS between ``paged`` requests within 50 MB of the
process's RSS before the first load; cold/warm paged peak within 5 %.
``--loadings resident,paged+noopt,paged`` measures just those rows (no budgets then, and
no stage costs; ``--no-cold-warm`` skips the last part). ``--serving`` measures the
``--loadings`` behind ``tts-kit serve`` instead (`_paged_serving`: each worker's OS peak,
p50 and CPU per request, in alternating rounds).

    python bench/paged.py [--model DIR] [--scale full] [--requests 4] [--steps 8]
                          [--cpus N] [--trials 1] [--preset supertonic-default]
                          [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

from _common import add_model_args, model_dir, ratio

REFERENCE = "resident"
PEAK_TARGET = 0.6
P50_TARGET = 1.2
IDLE_TARGET_MB = 50.0
COLD_WARM_TOL = 0.05


def _cold_and_warm(model: Path, preset, workload, cpus: int | None) -> dict:
    """A paged trial on an empty external-data cache, then on the one it filled: the
    one-time preparation runs outside the trial (``prep_*``), so the peaks should agree."""
    import os
    import tempfile

    from tts_kit.tuning.tune import trial

    print(f"\npaged trial, cold cache then warm (target: peaks within {COLD_WARM_TOL:.0%})")
    old = os.environ.get("TTS_KIT_CACHE_DIR")
    rows = {}
    with tempfile.TemporaryDirectory(prefix="tts_kit-coldwarm-") as cache:
        os.environ["TTS_KIT_CACHE_DIR"] = cache
        try:
            for name in ("cold", "warm"):
                r = trial(model, preset, workload.replace(repeats=1), cpus=cpus,
                          loading="paged", timeout_s=900)
                rows[name] = {k: r[k] for k in ("status", "peak_rss_mb", "load_s", "first_ms",
                                                "prep_s", "prep_peak_rss_mb")}
                prep = (f"prep {r['prep_s']:.1f} s, peak {r['prep_peak_rss_mb']:.0f} MB"
                        if r["prep_s"] is not None else "no prep")
                print(f"  {name}: {r['status']}, peak {r['peak_rss_mb'] or 0:.0f} MB, load "
                      f"{r['load_s'] or 0:.2f} s ({prep}, one-time, outside the trial)")
        finally:
            if old is None:
                os.environ.pop("TTS_KIT_CACHE_DIR", None)
            else:
                os.environ["TTS_KIT_CACHE_DIR"] = old
    c, w = rows["cold"]["peak_rss_mb"], rows["warm"]["peak_rss_mb"]
    if c and w:
        rel = abs(c / w - 1)
        print(f"  cold / warm peak {c / w:.3f} ({'met' if rel <= COLD_WARM_TOL else 'MISSED'})")
    return rows


def main(argv: list[str] | None = None) -> int:
    from tts_kit.core import contract
    from tts_kit.models.supertonic.bundle import Bundle
    from tts_kit.runtime.loading import ARTICLE_SPLIT_CLAIMED, prepare_loading
    from tts_kit.runtime.sessions import get_preset
    from tts_kit.tuning.stage_costs import stage_costs
    from tts_kit.tuning.workload import Workload

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_args(ap)
    ap.add_argument("--preset", default="supertonic-default")
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS)
    ap.add_argument("--cpus", type=int, default=None, help="pin every process to N cores")
    ap.add_argument("--trials", type=int, default=1,
                    help="fresh processes per policy (peaks vary between processes)")
    ap.add_argument("--json", help="also write the numbers here")
    ap.add_argument("--loadings", default=None,
                    help="comma-separated policies to measure (default: all rows)")
    ap.add_argument("--no-cold-warm", action="store_true", help="skip the cold/warm trials")
    ap.add_argument("--serving", action="store_true",
                    help="instead: the --loadings (default resident,paged) behind tts-kit "
                    "serve, one worker each, each worker's OS peak (bench/_paged_serving.py)")
    ap.add_argument("--rounds", type=int, default=2, help="--serving: alternating rounds")
    ap.add_argument("--threads", type=int, default=1, help="--serving: intra-op threads")
    args = ap.parse_args(argv)

    model = model_dir(args)
    bundle = Bundle(model)
    preset = get_preset(args.preset)
    t0 = time.perf_counter()
    graphs = [bundle.stage_path(stage) for stage in contract.STAGES]
    for spec in ("paged", "paged+noopt"):  # optimised copies, and external-data copies
        prepare_loading(graphs, spec, sess_options=preset.session_options(),
                        providers=preset.provider_list())
    print(f"bundle: {model}\npreset: {args.preset}  cpus: {args.cpus or 'all'}  "
          f"steps: {args.steps}  requests per policy: {args.requests}  "
          f"load average: {os.getloadavg()[0]:.2f}")
    print(f"external-data and optimised copies ready in {time.perf_counter() - t0:.1f} s "
          "(made once, cached)\n")

    if args.serving:
        return _serving(model, args)
    workload = Workload(steps=args.steps)  # one workload for the costs and every policy
    if args.loadings:
        return _some_rows(model, preset, workload, args,
                          [x.strip() for x in args.loadings.split(",") if x.strip()])
    costs = stage_costs(model, preset, workload, cpus=args.cpus)
    print("stage costs (MB; one fresh process, each stage loaded, run, released in order)")
    print(costs.table())
    print("split, measured:", ", ".join(f"{k} {v:.0f}%" for k, v in costs.split().items()))
    print("split, claimed by the article:",
          ", ".join(f"{k} {v:.0f}%" for k, v in ARTICLE_SPLIT_CLAIMED.items()))
    c = costs.costs_mb()
    ve = "vector_estimator"
    budget_a = math.ceil(1.1 * sum(v for s, v in c.items() if s != ve))
    budget_b = math.ceil(1.05 * (c["duration_predictor"] + c["text_encoder"] + c[ve]))
    print(f"budgets: A = {budget_a} MB (all but {ve}), B = {budget_b} MB (all but vocoder)\n")

    loadings = ["resident", "resident+ext", "paged", "paged+noopt", "paged+notrim",
                "paged+noext", "paged+noext+notrim", "paged+mmap", f"budget:{budget_a}",
                f"budget:{budget_b}"]
    rows = _measure_rows(model, preset, workload, args, loadings, c)
    ref = rows.get(REFERENCE, {})
    if ref.get("status") != "ok":
        print("resident failed; no ratios")
        return 1
    _print_rows(rows, ref)
    _print_paged_details(rows, ref, costs)
    cold_warm = None if args.no_cold_warm else _cold_and_warm(model, preset, workload, args.cpus)
    if args.json:
        out = {"bundle": str(model), "preset": args.preset, "cpus": args.cpus,
               "steps": args.steps, "requests": args.requests, "costs": costs.to_dict(),
               "budgets": [budget_a, budget_b], "rows": rows, "cold_warm": cold_warm}
        Path(args.json).write_text(json.dumps(out, indent=2, default=str) + "\n")
        print(f"wrote {args.json}")
    return 0


def _print_paged_details(rows: dict, ref: dict, costs) -> None:
    """The full run's target lines and what each part of paging contributes."""
    paged = rows.get("paged", {})
    if paged.get("status") == "ok":
        _print_targets(rows, ref)
        idle_over = paged["idle_over_mb"]
        print(f"target idle within {IDLE_TARGET_MB:.0f} MB of before the first load: "
              f"+{idle_over:.0f} MB ({'met' if idle_over <= IDLE_TARGET_MB else 'MISSED'})")
        if rows.get("resident+ext", {}).get("status") == "ok":
            print(f"paged peak / resident+ext peak (both loading external data): "
                  f"{paged['peak_mb'] / rows['resident+ext']['peak_mb']:.2f}")
        print("\nwhat the release step contributes (idle RSS between paged requests, peak):")
        for name in ("paged", "paged+notrim", "paged+noext", "paged+noext+notrim"):
            r = rows.get(name, {})
            if r.get("status") == "ok":
                print(f"  {name:<22} idle +{r['idle_over_mb']:>5.0f} MB over "
                      f"before, peak {r['peak_mb']:>5.0f} MB")
        big = max(costs.stages.values(), key=lambda s: s.peak_mb)
        floor = costs.runtime_mb + big.peak_mb
        print(f"\nfloor of stage-level paging: runtime {costs.runtime_mb:.0f} MB + the largest "
              f"stage ({big.stage}: load {big.load_mb:.0f} + run {big.run_mb:.0f}, load peak "
              f"{big.load_peak_mb:.0f}) = {floor:.0f} MB; paged peak measured "
              f"{paged['peak_mb']:.0f} MB")
        mm = rows.get("paged+mmap", {})
        if mm.get("status") == "ok":
            print(f"paged+mmap: the same RSS peak ({mm['peak_mb']:.0f} MB) but at most "
                  f"{mm['anon_peak_mb']:.0f} MB anonymous; the rest are clean file pages the "
                  f"kernel may drop under pressure; p50 x{mm['p50_s'] / paged['p50_s']:.2f} "
                  "of paged")

def _measure_rows(model: Path, preset, workload, args, loadings: list[str],
                  costs_mb: dict | None) -> dict[str, dict]:
    """Each policy in fresh processes (``--trials``): peak, idle, p50 and what stays."""
    from lab.probe_policy import probe_policy

    from tts_kit.runtime.measure import run_isolated

    rows: dict[str, dict] = {}
    for loading in loadings:
        runs = [run_isolated(probe_policy, str(model), loading, preset, workload, args.requests,
                             stage_costs_mb=costs_mb, cpus=args.cpus, timeout_s=600)
                for _ in range(max(1, args.trials))]
        bad = [m for m in runs if not m.ok]
        if bad:
            print(f"{loading}: {bad[0].status} {bad[0].error}")
            rows[loading] = {"status": bad[0].status, "error": bad[0].error}
            continue
        res = [m.result for m in runs]
        peaks = [m.peak_rss_mb for m in runs]
        rows[loading] = {
            "status": "ok",
            "peak_mb": statistics.median(peaks),
            "peaks_mb": peaks,
            "before_mb": statistics.median(r["before_mb"] for r in res),
            "idle_mb": statistics.median(x for r in res for x in r["idle_mb"]),
            # The worst idle of a process against that process's own RSS before loading.
            "idle_over_mb": max(max(r["idle_mb"]) - r["before_mb"] for r in res),
            "p50_s": statistics.median(x for r in res for x in r["latency_s"]),
            "latency_s": [r["latency_s"] for r in res],
            "anon_peak_mb": max(r["anon_peak_mb"] for r in res),
            "kept": res[-1]["loaded"][-1],
        }
        print(f"  measured {loading}: peaks {', '.join(f'{p:.0f}' for p in peaks)} MB",
              flush=True)
    return rows


def _print_targets(rows: dict, ref: dict) -> None:
    paged = rows["paged"]
    peak_ratio = paged["peak_mb"] / ref["peak_mb"]
    p50_ratio = paged["p50_s"] / ref["p50_s"]
    print(f"\ntarget paged peak <= {PEAK_TARGET} x resident: {peak_ratio:.2f} "
          f"({'met' if peak_ratio <= PEAK_TARGET else 'MISSED'})")
    print(f"target paged p50 <= {P50_TARGET} x resident: {p50_ratio:.2f} "
          f"({'met' if p50_ratio <= P50_TARGET else 'MISSED'})")
    before = rows.get("paged+noopt", {})
    if before.get("status") == "ok":
        print(f"paged+noopt (each load optimises and pre-packs again): p50 "
              f"{before['p50_s'] / ref['p50_s']:.2f} x resident, peak "
              f"{before['peak_mb'] / ref['peak_mb']:.2f} x")


def _some_rows(model: Path, preset, workload, args, loadings: list[str]) -> int:
    """``--loadings``: only those rows (budgets need stage costs: not offered here)."""
    if any(x.startswith("budget") for x in loadings) or REFERENCE not in loadings:
        print(f"--loadings: include {REFERENCE} and no budget (budgets need the full run)")
        return 2
    rows = _measure_rows(model, preset, workload, args, loadings, None)
    ref = rows[REFERENCE]
    if ref.get("status") != "ok":
        print("resident failed; no ratios")
        return 1
    _print_rows(rows, ref)
    if rows.get("paged", {}).get("status") == "ok":
        _print_targets(rows, ref)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"bundle": str(model), "rows": rows},
                                              indent=2, default=str) + "\n")
        print(f"wrote {args.json}")
    return 0


def _serving(model: Path, args) -> int:
    """``--serving``: the loadings behind ``tts-kit serve`` (`_paged_serving`)."""
    from _paged_serving import print_serving, serving_rows

    loadings = [x.strip() for x in (args.loadings or "resident,paged").split(",") if x.strip()]
    if loadings[0] != REFERENCE:
        print(f"--serving: give {REFERENCE} first (the reference)")
        return 2
    rows = serving_rows(str(model), loadings, args.preset, args.threads, args.requests,
                        args.steps, args.rounds)
    print_serving(rows, REFERENCE, PEAK_TARGET, P50_TARGET)
    if args.json:
        Path(args.json).write_text(json.dumps({"bundle": str(model), "serving": rows},
                                              indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def _print_rows(rows: dict, ref: dict) -> None:
    from tts_kit.core import contract

    print(f"\n{'loading':<22}{'peak':>7}{'idle':>7}{'idle-before':>12}{'p50 s':>7}"
          f"{'anon':>7}{'x peak':>8}{'x idle':>8}{'x p50':>7}  kept after a request")
    for loading, r in rows.items():
        if r.get("status") != "ok":
            print(f"{loading:<22}{r['status']}")
            continue
        kept = ",".join(contract.STAGE_SHORT[s] for s in r["kept"]) or "-"
        print(f"{loading:<22}{r['peak_mb']:>7.0f}{r['idle_mb']:>7.0f}"
              f"{r['idle_over_mb']:>12.0f}{r['p50_s']:>7.2f}"
              f"{r['anon_peak_mb']:>7.0f}{ratio(r['peak_mb'], ref['peak_mb']):>8}"
              f"{ratio(r['idle_mb'], ref['idle_mb']):>8}{ratio(r['p50_s'], ref['p50_s']):>7}"
              f"  {kept}")
    print("(MB of RSS; peak = median over the trials' processes; idle = median RSS after each "
          "request; idle-before = the worst idle minus the RSS before the first load; anon = "
          "most anonymous RSS seen at a stage event)")


if __name__ == "__main__":
    sys.exit(main())
