"""Was the machine busy? Contention read from a sweep's records, before trusting its pick.

A sweep on a shared machine measures the neighbours as much as the configurations: a
trial that got half its cores ran up to twice as slow, and the pick may be the trial
that happened to run in a quiet minute. `assess` looks at the records (pure: no
measurement, no I/O) for three signs, each measured by the trial itself
(`tts_kit.experiments.tune.run_trial_child`, with `tts_kit.experiments.runqueue`):

- **trials short of their cores**: the threads waited for a core for more than
  `WAIT_LIMIT` % of the time they were ready to run (``cpu_wait_percent``, the run-queue
  delay) while the trial got less than `FULL_SHARE` % of its cores (``core_share``; a
  trial that filled its cores waited for its own threads, as ONNX Runtime's default of
  one thread per host core does on one pinned core); where the kernel does not report
  the wait, a ``core_share`` below `SHARE_LIMIT` %;
- **a configuration that disagrees with itself**: its steady calls, the same batch
  repeated, differ by more than `UNSTEADY_RATIO` x (slowest / fastest, and by more than
  `UNSTEADY_ABS_MS`);
- **a pick whose re-measure leaves the tie band**: the recommended configuration,
  measured again in another fresh process, differs from its sweep trial by more than
  the band within which `SweepResult.recommend` calls two configurations equally fast
  (`tts_kit.experiments.tune.TIE_REL`, 10 %, and more than `REMEASURE_ABS_MS`).

Any of them makes the answer *provisional* (`Contention.headline`): the report and the
terminal say so first, with the figures, and name the rerun that settles it. The load
average around each trial (``loadavg_before``/``loadavg_after``) is quoted, not judged:
the sweep's own trials raise it too.

Example:
    >>> from tts_kit.experiments.contention import assess
    >>> quiet = {"status": "ok", "core_share": 98.0, "cpu_wait_percent": 1.0}
    >>> assess([quiet]).provisional
    False
    >>> busy = {"status": "ok", "core_share": 52.0, "cpu_wait_percent": 47.0}
    >>> assess([quiet, busy]).headline("report.json")
    'provisional: the machine was busy (1 of 2 trials got 52 % of their cores, waiting 47 % of the time for one); run `tts-kit report --rerun report.json` on a quiet machine'
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tts_kit.experiments.records import (
    CORE_SHARE,
    CPU_WAIT_PERCENT,
    LATENCIES_MS,
    LOADAVG_AFTER,
    LOADAVG_BEFORE,
    P50_MS,
    to_number,
)
from tts_kit.experiments.tune import TIE_REL

#: A trial whose threads waited for a core more than this share (%) of their ready time
#: was short of its cores (alone: a few percent at most).
WAIT_LIMIT = 15.0
#: A trial that got at least this share (%) of its cores was not short of them, whatever
#: its threads waited: they waited for each other (more threads than cores).
FULL_SHARE = 90.0
#: Without run-queue figures: a trial that got less than this share (%) of its pinned
#: cores was short of them (a preset that does not spin its threads idles some of them
#: between operators, so this is the weaker test).
SHARE_LIMIT = 60.0
#: Slowest / fastest steady call of one trial past which it disagrees with itself.
UNSTEADY_RATIO = 2.0
#: ... and by more than this many ms (a 3 ms call that takes 7 ms once is a hiccup).
UNSTEADY_ABS_MS = 20.0
#: A re-measure that moves by less than this many ms stays in the band, whatever the ratio.
REMEASURE_ABS_MS = 5.0


def _ok(rec: Mapping[str, Any] | None) -> bool:
    return isinstance(rec, Mapping) and rec.get("status", "ok") == "ok"


def _span(values: Sequence[float], fmt: str = ".0f") -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if format(lo, fmt) == format(hi, fmt) else f"{lo:{fmt}}-{hi:{fmt}}"


def short_of_cores(rec: Mapping[str, Any]) -> bool:
    """True when a finished trial waited for its cores (see the module docstring).

    Example:
        >>> short_of_cores({"cpu_wait_percent": 40.0, "core_share": 55.0})
        True
        >>> short_of_cores({"cpu_wait_percent": 2.0, "core_share": 55.0})  # not spinning
        False
        >>> short_of_cores({"cpu_wait_percent": 60.0, "core_share": 99.0})  # its own threads
        False
        >>> short_of_cores({"core_share": 45.0}), short_of_cores({})
        (True, False)
    """
    if not _ok(rec):
        return False
    wait, share = to_number(rec.get(CPU_WAIT_PERCENT)), to_number(rec.get(CORE_SHARE))
    if wait is not None:
        return wait > WAIT_LIMIT and (share is None or share < FULL_SHARE)
    return share is not None and share < SHARE_LIMIT


def unsteady(rec: Mapping[str, Any]) -> bool:
    """True when a finished trial's steady calls disagree with each other.

    Example:
        >>> unsteady({"latencies_ms": [100.0, 104.0, 260.0]})
        True
        >>> unsteady({"latencies_ms": [3.0, 8.0]}), unsteady({"latencies_ms": [100, 110]})
        (False, False)
    """
    lat = [float(x) for x in (rec.get(LATENCIES_MS) or []) if to_number(x) is not None]
    if not _ok(rec) or len(lat) < 2 or min(lat) <= 0:
        return False
    return max(lat) / min(lat) > UNSTEADY_RATIO and max(lat) - min(lat) > UNSTEADY_ABS_MS


@dataclass
class Contention:
    """What `assess` found: the trials short of their cores, the unsteady ones, the
    re-measure, and the load average around the trials.

    Example:
        >>> Contention().provisional, Contention().headline()
        (False, '')
    """

    trials: int = 0
    """Finished trials looked at."""
    short: list[dict[str, Any]] = field(default_factory=list)
    """Trials short of their cores (`short_of_cores`)."""
    unsteady: list[dict[str, Any]] = field(default_factory=list)
    """Trials whose steady calls disagree (`unsteady`)."""
    remeasure: tuple[float, float] | None = None
    """(sweep p50, re-measured p50) of the pick, when the re-measure left the tie band."""
    tie_rel: float = 0.10
    """The tie band the re-measure was held to."""
    load: tuple[float, float] | None = None
    """Lowest and highest 1-minute load average around the trials (None: not recorded)."""
    cores: int | None = None
    """The machine's usable cores, for the load average's scale (None: not known)."""

    @property
    def provisional(self) -> bool:
        """True when any sign of contention was found."""
        return bool(self.short or self.unsteady or self.remeasure)

    def reasons(self) -> list[str]:
        """One phrase per sign found, with its figures.

        Example:
            >>> Contention(trials=3, remeasure=(1837.0, 3145.0)).reasons()
            ['the pick measured again took 3,145 ms against 1,837 ms in the sweep (1.7x, outside the 10 % band that decides ties)']
        """  # noqa: E501
        out = []
        if self.short:
            share = [float(r[CORE_SHARE]) for r in self.short
                     if to_number(r.get(CORE_SHARE)) is not None]
            wait = [float(r[CPU_WAIT_PERCENT]) for r in self.short
                    if to_number(r.get(CPU_WAIT_PERCENT)) is not None]
            text = f"{len(self.short)} of {self.trials} trials got "
            text += f"{_span(share)} % of their cores" if share else "too little of their cores"
            if wait:
                text += f", waiting {_span(wait)} % of the time for one"
            out.append(text)
        if self.unsteady:
            ratios = [max(r[LATENCIES_MS]) / min(r[LATENCIES_MS]) for r in self.unsteady]
            out.append(f"{len(self.unsteady)} of {self.trials} trials disagreed with "
                       f"themselves (slowest call {_span(ratios, '.1f')}x the fastest of "
                       "the same batch)")
        if self.remeasure:
            sweep_ms, again_ms = self.remeasure
            out.append(f"the pick measured again took {again_ms:,.0f} ms against "
                       f"{sweep_ms:,.0f} ms in the sweep ({again_ms / sweep_ms:.1f}x, outside "
                       f"the {self.tie_rel * 100:.0f} % band that decides ties)")
        if out and self.load:
            scale = f" on {self.cores} cores" if self.cores else ""
            out.append(f"load average {_span(self.load, '.1f')}{scale}")
        return out

    def headline(self, report: str = "report.json") -> str:
        """The answer's first line when provisional ("" otherwise), naming the rerun.

        Example:
            >>> Contention(trials=2, short=[{"core_share": 40.0}]).headline("r/report.json")
            'provisional: the machine was busy (1 of 2 trials got 40 % of their cores); run `tts-kit report --rerun r/report.json` on a quiet machine'
        """  # noqa: E501
        if not self.provisional:
            return ""
        return (f"provisional: the machine was busy ({'; '.join(self.reasons())}); run "
                f"`tts-kit report --rerun {report}` on a quiet machine")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: ``provisional``, ``reasons`` and the figures behind them."""
        return {"provisional": self.provisional, "reasons": self.reasons(),
                "trials": self.trials, "short_of_cores": len(self.short),
                "unsteady": len(self.unsteady),
                "remeasure_p50_ms": list(self.remeasure) if self.remeasure else None,
                "loadavg": list(self.load) if self.load else None}


def assess(
    records: Sequence[Mapping[str, Any]],
    pick: Mapping[str, Any] | None = None,
    again: Mapping[str, Any] | None = None,
    tie_rel: float | None = None,
    cores: int | None = None,
) -> Contention:
    """Signs that the machine was busy while ``records`` were measured (module docstring).

    Args:
        records: the sweep's trial records.
        pick: the recommended record (None: no re-measure check).
        again: the pick measured again (``extras["recommended_trial"]`` of a report).
        tie_rel: the tie band (default `tts_kit.experiments.tune.TIE_REL`).
        cores: the machine's usable cores, quoted beside the load average.

    Example:
        >>> pick = {"status": "ok", "p50_ms": 100.0}
        >>> assess([pick], pick, {"status": "ok", "p50_ms": 180.0}).remeasure
        (100.0, 180.0)
        >>> assess([pick], pick, {"status": "ok", "p50_ms": 105.0}).provisional
        False
    """
    if tie_rel is None:
        tie_rel = TIE_REL
    ok = [dict(r) for r in records if _ok(r)]
    loads = [float(v) for r in ok for v in (r.get(LOADAVG_BEFORE), r.get(LOADAVG_AFTER))
             if to_number(v) is not None]
    remeasure = None
    if _ok(pick) and _ok(again):
        a, b = to_number(pick.get(P50_MS)), to_number(again.get(P50_MS))
        if a and b is not None and abs(b - a) > max(tie_rel * a, REMEASURE_ABS_MS):
            remeasure = (a, b)
    return Contention(
        trials=len(ok), short=[r for r in ok if short_of_cores(r)],
        unsteady=[r for r in ok if unsteady(r)], remeasure=remeasure, tie_rel=tie_rel,
        load=(min(loads), max(loads)) if loads else None, cores=cores,
    )
