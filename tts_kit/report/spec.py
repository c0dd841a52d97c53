"""What a tuning report measures: the sweep spec (`SweepSpec`) and the report's error type.

The one concern here is the input of a report: the grid (presets x cpus x loadings x steps
x batch sizes), the workload and the memory budget, read from JSON, a dict or defaults,
checked once where it enters, and limited to the cores this machine has (`effective`).

Example:
    >>> from tts_kit.report import SweepSpec
    >>> SweepSpec.load({"presets": ["lean"], "cpus": [1]}).loadings
    ['resident', 'paged']
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import contract, procfacts

_DEFAULT_TEXTS = [
    "The meeting starts at 10:30 in room 4, and the slides are already online.",
]


class ReportError(ValueError):
    """A report could not be produced or read (one line: what and where to look).

    Example:
        >>> str(ReportError("report.json: no such report"))
        'report.json: no such report'
    """


@dataclass
class SweepSpec:
    """What a report measures: the grid, the workload, the budget. JSON in and out.

    Example:
        >>> SweepSpec(presets=["lean"], cpus=[1]).mem_budget_mb
        1024.0
    """

    presets: list[str] = field(
        default_factory=lambda: ["ort-default", "supertonic-default", "seed-2vcpu",
                                 "low-memory", "lean"]
    )
    """Session presets (names from `tts_kit.sessions.PRESETS`)."""
    cpus: list[int] = field(default_factory=lambda: [1, 2])
    """vCPU counts to emulate (capped at the cores this machine has; see `effective`)."""
    loadings: list[str] = field(default_factory=lambda: ["resident", "paged"])
    """Load policies: ``resident``, ``paged``, ``budget:MB``."""
    steps: list[int] = field(default_factory=lambda: [contract.DEFAULT_STEPS])
    """Flow-matching steps."""
    batch_sizes: list[int] = field(default_factory=lambda: [1])
    """Texts per request."""
    repeats: int = 3
    """Timed calls per trial after the first (p50/p95 come from these). The default
    keeps the default sweep (20 trials) to a few minutes on the tiny stand-in and under
    ten on the full one; raise it for tighter percentiles."""
    mem_budget_mb: float | None = 1024.0
    """The budget the recommendation must fit (1024: the article's 1 vCPU / 1 GB box);
    trials are also killed past it. None: no budget."""
    texts: list[str] = field(default_factory=lambda: list(_DEFAULT_TEXTS))
    """The workload (normalised before synthesis)."""
    lang: str = "en"
    """Language of ``texts``."""
    voice: str = "M1"
    """Voice style (falls back to the bundle's first voice when it has no such voice)."""
    seed: int = 0
    """Noise seed, so every trial synthesises the same audio."""

    @classmethod
    def quick(cls) -> SweepSpec:
        """The smallest useful sweep (two presets, one vCPU, 2 repeats, 2 steps): CI's.

        Example:
            >>> SweepSpec.quick().cpus
            [1]
        """
        return cls(presets=["supertonic-default", "low-memory"], cpus=[1],
                   loadings=["resident"], steps=[2], repeats=2)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepSpec:
        """Build from a dict; unknown keys raise ``ValueError`` naming them.

        Example:
            >>> SweepSpec.from_dict({"presets": ["lean"], "cpus": [1]}).presets
            ['lean']
        """
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"sweep spec: unknown key(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        spec = cls(**dict(data))
        spec.check()
        return spec

    @classmethod
    def load(cls, source: str | os.PathLike[str] | Mapping[str, Any] | SweepSpec | None,
             quick: bool = False) -> SweepSpec:
        """A spec from a JSON file, a dict, a spec, or None (the default, or `quick`).

        Example:
            >>> SweepSpec.load(None, quick=True).repeats
            2
        """
        if isinstance(source, SweepSpec):
            return source
        if source is None:
            return cls.quick() if quick else cls()
        if isinstance(source, Mapping):
            return cls.from_dict(source)
        path = Path(source)
        if not path.is_file():
            raise ValueError(f"sweep spec {path}: no such file; give a JSON file of SweepSpec keys")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"sweep spec {path}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"sweep spec {path}: expected a JSON object of SweepSpec keys")
        return cls.from_dict(data)

    def check(self) -> None:
        """Raise ``ValueError`` for an empty grid or impossible values.

        Example:
            >>> SweepSpec(repeats=0).check()
            Traceback (most recent call last):
            ...
            ValueError: sweep spec: repeats must be >= 1, got 0
        """
        for name in ("presets", "cpus", "loadings", "steps", "batch_sizes", "texts"):
            value = getattr(self, name)
            if isinstance(value, (str, bytes)) or not list(value):
                raise ValueError(f"sweep spec: '{name}' must be a non-empty list")
            setattr(self, name, list(value))
        if any(int(c) < 1 for c in self.cpus):
            raise ValueError(f"sweep spec: cpus must be >= 1, got {self.cpus}")
        if int(self.repeats) < 1:
            raise ValueError(f"sweep spec: repeats must be >= 1, got {self.repeats}")
        if self.mem_budget_mb is not None and not self.mem_budget_mb > 0:
            raise ValueError(f"sweep spec: mem_budget_mb must be > 0, got {self.mem_budget_mb}")

    def effective(self) -> SweepSpec:
        """This spec with ``cpus`` limited to the cores this process may use.

        Example:
            >>> max(SweepSpec(cpus=[1, 2, 512]).effective().cpus) <= os.cpu_count()
            True
        """
        # The affinity mask: a trial pins itself to that many of these cores.
        n = len(procfacts.allowed_cpus())
        cpus = sorted({min(int(c), n) for c in self.cpus})
        return dataclasses.replace(self, cpus=cpus)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form.

        Example:
            >>> SweepSpec.quick().to_dict()["steps"]
            [2]
        """
        return dataclasses.asdict(self)

