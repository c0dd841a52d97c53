"""A waiting request's first chunk rendered *inside* a running later chunk (worker side).

Under chunk scheduling a request that arrives while every worker renders a later chunk of
another request waits for one of those chunks to end: a long chunk (the three-sentence
text's second chunk is 183 characters, about 4x its first) is most of the time to first
audio under load (`bench/ttfa_trace.py`). So the scheduler may send a busy worker a
``("nested", request id, params, 0)`` job: the worker picks it up at the end of the stage
run in progress (a flow step, under a second), renders that first chunk, and goes back to
the later chunk where it left it. The later chunk's audio is unchanged (its noise and
state are its own: `tts_kit.models.engine_base.EngineBase.render_chunk`); it arrives a
first chunk's render later, while its client still has audio in hand (the scheduler
picks the running chunk needed last).

The nested job's answers go out as ``("nested", message)`` so the server can tell them
from the running job's. One level only: a nested job is never interrupted again. Any
other message that arrives while a job runs (``stop``) waits in ``pending`` for the
worker's main loop.

Example:
    >>> sent = []
    >>> class Pipe:
    ...     def send(self, msg): sent.append(msg)
    >>> Nested(Pipe()).send(("plan", [30, 183]))
    >>> sent
    [('nested', ('plan', [30, 183]))]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Nested:
    """The worker's pipe as a nested job sees it: answers wrapped as ``("nested", msg)``."""

    def __init__(self, conn: Any):
        self.conn = conn

    def send(self, msg: tuple) -> None:
        self.conn.send(("nested", msg))


def nesting_hook(conn: Any, running: list, pending: list,
                 run_nested: Callable[[tuple], None]) -> Callable[..., None]:
    """A stage hook that runs a waiting ``("nested", ...)`` job between two stage runs of
    the chunk job running now (``running[0]``, its request id), then restores it.

    Messages other than ``nested`` that arrive meanwhile go to ``pending``, in order.
    ``run_nested(msg)`` renders the nested job (answering through `Nested`).
    """
    depth = [0]

    def run_waiting(stage: str, feeds: Any, out: Any) -> None:
        if depth[0] or running[0] is None:
            return
        while conn.poll(0):
            msg = conn.recv()
            if msg[0] != "nested":
                pending.append(msg)
                continue
            depth[0], saved = 1, running[0]
            try:
                run_nested(msg)
            finally:
                depth[0], running[0] = 0, saved

    return run_waiting


__all__ = ["Nested", "nesting_hook"]
