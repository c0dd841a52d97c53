"""Micro-batching for chunk scheduling (``tts-kit serve --batch N``), the worker's side.

With ``--batch`` above 1, a free worker may take up to N queued chunk jobs of similar length
(`tts_kit.serve.chunked.ChunkScheduler` picks them) as one message,
``("batch", [(request id, params, k), ...])``. The worker plans each request (once: plans are
kept, as for single jobs), answers ``("plan", chunk lengths)`` for every chunk 0 at once, then
renders all of them with `tts_kit.models.engine_base.EngineBase.render_chunks` (one batched
call where the model's capabilities say ``batching``; one by one otherwise). Every answer is
tagged with the item's place in the batch: ``("item", i, message)``, the message being what a
single job answers (``plan``, ``chunk``, ``error``, ``cancelled``).

Cancellation: a batch of one request's chunks stops after the stage run in progress when that
request ends (as a single job does); a batch mixing requests runs to its end and the server
discards the chunks of requests that ended. A batch that fails as a whole (one chunk's
duration refused, say) is rendered again chunk by chunk, so only the bad chunk's request
gets the error.

Measured not to win on this project's 2-core machine, so ``serve`` leaves it off
(``--batch 1``); docs/benchmarks.md, ``serve/batching.py``, has the measurements.

Example:
    >>> class Conn:
    ...     def send(self, msg): print(msg)
    >>> Tagged(Conn(), 2).send(("cancelled",))
    ('item', 2, ('cancelled',))
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

#: The most chunk jobs one batch may hold (``--batch``).
MAX_BATCH = 4
#: The longest a free worker waits for a batch to fill (``--batch-wait-ms``).
MAX_BATCH_WAIT_MS = 10.0
#: Chunks share a batch when the longer has at most this many times the other's characters.
SIMILAR_LENGTH = 1.5


class Tagged:
    """A pipe end that tags every message with the item's place in its batch."""

    def __init__(self, conn: Any, i: int):
        self.conn, self.i = conn, i

    def send(self, msg: tuple) -> None:
        self.conn.send(("item", self.i, msg))


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _plan(engine: Any, cfg: Any, plans: OrderedDict, rid: int, params: dict[str, Any],
          dropped: str) -> Any:
    """The request's plan (kept in ``plans``), or the ``("error", ...)`` message for it
    (``dropped``: what the normaliser's warning says when it drops text: a 400)."""
    planned = plans.get(rid)
    if planned is not None:
        return planned
    try:
        with warnings.catch_warnings(record=True) as heard:
            warnings.simplefilter("always")
            planned = engine.plan(first_chunk_chars=cfg.first_chunk_chars,
                                  max_chunk_chars=cfg.max_chunk_chars, **params)
    except ValueError as exc:
        return ("error", 400, _line(exc))
    except Exception as exc:
        return ("error", 500, _line(exc))
    lost = [str(x.message) for x in heard if dropped in str(x.message)]
    if lost:
        return ("error", 400, lost[0].splitlines()[0])
    plans[rid] = planned
    while len(plans) > 16:
        plans.popitem(last=False)
    return planned


def run_batch(engine: Any, cfg: Any, conn: Any, msg: tuple, plans: OrderedDict,
              running: list, *, single: Callable[..., None],
              cancelled: type[BaseException], dropped: str) -> None:
    """One batch of chunk jobs (see the module doc); every item gets exactly one final
    answer (``chunk``, ``error`` or ``cancelled``), chunk 0s a ``plan`` before it.

    The worker's own pieces come in (this module sits below `tts_kit.serve.worker`):
    ``single`` runs one chunk job (``_run_job``), ``cancelled`` is what its stage hook raises
    when the server stops the request, ``dropped`` what the normaliser says when it drops
    text (`tts_kit.serve.worker.DROPPED`).
    """
    items = msg[1]
    jobs: list[tuple[int, Any, int]] = []  # (place, plan, k) of the items planned
    for i, (rid, params, k) in enumerate(items):
        planned = _plan(engine, cfg, plans, rid, params, dropped)
        if isinstance(planned, tuple):
            Tagged(conn, i).send(planned)
            continue
        if k == 0:
            Tagged(conn, i).send(("plan", [len(c) for c in planned.chunks]))
        jobs.append((i, planned, k))
    rids = {items[i][0] for i, _, _ in jobs}
    running[0] = rids.pop() if len(rids) == 1 else None  # one request: it may be stopped
    try:
        parts = engine.render_chunks([(p, k) for _, p, k in jobs])
    except cancelled:
        for i, _, _ in jobs:
            Tagged(conn, i).send(("cancelled",))
        return
    except Exception:  # one bad chunk fails the batch: each alone, each its own answer
        running[0] = None
        for i, _, _ in jobs:
            single(engine, cfg, Tagged(conn, i), ("job", *items[i]), plans, running)
        return
    finally:
        running[0] = None
    for (i, _, _), part in zip(jobs, parts):
        Tagged(conn, i).send(("chunk", part.pcm16(), part.duration_s, part.timings))


__all__ = ["MAX_BATCH", "MAX_BATCH_WAIT_MS", "SIMILAR_LENGTH", "Tagged", "run_batch"]
