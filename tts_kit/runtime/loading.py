"""Loading machinery: when each stage's session is created, and how its memory goes back.

This module's one concern is the layer below the engine: load policies (`LoadPolicy`),
the `StageLoader` that hands out sessions under a policy, session creation
(`create_session`, external-data copies) and the per-stage cost data a ``budget`` policy
goes by (`StageCost`, `StageCosts`, `estimate_costs_mb`, `resident_costs_mb`). It never
imports the engine: `tts_kit.models.supertonic.engine` imports it. The experiments that drive the
engine to
measure those costs live in `tts_kit.experiments.stage_costs`. (A little over 600 lines, kept whole:
the policy, the loader and the cost data it budgets with change together.)

Policies (``Engine(bundle, loading=...)``):

- ``resident``: all four sessions are created once, up front, and kept.
- ``paged``: a stage's session is created just before it runs and released right after.
- ``budget:MB``: sessions stay resident while their costs fit the budget; the least
  recently used one is released first to make room. A stage that alone costs more than
  the budget is run paged, beside the stages kept (the budget bounds what is kept between
  runs, not the stage running). Costs are the measured ones
  (`tts_kit.experiments.stage_costs.stage_costs`, ``Engine(stage_costs_mb=...)``) or an estimate
  from the file sizes (`estimate_costs_mb`).
  A budget smaller than the cheapest stage is refused when the engine is built, before
  any work.

Options follow the policy after ``+`` (``paged+notrim``, ``resident+ext``):

- ``trim`` (default) / ``notrim``: after every load and every release, ``gc.collect()``
  and glibc's ``malloc_trim(0)``. Dropping a session and collecting is not enough:
  glibc keeps the freed pages. Measured on the full stand-in's vector estimator
  (256 MB file, fresh process at 54 MB): 266 MB stay after ``del`` + ``gc.collect()``,
  12 MB after ``malloc_trim`` (ONNX Runtime's one-time globals). After loading, the
  session creation's freed temporaries keep 219 MB that trimming returns.
- ``ext`` / ``noext``: load from a copy of the graph whose weights are in an external
  data file (`external_copy`; the bundle is never modified). The copies live in
  ``$TTS_KIT_CACHE_DIR/external`` (default ``~/.cache/tts_kit/external``), one directory
  per graph *content* (SHA-256 of the graph and its data files, so a graph replaced by a
  same-size file with its mtime kept gets a new copy), and the least recently used go
  when the cache outgrows ``$TTS_KIT_EXTERNAL_CACHE_MB`` (default 2048 MB).
  ONNX Runtime then maps the weights instead of parsing them out of one big protobuf,
  so the load peak of the vector estimator drops from 2.0x to 1.0x its weights
  (+477 MB -> +257 MB). Default on for ``paged`` and ``budget``, off for ``resident``
  (which loads the user's files as the official package does).
- ``mmap``: ``ext`` with ONNX Runtime's weight pre-packing off, so the weights stay
  memory-mapped, clean, file-backed pages the kernel can drop under pressure: loading
  costs nearly nothing and RSS during the run is mostly file pages (vector estimator:
  35 MB anonymous, 283 MB file-backed). RSS peaks are the same; runs are slower.

Tried and not kept (same measurement; see the report of issue 6): sessions created from
bytes (+ 709 MB loaded: the bytes and the parsed model both live through the load),
``session.use_ort_model_bytes_directly`` (the same; it only helps ORT-format models),
run option ``memory.enable_memory_arena_shrinkage`` and a disabled CPU arena (no
measurable change: the run's working memory is 4-30 MB beside 256 MB of weights, and a
paged session's arena goes with the session anyway).

Timeline events (`tts_kit.core.events`), in this order for each stage under ``paged``:
``load <stage>`` (session creation starts), ``run <stage>`` (the stage's work starts; once
for all flow steps of the vector estimator and once for all vocoder items), ``release
<stage>`` (the release starts; the memory is back when the next event is marked). A span
lasts until the next event, which is how `tts_kit.notebook.plots.event_spans` draws them, so no
end markers are needed.

Example:
    >>> from tts_kit.runtime.loading import LoadPolicy
    >>> p = LoadPolicy.parse("budget:300")
    >>> p.policy, p.budget_mb
    ('budget', 300.0)
    >>> LoadPolicy.parse("paged").external_data, LoadPolicy.parse("resident").external_data
    (True, False)
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnxruntime as ort
from onnxruntime.capi import onnxruntime_pybind11_state as _ort_state

from tts_kit.core import atomic, contract, events
from tts_kit.core.errors import BundleError, TtsKitError
from tts_kit.core.procfacts import MIB, release_memory
from tts_kit.core.settings import Settings
from tts_kit.core.settings import settings as current_settings

LOADINGS = ("resident", "paged", "budget")
_OPTIONS = ("trim", "notrim", "ext", "noext", "mmap")

#: The memory article's *estimated* split of Supertonic's memory (seed article 004), in
#: percent. Claimed by the article, not measured; `StageCosts.split` gives the measured one.
ARTICLE_SPLIT_CLAIMED: dict[str, float] = {
    "weights": 40.0,
    "inference cache": 30.0,
    "batch buffers": 15.0,
    "preprocessing": 10.0,
    "runtime": 5.0,
}



# -- policies -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadPolicy:
    """A load policy and how its sessions are created and released.

    Example:
        >>> p = LoadPolicy.parse("budget:300+notrim")
        >>> p.policy, p.budget_mb, p.trim, p.external_data
        ('budget', 300.0, False, True)
        >>> p.spec
        'budget:300+notrim'
    """

    policy: str = "resident"
    """``resident``, ``paged`` or ``budget``."""
    budget_mb: float | None = None
    """The budget of ``budget`` in MB (None for the others)."""
    trim: bool = True
    """``gc.collect()`` and ``malloc_trim(0)`` after every load and release."""
    external_data: bool | None = None
    """Load from an external-data copy of each graph (None: on for paged and budget)."""
    prepack: bool = True
    """Let ONNX Runtime pre-pack weights (off with ``mmap``: the weights stay mapped)."""

    def __post_init__(self) -> None:
        if self.policy not in LOADINGS:
            raise TtsKitError(f"unknown loading '{self.policy}'; use resident, paged or budget:MB")
        if self.policy == "budget":
            ok = isinstance(self.budget_mb, (int, float)) and self.budget_mb > 0
            if not ok or not math.isfinite(float(self.budget_mb)):  # type: ignore[arg-type]
                raise TtsKitError(
                    f"loading budget: give the budget in MB > 0, e.g. budget:300 "
                    f"(got {self.budget_mb!r})"
                )
        elif self.budget_mb is not None:
            raise TtsKitError(f"loading '{self.policy}' takes no budget; use budget:MB")
        if self.external_data is None:
            object.__setattr__(self, "external_data", self.policy != "resident")
        if not self.prepack and not self.external_data:
            raise TtsKitError("loading option mmap needs external data; drop noext")

    @classmethod
    def parse(cls, spec: str | LoadPolicy) -> LoadPolicy:
        """Parse ``resident``, ``paged`` or ``budget:MB``, optionally ``+notrim``, ``+ext``,
        ``+noext``, ``+mmap`` (see the module docstring).

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
            raise TtsKitError(
                f"loading '{spec}': unknown option(s) {bad}; options are {', '.join(_OPTIONS)}"
            )
        ext: bool | None = None
        if "ext" in opts or "mmap" in opts:
            ext = True
        if "noext" in opts:
            if ext:
                raise TtsKitError(f"loading '{spec}': noext contradicts ext/mmap; keep one")
            ext = False
        return cls(name, budget, trim="notrim" not in opts, external_data=ext,
                   prepack="mmap" not in opts)

    @property
    def spec(self) -> str:
        """The canonical spec string (``budget:300+notrim``); parses back to this policy."""
        head = self.policy
        if self.policy == "budget":
            head += f":{self.budget_mb:g}"
        opts = []
        if not self.trim:
            opts.append("notrim")
        if not self.prepack:
            opts.append("mmap")
        elif self.external_data != (self.policy != "resident"):
            opts.append("ext" if self.external_data else "noext")
        return "+".join([head, *opts])


# -- session creation ---------------------------------------------------------------------

# Large graphs are converted in a child so their parse (2-3x the file) never lands in the
# heap of the process being kept small; small ones in-process, where a child's start-up
# (about a second) would cost more than the parse, but only when onnx is already imported:
# importing it costs as much as the child and leaves 15 MB in the serving process.
_EXTERNALIZE = """
import sys, onnx
model = onnx.load(sys.argv[1])
onnx.save_model(model, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True,
                location=sys.argv[3], size_threshold=1024)
"""
#: Graphs up to this size are converted to external data in-process.
INPROCESS_CONVERT_BYTES = 16 * 2**20


#: Default bound of the external-data cache, in MB (``$TTS_KIT_EXTERNAL_CACHE_MB``).
EXTERNAL_CACHE_MB = 2048.0


def external_cache_dir(*, settings: Settings | None = None) -> Path:
    """Where external-data copies live: ``$TTS_KIT_CACHE_DIR/external`` (~/.cache/tts_kit).

    Example:
        >>> external_cache_dir().name
        'external'
    """
    return (settings if settings is not None else current_settings()).tts_kit_cache / "external"


def external_cache_limit_mb(*, settings: Settings | None = None) -> float:
    """The external-data cache's bound in MB: ``$TTS_KIT_EXTERNAL_CACHE_MB``, default 2048.

    Example:
        >>> external_cache_limit_mb() > 0
        True
    """
    s = settings if settings is not None else current_settings()
    raw = (s.external_cache_mb or "").strip()
    if not raw:
        return EXTERNAL_CACHE_MB
    try:
        mb = float(raw)
    except ValueError:
        mb = math.nan
    if not (mb >= 0 and math.isfinite(mb)):
        raise TtsKitError(f"TTS_KIT_EXTERNAL_CACHE_MB is {raw!r}; set it to MB >= 0, e.g. 2048, "
                         "or unset it")
    return mb


def _content_key(src: Path) -> str:
    """The cache key of a graph: its name and the SHA-256 of its content (data files too).

    By content, not by path, size and mtime: a graph replaced by a same-size one with its
    mtime kept (``cp -p``, ``rsync -a``, ``tar``) must not be served the old weights.
    """
    from tts_kit.core.digests import file_sha256  # digests shared with Bundle.sha256: read once

    parts = [src.name, file_sha256(src)]
    for data in sorted(src.parent.glob(f"{src.name}.data*")):  # the bundle's own external data
        parts += [data.name, file_sha256(data)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _tree_bytes(path: Path) -> int:
    total = 0
    for f in path.rglob("*"):
        try:
            total += f.lstat().st_size
        except OSError:
            pass  # removed meanwhile by another process's eviction
    return total


def prune_external_cache(root: str | os.PathLike[str] | None = None,
                         limit_mb: float | None = None, keep: Path | None = None) -> list[Path]:
    """Remove the least recently used copies until the cache holds at most ``limit_mb``.

    Each copy is a directory; its mtime is its last use (`external_copy` touches it, since
    atime is often off). ``keep`` (the copy just made or used) is never removed, even when
    it alone exceeds the bound. Hidden ``.<key>.*`` directories are copies being written
    and are left alone. Returns the directories removed.

    Example:
        >>> prune_external_cache("/nonexistent", 0)
        []
    """
    root = Path(root) if root is not None else external_cache_dir()
    limit = (external_cache_limit_mb() if limit_mb is None else limit_mb) * MIB
    try:
        entries = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except OSError:
        return []
    sized = []
    for p in entries:
        try:
            sized.append((p.stat().st_mtime_ns, p, _tree_bytes(p)))
        except OSError:
            continue
    total = sum(size for _, _, size in sized)
    removed = []
    for _, p, size in sorted(sized, key=lambda e: e[0]):
        if total <= limit:
            break
        if keep is not None and p == keep:
            continue
        # Renamed first, so no reader sees a copy whose data file is half deleted; named as
        # a temporary of this pid, so an interrupted eviction is swept like any other.
        doomed = root / f".{p.name}.tmp-{os.getpid()}-evict"
        try:
            os.replace(p, doomed)
        except OSError:
            continue  # evicted by another process meanwhile
        shutil.rmtree(doomed, ignore_errors=True)
        total -= size
        removed.append(p)
    return removed


def external_copy(path: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None
                  ) -> Path:
    """A copy of the graph at ``path`` with its weights in one external data file.

    Made once per content (keyed by the SHA-256 of the graph and its data files, which
    `tts_kit.models.supertonic.bundle.file_sha256` reads once per version of a file in a process),
    in a
    child process (in-process for graphs up to `INPROCESS_CONVERT_BYTES` when onnx is
    already imported), written atomically and reused after; ``path`` is only read.
    The cache (`external_cache_dir`) is bounded by `external_cache_limit_mb`: after a new
    copy, the least recently used ones go (`prune_external_cache`). The copy is built
    in ``.<key>.tmp-<pid>-*`` (removed on failure, Ctrl-C, SIGTERM or SIGHUP); what a writer
    killed outright left (SIGKILL, the OOM killer, often during a first paged load) is swept
    on the next call (`sweep_external_cache`).

    Example:
        >>> external_copy("bundle/onnx/vocoder.onnx")  # doctest: +SKIP
        PosixPath('~/.cache/tts_kit/external/3f2a.../vocoder.onnx')
    """
    limit_mb = external_cache_limit_mb()  # a bad setting fails before any work
    src = Path(path).resolve()
    st = src.stat()
    key = _content_key(src)
    root = Path(cache_dir) if cache_dir is not None else external_cache_dir()
    target = root / key
    out = target / src.name
    if out.is_file():
        try:
            os.utime(target)  # its last use, for the LRU bound
        except OSError:
            pass  # a read-only cache still serves
        return out
    root.mkdir(parents=True, exist_ok=True)
    sweep_external_cache(root)
    with atomic.scratch_dir(target) as work:
        args = [str(src), str(work / src.name), f"{src.name}.data"]
        if st.st_size <= INPROCESS_CONVERT_BYTES and "onnx" in sys.modules:
            import onnx

            onnx.save_model(onnx.load(args[0]), args[1], save_as_external_data=True,
                            all_tensors_to_one_file=True, location=args[2], size_threshold=1024)
        else:
            proc = subprocess.run([sys.executable, "-c", _EXTERNALIZE, *args],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                raise RuntimeError(f"{src}: could not write an external-data copy ({last})")
        try:
            os.replace(work, target)
        except OSError:
            if not out.is_file():  # another process won the race only if its copy is there
                raise
    prune_external_cache(root, limit_mb, keep=target)
    return out


#: Work directories of earlier versions, named ``.<key>.<random>`` (no writer pid).
_LEGACY_WORK = re.compile(r"^\.[0-9a-f]{20}\.[A-Za-z0-9_]{8}$")


def sweep_external_cache(root: str | os.PathLike[str] | None = None,
                         legacy_after_s: float = 3600.0) -> list[Path]:
    """Remove partial copies of dead writers from the external-data cache; returns them.

    Temporaries name their writer's pid (`tts_kit.core.atomic.sweep_stale`); the older
    ``.<key>.<random>`` ones, which do not, go once they are ``legacy_after_s`` old.

    Example:
        >>> sweep_external_cache("/nonexistent")
        []
    """
    root = Path(root) if root is not None else external_cache_dir()
    removed = atomic.sweep_stale(root)
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            if (_LEGACY_WORK.match(entry.name) and entry.is_dir(follow_symlinks=False)
                    and time.time() - entry.stat(follow_symlinks=False).st_mtime
                    > legacy_after_s):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed


def create_session(
    path: str | os.PathLike[str],
    sess_options: ort.SessionOptions | None = None,
    providers: list[Any] | None = None,
    policy: LoadPolicy | str = "resident",
) -> ort.InferenceSession:
    """Create one stage's session the way ``policy`` loads it (external data, pre-packing).

    ``policy`` is a `LoadPolicy` (the engine's, parsed once) or a spec string, parsed here.

    Example:
        >>> sess = create_session("bundle/onnx/vocoder.onnx", policy="paged")  # doctest: +SKIP
    """
    if not isinstance(policy, LoadPolicy):
        policy = LoadPolicy.parse(policy)
    so = sess_options if sess_options is not None else ort.SessionOptions()
    model = external_copy(path) if policy.external_data else Path(path)
    if not policy.prepack:
        so.add_session_config_entry("session.disable_prepacking", "1")
    try:
        return ort.InferenceSession(str(model), sess_options=so, providers=providers)
    except _GRAPH_ERRORS as exc:
        # The graph itself (an op this ORT does not know, a broken protobuf): a bundle
        # problem, said in one line naming the file, not ORT's multi-line traceback.
        raise BundleError(f"{path}: {_graph_error_text(exc)}") from None


#: What ORT raises when a graph cannot be loaded (as opposed to a provider failing).
_GRAPH_ERRORS = (_ort_state.InvalidGraph, _ort_state.InvalidProtobuf,
                 _ort_state.NotImplemented, _ort_state.Fail)


def _graph_error_text(exc: BaseException) -> str:
    msg = " ".join(str(exc).split())
    # "[ONNXRuntimeError] : 10 : INVALID_GRAPH : Load model from /x.onnx failed:Why" -> "Why"
    msg = msg.split(" failed:", 1)[-1].strip() if "Load model from" in msg else msg
    return (f"ONNX Runtime {ort.__version__} cannot load this graph ({msg[:300]}); "
            "re-download or rebuild the bundle, or use an onnxruntime that supports it")


def check_loads(bundle: Any) -> list[str]:
    """Create every stage's session once (CPU, graph optimisation off), then drop it.

    What a bundle's file checks cannot see (an operator this ONNX Runtime does not
    know, a type it has no kernel for) fails here, as a `BundleError` naming the graph,
    instead of at the first synthesis. One session at a time, so the peak is the
    largest graph's, not the bundle's.

    Returns:
        The stages checked, in pipeline order.

    Example:
        >>> from tts_kit import Bundle
        >>> check_loads(Bundle.discover())
        ['duration_predictor', 'text_encoder', 'vector_estimator', 'vocoder']
    """
    stages = list(getattr(bundle, "stages", None) or contract.STAGES)  # a Piper voice: one
    for stage in stages:
        so = ort.SessionOptions()
        # Loading resolves every node against ORT's kernel registry; optimising would
        # only add time and memory to a check.
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.log_severity_level = 3
        sess = create_session(bundle.stage_path(stage), so, ["CPUExecutionProvider"])
        del sess
    return stages



# -- cost data ----------------------------------------------------------------------------


@dataclass
class StageCost:
    """What one stage cost in a fresh process (MB are MiB of RSS)."""

    stage: str
    """Stage name."""
    file_mb: float
    """Size of the graph (and its external data) on disk."""
    load_mb: float
    """RSS the loaded session adds and keeps (after the loader's trim): its resident cost."""
    load_peak_mb: float
    """Highest RSS during session creation, above the RSS before it (transient)."""
    run_mb: float
    """Highest RSS during the run, above the loaded RSS: the working memory."""
    left_mb: float
    """RSS after the release, above the RSS before the load (what did not go back)."""
    load_s: float
    """Seconds to create the session."""
    run_s: float
    """Seconds of the run (all flow steps for the vector estimator)."""

    @property
    def peak_mb(self) -> float:
        """The most this stage adds at once: ``max(load peak, load + run)``."""
        return max(self.load_peak_mb, self.load_mb + self.run_mb)


@dataclass
class StageCosts:
    """Per-stage memory costs, ready for a table or a chart.

    Measured by `tts_kit.experiments.stage_costs.stage_costs`; plain data, so the loader and the
    engine use it without importing the experiment.

    Example:
        >>> c = StageCosts({"vocoder": StageCost("vocoder", 100, 105, 120, 12, 1, 0.2, 0.3)},
        ...                runtime_mb=60)
        >>> c.costs_mb()
        {'vocoder': 117.0}
        >>> round(c.split()["weights and sessions (load)"])
        59
    """

    stages: dict[str, StageCost] = field(default_factory=dict)
    """One entry per stage, in pipeline order."""
    runtime_mb: float = math.nan
    """RSS of the process before any session: interpreter, numpy, ONNX Runtime, its globals."""
    imports_mb: float = math.nan
    """RSS after the imports only (``runtime_mb`` minus ORT's first-session globals)."""
    peak_rss_mb: float = math.nan
    """The measuring process's high-water mark."""
    loading: str = "paged"
    """How the sessions were created (the policy's ``ext``/``mmap`` options matter)."""
    preset: str = ""
    """Session preset name."""
    text: str = ""
    """The text synthesised."""
    steps: int = contract.DEFAULT_STEPS
    """Flow steps of the vector estimator."""
    method: str = ("one fresh process; ORT warmed up with a one-node graph, then each stage "
                   "loaded, run on the real inputs of this text and released (gc + "
                   "malloc_trim) in pipeline order")
    """How the numbers were taken."""
    claimed_split: dict[str, float] = field(default_factory=lambda: dict(ARTICLE_SPLIT_CLAIMED))
    """The article's estimated split (percent), claimed, not measured."""

    def costs_mb(self) -> dict[str, float]:
        """Resident MB per stage, for ``Engine(stage_costs_mb=...)`` and the budget policy:
        ``load_mb + run_mb``, since a kept session's arena holds on to its run's memory."""
        return {s: round(float(c.load_mb + max(c.run_mb, 0.0)), 1)
                for s, c in self.stages.items()}

    def rows(self) -> list[dict[str, Any]]:
        """One plain dict per stage (MB and seconds), plus the runtime row."""
        rows: list[dict[str, Any]] = []
        for c in self.stages.values():
            row = {k: getattr(c, k) for k in StageCost.__dataclass_fields__}
            row["peak_mb"] = c.peak_mb
            rows.append(row)
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
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "stages"}
        d["stages"] = {s: dict(c.__dict__) for s, c in self.stages.items()}
        return d


def estimate_costs_mb(sizes_bytes: Mapping[str, int] | Any) -> dict[str, float]:
    """Estimated resident cost per stage in MB, from file sizes (a `Bundle` or a dict).

    Measured on the stand-ins with trimming: a loaded session holds 1.0-1.1x its
    weights (pre-packed copies replace the originals) plus a few MB of kernels and plans.

    Example:
        >>> estimate_costs_mb({"vocoder": 100 * 2**20})
        {'vocoder': 112.0}
    """
    stages = getattr(sizes_bytes, "stages", None)
    if stages is not None:
        sizes = {s: info.size_bytes for s, info in stages.items()}
    else:
        sizes = dict(sizes_bytes)
    return {s: round(1.1 * b / MIB + 2.0, 1) for s, b in sizes.items()}


def cost_parts(cost: Any) -> tuple[float, float]:
    """(load MB, run MB) of one stage's cost: a `StageCost`, a mapping with ``load_mb``
    (and ``run_mb``, default 0), or a plain number of MB (all load).

    The one reading of a stage cost: the budget policy, the split and the plots use it.

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
    """The measured memory split in percent, in the article's terms as far as they map:
    weights and sessions = the stages' load MB, working memory = their run MB, runtime =
    RSS before any session (left out when unknown). ``costs``: stage -> cost (`cost_parts`).

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
    """Resident MB per stage for the budget: measured where given, estimated for the rest.

    ``costs`` may be a `StageCosts`, ``{stage: MB}`` or ``{stage: {"load_mb": ...,
    "run_mb": ...}}`` (a kept session holds both).

    Example:
        >>> resident_costs_mb({"vocoder": 50}, {"vocoder": 1, "text_encoder": 2**20})
        {'vocoder': 50.0, 'text_encoder': 3.1}
    """
    out = estimate_costs_mb(bundle)
    if isinstance(costs, StageCosts):
        costs = costs.costs_mb()
    if costs is not None and not isinstance(costs, Mapping):
        raise TtsKitError(f"stage_costs_mb must map stage names to MB, like "
                         f'{{"vocoder": 120}}; got a {type(costs).__name__}')
    for stage, cost in (costs or {}).items():
        if stage not in contract.STAGES and stage not in out:
            raise TtsKitError(
                f"stage_costs_mb names unknown stage '{stage}'; stages are {list(contract.STAGES)}"
            )
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
    """A ``budget:MB`` load policy that shows what a budget does: room for the largest
    stage with ``headroom`` (it must fit alone), and at least ``share`` of all four (so
    some stay loaded), yet under all of them (so some are paged).

    ``costs_mb`` are the per-stage MB the policy goes by (`resident_costs_mb`).

    Example:
        >>> suggest_budget({"duration_predictor": 5, "text_encoder": 30,
        ...                 "vector_estimator": 250, "vocoder": 100})
        'budget:300'
    """
    values = [float(v) for v in costs_mb.values()]
    if not values:
        raise TtsKitError("suggest_budget needs the stages' costs in MB; got none")
    return f"budget:{max(max(values) * headroom, share * sum(values)):.0f}"


# -- the loader ---------------------------------------------------------------------------

SessionFactory = Callable[[str], ort.InferenceSession]


class SessionLease:
    """What `StageLoader.session` hands out: the stage's session until it is released.

    Calls go through to the ONNX Runtime session (``lease.run(...)``,
    ``lease.get_inputs()``). The loader holds the only reference to the session itself,
    so a caller that keeps the lease past its block (``with ... as sess`` leaves ``sess``
    bound) cannot keep a released session, and its memory, alive.

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

    def _drop(self) -> None:
        self._session = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


class StageLoader:
    """Hands out one session per stage under a load policy; marks load/run/release events.

    Safe for concurrent callers (an `Engine` shared by threads): loads, releases and the
    budget's bookkeeping happen under one lock, every caller pins the session it runs, and
    a session is released only once no caller runs it. Pins are counted per thread, so a
    thread may re-enter the stage it holds (the engine holds the vector estimator across
    all flow steps) without counting twice or waiting on itself.

    Args:
        factory: creates the session of a stage (the engine's, with its presets).
        loading: ``resident``, ``paged``, ``budget:MB`` (with options) or a `LoadPolicy`.
        costs_mb: resident MB of each stage, for ``budget`` (every stage needs one).
        stages: the model's stages, in pipeline order (Supertonic's four by default; a
            Piper voice has one, ``voice``).

    Raises:
        TtsKitError: a bad spec, missing costs, or a budget below the cheapest stage;
            raised before any session is created.

    Example:
        >>> loader = StageLoader(lambda s: object(), "budget:25",
        ...                      {s: 10.0 for s in contract.STAGES})
        >>> for s in contract.STAGES:
        ...     with loader.session(s):
        ...         pass
        >>> loader.loaded
        ['vector_estimator', 'vocoder']
    """

    def __init__(
        self,
        factory: SessionFactory,
        loading: str | LoadPolicy = "resident",
        costs_mb: Mapping[str, float] | None = None,
        stages: Sequence[str] = contract.STAGES,
    ):
        # A string is parsed here, at the public edge; the engine passes its parsed policy.
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
        # Loads are serialised on purpose: two threads loading one graph at once would
        # double its load peak (what paged loading exists to bound), and the budget must
        # see each load before deciding the next. Runs happen outside the lock.
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
        # Session creation frees its temporaries (parsed model, unpacked weights) into the
        # heap; without a trim they stay in RSS as long as the process lives.
        release_memory(self.policy.trim)
        self.load_s[stage] = time.perf_counter() - t0

    def _release(self, stage: str) -> None:
        events.mark(f"release {stage}")
        del self._live[stage]
        self._leases.pop(stage)._drop()
        release_memory(self.policy.trim)

    def _resident_mb(self) -> float:
        return sum(self.costs_mb.get(s, 0.0) for s in self._live)

    def _runs_paged(self, stage: str) -> bool:
        """Whether ``stage`` is released once nobody runs it (paged, or over the budget)."""
        if self.policy.policy == "paged":
            return True
        return (self.policy.policy == "budget"
                and self.costs_mb.get(stage, 0.0) > (self.budget_mb or 0.0))

    def _fit_budget(self, need: float) -> None:
        """Release idle sessions, least recently used first, until ``need`` more MB fit.

        Sessions other threads are running stay: with concurrent callers the budget may
        be exceeded while they run, and is restored when they finish (`_unpin`).
        """
        budget = self.budget_mb or 0.0
        while self._live and self._resident_mb() + need > budget:
            idle = [s for s in self._live if not self._pins.get(s)]
            if not idle:
                break
            self._release(idle[0])

    def _pin(self, stage: str) -> SessionLease:
        with self._lock:
            if stage not in self._live:
                need = self.costs_mb.get(stage, 0.0)
                # A stage that cannot fit even alone is run paged beside the ones kept:
                # evicting them would not bring it under the budget, only reload them later.
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
        """The session of ``stage`` for one run; loads and releases it as the policy says.

        Re-entrant per thread: the engine holds the vector estimator across all flow steps
        (and the vocoder across items), and only the thread's outermost block loads (when
        the session is not loaded yet), marks ``run`` and releases (when no other thread
        runs the session).
        """
        depth: dict[str, int] | None = getattr(self._held, "depth", None)
        if depth is None:
            depth = self._held.depth = {}
        if depth.get(stage):
            depth[stage] += 1
            try:
                yield self._leases[stage]  # pinned by this thread's outer block
            finally:
                depth[stage] -= 1
            return
        lease = self._pin(stage)
        depth[stage] = 1
        try:
            events.mark(f"run {stage}")
            yield lease
        finally:
            depth[stage] = 0
            self._unpin(stage)

    @property
    def loaded(self) -> list[str]:
        """Stages whose sessions are alive now, least recently used first."""
        with self._lock:
            return list(self._live)

    def close(self) -> None:
        """Release every session; one a thread is running goes when its run ends."""
        with self._lock:
            for stage in list(self._live):
                if self._pins.get(stage):
                    self._closing.add(stage)
                else:
                    self._release(stage)

