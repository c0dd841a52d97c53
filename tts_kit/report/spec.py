"""What a tuning report measures (`SweepSpec`: the grid, the workload, the budget) and the
report's error type. The JSON form is flat: the workload's fields beside the grid's.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tts_kit.core import procfacts
from tts_kit.core.contract import SWEEP_PRESETS
from tts_kit.core.errors import TtsKitError
from tts_kit.core.userfiles import read_json
from tts_kit.tuning.spread import DEFAULT_ROUNDS
from tts_kit.tuning.workload import Workload

#: The flat keys of a spec's JSON form that are its workload's.
WORKLOAD_KEYS: tuple[str, ...] = ("repeats", "texts", "lang", "voice", "seed", "speed")

#: A report's timed calls per trial: keeps the default sweep to minutes.
REPORT_REPEATS = 3


class ReportError(TtsKitError):
    """A report could not be produced or read (one line: what and where to look).

    Example:
        >>> str(ReportError("report.json: no such report"))
        'report.json: no such report'
    """


@dataclass
class SweepSpec:
    """What a report measures: the grid, the workload, the budget; checked when built.

    ``steps`` and ``batch_sizes`` vary the workload's own (None: the workload's); the
    workload keeps the first of each.

    Example:
        >>> SweepSpec(presets=["lean"], cpus=[1]).mem_budget_mb
        1024.0
        >>> SweepSpec(workload=Workload(steps=2)).steps
        [2]
    """

    presets: list[str] = field(default_factory=lambda: list(SWEEP_PRESETS))
    cpus: list[int] = field(default_factory=lambda: [1, 2])  # vCPUs, capped by `effective`
    loadings: list[str] = field(default_factory=lambda: ["resident", "paged"])
    steps: list[int] | None = None
    batch_sizes: list[int] | None = None
    #: Fresh trials per configuration, as a budget (`SweepOptions.rounds`).
    rounds: int = DEFAULT_ROUNDS
    mem_budget_mb: float | None = 1024.0  # trials are killed past it; None: no budget
    workload: Workload = field(default_factory=lambda: Workload(repeats=REPORT_REPEATS))

    def __post_init__(self) -> None:
        if self.steps is None:
            self.steps = [self.workload.steps]
        if self.batch_sizes is None:
            self.batch_sizes = [self.workload.batch_size]
        self.check()
        self.workload = self.workload.replace(steps=int(self.steps[0]),
                                              batch_size=int(self.batch_sizes[0]))

    @classmethod
    def quick(cls) -> SweepSpec:
        """The smallest useful sweep (CI's).

        Example:
            >>> SweepSpec.quick().cpus, SweepSpec.quick().presets
            ([1], ['ort-default', 'low-memory'])
        """
        return cls(presets=["ort-default", "low-memory"], cpus=[1], rounds=1,
                   loadings=["resident"], workload=Workload(steps=2, repeats=2))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepSpec:
        """Build from `to_dict`'s flat form; unknown keys raise ``ValueError`` naming them.

        Example:
            >>> SweepSpec.from_dict({"presets": ["lean"], "cpus": [1], "repeats": 2}).presets
            ['lean']
        """
        grid = {f.name for f in dataclasses.fields(cls)} - {"workload"}
        known = grid | set(WORKLOAD_KEYS)
        unknown = sorted(set(data) - known)
        if unknown:
            raise TtsKitError(f"sweep spec: unknown key(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(known))}")
        base = {k: v for k, v in data.items() if k in WORKLOAD_KEYS}
        base.setdefault("repeats", REPORT_REPEATS)
        try:
            workload = Workload.from_dict(base)
        except ValueError as exc:
            raise TtsKitError(f"sweep spec: {exc}") from None
        return cls(**{k: v for k, v in data.items() if k in grid}, workload=workload)

    @classmethod
    def load(cls, source: str | os.PathLike[str] | Mapping[str, Any] | SweepSpec | None,
             quick: bool = False) -> SweepSpec:
        """A spec from a JSON file, a dict, a spec, or None (the default, or `quick`).

        Example:
            >>> SweepSpec.load(None, quick=True).workload.repeats
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
            raise TtsKitError(f"sweep spec {path}: no such file; "
                              "give a JSON file of SweepSpec keys")
        data = read_json(path, f"sweep spec {path}", "give a JSON object of SweepSpec keys")
        if not isinstance(data, dict):
            raise TtsKitError(f"sweep spec {path}: expected a JSON object of SweepSpec keys")
        return cls.from_dict(data)

    def check(self) -> None:
        """Raise ``ValueError`` for an empty grid or impossible values (run when built).

        Example:
            >>> SweepSpec(workload=Workload(repeats=0))
            Traceback (most recent call last):
            ...
            tts_kit.TtsKitError: sweep spec: repeats must be >= 1, got 0
        """
        for name in ("presets", "cpus", "loadings", "steps", "batch_sizes"):
            value = getattr(self, name)
            if isinstance(value, (str, bytes)) or not list(value):
                raise TtsKitError(f"sweep spec: '{name}' must be a non-empty list")
            setattr(self, name, list(value))
        if any(int(c) < 1 for c in self.cpus):
            raise TtsKitError(f"sweep spec: cpus must be >= 1, got {self.cpus}")
        if not isinstance(self.workload, Workload):
            raise TtsKitError("sweep spec: workload must be a tts_kit.tuning.workload.Workload, "
                              f"got {type(self.workload).__name__}")
        if self.workload.repeats < 1:
            raise TtsKitError(f"sweep spec: repeats must be >= 1, got {self.workload.repeats}")
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or not (
                1 <= self.rounds <= 100):
            raise TtsKitError(f"sweep spec: rounds must be an integer from 1 to 100, got "
                              f"{self.rounds!r}")
        if self.mem_budget_mb is not None and not self.mem_budget_mb > 0:
            raise TtsKitError(f"sweep spec: mem_budget_mb must be > 0, got {self.mem_budget_mb}")
        try:  # every cell of the grid is a workload: check them all here, once
            for s in self.steps:
                for b in self.batch_sizes:
                    self.workload.replace(steps=s, batch_size=b)
        except ValueError as exc:
            raise TtsKitError(f"sweep spec: {exc}") from None

    def effective(self) -> SweepSpec:
        """This spec with ``cpus`` limited to `tts_kit.core.procfacts.usable_cores`.

        Example:
            >>> max(SweepSpec(cpus=[1, 2, 512]).effective().cpus) <= procfacts.usable_cores()
            True
        """
        n = procfacts.usable_cores()
        cpus = sorted({min(int(c), n) for c in self.cpus})
        return dataclasses.replace(self, cpus=cpus)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, flat.

        Example:
            >>> d = SweepSpec.quick().to_dict()
            >>> d["steps"], d["repeats"], "workload" in d
            ([2], 2, False)
        """
        work = self.workload.to_dict()
        out: dict[str, Any] = {
            "presets": list(self.presets), "cpus": list(self.cpus),
            "loadings": list(self.loadings), "steps": list(self.steps or []),
            "batch_sizes": list(self.batch_sizes or []), "repeats": work["repeats"],
            "mem_budget_mb": self.mem_budget_mb, "rounds": self.rounds,
        }
        out.update({k: work[k] for k in WORKLOAD_KEYS if k != "repeats"})
        return out
