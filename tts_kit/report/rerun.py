"""Reruns: repeat a report's sweep here, compare figure by figure, judge the recommendation
(docs/guide.md, "When the recommendation holds").
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.models.resolve import resolve_model
from tts_kit.models.supertonic.bundle import Bundle
from tts_kit.report.document import METRICS, Noise, TuningReport, key_text, record_key
from tts_kit.report.make import make_report, run_tuning
from tts_kit.report.spec import ReportError, SweepSpec
from tts_kit.tuning.records import CPU_PERCENT, P50_MS, PEAK_RSS_MB, ROUND_LATENCIES_MS, to_number
from tts_kit.tuning.verdict import agreement, band, compare, pick


@dataclass
class Move:
    """One figure that changed by more than the noise.

    Example:
        >>> Move(("lean", 1, "resident", 2, 1), P50_MS, 12.0, 18.5, 3.0).text()
        'lean @ 1 vCPU, resident, 2 steps: p50_ms 12 -> 18.5 (+54%, noise 3)'
    """

    key: tuple[Any, ...]  # the configuration (`record_key`)
    metric: str  # p50_ms, peak_rss_mb, status ...
    old: Any
    new: Any
    noise: float | None  # the threshold it passed (None for a status change)

    def text(self) -> str:
        """One line, e.g. ``lean @ 1 vCPU, resident: p50_ms 12.0 -> 18.5 (+54%, noise 3.0)``."""
        if self.noise is None:
            return f"{key_text(self.key)}: {self.metric} {self.old} -> {self.new}"
        rel = (self.new - self.old) / self.old * 100 if self.old else math.inf
        return (f"{key_text(self.key)}: {self.metric} {self.old:.4g} -> {self.new:.4g} "
                f"({rel:+.0f}%, noise {self.noise:.3g})")


@dataclass
class RerunVerdict:
    """What a rerun found: the figures that moved, and whether the recommendation holds.

    Example:
        >>> verdict = rerun_report("reports/standin/report.json")  # doctest: +SKIP
        >>> verdict.holds, verdict.verdict  # doctest: +SKIP
        (True, 'the same configuration is recommended: low-memory @ 1 vCPU, resident, 2 steps')
    """

    old: TuningReport
    new: TuningReport
    moved: list[Move]
    compared: int  # (configuration, figure) pairs compared
    holds: bool
    verdict: str  # why, one sentence
    missing: list[tuple[Any, ...]] = field(default_factory=list)  # in one run only
    environment_changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    model_changed: bool = False  # the graphs' SHA-256s differ
    contention: list[str] = field(default_factory=list)  # runs whose trials waited for CPU
    #: (the report's pick, this run's) when only their latency gap decides: `head_to_head`.
    contested: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None
    head_to_head: dict[tuple[Any, ...], list[float]] | None = None  # p50 per round
    preset_changes: dict[str, list[str]] = field(default_factory=dict)
    #: Each swept dimension's effect, then and now: (holds | differs | undetermined, line).
    dimensions: list[tuple[str, str]] = field(default_factory=list)

    def headline(self) -> str:
        """The verdict in one line.

        Example:
            >>> v = RerunVerdict(None, None, [], 200, True, "the same configuration")
            >>> v.headline()
            'holds: same pick; 0 of 200 figures moved beyond noise'
        """
        old = (self.old.recommended if self.old is not None else None) or {}
        new = (self.new.recommended if self.new is not None else None) or {}
        same = record_key(old) == record_key(new) if old and new else not (old or new)
        if same:
            pick = "same pick"
        elif self.holds and old and new:
            pick = f"the report's pick is in this run's tie set ({key_text(record_key(new))})"
        elif old:
            pick = f"pick was {key_text(record_key(old))}, now " + (
                key_text(record_key(new)) if new else "none")
        else:
            pick = "a pick now"
        return (f"{'holds' if self.holds else 'does NOT hold'}: {pick}; {len(self.moved)} of "
                f"{self.compared} figures moved beyond noise")

    def noise_line(self) -> str:
        """What counts as noise, in one line."""
        n = (self.new.noise if self.new is not None else None) or Noise()
        return (f"noise: a latency moves when it changes by more than {n.latency_rel:.0%} "
                f"(or its own p50-p95 spread, wider when the CPU was contended), memory by "
                f"more than {n.memory_rel:.0%} or {n.memory_abs_mb:g} MB, CPU use by "
                f"{n.cpu_abs:g} points")

    def summary(self) -> str:
        """The text `tts-kit report --rerun` prints: the verdict first, then the details."""
        lines = [self.headline(), self.noise_line(),
                 f"rerun of the report of {self.old.created} on this machine: "
                 f"{len(self.new.records)} trials, {self.compared} figures compared"]
        if self.model_changed:
            lines.append("warning: the model's SHA-256s differ from the report's")
        lines += [f"environment: {k} was {a!r}, now {b!r}"
                  for k, (a, b) in self.environment_changes.items()]
        if self.moved:
            lines.append(f"{len(self.moved)} figure(s) moved by more than the noise:")
            lines += [f"  {m.text()}" for m in self.moved]
        else:
            lines.append("no figure moved by more than the noise")
        if self.dimensions:
            counts = {w: sum(1 for x, _ in self.dimensions if x == w)
                      for w in ("holds", "differs", "undetermined")}
            lines.append("what matters, then and now (intervals of the two runs): "
                         + ", ".join(f"{n} {w}" for w, n in counts.items()))
            lines += [f"  {text}" for _, text in self.dimensions]
        lines += [f"  only in one run: {key_text(key)}" for key in self.missing]
        for name, fields in self.preset_changes.items():
            lines.append(f"preset {name!r} changed since the report ({'; '.join(fields)}); "
                         "this rerun measured the report's saved definition")
        lines += [f"note: {c}" for c in self.contention]
        lines.append(("recommendation holds: " if self.holds else
                      "recommendation does NOT hold: ") + self.verdict)
        return "\n".join(lines)


def compare_reports(old: TuningReport, new: TuningReport, noise: Noise | None = None,
                    head_to_head: Mapping[tuple[Any, ...], Sequence[float]] | None = None,
                    ) -> RerunVerdict:
    """Compare two reports of the same sweep figure by figure; ``head_to_head`` (key ->
    p50s of alternating rounds) settles a verdict on the picks' latency gap.

    Example:
        >>> compare_reports(TuningReport.load("a"), TuningReport.load("b")).holds  # doctest: +SKIP
        True
    """
    noise = noise or old.noise
    old_by = {record_key(r): r for r in old.records}
    new_by = {record_key(r): r for r in new.records}
    moved: list[Move] = []
    compared = 0
    for key in (k for k in old_by if k in new_by):
        a, b = old_by[key], new_by[key]
        compared += 1
        if a.get("status") != b.get("status"):
            moved.append(Move(key, "status", a.get("status"), b.get("status"), None))
            continue
        if a.get("status") != "ok":
            continue
        for metric in METRICS:
            va, vb = a.get(metric), b.get(metric)
            if to_number(va) is None or to_number(vb) is None:
                continue
            compared += 1
            limit = noise.threshold(metric, a, b)
            if abs(vb - va) > limit:
                moved.append(Move(key, metric, float(va), float(vb), limit))
    missing = sorted(set(old_by) ^ set(new_by), key=str)
    holds, verdict, contested = _recommendation_holds(old, new)
    if contested is not None and head_to_head:
        holds, verdict = _settle(contested, head_to_head, _band(new))
    env_changes = {
        k: (old.environment.get(k), new.environment.get(k))
        for k in sorted(set(old.environment) | set(new.environment))
        if old.environment.get(k) != new.environment.get(k)
    }
    return RerunVerdict(
        old=old, new=new, moved=moved, compared=compared, holds=holds, verdict=verdict,
        missing=missing, environment_changes=env_changes,
        model_changed=old.model.get("sha256") != new.model.get("sha256"),
        contention=[c for c in (_contention("the report", old), _contention("this run", new))
                    if c],
        contested=contested,
        head_to_head={k: list(v) for k, v in head_to_head.items()} if head_to_head else None,
        dimensions=agreement(old.verdicts.get("effects") or [], new.verdicts.get("effects") or []),
    )


#: A trial that got less than this share of one core (``cpu_percent``) waited for the CPU.
CONTENTION_CPU_PERCENT = 60.0


def _contention(label: str, rep: TuningReport) -> str:
    from tts_kit.report.answer import contention

    found = contention(rep)  # the signs the answer itself reads
    if found.provisional:
        why = ("its latency is the neighbours' as much as the configuration's" if found.busy
               else "a single trial per configuration does not settle a close call")
        return f"in {label}, {found.finding()}: {why}"
    starved = [r for r in rep.records if r.get("status") == "ok"
               and to_number(r.get(CPU_PERCENT)) is not None
               and r[CPU_PERCENT] < CONTENTION_CPU_PERCENT]
    if not starved:
        return ""
    lo = min(r[CPU_PERCENT] for r in starved)
    hi = max(r[CPU_PERCENT] for r in starved)
    return (f"in {label}, {len(starved)} of {len(rep.records)} trials got only {lo:.0f}-{hi:.0f} %"
            " of a core (other load on the machine?); their latency is the neighbours' as much"
            " as the configuration's")


def _band(rep: TuningReport) -> float:
    return float(rep.verdicts.get("band") or band(rep.records))


def _recommendation_holds(
    old: TuningReport, new: TuningReport,
) -> tuple[bool, str, tuple[tuple[Any, ...], tuple[Any, ...]] | None]:
    a, b = old.recommended, new.recommended
    if a is None and b is None:
        return True, "nothing fits the budget, then and now", None
    if a is None or b is None:
        then = "nothing" if a is None else key_text(record_key(a))
        now = "nothing" if b is None else key_text(record_key(b))
        return False, f"the report recommended {then}, this machine recommends {now}", None
    ka, kb = record_key(a), record_key(b)
    if ka == kb:
        return True, f"the same configuration is recommended: {key_text(ka)}", None
    again = next((r for r in new.records if record_key(r) == ka), None)
    if again is None or again.get("status") != "ok":
        return False, (f"the report's pick {key_text(ka)} did not finish now; "
                       f"this machine recommends {key_text(kb)}"), None
    budget = new.spec.mem_budget_mb
    peak = to_number(again.get(PEAK_RSS_MB))
    if budget is not None and peak is not None and peak > budget:
        return False, (f"the report's pick {key_text(ka)} now peaks at "
                       f"{again[PEAK_RSS_MB]:.0f} MB, over the {budget:.0f} MB budget"), None
    # The same statistics the pick follows: is the old pick in this run's tie set?
    width = _band(new)
    ties = {tuple(t) for t in new.verdicts.get("tie_set") or []} or {
        record_key(r) for r in pick(new.records, budget, width).tie_set}
    if ka in ties:
        return True, (f"this machine prefers {key_text(kb)}, but the report's pick "
                      f"{key_text(ka)} is in its tie set (the same speed within "
                      f"{width * 100:.0f} %) and fits the budget"), None
    return False, (f"this machine recommends {key_text(kb)}; the report's pick {key_text(ka)} "
                   f"is slower beyond the {width * 100:.0f} % band"), (ka, kb)


def _settle(contested: tuple[tuple[Any, ...], tuple[Any, ...]],
            rounds: Mapping[tuple[Any, ...], Sequence[float]], width: float) -> tuple[bool, str]:
    """The verdict (`tts_kit.tuning.verdict.compare`) on alternating rounds' p50s."""
    ka, kb = contested
    pa, pb = ([[float(x)] for x in rounds.get(k, ()) if to_number(x) is not None]
              for k in (ka, kb))
    if not pa or not pb:
        return False, (f"this machine recommends {key_text(kb)}; the head-to-head rounds of the "
                       f"report's pick {key_text(ka)} did not finish")
    v = compare({ROUND_LATENCIES_MS: pa}, {ROUND_LATENCIES_MS: pb}, P50_MS, width)
    how = (f"head to head over {min(len(pa), len(pb))} alternating round(s): the report's pick "
           f"{key_text(ka)} against {key_text(kb)}, p50 {v.text()}")
    if v.word != "worse":
        return True, f"{how}: the single trials' gap was the machine's, not the configurations'"
    return False, (f"{how}, in rounds that alternate: this machine recommends "
                   f"{key_text(kb)}")


def preset_changes(saved: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """How today's shipped presets differ from ``saved`` (a report's ``presets``), by name.

    Example:
        >>> from tts_kit.runtime.sessions import get_preset
        >>> lean = get_preset("lean").to_dict()
        >>> preset_changes({"lean": {**lean, "enable_cpu_mem_arena": True}})
        {'lean': ['enable_cpu_mem_arena True -> False']}
    """
    from tts_kit.runtime.sessions import PRESETS

    out: dict[str, list[str]] = {}
    for name, old in saved.items():
        if name not in PRESETS:
            out[name] = ["no longer shipped"]
            continue
        now = PRESETS[name].to_dict()
        diffs = [f"{k} {old.get(k)!r} -> {now.get(k)!r}"
                 for k in sorted(set(old) | set(now)) if old.get(k) != now.get(k)]
        if diffs:
            out[name] = diffs
    return out


def head_to_head(
    bundle: Bundle | str | os.PathLike[str],
    spec: SweepSpec,
    keys: Sequence[tuple[Any, ...]],
    rounds: int = 3,
    progress: bool = False,
    presets: Mapping[str, Any] | None = None,
) -> dict[tuple[Any, ...], list[float]]:
    """Measure configurations in alternating isolated trials, A B A B ... ``rounds`` times,
    so a machine's drift falls on each alike: key -> each round's p50 (ms; NaN: unfinished).

    Example:
        >>> head_to_head("m", SweepSpec.quick(), [("lean", 1, "resident", 2, 1)])  # doctest: +SKIP
    """
    from tqdm.auto import tqdm

    from tts_kit.tuning.tune import trial

    if rounds < 1:
        raise TtsKitError(f"rounds must be >= 1, got {rounds}")
    out: dict[tuple[Any, ...], list[float]] = {tuple(k): [] for k in keys}
    bar = tqdm(total=rounds * len(out), desc="head to head", disable=not progress, leave=False)
    try:
        for _ in range(rounds):
            for key in out:
                preset, cpus, loading, steps, batch = (list(key) + [None] * 5)[:5]
                workload = spec.workload.replace(steps=steps or contract.DEFAULT_STEPS,
                                                 batch_size=batch or 1)
                rec = trial(bundle, (presets or {}).get(preset, preset), workload, cpus=cpus,
                            mem_budget_mb=spec.mem_budget_mb, loading=loading or "resident")
                ok = rec["status"] == "ok" and to_number(rec.get(P50_MS)) is not None
                out[key].append(float(rec[P50_MS]) if ok else math.nan)
                bar.update()
    finally:
        bar.close()
    return out


def rerun_report(
    report: str | os.PathLike[str],
    model: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    progress: bool = True,
    confirm_rounds: int = 3,
    full_paths: bool = False,
) -> RerunVerdict:
    """Repeat the sweep of an earlier ``report.json`` here (its saved presets, its model
    when that still holds the same graphs) and compare figure by figure; ``out``: also write
    the new report; ``confirm_rounds``: `head_to_head` rounds for a close call (0: none).

    Example:
        >>> print(rerun_report("reports/standin/report.json").summary())  # doctest: +SKIP
    """
    old = TuningReport.load(report)
    saved_path = Path(str(old.model.get("path", ""))).expanduser()  # "~/..." as written
    default = model is None and bool(str(saved_path)) and saved_path.is_dir()
    bundle = resolve_model(saved_path if default else model)[0]  # either family
    if default and old.model.get("sha256") is not None:
        want, have = dict(old.model["sha256"]), dict(bundle.fingerprint())
        differ = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
        if differ:
            raise ReportError(
                f"{report}: the model at {old.model.get('path')} now holds other graphs "
                f"(SHA-256 of {', '.join(differ)} differ from the report's); give --model "
                "DIR with the report's model, or --model with this path to measure it anyway")
    from tts_kit.runtime.sessions import SessionPreset

    try:  # the report's own preset definitions
        saved = {n: SessionPreset.from_dict(dict(d)) for n, d in old.presets.items()}
    except (TypeError, ValueError) as exc:
        raise ReportError(f"report.json: a saved preset cannot be read ({exc}); "
                          "make the report again with `tts-kit report --out DIR`") from None
    if out is not None:
        paths = make_report(out, model=bundle.path, sweep=old.spec, progress=progress,
                            presets=saved, full_paths=full_paths)
        new = TuningReport.load(next(p for p in paths if p.name == "report.json"))
    else:
        new = run_tuning(bundle, old.spec, progress=progress, presets=saved)
    changes = preset_changes(old.presets)
    verdict = compare_reports(old, new)
    if verdict.contested is not None and confirm_rounds >= 1:
        rounds = head_to_head(bundle, new.spec, list(verdict.contested), rounds=confirm_rounds,
                              progress=progress, presets=saved)
        verdict = compare_reports(old, new, head_to_head=rounds)
    verdict.preset_changes = changes
    return verdict
