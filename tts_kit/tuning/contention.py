"""Can the sweep's answer be trusted? `assess` tells **the machine was busy** (rerun on a
quiet machine) from **the figures did not repeat** (measure more); busy decides when both
are seen. Thresholds: docs/benchmarks.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tts_kit.tuning import records as rk
from tts_kit.tuning.spread import _span
from tts_kit.tuning.verdict import BAND_MIN, band, compare, noise

#: Short of its cores: threads waited for one more than this share (%) of their ready time,
#: while the trial got less than `SHORT_SHARE` % of its cores.
WAIT_LIMIT = 15.0
SHORT_SHARE = 80.0
#: Without run-queue figures: short of its cores below this share (%) of them.
SHARE_LIMIT = 60.0
#: Unsteady: slowest / fastest steady call past this ratio, and by more than this many ms.
UNSTEADY_RATIO = 2.0
UNSTEADY_ABS_MS = 20.0

#: `Contention.cause` values.
BUSY, UNREPEATED = "busy", "did not repeat"


def _ok(rec: Mapping[str, Any] | None) -> bool:
    return isinstance(rec, Mapping) and rec.get("status", "ok") == "ok"


def _figures(recs: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    return [float(r[key]) for r in recs if rk.to_number(r.get(key)) is not None]


def short_of_cores(rec: Mapping[str, Any]) -> bool:
    """True when a finished trial was short of its cores by a clear margin.

    Example:
        >>> short_of_cores({"cpu_wait_percent": 40.0, "core_share": 55.0}), short_of_cores({})
        (True, False)
        >>> short_of_cores({"core_share": 45.0}), short_of_cores({"cpu_wait_percent": 2.0})
        (True, False)
    """
    if not _ok(rec):
        return False
    wait, share = rk.to_number(rec.get(rk.CPU_WAIT_PERCENT)), rk.to_number(rec.get(rk.CORE_SHARE))
    if wait is not None:
        return wait > WAIT_LIMIT and (share is None or share < SHORT_SHARE)
    return share is not None and share < SHARE_LIMIT


def unsteady(rec: Mapping[str, Any]) -> bool:
    """True when a finished trial's steady calls disagree with each other.

    Example:
        >>> [unsteady({"latencies_ms": x}) for x in ([100, 104, 260], [3, 8], [100, 110])]
        [True, False, False]
    """
    lat = _calls(rec)
    if not _ok(rec) or len(lat) < 2:
        return False
    return max(lat) / min(lat) > UNSTEADY_RATIO and max(lat) - min(lat) > UNSTEADY_ABS_MS


def _calls(rec: Mapping[str, Any]) -> list[float]:
    """A record's steady calls (ms), the positive finite ones."""
    raw = rec.get(rk.LATENCIES_MS)
    vals = [rk.to_number(x) for x in raw] if isinstance(raw, Sequence) else []
    return [float(x) for x in vals if x is not None and x > 0]


def own_load(records: Sequence[Mapping[str, Any]]) -> float:
    """The load average a sweep raises by itself: the busiest trial's threads, plus one.

    Example:
        >>> own_load([{"cpus": 1, "threads": 2}, {"cpus": 2, "threads": None}])
        3.0
    """
    most = max((max(rk.to_number(r.get("cpus")) or 1, rk.to_number(r.get("threads")) or 0)
                for r in records), default=1)
    return float(most) + 1.0


@dataclass
class Contention:
    """What `assess` found.

    Example:
        >>> Contention().provisional, Contention().cause, Contention().headline()
        (False, None, '')
    """

    trials: int = 0  #: finished trials looked at
    short: list[dict[str, Any]] = field(default_factory=list)  #: `short_of_cores`
    unsteady: list[dict[str, Any]] = field(default_factory=list)  #: `unsteady`
    #: (sweep p50, re-measured p50) of the pick, when the re-measure left the tie band.
    remeasure: tuple[float, float] | None = None
    #: ((fastest, slowest) call in the sweep, the same measured again), with `remeasure`.
    remeasure_calls: tuple[tuple[float, float], tuple[float, float]] | None = None
    tie_rel: float = BAND_MIN  #: the tie band the re-measure was held to
    load: tuple[float, float] | None = None  #: lowest, highest load average around them
    cores: int | None = None  #: usable cores, the load average's scale
    own_load: float = 2.0  #: the load the sweep raises by itself
    waits: list[float] = field(default_factory=list)  #: each trial's wait for a core (%)
    shares: list[float] = field(default_factory=list)  #: each trial's share of its cores (%)

    @property
    def loaded(self) -> bool:
        """True when even the quietest load average exceeds the sweep's own by the cores."""
        return bool(self.load and self.cores and self.load[0] > self.own_load + self.cores)

    @property
    def busy(self) -> bool:
        """True when the machine was busy: trials short of their cores, or its load."""
        return bool(self.short) or self.loaded

    @property
    def unrepeated(self) -> bool:
        """True when the figures did not repeat: unsteady trials, or the re-measure."""
        return bool(self.unsteady or self.remeasure)

    @property
    def provisional(self) -> bool:
        """True when either cause was found."""
        return self.busy or self.unrepeated

    @property
    def cause(self) -> str | None:
        """What decided: `BUSY` (it explains the rest too), `UNREPEATED`, or None."""
        return BUSY if self.busy else UNREPEATED if self.unrepeated else None

    def _load_text(self) -> str:
        scale = f" on {self.cores} cores" if self.cores else ""
        return f"load average {_span(self.load, '.1f')}{scale}" if self.load else ""

    def busy_reasons(self) -> list[str]:
        """The signs of a busy machine, one phrase each, with their figures.

        Example:
            >>> Contention(trials=2, short=[{"core_share": 40.0}]).busy_reasons()
            ['1 of 2 trials got 40 % of their cores']
        """
        out = []
        if self.short:
            share = _figures(self.short, rk.CORE_SHARE)
            wait = _figures(self.short, rk.CPU_WAIT_PERCENT)
            text = f"{len(self.short)} of {self.trials} trials got "
            text += f"{_span(share)} % of their cores" if share else "too little of their cores"
            if wait:
                text += f", waiting {_span(wait)} % of the time for one"
            out.append(text)
        if self.loaded:
            out.append(f"{self._load_text()} while the sweep itself accounts for "
                       f"{self.own_load:g}")
        elif out and self.load:
            out.append(self._load_text())
        return out

    def repeat_reasons(self) -> list[str]:
        """The signs of figures that did not repeat, one phrase each, with their figures.

        Example:
            >>> Contention(trials=3, remeasure=(1837.0, 3145.0)).repeat_reasons()[0][:45]
            'the pick measured again took 3,145 ms against'
        """
        out = []
        if self.unsteady:
            ratios = [max(r[rk.LATENCIES_MS]) / min(r[rk.LATENCIES_MS]) for r in self.unsteady]
            out.append(f"{len(self.unsteady)} of {self.trials} trials disagreed with "
                       f"themselves (slowest call {_span(ratios, '.1f')}x the fastest of "
                       "the same batch)")
        if self.remeasure:
            sweep_ms, again_ms = self.remeasure
            calls = ""
            if self.remeasure_calls:
                (a_lo, a_hi), (b_lo, b_hi) = self.remeasure_calls
                calls = (f" (calls {_span([b_lo, b_hi], ',.0f')} ms against "
                         f"{_span([a_lo, a_hi], ',.0f')} ms)")
            out.append(f"the pick measured again took {again_ms:,.0f} ms against "
                       f"{sweep_ms:,.0f} ms in the sweep{calls}: {again_ms / sweep_ms:.1f}x, "
                       f"outside the {self.tie_rel * 100:.0f} % band that decides ties")
        return out

    def reasons(self) -> list[str]:
        """Every sign found, one phrase each: the busy machine's first."""
        return self.busy_reasons() + self.repeat_reasons()

    def finding(self) -> str:
        """What was found, as one clause naming the cause that decided ("" when nothing).

        Example:
            >>> Contention(trials=2, short=[{"core_share": 40.0}]).finding()
            'the machine was busy (1 of 2 trials got 40 % of their cores)'
        """
        if self.busy:
            text = f"the machine was busy ({'; '.join(self.busy_reasons())})"
            if self.unrepeated:
                text += f", so the figures did not repeat ({'; '.join(self.repeat_reasons())})"
            return text
        if not self.unrepeated:
            return ""
        quiet = ([f"they waited {_span(self.waits)} % of the time for one"] if self.waits
                 else [f"they got {_span([min(s, 100.0) for s in self.shares])} % of them"]
                 if self.shares else [])
        quiet += [self._load_text()] if self.load else []
        text = f"the figures did not repeat ({'; '.join(self.repeat_reasons())})"
        return text + (f", though no trial was short of its cores ({'; '.join(quiet)})"
                       if quiet else "")

    def headline(self, report: str = "report.json", *, rerun: str | None = None,
                 more: str | None = None) -> str:
        """The answer's first line when provisional (else ""): the finding and what to do.

        Example:
            >>> Contention(trials=2, short=[{"core_share": 40.0}]).headline("r.json").split(";")[1]
            ' run `tts-kit report --rerun r.json` on a quiet machine'
        """
        if not self.provisional:
            return ""
        rerun = rerun or f"tts-kit report --rerun {report}"
        if self.busy:
            return f"provisional: {self.finding()}; run `{rerun}` on a quiet machine"
        more = more or (f"`{rerun} --confirm-rounds 5` settles the pick in alternating rounds "
                        '(more "repeats" in a --sweep spec steady each trial)')
        return f"provisional: {self.finding()}; measure more: {more}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: ``provisional``, ``cause``, ``reasons`` and the figures behind them."""
        return {"provisional": self.provisional, "cause": self.cause,
                "reasons": self.reasons(), "trials": self.trials,
                "short_of_cores": len(self.short), "unsteady": len(self.unsteady),
                "remeasure_p50_ms": list(self.remeasure) if self.remeasure else None,
                "remeasure_calls_ms": ([list(c) for c in self.remeasure_calls]
                                       if self.remeasure_calls else None),
                "loadavg": list(self.load) if self.load else None,
                "own_load": self.own_load}


def assess(
    records: Sequence[Mapping[str, Any]],
    pick: Mapping[str, Any] | None = None,
    again: Mapping[str, Any] | None = None,
    tie_rel: float | None = None,
    cores: int | None = None,
) -> Contention:
    """Signs that the machine was busy, or that the figures did not repeat, while
    ``records`` were measured; ``again``: the ``pick`` measured again (the A/A check).

    Example:
        >>> pick = {"status": "ok", rk.P50_MS: 100.0}
        >>> assess([pick], pick, {"status": "ok", rk.P50_MS: 180.0}).remeasure
        (100.0, 180.0)
        >>> assess([pick], pick, {"status": "ok", rk.P50_MS: 105.0}).provisional
        False
    """
    if tie_rel is None:
        tie_rel = band(records)
    ok = [dict(r) for r in records if _ok(r)]
    loads = [float(v) for r in ok for v in (r.get(rk.LOADAVG_BEFORE), r.get(rk.LOADAVG_AFTER))
             if rk.to_number(v) is not None]
    remeasure = calls = None
    if _ok(pick) and _ok(again):
        a, b = rk.to_number(pick.get(rk.P50_MS)), rk.to_number(again.get(rk.P50_MS))
        aa = compare(again, pick, rk.P50_MS, tie_rel, noise(ok))  # one configuration, twice
        if a and b is not None and aa is not None and aa.word != "tied":
            remeasure = (a, b)
            a_calls, b_calls = _calls(pick), _calls(again)
            if a_calls and b_calls:
                calls = ((min(a_calls), max(a_calls)), (min(b_calls), max(b_calls)))
    return Contention(
        trials=len(ok), short=[r for r in ok if short_of_cores(r)],
        unsteady=[r for r in ok if unsteady(r)], remeasure=remeasure, remeasure_calls=calls,
        tie_rel=tie_rel, load=(min(loads), max(loads)) if loads else None, cores=cores,
        own_load=own_load(ok), waits=_figures(ok, rk.CPU_WAIT_PERCENT),
        shares=_figures(ok, rk.CORE_SHARE))
