"""How far each stage is from this machine's floor (its FLOPs at the MatMul peak): time above
it is what tuning can win; the floor moves only with fewer steps or a faster kernel."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError

#: The measured text: ~112 characters, ~8 s of audio (`flops.REFERENCE_SECONDS`).
REFERENCE_TEXT = ("The quick brown fox jumps over the lazy dog, and then it runs back home "
                  "again before the rain starts to fall.")


@dataclass(frozen=True)
class StageRate:
    """One stage of one measured chunk: its work, its time and the machine's peak."""

    stage: str
    params: int  #: weights of the graph
    gflop: float  #: of the chunk (all flow steps for the vector estimator)
    seconds: float  #: best of the repeats
    peak_gflops: float  #: this machine's MatMul peak at the measured threads
    gflops_per_audio_s: float

    @property
    def gflops(self) -> float:
        """Achieved GFLOP/s."""
        return self.gflop / self.seconds if self.seconds > 0 else math.nan

    @property
    def of_peak(self) -> float:
        """Achieved GFLOP/s as a fraction of the MatMul peak (1: at the floor)."""
        return self.gflops / self.peak_gflops

    @property
    def floor_s(self) -> float:
        """Seconds the stage's work takes at the MatMul peak."""
        return self.gflop / self.peak_gflops

    @property
    def above_floor_s(self) -> float:
        """Seconds above the floor (0 for a stage at or past the peak)."""
        return max(0.0, self.seconds - self.floor_s)


@dataclass
class Roofline:
    """Every stage of one measured chunk against this machine's MatMul peak."""

    stages: list[StageRate]
    steps: int
    threads: int
    peak_gflops: float  #: MatMul peak at ``threads`` threads (GFLOP/s)
    audio_s: float  #: seconds of audio in the measured chunk
    peaks: dict[int, float] = field(default_factory=dict)  #: per thread count, 1..threads
    repeats: int = 1
    loadavg: tuple[float, float] | None = None  #: before and after the measurement

    @property
    def total_s(self) -> float:
        """Measured seconds of the four stages."""
        return sum(s.seconds for s in self.stages)

    @property
    def floor_s(self) -> float:
        """Seconds of the same work at the peak (a stage past the peak counts as measured)."""
        return sum(min(s.floor_s, s.seconds) for s in self.stages)

    @property
    def gflop(self) -> float:
        """GFLOP of the chunk."""
        return sum(s.gflop for s in self.stages)

    def sentence(self) -> str:
        """What thread tuning can still win and what only precision or fewer steps can.

        Example:
            >>> r = Roofline([StageRate("vocoder", 1, 30.0, 1.0, 40.0, 3.0)], 8, 2, 40.0, 8.0)
            >>> r.sentence()[:55]
            'At 2 threads one 8.0 s chunk takes 1.00 s in its stages'
        """
        if not self.stages or not self.total_s > 0:
            return "Nothing was measured."
        total, floor = self.total_s, self.floor_s
        gap = max(self.stages, key=lambda s: s.above_floor_s)
        ve = next((s for s in self.stages if s.stage == "vector_estimator"), None)
        work = f"{self.gflop:,.0f} GFLOP"
        if ve is not None and self.gflop > 0:
            work += (f", {100 * ve.gflop / self.gflop:.0f} % of it the vector estimator's "
                     f"{self.steps} steps")
        where = (f", most of it in the {gap.stage.replace('_', ' ')}"
                 if gap.above_floor_s > 0 else "")
        return (f"At {self.threads} thread{'s' if self.threads != 1 else ''} one "
                f"{self.audio_s:.1f} s chunk takes {total:.2f} s in its stages; at this "
                f"machine's MatMul peak ({self.peak_gflops:.1f} GFLOP/s) the same work needs "
                f"{floor:.2f} s, so thread and session tuning can win at most "
                f"{100 * (1 - floor / total):.0f} % ({total - floor:.2f} s{where}); the other "
                f"{100 * floor / total:.0f} % is the work itself ({work}), which only fewer "
                "steps or lower precision can cut.")

    def rows(self) -> list[dict[str, Any]]:
        """One plain dict per stage, plus a total row.

        Example:
            >>> r = Roofline([StageRate("vocoder", 2000000, 20.0, 1.0, 40.0, 2.5)], 8, 1, 40.0, 8.0)
            >>> r.rows()[0]["x floor"], r.rows()[-1]["stage"]
            (2.0, 'total')
        """
        parts = [(s.stage, s.params, s.gflops_per_audio_s, s.gflop, s.seconds, s.floor_s)
                 for s in self.stages]
        parts.append(("total", sum(s.params for s in self.stages),
                      sum(s.gflops_per_audio_s for s in self.stages), self.gflop, self.total_s,
                      self.floor_s))
        return [{"stage": name, "params (M)": params / 1e6, "GFLOP / audio s": gfs,
                 "GFLOP / chunk": gflop, "s / chunk": sec,
                 "GFLOP/s": gflop / sec if sec > 0 else math.nan,
                 "of peak": gflop / sec / self.peak_gflops if sec > 0 else math.nan,
                 "floor s": floor, "x floor": sec / floor if floor > 0 else math.nan}
                for name, params, gfs, gflop, sec, floor in parts]

    def dataframe(self) -> Any:
        """`rows` as a pandas DataFrame indexed by stage (pandas imported only here)."""
        import pandas as pd

        return pd.DataFrame(self.rows()).set_index("stage")

    def table(self) -> str:
        """`rows` as an aligned text table.

        Example:
            >>> r = Roofline([StageRate("vocoder", 2000000, 20.0, 1.0, 40.0, 2.5)], 8, 1, 40.0, 8.0)
            >>> r.table().splitlines()[1].split()
            ['vocoder', '2.00', '2.50', '20.00', '1.000', '20.0', '0.50', '0.500', '2.00']
        """
        head = (f"{'stage':<20}{'params M':>9}{'GFLOP/aud s':>12}{'GFLOP':>9}{'s':>8}"
                f"{'GFLOP/s':>9}{'of peak':>8}{'floor s':>8}{'x floor':>8}")
        return "\n".join([head] + [
            f"{r['stage']:<20}{r['params (M)']:>9.2f}{r['GFLOP / audio s']:>12.2f}"
            f"{r['GFLOP / chunk']:>9.2f}{r['s / chunk']:>8.3f}{r['GFLOP/s']:>9.1f}"
            f"{r['of peak']:>8.2f}{r['floor s']:>8.3f}{r['x floor']:>8.2f}"
            for r in self.rows()])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (`from_dict` reads it back)."""
        d = asdict(self)
        d["peaks"] = {str(k): v for k, v in self.peaks.items()}
        d["sentence"] = self.sentence()
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Roofline:
        """Inverse of `to_dict`.

        Example:
            >>> Roofline.from_dict(Roofline([], 8, 1, 40.0, 8.0, {1: 40.0}).to_dict()).peaks
            {1: 40.0}
        """
        d = {k: v for k, v in data.items() if k != "sentence"}
        d["stages"] = [StageRate(**s) for s in d.get("stages", [])]
        d["peaks"] = {int(k): float(v) for k, v in (d.get("peaks") or {}).items()}
        if d.get("loadavg") is not None:
            d["loadavg"] = tuple(d["loadavg"])
        return cls(**d)


def _dims_of(stage: str, feeds: Mapping[str, Any]) -> dict[str, int]:
    """The symbolic dims (``B``, ``T``, ``L``) of ``stage``'s contract, read off its feeds."""
    dims: dict[str, int] = {}
    for spec in contract.GRAPHS[stage].inputs:
        if spec.name in feeds:
            for i, d in enumerate(spec.shape):
                if isinstance(d, str) and d.isidentifier():
                    dims[d] = int(feeds[spec.name].shape[i])
    return dims


def time_stages(engine: Any, text: str = REFERENCE_TEXT, *, steps: int = contract.DEFAULT_STEPS,
                repeats: int = 3) -> tuple[dict[str, float], dict[str, dict[str, int]], float]:
    """Per stage, the best of ``repeats`` seconds for ``text`` after a warm-up, the dims of
    its inputs, and the seconds of audio.

    Example:
        >>> from tts_kit import Engine
        >>> sec, dims, audio_s = time_stages(Engine(), "Hello there.", steps=2, repeats=1)
        >>> sorted(dims["vocoder"]), audio_s > 0
        (['B', 'L'], True)
    """
    if repeats < 1:
        raise TtsKitError(f"repeats must be at least 1, got {repeats}")
    dims: dict[str, dict[str, int]] = {}

    def hook(stage: str, feeds: Mapping[str, Any], _out: Any) -> None:
        dims.setdefault(stage, _dims_of(stage, feeds))

    remove = engine.add_stage_hook(hook)
    try:
        engine.synthesize(text, steps=steps, seed=0)  # warm-up: arenas, pre-packing
        best: dict[str, float] = {}
        audio_s = 0.0
        for _ in range(repeats):
            res = engine.synthesize(text, steps=steps, seed=0)
            audio_s = res.duration_s
            for stage in contract.STAGES:
                if stage in res.timings:
                    best[stage] = min(best.get(stage, math.inf), float(res.timings[stage]))
    finally:
        remove()
    return best, dims, audio_s


def roofline_of(model: Any, seconds: Mapping[str, float], dims: Mapping[str, Mapping[str, int]],
                *, audio_s: float, peaks: Mapping[int, float], steps: int,
                threads: int, repeats: int = 1) -> Roofline:
    """A `Roofline` from measured stage seconds, FLOPs counted at the ``dims`` they ran with.

    Example:
        >>> from tts_kit.models.resolve import open_model
        >>> r = roofline_of(open_model(), {"vocoder": 0.01}, {"vocoder": {"B": 1, "L": 10}},
        ...                 audio_s=1.1, peaks={1: 30.0}, steps=8, threads=1)
        >>> r.stages[0].stage, r.stages[0].gflop > 0
        ('vocoder', True)
    """
    import onnx

    from tts_kit.tuning import flops

    if threads not in peaks:
        raise TtsKitError(f"no MatMul peak measured at {threads} thread(s)")
    out = []
    for stage in contract.STAGES:
        if stage not in seconds or stage not in dims:
            continue
        path = model.stages[stage].path
        graph = onnx.load(str(path), load_external_data=False)
        runs = steps if stage == "vector_estimator" else 1
        gflop = runs * flops.graph_flops(graph, dims[stage]) / 1e9
        out.append(StageRate(stage, flops.graph_params(graph), gflop, float(seconds[stage]),
                             float(peaks[threads]), gflop / audio_s if audio_s > 0 else math.nan))
    return Roofline(out, steps=steps, threads=threads, peak_gflops=float(peaks[threads]),
                    audio_s=audio_s, peaks=dict(peaks), repeats=repeats)


def _measure(path: str, threads: int, steps: int, repeats: int, text: str) -> dict[str, Any]:
    """Child of `measure_roofline`: the peaks, then the engine at ``threads`` threads."""
    from tts_kit.models.family import make_engine
    from tts_kit.models.resolve import open_model
    from tts_kit.runtime.sessions import SessionPreset
    from tts_kit.tuning import flops

    peaks = {t: flops.matmul_peak_gflops(t) for t in range(1, threads + 1)}
    model = open_model(path)
    engine = make_engine(model, preset=SessionPreset(name=f"roofline-{threads}",
                                                     intra_op_num_threads=threads))
    sec, dims, audio_s = time_stages(engine, text, steps=steps, repeats=repeats)
    return roofline_of(model, sec, dims, audio_s=audio_s, peaks=peaks, steps=steps,
                       threads=threads, repeats=repeats).to_dict()


def measure_roofline(model: Any = None, *, threads: int = 1, cpus: int | None = None,
                     steps: int = contract.DEFAULT_STEPS, repeats: int = 3,
                     text: str = REFERENCE_TEXT, timeout_s: float | None = 900) -> Roofline:
    """Measure the `Roofline` of ``model`` (None: discovered) in a fresh process pinned to
    ``cpus`` cores (default ``threads``), with ``threads`` intra-op threads.

    Example:
        >>> r = measure_roofline("standin-dir", threads=2)  # doctest: +SKIP
        >>> [s.stage for s in r.stages]  # doctest: +SKIP
        ['duration_predictor', 'text_encoder', 'vector_estimator', 'vocoder']
    """
    from tts_kit.models.resolve import open_model
    from tts_kit.runtime.measure import run_isolated
    from tts_kit.tuning.flops import _check_counted

    opened = open_model(model)
    _check_counted(opened, steps, "the roofline")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise TtsKitError(f"threads must be a positive integer, got {threads!r}")
    before = os.getloadavg()[0]
    m = run_isolated(_measure, str(opened.path), threads, steps, repeats, text,
                     cpus=threads if cpus is None else cpus, timeout_s=timeout_s)
    if not m.ok:
        raise TtsKitError(f"the roofline measurement ended {m.status}: {m.error}")
    r = Roofline.from_dict(m.result)
    r.loadavg = (before, os.getloadavg()[0])
    return r
