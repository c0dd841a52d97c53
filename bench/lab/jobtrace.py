"""Per-job timelines of chunk scheduling, for working out where time to first audio goes
(a lab experiment: ``bench/serving.py --trace``, read back by ``bench/ttfa_trace.py``).

Loaded into a server (`lab.serve_lab.enable`, listed last), it wraps every registered chunk
scheduler (`tts_kit.serve.chunked.SCHEDULERS`, `traced`); the environment variable
``TTS_KIT_JOB_TRACE`` names the file each scheduler appends one JSON line per finished job: the
request, the chunk, its characters, the worker, when it was queued, started and finished
(seconds since the scheduler started), whether it ran nested inside another job
(``nested``, see `lab.nesting`), and for a first chunk what every worker was
running when it was queued (``behind``: request, chunk, characters, seconds it had run).
`summarize` reads such a file back: per request, the first chunk's queue wait and render.

Example:
    >>> t = JobTrace(None)
    >>> t.record({"rid": 0})  # off: nothing written
    >>> summarize([{"rid": 0, "k": 0, "arrived": 1.0, "queued": 1.0, "started": 1.5,
    ...             "done": 3.0, "behind": []}])[0]["wait_s"]
    0.5
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from typing import Any

from lab.serve_lab import job_length
from tts_kit.serve.chunked import SCHEDULERS

#: The environment variable naming the trace file (appended to).
ENV = "TTS_KIT_JOB_TRACE"


class JobTrace:
    """Appends job records as JSON lines to ``path`` (None: records nothing)."""

    def __init__(self, path: str | None):
        self.path = path
        self.origin = time.monotonic()

    @classmethod
    def from_env(cls) -> JobTrace:
        """The trace the environment asks for (`ENV`), off when unset."""
        return cls(os.environ.get(ENV) or None)

    @property
    def on(self) -> bool:
        return self.path is not None

    def at(self, t: float | None) -> float | None:
        """``t`` (``time.monotonic()``) as seconds since the trace began, to the ms."""
        return None if t is None else round(t - self.origin, 3)

    def record(self, row: dict[str, Any]) -> None:
        """Append one job's record (an OSError turns the trace off, once)."""
        if self.path is None:
            return
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
        except OSError:
            self.path = None


def summarize(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per request (its first chunk's record): arrival, the first chunk's queue wait and
    render seconds, and what it waited behind (the longest-running chunk then).

    Example:
        >>> summarize([{"rid": 3, "k": 0, "arrived": 0.0, "queued": 0.0, "started": 0.0,
        ...             "done": 2.0, "behind": []}])[0]["render_s"]
        2.0
    """
    out = []
    for r in rows:
        if r.get("k") != 0 or r.get("started") is None or r.get("done") is None:
            continue
        out.append({"rid": r["rid"], "arrived": r["arrived"],
                    "wait_s": round(r["started"] - r["queued"], 3),
                    "render_s": round(r["done"] - r["started"], 3),
                    "nested": bool(r.get("nested")), "behind": r.get("behind") or []})
    return sorted(out, key=lambda s: s["rid"])


def traced(base: type) -> type:
    """``base`` (a `tts_kit.serve.chunked.ChunkScheduler` class) recording each answered
    job to `JobTrace.from_env`, with what the workers ran when a first chunk was queued."""

    class Traced(base):
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.trace = JobTrace.from_env()

        def _queue(self, req: Any, ks: Any) -> None:
            super()._queue(req, ks)
            if self.trace.on and 0 in ks:
                now = time.monotonic()
                req.behind = [[r.rid, j, job_length(self, r, j),
                               round(now - r.started_at.get(j, now), 3)]
                              for r in self.requests.values() for j in r.running]

        def _answered(self, req: Any, k: int, worker: Any, nested: bool = False) -> None:
            if not self.trace.on:
                return
            at = self.trace.at
            self.trace.record({
                "rid": req.rid, "k": k, "chars": job_length(self, req, k), "worker": worker.id,
                "arrived": at(req.t0), "queued": at(req.queued_at.get(k)),
                "started": at(req.started_at.get(k)), "done": at(time.monotonic()),
                "nested": nested, "behind": getattr(req, "behind", []) if k == 0 else []})

    Traced.__name__ = f"Traced{base.__name__}"
    return Traced


for _name, _cls in list(SCHEDULERS.items()):
    SCHEDULERS[_name] = traced(_cls)

__all__ = ["ENV", "JobTrace", "summarize", "traced"]
