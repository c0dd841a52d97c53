"""The serving sweep: a fresh ``tts-kit serve`` per configuration, the load test on each, and
the one to deploy: among those meeting a p95 target inside a memory budget, the highest
throughput, then within `TIE_REL` of it the smallest PSS."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tts_kit.serve.loadtest import DEFAULT_TEXT, LoadSpec, run_load
from tts_kit.tuning import records as rk

if TYPE_CHECKING:
    from tts_kit.serve.config import ServeConfig

#: The sweep's table (`tts_kit.tuning.records` keys).
SWEEP_KEYS: tuple[str, ...] = (
    "architecture", "workers", "threads", "preset", "loading", "concurrency",
    "status", "ok", "errors", "timeouts", "rejected", rk.RPS, rk.AUDIO_RATE, rk.AUDIO_PER_CPU_S,
    rk.TTFA_P95_MS, rk.P50_MS, rk.P95_MS, rk.CPU_PERCENT, rk.POOL_RSS_MB, rk.POOL_PSS_MB, "meets",
)

#: Relative throughput within which two worker counts are equally fast.
TIE_REL = 0.10


def describe(r: dict[str, Any]) -> str:
    """A configuration in words.

    Example:
        >>> describe({"architecture": "workers", "workers": 2, "threads": 1,
        ...           "preset": "lean", "loading": "resident"})
        'workers x2, 1 thread(s), lean, resident'
    """
    sched = r.get("scheduling")
    chunked = f", {sched} scheduling" if sched not in (None, "request") else ""
    return (f"{r['architecture']} x{r['workers']}, {r.get('threads') or 'default'} thread(s), "
            f"{r['preset']}, {r['loading']}{chunked}")


@dataclass
class ServingSweepResult:
    """The records of a serving sweep (one per configuration and concurrency level)."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def table(self, keys: Sequence[str] = SWEEP_KEYS) -> str:
        """The records as a text table, then why each failed configuration failed.

        Example:
            >>> r = ServingSweepResult([{"architecture": "workers", "workers": 1,
            ...     "threads": None, "preset": "lean", "loading": "resident",
            ...     "status": "error", "error": "the server did not start"}])
            >>> r.table().splitlines()[-2:]
            ['failed:', '  workers x1, default thread(s), lean, resident: the server did not start']
        """
        text = rk.table(self.records, [k for k in keys if any(k in r for r in self.records)])
        failed = [f"  {describe(r)}: {r['error']}" for r in self.records
                  if r.get("status") == "error" and r.get("error")]
        return "\n".join([text, "failed:", *failed]) if failed else text

    def recommend(self, p95_target_ms: float | None, mem_budget_mb: float | None,
                  concurrency: int | None = None) -> tuple[dict[str, Any] | None, str]:
        """The configuration to deploy at ``concurrency`` (default: the highest), and why;
        marks each record's ``meets``."""
        levels = [r["concurrency"] for r in self.records if r.get("concurrency")]
        if not levels:
            return None, ("no closed-loop level was measured (the recommendation reads the "
                          "concurrency levels, not the open-loop rates)")
        level = concurrency or max(levels)
        pool = [r for r in self.records if r.get("concurrency") == level]

        def meets(r: dict[str, Any]) -> bool:
            return (r.get("status") == "ok" and not r.get("errors") and not r.get("timeouts")
                    and r.get(rk.P95_MS) is not None and r.get(rk.RPS)
                    and (p95_target_ms is None or r[rk.P95_MS] <= p95_target_ms)
                    and (mem_budget_mb is None or (r.get(rk.POOL_PSS_MB) or 0) <= mem_budget_mb))

        for r in self.records:
            r["meets"] = bool(meets(r)) if r.get("concurrency") == level else None
        target = f"p95 <= {p95_target_ms:.0f} ms" if p95_target_ms is not None else "any p95"
        budget = f"PSS <= {mem_budget_mb:.0f} MB" if mem_budget_mb is not None else "any memory"
        good = [r for r in pool if r["meets"]]
        if not good:
            ok = [r for r in pool if r.get("status") == "ok" and r.get(rk.P95_MS) is not None]
            if not ok:
                return None, f"no configuration finished at concurrency {level}"
            near = min(ok, key=lambda r: r[rk.P95_MS])
            return None, (f"no configuration meets {target} with {budget} at concurrency "
                          f"{level}; the lowest p95 was {describe(near)}: "
                          f"{near[rk.P95_MS]:.0f} ms, PSS {near.get(rk.POOL_PSS_MB) or 0:.0f} MB"
                          f", {near.get('errors', 0)} error(s), {near.get('timeouts', 0)} "
                          "timeout(s)")
        fastest = max(r[rk.RPS] for r in good)
        tied = [r for r in good if r[rk.RPS] >= fastest * (1 - TIE_REL)]
        best = min(tied, key=lambda r: r.get(rk.POOL_PSS_MB) or 0.0)
        why = ("the highest throughput" if len(tied) == 1 else
               f"the smallest PSS of {len(tied)} within {TIE_REL:.0%} of the highest throughput")
        return best, (f"{describe(best)}: {best[rk.RPS]:.2f} req/s at concurrency {level}, "
                      f"p95 {best[rk.P95_MS]:.0f} ms, time to first audio p95 "
                      f"{best.get(rk.TTFA_P95_MS) or 0:.0f} ms, PSS "
                      f"{best.get(rk.POOL_PSS_MB) or 0:.0f} MB; {why} of the {len(good)} of "
                      f"{len(pool)} configurations that meet {target} with {budget}")

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.records}


@dataclass(frozen=True)
class ServingSweepSpec:
    """The configurations a serving sweep tries (`ServeConfig` fields; ``server``: the
    settings they share), the load on each (`LoadSpec` fields), and the recommendation's
    target and budget.

    Example:
        >>> ServingSweepSpec(concurrency=(2,)).load().concurrency
        (2,)
    """

    architectures: Sequence[str] = ("workers",)
    workers: Sequence[int] = (1,)
    threads: Sequence[int | None] = (None,)
    presets: Sequence[str] = ("supertonic-default",)
    loadings: Sequence[str] = ("resident",)
    concurrency: Sequence[int] = (1, 2, 4)
    rates: Sequence[float] = ()
    requests: int = 12
    duration_s: float | None = None
    texts: Sequence[str] = (DEFAULT_TEXT,)
    body: dict[str, Any] | None = None
    timeout_s: float = 120.0
    server: ServeConfig | None = None
    p95_target_ms: float | None = None
    mem_budget_mb: float | None = None

    def load(self) -> LoadSpec:
        """The load test every configuration gets."""
        return LoadSpec(concurrency=self.concurrency, rates=self.rates, requests=self.requests,
                        duration_s=self.duration_s, texts=self.texts, body=self.body,
                        timeout_s=self.timeout_s)


def serving_sweep(model: str | None, spec: ServingSweepSpec | None = None, *,
                  progress: bool = True, log_dir: str | None = None,
                  **overrides: Any) -> ServingSweepResult:
    """Serve and load every configuration of ``spec`` (``overrides``: its fields replaced)
    in turn; one whose server does not start gets a record with ``status`` ``error`` and the
    reason. ``log_dir`` keeps the servers' logs.

    Example:
        >>> serving_sweep("models/full", workers=[1, 2], concurrency=[2])  # doctest: +SKIP
    """
    from tts_kit.serve.config import ServeConfig
    from tts_kit.serve.launch import start_server

    spec = dataclasses.replace(spec or ServingSweepSpec(), **overrides)
    load_spec = spec.load()
    load_spec.check()  # before any server starts; each configuration's check names the rest
    result = ServingSweepResult()
    base = spec.server or ServeConfig()
    model = base.model if model is None else str(model)
    queue = max([*spec.concurrency, 4]) * 2  # open loop: arrivals may pile up; 429 past it
    runs: dict[tuple, tuple[dict[str, Any], ServeConfig]] = {}
    for arch, n, th, preset, loading in itertools.product(
            spec.architectures, spec.workers, spec.threads, spec.presets, spec.loadings):
        config = {"architecture": arch, "workers": int(n), "threads": th, "preset": preset,
                  "loading": loading}
        cfg = dataclasses.replace(base, **config, max_queue=queue, model=model)
        cfg.check()  # every configuration, before any server starts: one line, exit 2
        if arch == "workers":
            config["scheduling"] = cfg.scheduling
        runs.setdefault((arch, int(n), th, preset, loading), (config, cfg))
    if model is not None:
        from tts_kit.models.resolve import open_model

        open_model(model)  # a bad model: now
    for config, cfg in runs.values():
        try:
            with start_server(config=cfg, log_dir=log_dir) as srv:
                load = run_load(srv.url, load_spec, progress=progress)
        except RuntimeError as exc:
            result.records.append({**config, "status": "error",
                                   "error": str(exc).splitlines()[0][:300]})
            continue
        for rec in load.records:
            rate, cpu = rec.get(rk.AUDIO_RATE), rec.get(rk.CPU_PERCENT)
            per_cpu = rate / (cpu / 100) if rate and cpu else None
            result.records.append({**config, "status": "ok", **rec, rk.AUDIO_PER_CPU_S: per_cpu})
    result.recommend(spec.p95_target_ms, spec.mem_budget_mb)
    return result


__all__ = ["SWEEP_KEYS", "ServingSweepResult", "ServingSweepSpec", "describe",
           "serving_sweep"]
