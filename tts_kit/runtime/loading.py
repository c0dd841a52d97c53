"""Loading machinery: when each stage's session is created, and how its memory goes back.

The `StageLoader` hands out one session per stage under a load policy (docs/guide.md,
"Loading policies"); `LoadPolicy`, session creation and costs are re-exported here.
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import onnxruntime as ort

from tts_kit.core import contract, events
from tts_kit.core.errors import TtsKitError
from tts_kit.core.procfacts import malloc_trim
from tts_kit.runtime.costs import (  # noqa: F401  (re-exported: the loading API's one door)
    ARTICLE_SPLIT_CLAIMED,
    StageCost,
    StageCosts,
    cost_parts,
    estimate_costs_mb,
    memory_split,
    resident_costs_mb,
    suggest_budget,
)
from tts_kit.runtime.policy import LoadPolicy
from tts_kit.runtime.session_files import (  # noqa: F401
    check_loads,
    create_session,
    external_copy,
    prune_external_cache,
    session_file,
)

SessionFactory = Callable[[str], ort.InferenceSession]


def _probe(session: Any) -> Callable[[], Any] | None:
    """A weak reference to what holds ``session``'s memory (ORT's C++ ``_sess``, which an
    ``IOBinding`` also holds); None where none can be taken."""
    try:
        return weakref.ref(getattr(session, "_sess", session))
    except TypeError:
        return None


def _settle(probes: Sequence[Callable[[], Any] | None], trim: bool) -> None:
    """After sessions were dropped: collect garbage if one is still alive (a cycle), then
    (``trim``) give the freed heap back to the system."""
    if any(p is None or p() is not None for p in probes):
        gc.collect()
    if trim:
        malloc_trim()


class SessionLease:
    """The stage's session until the loader releases it (calls go through to it); a lease
    kept past its block cannot keep a released session alive.

    Example:
        >>> lease = SessionLease("vocoder", [1, 2])
        >>> lease.count(2), lease.stage
        (1, 'vocoder')
    """

    __slots__ = ("_session", "stage")

    def __init__(self, stage: str, session: Any):
        self.stage = stage
        self._session = session

    @property
    def session(self) -> Any:
        """The ONNX Runtime session (RuntimeError once the loader released it)."""
        if self._session is None:
            raise RuntimeError(f"the {self.stage} session was released; ask the loader again")
        return self._session

    def _drop(self) -> None:
        self._session = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


class StageLoader:
    """Hands out one session per stage under a load policy, marking ``load``/``run``/
    ``release <stage>``; thread-safe. ``costs_mb``: resident MB per stage, for ``budget``.

    Example:
        >>> loader = StageLoader(lambda s: object(), "budget:25",
        ...                      {s: 10.0 for s in contract.STAGES})
        >>> for s in contract.STAGES:
        ...     with loader.session(s):
        ...         pass
        >>> loader.loaded
        ['vector_estimator', 'vocoder']
    """

    def __init__(
        self,
        factory: SessionFactory,
        loading: str | LoadPolicy = "resident",
        costs_mb: Mapping[str, float] | None = None,
        stages: Sequence[str] = contract.STAGES,
    ):
        self.policy = loading if isinstance(loading, LoadPolicy) else LoadPolicy.parse(loading)
        self.spec = loading if isinstance(loading, str) else self.policy.spec
        self.budget_mb = self.policy.budget_mb
        self._factory = factory
        self.stages = tuple(stages)
        self._live: OrderedDict[str, Any] = OrderedDict()
        self._leases: dict[str, SessionLease] = {}
        self.costs_mb = {s: float(c) for s, c in (costs_mb or {}).items()}
        self.load_s: dict[str, float] = {}
        # Callers running each stage now, over all threads (a session with pins is never
        # released); and, per thread, how deep it is in each stage's blocks.
        self._pins: dict[str, int] = {}
        self._held = threading.local()
        self._closing: set[str] = set()  # closed while running: released when the run ends
        # Loads are serialised (two at once would double the load peak paged loading bounds,
        # and the budget must see each load); runs happen outside the lock.
        self._lock = threading.RLock()
        if self.policy.policy == "budget":
            missing = [s for s in self.stages if s not in self.costs_mb]
            if missing:
                raise TtsKitError(f"loading '{self.spec}': no cost for stage(s) {missing}; "
                                 "pass costs_mb for every stage")
            cheapest = min(self.stages, key=lambda s: self.costs_mb[s])
            if self.budget_mb is not None and self.budget_mb < self.costs_mb[cheapest]:
                raise TtsKitError(
                    f"loading '{self.spec}': the budget of {self.budget_mb:g} MB is smaller "
                    f"than the cheapest stage ({cheapest}, {self.costs_mb[cheapest]:.1f} MB); "
                    "raise the budget or use paged"
                )
        if self.policy.policy == "resident":
            for stage in self.stages:
                self._load(stage)

    def _load(self, stage: str) -> None:
        events.mark(f"load {stage}")
        t0 = time.perf_counter()
        sess = self._factory(stage)
        self._live[stage] = sess
        self._leases[stage] = SessionLease(stage, sess)
        del sess
        # Session creation frees its temporaries into the C++ heap: only a trim returns them.
        if self.policy.trim:
            malloc_trim()
        self.load_s[stage] = time.perf_counter() - t0

    def _release(self, stage: str, settle: bool = True) -> Callable[[], Any] | None:
        """Drop ``stage``'s session; returns its probe (``settle``: settle it here)."""
        events.mark(f"release {stage}")
        probe = _probe(self._live.pop(stage))
        self._leases.pop(stage)._drop()
        if settle:
            _settle([probe], self.policy.trim)
        return probe

    def _resident_mb(self) -> float:
        return sum(self.costs_mb.get(s, 0.0) for s in self._live)

    def _runs_paged(self, stage: str) -> bool:
        """Whether ``stage`` is released once nobody runs it (paged, or over the budget)."""
        if self.policy.policy == "paged":
            return True
        return (self.policy.policy == "budget"
                and self.costs_mb.get(stage, 0.0) > (self.budget_mb or 0.0))

    def _fit_budget(self, need: float) -> None:
        """Release idle sessions, least recently used first, until ``need`` more MB fit
        (sessions others run stay; `_unpin` restores the budget)."""
        budget = self.budget_mb or 0.0
        while self._live and self._resident_mb() + need > budget:
            idle = [s for s in self._live if not self._pins.get(s)]
            if not idle:
                break
            self._release(idle[0])

    def _pin(self, stage: str) -> SessionLease:
        with self._lock:
            if stage not in self._live:
                need = self.costs_mb.get(stage, 0.0)
                # A stage that cannot fit even alone runs paged beside the ones kept.
                if self.policy.policy == "budget" and need <= (self.budget_mb or 0.0):
                    self._fit_budget(need)
                self._load(stage)
            else:
                self._live.move_to_end(stage)
            self._closing.discard(stage)  # used again after close(): kept as the policy says
            self._pins[stage] = self._pins.get(stage, 0) + 1
            return self._leases[stage]

    def _unpin(self, stage: str) -> None:
        with self._lock:
            self._pins[stage] -= 1
            if self._pins[stage]:
                return  # another thread still runs it
            closing = stage in self._closing
            self._closing.discard(stage)
            if stage in self._live and (closing or self._runs_paged(stage)):
                self._release(stage)
            elif self.policy.policy == "budget":
                self._fit_budget(0.0)  # back under the budget once concurrent runs end

    @contextmanager
    def session(self, stage: str) -> Iterator[SessionLease]:
        """The session of ``stage`` for one run, loaded and released as the policy says
        (re-entrant per thread: the outermost block does it)."""
        depth: dict[str, int] = self._held.__dict__.setdefault("depth", {})
        outer = not depth.get(stage)  # an inner block's session is pinned by the outer one
        lease = self._pin(stage) if outer else self._leases[stage]
        depth[stage] = depth.get(stage, 0) + 1
        try:
            if outer:
                events.mark(f"run {stage}")
            yield lease
        finally:
            depth[stage] -= 1
            if outer:
                self._unpin(stage)

    @property
    def loaded(self) -> list[str]:
        """Stages whose sessions are alive now, least recently used first."""
        with self._lock:
            return list(self._live)

    def close(self) -> None:
        """Release every session; one a thread is running goes when its run ends."""
        with self._lock:
            probes = []
            for stage in list(self._live):
                if self._pins.get(stage):
                    self._closing.add(stage)
                else:
                    probes.append(self._release(stage, settle=False))
            if probes:
                _settle(probes, self.policy.trim)


def prepare_loading(paths: Sequence[str | Path], loading: str | LoadPolicy = "resident", *,
                    sess_options: ort.SessionOptions | None = None,
                    providers: list[Any] | None = None) -> list[Path]:
    """Make now the copies ``loading`` needs, so a cold cache is not paid inside a measured
    load; returns the files sessions will load from.

    Example:
        >>> prepare_loading([], "paged")
        []
    """
    policy = loading if isinstance(loading, LoadPolicy) else LoadPolicy.parse(loading)
    return [session_file(p, policy, sess_options, providers) for p in paths]


def needs_preparation(loading: str | LoadPolicy) -> bool:
    """Whether ``loading`` has one-time work for `prepare_loading`.

    Example:
        >>> needs_preparation("paged"), needs_preparation("resident")
        (True, False)
    """
    return bool(LoadPolicy.parse(loading).external_data)
