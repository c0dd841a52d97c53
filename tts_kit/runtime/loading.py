"""Loading machinery: when each stage's session is created, how its memory goes back, and the
per-stage costs a ``budget`` policy goes by (docs/guide.md, "Loading policies"); `LoadPolicy`
and session creation are re-exported here."""

from __future__ import annotations

import gc
import math
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import onnxruntime as ort

from tts_kit.core import contract, events
from tts_kit.core.errors import TtsKitError
from tts_kit.core.procfacts import MIB, malloc_trim
from tts_kit.runtime.policy import LoadPolicy
from tts_kit.runtime.session_files import (  # noqa: F401  (re-exported: the loading API's one door)
    check_loads,
    create_session,
    external_copy,
    prune_external_cache,
    session_file,
)

SessionFactory = Callable[[str], ort.InferenceSession]


def _probe(session: Any) -> Callable[[], Any] | None:
    """A weak reference to what holds ``session``'s memory (ORT's ``_sess``), or None."""
    try:
        return weakref.ref(getattr(session, "_sess", session))
    except TypeError:
        return None


def _settle(probes: Sequence[Callable[[], Any] | None], trim: bool) -> None:
    """After a release: collect garbage if a session is still alive (a cycle), then trim."""
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

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


class StageLoader:
    """Hands out one session per stage under a load policy, marking ``load``/``run``/
    ``release <stage>``; thread-safe. ``costs_mb``: resident MB per stage, for ``budget``.

    Example:
        >>> with StageLoader(lambda stage: object(), "paged").session("vocoder") as lease:
        ...     lease.stage
        'vocoder'
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
        self._leases.pop(stage)._session = None  # a lease kept past its block: released
        if settle:
            _settle([probe], self.policy.trim)
        return probe

    def _runs_paged(self, stage: str) -> bool:
        """Whether ``stage`` is released once nobody runs it (paged, or over the budget)."""
        over = self.costs_mb.get(stage, 0.0) > (self.budget_mb or 0.0)
        return self.policy.policy == "paged" or (self.policy.policy == "budget" and over)

    def _fit_budget(self, need: float) -> None:
        """Release idle sessions, least recently used first, until ``need`` more MB fit."""
        budget = self.budget_mb or 0.0
        while self._live and sum(self.costs_mb.get(s, 0.0) for s in self._live) + need > budget:
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


#: Seed article 004's *claimed* split of Supertonic's memory (percent), not measured.
ARTICLE_SPLIT_CLAIMED: dict[str, float] = {"weights": 40.0, "inference cache": 30.0,
                                           "batch buffers": 15.0, "preprocessing": 10.0,
                                           "runtime": 5.0}


@dataclass
class StageCost:
    """What one stage cost in a fresh process (MB are MiB of RSS)."""

    stage: str
    file_mb: float  #: the graph and its external data on disk
    load_mb: float  #: RSS the loaded session adds and keeps (after the trim)
    load_peak_mb: float  #: highest RSS while creating it, above the RSS before
    run_mb: float  #: highest RSS during the run, above the loaded RSS
    left_mb: float  #: RSS after the release, above the RSS before the load
    load_s: float
    run_s: float  #: all flow steps for the vector estimator

    @property
    def peak_mb(self) -> float:
        """The most this stage adds at once: ``max(load peak, load + run)``."""
        return max(self.load_peak_mb, self.load_mb + self.run_mb)


@dataclass
class StageCosts:
    """Per-stage memory costs (measured by `tts_kit.tuning.stage_costs.stage_costs`).

    Example:
        >>> c = StageCosts({"vocoder": StageCost("vocoder", 100, 105, 120, 12, 1, 0.2, 0.3)},
        ...                runtime_mb=60)
        >>> c.costs_mb()
        {'vocoder': 117.0}
    """

    stages: dict[str, StageCost] = field(default_factory=dict)  #: in pipeline order
    runtime_mb: float = math.nan  #: RSS before any session (ORT and its globals included)
    imports_mb: float = math.nan  #: RSS after the imports only
    peak_rss_mb: float = math.nan
    loading: str = "paged"
    preset: str = ""
    text: str = ""
    steps: int = contract.DEFAULT_STEPS
    method: str = ("one fresh process; ORT warmed up with a one-node graph, then each stage "
                   "loaded, run on the real inputs of this text and released (gc + "
                   "malloc_trim) in pipeline order")
    claimed_split: dict[str, float] = field(default_factory=lambda: dict(ARTICLE_SPLIT_CLAIMED))

    def costs_mb(self) -> dict[str, float]:
        """Resident MB per stage, for ``Engine(stage_costs_mb=...)`` and the budget policy:
        ``load_mb + run_mb``, since a kept session's arena holds on to its run's memory."""
        return {s: round(float(c.load_mb + max(c.run_mb, 0.0)), 1)
                for s, c in self.stages.items()}

    def rows(self) -> list[dict[str, Any]]:
        """One plain dict per stage (MB and seconds), plus the runtime row."""
        rows = [{**asdict(c), "peak_mb": c.peak_mb} for c in self.stages.values()]
        rows.append({"stage": "runtime (before any session)", "load_mb": self.runtime_mb})
        return rows

    def dataframe(self) -> Any:
        """`rows` as a pandas DataFrame (pandas is imported only here)."""
        import pandas as pd

        return pd.DataFrame(self.rows()).set_index("stage")

    def split(self) -> dict[str, float]:
        """`memory_split` of these costs: the measured split in percent."""
        return memory_split(self.stages, self.runtime_mb)

    def table(self) -> str:
        """Aligned text table of the costs (MB)."""
        head = f"{'stage':<20}{'file':>8}{'load':>8}{'peak':>8}{'run':>8}{'left':>7}{'load s':>8}"
        rows = [f"{c.stage:<20}{c.file_mb:>8.1f}{c.load_mb:>8.1f}{c.load_peak_mb:>8.1f}"
                f"{c.run_mb:>8.1f}{c.left_mb:>7.1f}{c.load_s:>8.2f}" for c in self.stages.values()]
        return "\n".join([head, *rows, f"{'runtime':<20}{'':>8}{self.runtime_mb:>8.1f}"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


def estimate_costs_mb(sizes_bytes: Mapping[str, int] | Any) -> dict[str, float]:
    """Estimated resident MB per stage from file sizes (a `Bundle` or a dict): 1.1x the
    weights plus 2 MB (docs/benchmarks.md).

    Example:
        >>> estimate_costs_mb({"vocoder": 100 * 2**20})
        {'vocoder': 112.0}
    """
    stages = getattr(sizes_bytes, "stages", None)
    sizes = (dict(sizes_bytes) if stages is None
             else {s: info.size_bytes for s, info in stages.items()})
    return {s: round(1.1 * b / MIB + 2.0, 1) for s, b in sizes.items()}


def cost_parts(cost: Any) -> tuple[float, float]:
    """(load MB, run MB) of a `StageCost`, a mapping with ``load_mb`` (and ``run_mb``), or
    a number (all load).

    Example:
        >>> cost_parts({"load_mb": 30, "run_mb": 12}), cost_parts(50)
        ((30.0, 12.0), (50.0, 0.0))
    """
    if isinstance(cost, Mapping) or hasattr(cost, "load_mb"):
        parts = cost if isinstance(cost, Mapping) else vars(cost)
        if "load_mb" not in parts:
            raise TtsKitError(f"a stage cost needs load_mb (and run_mb), got {cost!r}")
        return float(parts["load_mb"]), float(parts.get("run_mb", 0.0) or 0.0)
    return float(cost), 0.0


def memory_split(costs: Mapping[str, Any], runtime_mb: float | None = None
                 ) -> dict[str, float]:
    """The memory split in percent: sessions (load MB), working memory (run MB), runtime.

    Example:
        >>> memory_split({"vocoder": {"load_mb": 30, "run_mb": 10}}, runtime_mb=60)
        {'weights and sessions (load)': 30.0, 'working memory (run)': 10.0, 'runtime': 60.0}
    """
    parts = [cost_parts(c) for c in costs.values()]
    mb = {"weights and sessions (load)": sum(p[0] for p in parts),
          "working memory (run)": sum(p[1] for p in parts)}
    if runtime_mb is not None and math.isfinite(runtime_mb) and runtime_mb > 0:
        mb["runtime"] = float(runtime_mb)
    total = sum(mb.values()) or 1.0
    return {k: 100.0 * v / total for k, v in mb.items()}


def resident_costs_mb(costs: Mapping[str, Any] | StageCosts | None, bundle: Any
                      ) -> dict[str, float]:
    """Resident MB per stage for the budget: ``costs`` (a `StageCosts`, ``{stage: MB}`` or
    ``{stage: {"load_mb", "run_mb"}}``) where given, estimated for the rest.

    Example:
        >>> resident_costs_mb({"vocoder": 50}, {"vocoder": 1, "text_encoder": 2**20})
        {'vocoder': 50.0, 'text_encoder': 3.1}
    """
    out = estimate_costs_mb(bundle)
    if isinstance(costs, StageCosts):
        costs = costs.costs_mb()
    if costs is not None and not isinstance(costs, Mapping):
        raise TtsKitError('stage_costs_mb must map stage names to MB, like {"vocoder": 120}; '
                          f"got a {type(costs).__name__}")
    for stage, cost in (costs or {}).items():
        if stage not in contract.STAGES and stage not in out:
            raise TtsKitError(f"stage_costs_mb names unknown stage '{stage}'; stages are "
                              f"{list(contract.STAGES)}")
        try:
            load, run = cost_parts(cost)
            value = load + max(run, 0.0)  # a kept session's arena holds its run's memory
        except (TypeError, ValueError):
            value = math.nan
        if not value >= 0 or not math.isfinite(value):
            raise TtsKitError(f"stage_costs_mb['{stage}'] must be MB >= 0, got {cost!r}")
        out[stage] = value
    return out


def suggest_budget(costs_mb: Mapping[str, float], headroom: float = 1.2,
                   share: float = 0.6) -> str:
    """A ``budget:MB`` that shows what a budget does: room for the largest stage with
    ``headroom``, and at least ``share`` of all.

    Example:
        >>> suggest_budget({"duration_predictor": 5, "text_encoder": 30,
        ...                 "vector_estimator": 250, "vocoder": 100})
        'budget:300'
    """
    values = [float(v) for v in costs_mb.values()]
    if not values:
        raise TtsKitError("suggest_budget needs the stages' costs in MB; got none")
    return f"budget:{max(max(values) * headroom, share * sum(values)):.0f}"
