"""Load policies: a ``loading`` spec (``resident``, ``paged``, ``budget:MB`` with ``+``
options) parsed into a `LoadPolicy`; `tts_kit.runtime.loading` says what each policy does."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tts_kit.core.errors import TtsKitError

LOADINGS = ("resident", "paged", "budget")
_OPTIONS = ("trim", "notrim", "ext", "noext", "mmap", "opt", "noopt")


@dataclass(frozen=True)
class LoadPolicy:
    """A load policy and how its sessions are created and released.

    Example:
        >>> p = LoadPolicy.parse("budget:300+notrim")
        >>> p.policy, p.budget_mb, p.trim, p.external_data
        ('budget', 300.0, False, True)
    """

    policy: str = "resident"  #: ``resident``, ``paged`` or ``budget``
    budget_mb: float | None = None  #: ``budget`` only
    trim: bool = True  #: ``malloc_trim(0)`` after every load and release
    external_data: bool | None = None  #: external-data copies (None: not for resident)
    prepack: bool = True  #: ORT pre-packs weights (off with ``mmap``: they stay mapped)
    #: Load a saved optimised copy, optimiser off (None: on with external data; CPU only).
    optimised: bool | None = None

    def __post_init__(self) -> None:
        if self.policy not in LOADINGS:
            raise TtsKitError(f"unknown loading '{self.policy}'; use resident, paged or budget:MB")
        if self.policy == "budget":
            if not (isinstance(self.budget_mb, (int, float)) and 0 < self.budget_mb < math.inf):
                raise TtsKitError("loading budget: give the budget in MB > 0, e.g. budget:300 "
                                  f"(got {self.budget_mb!r})")
        elif self.budget_mb is not None:
            raise TtsKitError(f"loading '{self.policy}' takes no budget; use budget:MB")
        if self.external_data is None:
            object.__setattr__(self, "external_data", self.policy != "resident")
        if not self.prepack and not self.external_data:
            raise TtsKitError("loading option mmap needs external data; drop noext")
        if self.optimised is None:
            object.__setattr__(self, "optimised", self.policy != "resident"
                               and bool(self.external_data))
        if self.optimised and not self.external_data:
            raise TtsKitError("loading option opt needs external data; drop noext")

    @classmethod
    def parse(cls, spec: str | LoadPolicy) -> LoadPolicy:
        """Parse ``resident``, ``paged`` or ``budget:MB``, optionally ``+notrim``, ``+ext``,
        ``+noext``, ``+mmap``, ``+opt``, ``+noopt`` (see `tts_kit.runtime.loading`).

        Example:
            >>> LoadPolicy.parse("paged+mmap").prepack
            False
        """
        if isinstance(spec, LoadPolicy):
            return spec
        if not isinstance(spec, str):
            raise TtsKitError("loading must be a string like 'paged' or 'budget:300', "
                              f"got {spec!r}")
        head, *opts = [p.strip() for p in spec.strip().lower().split("+")]
        name, sep, mb = head.partition(":")
        name = name.strip()
        if name not in LOADINGS:
            raise TtsKitError(f"unknown loading '{spec}'; use resident, paged or budget:MB")
        budget: float | None = None
        if name == "budget":
            try:
                budget = float(mb)
            except ValueError:
                budget = -1.0
            if not budget > 0 or not math.isfinite(budget):
                raise TtsKitError(f"loading '{spec}': write budget:MB with MB > 0, e.g. budget:300")
        elif sep:
            raise TtsKitError(f"loading '{spec}': only budget takes a number (budget:MB)")
        bad = [o for o in opts if o not in _OPTIONS]
        if bad:
            raise TtsKitError(f"loading '{spec}': unknown option(s) {bad}; options are "
                              f"{', '.join(_OPTIONS)}")
        for off, ons in (("noext", ("ext", "mmap")), ("noopt", ("opt",))):
            if off in opts and any(on in opts for on in ons):
                raise TtsKitError(f"loading '{spec}': {off} contradicts {'/'.join(ons)}; keep one")
        ext = True if "ext" in opts or "mmap" in opts else False if "noext" in opts else None
        opt = True if "opt" in opts else False if "noopt" in opts else None
        return cls(name, budget, trim="notrim" not in opts, external_data=ext,
                   prepack="mmap" not in opts, optimised=opt)

    @property
    def spec(self) -> str:
        """The canonical spec string (``budget:300+notrim``); parses back to this policy."""
        head = f"budget:{self.budget_mb:g}" if self.policy == "budget" else self.policy
        opts = [] if self.trim else ["notrim"]
        if not self.prepack:
            opts.append("mmap")
        elif self.external_data != (self.policy != "resident"):
            opts.append("ext" if self.external_data else "noext")
        if self.optimised != (self.policy != "resident" and bool(self.external_data)):
            opts.append("opt" if self.optimised else "noopt")
        return "+".join([head, *opts])
