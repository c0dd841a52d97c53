"""Load policies: when each stage's ONNX Runtime session is created and released.

- ``resident``: all four sessions are created once, up front, and kept.
- ``paged``: a stage's session is created just before it runs and released right after.
- ``budget:MB``: sessions stay resident while their measured (or estimated) cost fits
  the budget; the least recently used stage is released first.

Releasing must really hand memory back to the OS: dropping the session and calling
``gc.collect()`` is not enough, because glibc keeps freed pages in its heaps. After a
release we also call ``malloc_trim(0)`` (glibc only; a no-op elsewhere).

Example:
    >>> from tts_kit.paged import parse_loading
    >>> parse_loading("budget:300")
    ('budget', 300.0)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import onnxruntime as ort

from . import contract, events

LOADINGS = ("resident", "paged", "budget")

_libc: ctypes.CDLL | None | bool = None


def malloc_trim() -> bool:
    """Ask glibc to return free heap pages to the OS; returns False where unsupported."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        try:
            lib = ctypes.CDLL(name) if name else None
            _libc = lib if lib is not None and hasattr(lib, "malloc_trim") else False
        except OSError:
            _libc = False
    if not _libc:
        return False
    return bool(_libc.malloc_trim(0))  # type: ignore[union-attr]


def release_memory() -> None:
    """Collect garbage and trim the C heap, so freed sessions really leave RSS."""
    gc.collect()
    malloc_trim()


def parse_loading(spec: str) -> tuple[str, float | None]:
    """Parse ``resident``, ``paged`` or ``budget:MB`` into (policy, budget_mb)."""
    text = str(spec).strip().lower()
    if text in ("resident", "paged"):
        return text, None
    if text.startswith("budget"):
        _, _, mb = text.partition(":")
        try:
            budget = float(mb)
        except ValueError:
            budget = -1.0
        if budget <= 0:
            raise ValueError(f"loading '{spec}': write budget:MB with MB > 0, e.g. budget:300")
        return "budget", budget
    raise ValueError(f"unknown loading '{spec}'; use resident, paged or budget:MB")


SessionFactory = Callable[[str], ort.InferenceSession]


class StageLoader:
    """Hands out one session per stage under a load policy; marks load/run/release events.

    Args:
        factory: creates the session of a stage (the engine's, with its presets).
        loading: ``resident``, ``paged`` or ``budget:MB``.
        costs_mb: memory each stage costs while resident (for ``budget``); defaults to an
            estimate from the file sizes when not measured.
    """

    def __init__(
        self,
        factory: SessionFactory,
        loading: str = "resident",
        costs_mb: dict[str, float] | None = None,
    ):
        self.policy, self.budget_mb = parse_loading(loading)
        self.spec = loading
        self._factory = factory
        self._live: OrderedDict[str, ort.InferenceSession] = OrderedDict()
        self.costs_mb = dict(costs_mb or {})
        self.load_s: dict[str, float] = {}
        self._pins: dict[str, int] = {}
        if self.policy == "budget":
            smallest = min(self.costs_mb[s] for s in contract.STAGES)
            if self.budget_mb is not None and self.budget_mb < smallest:
                raise ValueError(
                    f"loading '{loading}': the budget of {self.budget_mb:.0f} MB is smaller "
                    f"than the smallest stage ({smallest:.0f} MB); raise it or use paged"
                )
        if self.policy == "resident":
            for stage in contract.STAGES:
                self._load(stage)

    def _load(self, stage: str) -> ort.InferenceSession:
        events.mark(f"load {stage}")
        t0 = time.perf_counter()
        sess = self._factory(stage)
        self.load_s[stage] = time.perf_counter() - t0
        self._live[stage] = sess
        return sess

    def _release(self, stage: str) -> None:
        events.mark(f"release {stage}")
        del self._live[stage]
        release_memory()

    def _resident_mb(self) -> float:
        return sum(self.costs_mb.get(s, 0.0) for s in self._live)

    @contextmanager
    def session(self, stage: str) -> Iterator[ort.InferenceSession]:
        """The session of ``stage`` for one run; loads and releases it as the policy says.

        Re-entrant: the engine holds the vector estimator across all flow steps, and
        only the outermost block loads, marks ``run`` and releases.
        """
        if self._pins.get(stage):
            self._pins[stage] += 1
            try:
                yield self._live[stage]
            finally:
                self._pins[stage] -= 1
            return
        sess = self._live.get(stage)
        if sess is None:
            if self.policy == "budget":
                need = self.costs_mb.get(stage, 0.0)
                while self._resident_mb() + need > (self.budget_mb or 0):
                    idle = [s for s in self._live if not self._pins.get(s)]
                    if not idle:
                        break
                    self._release(idle[0])  # least recently used first
            sess = self._load(stage)
        else:
            self._live.move_to_end(stage)
        events.mark(f"run {stage}")
        self._pins[stage] = 1
        try:
            yield sess
        finally:
            self._pins[stage] = 0
            del sess
            if self.policy == "paged":
                self._release(stage)

    @property
    def loaded(self) -> list[str]:
        """Stages whose sessions are alive now."""
        return list(self._live)

    def close(self) -> None:
        """Release every session."""
        for stage in list(self._live):
            self._release(stage)
