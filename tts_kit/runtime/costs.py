"""Per-stage cost data a ``budget`` policy goes by: measured costs (`StageCosts`),
estimates from the file sizes, the memory split and a suggested budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.core.procfacts import MIB

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
        >>> round(c.split()["weights and sessions (load)"])
        59
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
        lines = [head]
        for c in self.stages.values():
            lines.append(f"{c.stage:<20}{c.file_mb:>8.1f}{c.load_mb:>8.1f}{c.load_peak_mb:>8.1f}"
                         f"{c.run_mb:>8.1f}{c.left_mb:>7.1f}{c.load_s:>8.2f}")
        lines.append(f"{'runtime':<20}{'':>8}{self.runtime_mb:>8.1f}")
        return "\n".join(lines)

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
