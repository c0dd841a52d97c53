"""Equivalence, not arg-min: `compare` bootstraps the ratio of two records' figure (worse,
better or tied with a tie band), and `pick` chooses inside the tie set of the fastest by a
fixed order that never reads latency (docs/guide.md, "Equivalence, not arg-min")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tts_kit.core.contract import SWEEP_PRESETS
from tts_kit.tuning import records as rk

#: The smallest tie band: a difference under 5 % is no difference (`band` widens it).
BAND_MIN = 0.05
#: Two-sided interval level: 90 %, the TOST convention for equivalence at 5 %.
LEVEL = 0.90
#: Bootstrap draws, and their fixed seed: the same records always give the same verdict.
DRAWS, SEED = 2000, 35
#: The swept dimensions `effects` reports, record key -> name in words.
DIMENSIONS = {"cpus": "vCPUs", "loading": "loading", "preset": "preset", "steps": "steps",
              "batch_size": "batch"}
_LAZY = {"paged": 0, "budget": 1, "resident": 2}


def _samples(rec: Mapping[str, Any], key: str) -> list[list[float]]:
    """A record's ``key`` by round: its calls for latency, one peak per round for peak RSS."""
    if key == rk.P50_MS:
        calls = rec.get(rk.LATENCIES_MS) or [rec.get(rk.P50_MS)]
        groups = rec.get(rk.ROUND_LATENCIES_MS) or [calls]
    else:
        ends = [rec.get(rk.PEAK_RSS_MIN_MB), rec.get(rk.PEAK_RSS_MAX_MB)]
        groups = [[x] for x in rec.get(rk.ROUND_PEAK_RSS_MB) or ends]
        groups = groups if all(g[0] is not None for g in groups) else [[rec.get(key)]]
    clean = [[float(x) for x in g if (rk.to_number(x) or 0) > 0] for g in groups]
    return [g for g in clean if g]


def _draws(groups: list[list[float]], rng: np.random.Generator) -> tuple[float, np.ndarray]:
    """The mean of the rounds' medians and its log bootstrap draws (rounds, then calls)."""
    medians = np.array([np.median(g) for g in groups])
    per_round = np.stack([np.median(np.asarray(g)[rng.integers(len(g), size=(DRAWS, len(g)))],
                                    axis=1) for g in groups])
    pick = rng.integers(len(groups), size=(DRAWS, len(groups)))
    boot = per_round[pick, np.arange(DRAWS)[:, None]].mean(axis=1)
    return float(medians.mean()), np.log(boot)


def _log_ratio(a: Mapping[str, Any], b: Mapping[str, Any], key: str, spread: float = 0.0
               ) -> tuple[float, np.ndarray] | None:
    """log(a / b) of ``key`` and its draws, spread >= ``spread`` x sqrt(1/n_a + 1/n_b)."""
    ga, gb = _samples(a, key), _samples(b, key)
    if not ga or not gb:
        return None
    rng = np.random.default_rng(SEED)
    (ma, da), (mb, db) = _draws(ga, rng), _draws(gb, rng)
    draws = da - db
    missing = spread**2 * (1 / len(ga) + 1 / len(gb)) - float(np.var(draws))
    if missing > 0:
        draws = draws + rng.normal(0.0, np.sqrt(missing), size=draws.shape)
    return float(np.log(ma / mb)), draws


@dataclass(frozen=True)
class Verdict:
    """The ratio of two configurations' figure with its interval, held to a tie band.

    Example:
        >>> Verdict(1.3, 1.2, 1.4).word, Verdict(1.03, 0.93, 1.14).word
        ('worse', 'tied')
        >>> Verdict(1.03, 0.97, 1.04).settled, Verdict(1.03, 0.93, 1.14).text()
        (True, '+3 % (-7 to +14), tied')
    """

    ratio: float
    lo: float
    hi: float
    band: float = BAND_MIN

    @property
    def word(self) -> str:
        """``worse`` (interval above 1 + band), ``better`` (below 1 / (1 + band)), ``tied``."""
        if self.lo > 1 + self.band:
            return "worse"
        return "better" if self.hi < 1 / (1 + self.band) else "tied"

    @property
    def settled(self) -> bool:
        """True when more measurement would not change the word (TOST's equivalence)."""
        return self.word != "tied" or (self.lo >= 1 / (1 + self.band)
                                       and self.hi <= 1 + self.band)

    def text(self) -> str:
        """``+8 % (+3 to +12), worse``."""
        def pc(x: float) -> str:
            return f"{(x - 1) * 100:+.0f}"
        return f"{pc(self.ratio)} % ({pc(self.lo)} to {pc(self.hi)}), {self.word}"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Verdict:
        """Read `to_dict`'s form back (its ``word`` is recomputed)."""
        return cls(d["ratio"], d["lo"], d["hi"], d["band"])

    def to_dict(self) -> dict[str, Any]:
        """The JSON form report.json keeps."""
        return {"ratio": self.ratio, "lo": self.lo, "hi": self.hi, "band": self.band,
                "word": self.word}


def _verdict(point: float, draws: np.ndarray, band: float) -> Verdict:
    tail = (1 - LEVEL) / 2 * 100
    lo, hi = np.percentile(draws, [tail, 100 - tail])
    return Verdict(float(np.exp(point)), float(np.exp(lo)), float(np.exp(hi)), band)


def compare(a: Mapping[str, Any], b: Mapping[str, Any], key: str = rk.P50_MS,
            band: float = BAND_MIN, spread: float = 0.0) -> Verdict | None:
    """`Verdict` of a / b in ``key`` (lower is better); ``spread``: `noise`, the least width.

    Example:
        >>> compare({rk.P50_MS: 130.0}, {rk.P50_MS: 100.0}).word
        'worse'
        >>> compare({rk.P50_MS: 130.0}, {rk.P50_MS: 100.0}, spread=0.2).word
        'tied'
    """
    got = _log_ratio(a, b, key, spread)
    return None if got is None else _verdict(*got, band)


def noise(records: Sequence[Mapping[str, Any]], key: str = rk.P50_MS) -> float:
    """One fresh process's spread here: the pooled standard deviation of the log round
    medians of ``records`` measured in 2+ rounds; 0 without.

    Example:
        >>> round(noise([{"round_latencies_ms": [[100.0], [130.0]]}]), 3)
        0.186
    """
    meds = [np.log([float(np.median(g)) for g in _samples(r, key)]) for r in records]
    var = [float(np.var(m, ddof=1)) for m in meds if len(m) > 1]
    return float(np.sqrt(np.mean(var))) if var else 0.0


def band(records: Sequence[Mapping[str, Any]]) -> float:
    """The tie band: `BAND_MIN`, or this machine's latency `noise` where wider.

    Example:
        >>> band([]), band([{"round_latencies_ms": [[100.0], [130.0]]}])
        (0.05, 0.186)
    """
    return max(BAND_MIN, round(noise(records), 3))


def _simplicity(rec: Mapping[str, Any]) -> tuple[Any, ...]:
    """The fixed order inside a tie set: fewer vCPUs, presets' order, lazy, fewer steps."""
    return (rec.get("cpus") or 0, *_level("preset", rec.get("preset")),
            *_simple("loading", rec.get("loading")), rec.get("steps") or 0,
            rec.get("batch_size") or 0)


@dataclass
class Pick:
    """`pick`'s answer: the record, its tie set, the band, and why, in words."""

    record: Any  #: one of those given, or None when nothing fits
    tie_set: list[Any]  #: not worse in latency than the fastest that fits, fastest first
    band: float
    reason: str


def _finished(records: Sequence[Mapping[str, Any] | None]) -> list[Mapping[str, Any]]:
    return [r for r in records if r is not None and r.get("status", "ok") == "ok"
            and rk.to_number(r.get(rk.P50_MS)) is not None
            and rk.to_number(r.get(rk.PEAK_RSS_MB)) is not None]


def _pooled(fits: Sequence[Mapping[str, Any]], dim: str, a: Any, b: Any, key: str,
            width: float, spread: float) -> Verdict | None:
    """``a`` against ``b`` in ``dim``: the pairs differing only there, averaged (or None)."""
    def rest(r: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(r.get(d) for d in DIMENSIONS if d != dim)
    base = {rest(r): r for r in fits if r.get(dim) == b}
    pairs = [(r, base[rest(r)]) for r in fits if r.get(dim) == a and rest(r) in base]
    floor = spread / np.sqrt(max(1, len(pairs)))
    got = [g for x, y in pairs if (g := _log_ratio(x, y, key, floor))]
    if not got:
        return None
    return _verdict(float(np.mean([g[0] for g in got])), np.mean([g[1] for g in got], axis=0),
                    width)


def _simple(dim: str, value: Any) -> tuple[Any, ...]:
    """`_simplicity` for one dimension's levels."""
    if dim == "loading":
        return _LAZY.get(str(value or "resident").split(":")[0], 3), str(value)
    return _level(dim, value)


@dataclass
class _Levels:
    """One dimension's levels in `pick`."""

    tied: list[Any]  #: tied in latency with the fastest level
    chosen: Any
    open: list[tuple[Any, Any]]  #: level pairs whose verdict is not settled yet
    unproven: list[str]  #: tied, lower peak, not taken: latency cost unknown (in words)
    heavier: list[Any]  #: tied, dropped for a peak worse than the leanest's


def _levels(fits: Sequence[Mapping[str, Any]], dim: str, width: float,
            spread: Mapping[str, float]) -> _Levels:
    """One level of ``dim`` on pooled figures: the simplest tied with the fastest whose peak
    is not worse than the leanest's shown the same speed (nor better where not shown so)."""
    levels = sorted({r.get(dim) for r in fits}, key=lambda v: _level(dim, v))
    if len(levels) < 2:
        return _Levels(levels, levels[0] if levels else None, [], [], [])

    def vs(a: Any, b: Any, key: str) -> Verdict | None:
        return None if a == b else _pooled(fits, dim, a, b, key, width, spread[key])
    ratio = {v: (x.ratio if (x := vs(v, levels[0], rk.P50_MS)) else 1.0) for v in levels}
    fastest = min(levels, key=lambda v: (ratio[v], _level(dim, v)))
    lat = {v: vs(v, fastest, rk.P50_MS) for v in levels}
    tied = [v for v in levels if lat[v] is None or lat[v].word != "worse"]
    # Memory is traded for latency only at a known cost (`Verdict.settled`).
    known = [v for v in tied if v == fastest or (lat[v] is not None and lat[v].settled)]
    pk = {v: (x.ratio if (x := vs(v, fastest, rk.PEAK_RSS_MB)) else 1.0) for v in tied}
    lean = min(known, key=lambda v: (pk[v], _simple(dim, v)))
    peak = {v: vs(v, lean, rk.PEAK_RSS_MB) for v in tied}
    small = [v for v in tied if peak[v] is None or (
        peak[v].word != "worse" and (v in known or peak[v].word != "better"))]
    open_ = [(v, fastest) for v in levels if lat[v] is not None and not lat[v].settled]
    open_ += [(v, lean) for v in tied if peak[v] is not None and not peak[v].settled]
    unproven = [f"{v} (latency {x.text()})" for v in tied if v not in known
                and peak[v] is not None and peak[v].word == "better" and (x := lat[v])]
    heavier = [v for v in tied if peak[v] is not None and peak[v].word == "worse"]
    return _Levels(tied, min(small, key=lambda v: _simple(dim, v)), open_, unproven, heavier)


def _inside(tied: Sequence[Mapping[str, Any]], width: float, spread: float) -> list[Any]:
    """Those of ``tied`` whose peak is not worse than the leanest's."""
    lean = min(tied, key=lambda r: float(r[rk.PEAK_RSS_MB]))
    return [r for r in tied if (v := compare(r, lean, rk.PEAK_RSS_MB, width, spread)) is None
            or v.word != "worse"]


def _tie_set(fits: Sequence[Mapping[str, Any]], width: float, spread: float) -> list[Any]:
    """The configurations of ``fits`` not worse in latency than its fastest point estimate."""
    leader = min(fits, key=lambda r: float(r[rk.P50_MS]))
    return [leader] + [r for r in fits if r is not leader and (
        (v := compare(r, leader, rk.P50_MS, width, spread)) is None or v.word != "worse")]


def _fits(records: Sequence[Mapping[str, Any] | None], budget_mb: float | None
          ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    finished = _finished(records)
    return finished, [r for r in finished
                      if budget_mb is None or float(r[rk.PEAK_RSS_MB]) <= budget_mb]


def pick(records: Sequence[Mapping[str, Any]], budget_mb: float | None = None,
         width: float | None = None) -> Pick:
    """The recommendation within ``budget_mb``, dimension by dimension on pooled figures
    (`_levels`), so a lucky process moves one configuration, not a dimension; the tie set is
    every configuration whose levels are all tied. ``width``: the tie band (default `band`).

    Example:
        >>> p = pick([{rk.P50_MS: 100.0, rk.PEAK_RSS_MB: 600.0},
        ...           {"loading": "paged", rk.P50_MS: 104.0, rk.PEAK_RSS_MB: 330.0}])
        >>> p.record["loading"], len(p.tie_set)
        ('paged', 2)
    """
    finished, fits = _fits(records, budget_mb)
    width = band(finished) if width is None else width
    if not fits:
        return Pick(None, [], width, "nothing fits")
    spread = {k: noise(finished, k) for k in (rk.P50_MS, rk.PEAK_RSS_MB)}
    levels = {d: _levels(fits, d, width, spread) for d in DIMENSIONS}
    tied = sorted((r for r in fits if all(r.get(d) in lv.tied for d, lv in levels.items())),
                  key=lambda r: float(r[rk.P50_MS]))
    want = [r for r in tied if all(r.get(d) == lv.chosen for d, lv in levels.items())]
    if not want:  # the chosen levels not measured together: one configuration at a time
        tied = _tie_set(fits, width, spread[rk.P50_MS])
    small = _inside(tied, width, spread[rk.PEAK_RSS_MB])
    best = want[0] if want else min(small, key=_simplicity)
    why = (f"the {len(tied)} of {len(fits)} that fit are the same speed within "
           f"{width * 100:.0f} % on this machine" if len(tied) > 1 else
           f"the fastest of {len(fits)} that fit, beyond the {width * 100:.0f} % band")
    heavy = len(tied) - len(small)
    if want:  # the levels dropped for their peak, and the lower peaks not taken
        heavy = sum(any(r.get(d) in lv.heavier for d, lv in levels.items()) for r in tied)
        why += (" (each dimension over every configuration that differs only there)"
                if len(tied) > 1 else "")
    why += f"; {heavy} of them peak higher beyond it" if heavy else ""
    for u in (u for lv in levels.values() for u in lv.unproven) if want else ():
        why += f"; {u} not taken for its lower peak: that cost is not shown inside the band"
    if len(tied) - heavy > 1:
        why += "; of the rest the simplest (fewer vCPUs, default preset, lazy loading)"
    return Pick(best, tied, width, why)


def undetermined(records: Sequence[Mapping[str, Any] | None],
                 budget_mb: float | None = None) -> list[int]:
    """Indices of ``records`` (None: not measured yet) whose measurement could still change
    `pick`, least measured first: what a sweep's racing measures again.

    Example:
        >>> undetermined([{"cpus": c, rk.P50_MS: ms, rk.PEAK_RSS_MB: 9.0}
        ...               for c, ms in ((1, 100.0), (2, 103.0), (4, 200.0))])
        [0, 1]
    """
    finished, fits = _fits(records, budget_mb)
    if not fits:
        return []
    idx = {id(r): i for i, r in enumerate(records) if r is not None}
    width = band(finished)
    spread = {k: noise(finished, k) for k in (rk.P50_MS, rk.PEAK_RSS_MB)}
    fastest = min(float(r[rk.P50_MS]) for r in fits)  # once: open unless clearly worse
    open_ = {idx[id(r)] for r in fits if len(_samples(r, rk.P50_MS)) < 2
             and float(r[rk.P50_MS]) <= fastest * (1 + width) ** 2}
    levels = {d: _levels(fits, d, width, spread) for d in DIMENSIONS}
    for d, lv in levels.items():  # among the configurations tied in every other dimension
        rest = [r for r in fits if all(r.get(e) in levels[e].tied for e in levels if e != d)]
        for a, b in lv.open:
            open_ |= {idx[id(r)] for r in rest if r.get(d) in (a, b)}
    return sorted(open_, key=lambda i: (len(_samples(records[i], rk.P50_MS)), i))


def _level(dim: str, value: Any) -> tuple[Any, ...]:
    """A dimension's levels in order, the baseline (resident, fewest vCPUs) first."""
    if dim == "loading":
        return -_LAZY.get(str(value).split(":")[0], 3), str(value)
    if dim == "preset":
        return SWEEP_PRESETS.index(value) if value in SWEEP_PRESETS else 99, str(value)
    return value is None, value or 0


def effects(records: Sequence[Mapping[str, Any]], width: float = BAND_MIN
            ) -> list[dict[str, Any]]:
    """Each swept dimension's effect: every level against the first, pooled (`_pooled`),
    a `Verdict` for latency and for peak.

    Example:
        >>> recs = [{"cpus": c, "loading": lo, rk.P50_MS: 100.0 / c, "peak_rss_mb": m}
        ...         for c in (1, 2) for lo, m in (("resident", 600.0), ("paged", 330.0))]
        >>> [(e["dimension"], e["level"], e["latency"].word) for e in effects(recs)]
        [('cpus', 2, 'better'), ('loading', 'paged', 'tied')]
    """
    ok = _finished(records)
    spread = {k: noise(ok, k) for k in (rk.P50_MS, rk.PEAK_RSS_MB)}
    out = []
    for dim in DIMENSIONS:
        levels = sorted({r.get(dim) for r in ok}, key=lambda v: _level(dim, v))
        for level in levels[1:]:
            entry: dict[str, Any] = {"dimension": dim, "level": level, "baseline": levels[0]}
            for name, key in (("latency", rk.P50_MS), ("peak", rk.PEAK_RSS_MB)):
                entry[name] = _pooled(ok, dim, level, levels[0], key, width, spread[key])
            out.append(entry)
    return out


def effect_lines(found: Sequence[Mapping[str, Any]], width: float) -> list[str]:
    """`effects` in words; a dimension with no level beyond the band in one line.

    Example:
        >>> v = Verdict(1.02, 0.98, 1.06)
        >>> effect_lines([{"dimension": "preset", "level": "lean", "baseline": "ort-default",
        ...                "latency": v, "peak": v}], 0.05)
        ['preset: no difference beyond 5 % (lean against ort-default)']
    """
    out = []
    for dim in DIMENSIONS:
        mine = [e for e in found if e["dimension"] == dim]
        if not mine:
            continue
        if all(e[m] is None or e[m].word == "tied" for e in mine for m in ("latency", "peak")):
            levels = ", ".join(str(e["level"]) for e in mine)
            out.append(f"{DIMENSIONS[dim]}: no difference "
                       f"beyond {width * 100:.0f} % ({levels} against {mine[0]['baseline']})")
            continue
        for e in mine:
            parts = [f"{m} {e[m].text()}" for m in ("latency", "peak") if e[m] is not None]
            out.append(f"{DIMENSIONS[dim]} {e['level']} against {e['baseline']}: "
                       + "; ".join(parts))
    return out


def summary(records: Sequence[Mapping[str, Any]], budget_mb: float | None = None
            ) -> dict[str, Any]:
    """What report.json keeps beside the pick: the tie set, the band, the `effects`.

    Example:
        >>> summary([{"preset": "lean", "cpus": 1, rk.P50_MS: 9.0, "peak_rss_mb": 9.0}])
        {'tie_set': [['lean', 1, None, None, None]], 'band': 0.05, 'effects': []}
    """
    chosen = pick(records, budget_mb)
    found = [dict(e, **{m: e[m] and e[m].to_dict() for m in ("latency", "peak")})
             for e in effects(records, chosen.band)]
    return {"tie_set": [[r.get(k) for k in ("preset", "cpus", "loading", "steps", "batch_size")]
                        for r in chosen.tie_set], "band": chosen.band, "effects": found}


def agreement(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]
              ) -> list[tuple[str, str]]:
    """Two runs' `summary` effects side by side: ``holds``, ``differs`` (the intervals
    apart) or ``undetermined``, with a line in words.

    Example:
        >>> e = {"dimension": "cpus", "level": 2, "baseline": 1, "peak": None,
        ...      "latency": {"ratio": 0.6, "lo": 0.55, "hi": 0.65, "band": 0.05}}
        >>> agreement([e], [e])[0]
        ('holds', 'vCPUs 2 against 1: holds (latency -40 % (-45 to -35), better, then and now)')
    """
    def key(e: Mapping[str, Any]) -> tuple[str, ...]:
        return e["dimension"], str(e["level"]), str(e["baseline"])
    other = {key(e): e for e in b}
    out = []
    for e in a:
        f = other.get(key(e))
        if f is None:
            continue
        words, texts = [], []
        for m in ("latency", "peak"):
            if not e.get(m) or not f.get(m):
                continue
            x, y = Verdict.from_dict(e[m]), Verdict.from_dict(f[m])
            apart = x.hi < y.lo or y.hi < x.lo
            words.append("holds" if x.word == y.word else "differs" if apart else "undetermined")
            texts.append(f"{m} {x.text()}" + (", then and now" if x.word == y.word
                                              else f" against {y.text()}"))
        word = next((w for w in ("differs", "undetermined") if w in words), "holds")
        out.append((word, f"{DIMENSIONS[e['dimension']]} {e['level']} against "
                          f"{e['baseline']}: {word} ({'; '.join(texts)})"))
    return out
