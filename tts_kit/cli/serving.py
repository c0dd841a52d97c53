"""``tts-kit`` commands about serving speech: serve, loadtest, serve-sweep."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tts_kit.cli._common import (
    LOADING_HELP,
    AddCommand,
    UserError,
    _bundle,
    _say,
    _write_json,
    in_path,
    out_file,
)
from tts_kit.core import contract
from tts_kit.core.settings import settings
from tts_kit.core.userfiles import read_text
from tts_kit.core.validate import check_number, serve_flag


def cmd_serve(args: argparse.Namespace) -> int:
    from tts_kit.serve.app import run_server
    from tts_kit.serve.config import ServeConfig
    from tts_kit.serve.launch import read_config

    if args.config_json:  # the whole configuration as data (tts_kit.serve.launch sends it)
        cfg = read_config(args.config_json)
    else:  # the flags map onto ServeConfig one to one
        cfg = ServeConfig(**{f: getattr(args, serve_flag(f)) for f in
                             ServeConfig.__dataclass_fields__ if serve_flag(f)})
    # One line, exit 2, before the model loads
    cfg.check(source=args.config_json and f"--config-json {args.config_json}")
    if cfg.model:
        args.model = cfg.model
        _bundle(args)  # a bad model fails here, in one line
    run_server(cfg)
    return 0


def _levels(text: str | None, flag: str, kind: type = int) -> list:
    """``flag``'s comma-separated ``kind`` values (``1,2,4``), each above 0; [] for no text."""
    try:
        values = [kind(x) for x in (text or "").split(",") if x.strip()]
    except ValueError:
        values = []
    if (text and not values) or any(not 0 < v < float("inf") for v in values):
        what = "whole numbers" if kind is int else "numbers"
        raise UserError(f"{flag} takes {what} above 0 like "
                        f"{'1,2,4' if kind is int else '0.5,1,2'}; got {text!r}")
    return values


def _texts(path: str | None) -> list[str]:
    from tts_kit.serve.loadtest import DEFAULT_TEXT

    if not path:
        return [DEFAULT_TEXT]
    lines = [ln.strip() for ln in read_text(path, f"--texts {path}").splitlines() if ln.strip()]
    if not lines:
        raise UserError(f"--texts {path}: no text in it; give one request text per line")
    return lines


def _load_body(args: argparse.Namespace) -> dict[str, Any]:
    body = {"steps": args.steps, "lang": args.lang, "voice": args.voice or None, "seed": args.seed}
    return {k: v for k, v in body.items() if v is not None}


def cmd_loadtest(args: argparse.Namespace) -> int:
    import httpx

    from tts_kit.serve.loadtest import LoadSpec, run_load

    if not args.url.startswith(("http://", "https://")):
        raise UserError(f"URL {args.url!r}: give the server's address, such as "
                        "http://127.0.0.1:8000")
    try:  # 'http://[::1' and friends: one line, not httpx's InvalidURL as a bug
        port = httpx.URL(args.url).port
    except (httpx.InvalidURL, ValueError) as exc:
        raise UserError(f"URL {args.url!r}: not a valid address ({exc}); give one such as "
                        "http://127.0.0.1:8000") from None
    if port is not None:
        check_number(port, f"URL {args.url!r}: port", low=1, high=65535, integer=True)
    conc = _levels(args.concurrency, "--concurrency")
    rates = _levels(args.rate, "--rate", float)
    if not conc and not rates:
        raise UserError("give at least one --concurrency level or --rate")
    try:
        httpx.get(f"{args.url.rstrip('/')}/health", timeout=5.0)
    except httpx.HTTPError as exc:
        raise UserError(f"{args.url}: no server answers ({exc}); start one with "
                        "`tts-kit serve`") from None
    spec = LoadSpec(concurrency=conc, requests=args.requests, duration_s=args.duration,
                    rates=rates, texts=_texts(args.texts), body=_load_body(args),
                    timeout_s=args.timeout, api_key=args.api_key or settings().api_key)
    res = run_load(args.url, spec, progress=not args.quiet)
    _say(res.table())
    if args.json:
        _write_json(args.json, res.to_dict())
    refused = [r for r in res.records if r.get("requests") and not r.get("ok")
               and r.get("reason")]
    if refused and len(refused) == len(res.records):
        _say(f"tts-kit loadtest: error: the server refused every request "
             f"({refused[0]['reason']})", file=sys.stderr)
        return 1
    return 0


def cmd_serve_sweep(args: argparse.Namespace) -> int:
    from tts_kit.serve.launch import Stopped, signals_end_the_block
    from tts_kit.serve.sweep import ServingSweepSpec, serving_sweep

    workers = _levels(args.workers, "--workers")
    if not workers:
        raise UserError("--workers '': give worker counts like 1,2")
    spec = ServingSweepSpec(
        architectures=[a.strip() for a in args.architectures.split(",")],
        workers=workers,
        threads=_levels(args.threads, "--threads") or [None],
        presets=[p.strip() for p in args.presets.split(",") if p.strip()],
        loadings=[x.strip() for x in args.loading.split(",") if x.strip()],
        concurrency=_levels(args.concurrency, "--concurrency"),
        rates=_levels(args.rate, "--rate", float), requests=args.requests,
        duration_s=args.duration, texts=_texts(args.texts), body=_load_body(args),
        timeout_s=args.timeout, p95_target_ms=args.p95_target_ms,
        mem_budget_mb=args.mem_budget)
    try:
        with signals_end_the_block():  # every server it started stops, every dir goes
            res = serving_sweep(args.model, spec, progress=not args.quiet)
    except Stopped as exc:
        _say(f"tts-kit serve-sweep: {exc}; the servers it started were stopped")
        return 128 + exc.signum
    _say(res.table())
    _say(f"recommendation: {res.recommend(args.p95_target_ms, args.mem_budget)[1]}")
    if args.json:
        _write_json(args.json, res.to_dict())
    return 0 if any(r.get("status") == "ok" for r in res.records) else 1


def register(add: AddCommand) -> None:
    """Register serve, loadtest and serve-sweep.

    Example:
        >>> from tts_kit.cli import _parser
        >>> _parser().parse_args(["loadtest", "http://127.0.0.1:8000"]).concurrency
        '1,2,4'
    """
    preset_names = ", ".join(contract.PRESET_NAMES)
    sp = add("serve", cmd_serve, "serve speech over HTTP (OpenAI-compatible POST "
             "/v1/audio/speech, /health, /voices, /metrics) from warmed-up worker processes")
    sp.add_argument("--workers", type=int, default=1, help="worker processes")
    sp.add_argument("--threads", type=int, default=None,
                    help="intra-op threads per worker (default: usable cores / --workers)")
    sp.add_argument("--spinning", action="store_true",
                    help="let ONNX Runtime's threads busy-wait between operators (default "
                    "off: idle threads sleep, leaving the CPU to the other workers)")
    sp.add_argument("--scheduling", default="chunk", choices=["request", "chunk"],
                    help="workers: request (a request's chunks all on the worker that took "
                    "it) or chunk (each chunk a job for any free worker; first chunks first)")
    sp.add_argument("--preset", default="supertonic-default", metavar="PRESET",
                    help=f"session preset, one of {preset_names}")
    sp.add_argument("--loading", default="resident", metavar="POLICY",
                    help=LOADING_HELP + "; +mmap maps the weights so workers share their "
                    "pages (e.g. resident+mmap)")
    sp.add_argument("--architecture", default="workers",
                    help="workers: tts_kit's worker processes (bench/lab registers others "
                    "to measure against it)")
    sp.add_argument("--max-queue", type=int, default=8,
                    help="requests that may wait for a worker; more get 429")
    sp.add_argument("--timeout", type=float, default=None,
                    help="seconds per request; a late worker is killed and replaced")
    sp.add_argument("--fallback-wav", default=None, type=in_path,
                    help="WAV sent when a request times out (default: 503 with a reason)")
    sp.add_argument("--max-requests", type=int, default=None,
                    help="recycle a worker after this many requests")
    sp.add_argument("--max-rss-mb", type=float, default=None,
                    help="recycle a worker whose RSS passes this")
    sp.add_argument("--api-key", default=None,
                    help="require Authorization: Bearer KEY (default: $TTS_KIT_API_KEY)")
    sp.add_argument("--host", default="127.0.0.1",
                    help="address to bind (127.0.0.1: this machine only)")
    sp.add_argument("--port", type=int, default=8000, help="TCP port")
    sp.add_argument("--max-chars", type=int, default=4096, help="longest input accepted")
    sp.add_argument("--first-chunk-chars", type=int, default=50,
                    help="cut the first chunk at a clause to this length, for earlier first "
                    "audio (0: no cut)")
    sp.add_argument("--max-chunk-chars", type=int, default=100,
                    help="chunk limit in model (NFKD) characters (0: the engine's 300): "
                    "shorter chunks free a worker sooner for the next request's first audio")
    sp.add_argument("--order", default="chunk", choices=["chunk", "stage"],
                    help="chunk-major (first audio soonest) or stage-major synthesis")
    sp.add_argument("--header-timeout", type=float, default=10.0,
                    help="seconds a new connection has to send its request headers")
    sp.add_argument("--body-timeout", type=float, default=10.0,
                    help="seconds a request has to send its body (408 after)")
    sp.add_argument("--limit-concurrency", type=int, default=64,
                    help="connections at once; more are refused with 503 (0: no limit)")
    sp.add_argument("--voice-map", default=None, metavar="NAME=VOICE,...",
                    help="voice names requests may use, over OpenAI's (alloy, echo, nova, "
                    "...: GET /voices lists them), e.g. alloy=F1,echo=M1")
    sp.add_argument("--config-json", default=None, metavar="FILE", type=in_path,
                    help="the whole configuration as ServeConfig JSON (- reads stdin); "
                    "replaces the other flags")

    sp = add("loadtest", cmd_loadtest, "load a speech server: time to first audio and "
             "latency percentiles, throughput, errors, server CPU and memory", model=False)
    sp.add_argument("url", help="the server, e.g. http://127.0.0.1:8000")
    sp.add_argument("--concurrency", default="1,2,4",
                    help="closed-loop levels: clients at once ('' for none)")
    sp.add_argument("--rate", default=None,
                    help="open-loop levels: arrivals per second, e.g. 0.5,1,2")
    sp.add_argument("--api-key", default=None, help="default: $TTS_KIT_API_KEY")
    _load_args(sp)

    sp = add("serve-sweep", cmd_serve_sweep,
             "start a fresh server per configuration, load each, and recommend the one "
             "that meets a p95 target inside a memory budget")
    sp.add_argument("--architectures", default="workers",
                    help="comma-separated: workers (bench/lab registers others)")
    sp.add_argument("--workers", default="1,2", help="worker counts to try")
    sp.add_argument("--threads", default=None, help="intra-op threads, e.g. 1,2")
    sp.add_argument("--presets", default="supertonic-default",
                    help=f"comma-separated, of: {preset_names}")
    sp.add_argument("--loading", default="resident", metavar="POLICIES",
                    help="comma-separated load policies (resident, paged, budget:MB, +mmap)")
    sp.add_argument("--concurrency", default="1,2,4",
                    help="closed-loop levels to load each with ('' for none); the "
                    "recommendation is made at the highest")
    sp.add_argument("--rate", default=None,
                    help="open-loop levels too: arrivals per second, e.g. 0.5,1,2 (measured "
                    "and tabled; the recommendation reads the closed-loop levels)")
    sp.add_argument("--p95-target-ms", type=float, default=None,
                    help="the total-latency p95 to meet (default: none; the fastest wins)")
    sp.add_argument("--mem-budget", type=float, default=None, help="pool PSS budget in MB")
    _load_args(sp)


def _load_args(sp: argparse.ArgumentParser) -> None:
    """The options loadtest and serve-sweep share: what each request asks for, how many."""
    sp.add_argument("--requests", type=int, default=20, help="most requests per level")
    sp.add_argument("--duration", type=float, default=None,
                    help="most seconds per level (default: until --requests)")
    sp.add_argument("--texts", default=None, type=in_path,
                    help="file with one request text per line")
    sp.add_argument("--steps", type=int, default=contract.DEFAULT_STEPS,
                    help="flow-matching steps per request")
    sp.add_argument("--lang", default=contract.DEFAULT_LANG, metavar="LANG",
                    help=f"language code, one of {', '.join(contract.LANGUAGES)}")
    sp.add_argument("--voice", default=None, help="voice (default: the server's)")
    sp.add_argument("--seed", type=int, default=None,
                    help="noise seed per request (default: random)")
    sp.add_argument("--timeout", type=float, default=120.0,
                    help="client deadline per request, seconds")
    sp.add_argument("--json", default=None, type=out_file, help="write the records as JSON here")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
