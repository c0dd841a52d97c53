"""Session creation: one stage's ONNX Runtime session as a `LoadPolicy` loads it, and the
external-data copies (``ext``, ``mmap``) it may load from, kept in a bounded on-disk cache."""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnxruntime as ort
from onnxruntime.capi import onnxruntime_pybind11_state as _ort_state

from tts_kit.core import atomic, contract
from tts_kit.core.errors import BundleError, TtsKitError
from tts_kit.core.procfacts import MIB
from tts_kit.core.settings import settings as current_settings
from tts_kit.runtime.policy import LoadPolicy

#: Graphs up to this size are converted to external data in-process.
INPROCESS_CONVERT_BYTES = 16 * 2**20
#: Default bound of the external-data cache, in MB (``$TTS_KIT_EXTERNAL_CACHE_MB``).
EXTERNAL_CACHE_MB = 2048.0


def external_cache_dir() -> Path:
    """Where external-data copies live: ``$TTS_KIT_CACHE_DIR/external`` (~/.cache/tts_kit).

    Example:
        >>> external_cache_dir().name
        'external'
    """
    return current_settings().tts_kit_cache / "external"


def _cache_limit_mb() -> float:
    """The external-data cache's bound in MB: ``$TTS_KIT_EXTERNAL_CACHE_MB``, default 2048."""
    raw = (current_settings().external_cache_mb or "").strip()
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
    """The cache key of a graph: its name and the SHA-256 of its content (data files too)."""
    from tts_kit.core.digests import file_sha256

    parts = [src.name, file_sha256(src)]
    for data in sorted(src.parent.glob(f"{src.name}.data*")):  # the bundle's own external data
        parts += [data.name, file_sha256(data)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _tree_bytes(path: Path) -> int:
    total = 0
    for f in path.rglob("*"):
        with contextlib.suppress(OSError):  # removed meanwhile by another process's eviction
            total += f.lstat().st_size
    return total


def prune_external_cache(root: str | os.PathLike[str] | None = None,
                         limit_mb: float | None = None, keep: Path | None = None) -> list[Path]:
    """Remove the least recently used copies (by mtime) until the cache holds at most
    ``limit_mb``; ``keep`` and hidden (being written) ones stay.

    Example:
        >>> prune_external_cache("/nonexistent", 0)
        []
    """
    root = Path(root) if root is not None else external_cache_dir()
    limit = (_cache_limit_mb() if limit_mb is None else limit_mb) * MIB
    try:
        entries = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except OSError:
        return []
    sized = []
    for p in entries:
        with contextlib.suppress(OSError):
            sized.append((p.stat().st_mtime_ns, p, _tree_bytes(p)))
    total = sum(size for _, _, size in sized)
    removed = []
    for _, p, size in sorted(sized, key=lambda e: e[0]):
        if total <= limit:
            break
        if p != keep and _evict(root, p):  # False: evicted by another process meanwhile
            total -= size
            removed.append(p)
    return removed


def _cached_copy(src: Path, key: str, root: Path, write: Any) -> Path:
    """``root/key/src.name``, written once and atomically by ``write(src, work)``, then pruned."""
    limit_mb = _cache_limit_mb()  # a bad setting fails before any work
    target = root / key
    out = target / src.name
    if out.is_file():
        with contextlib.suppress(OSError):  # a read-only cache still serves
            os.utime(target)  # its last use, for the LRU bound
        return out
    root.mkdir(parents=True, exist_ok=True)
    with atomic.build_lock(atomic.lock_beside(root)):  # one build when processes race
        if out.is_file():
            return out  # another process built it while this one waited
        _sweep_dead_writers(root)
        with atomic.scratch_dir(target) as work:
            write(src, work)
            try:
                os.replace(work, target)
            except OSError:
                if not out.is_file():  # another process won the race only if its copy is
                    raise
        prune_external_cache(root, limit_mb, keep=target)
    return out


def _externalize(src: str, out: str, data: str) -> None:
    import onnx

    onnx.save_model(onnx.load(src), out, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=data, size_threshold=1024)


def _write_external(src: Path, work: Path) -> None:
    # A small graph converts here only if onnx is imported: importing it costs as much as a child.
    here = src.stat().st_size <= INPROCESS_CONVERT_BYTES and "onnx" in sys.modules
    _convert(_externalize, [str(src), str(work / src.name), f"{src.name}.data"], here,
             f"{src}: could not write an external-data copy")


def _convert(convert: Callable[..., None], args: list[str], here: bool, what: str) -> None:
    """``convert(*args)`` here, or in a child Python that keeps a large parse out of this heap."""
    if here:
        convert(*args)
        return
    # The child runs convert's source alone: it imports what it needs beyond ort itself.
    script = (f"import sys\nimport onnxruntime as ort\n{inspect.getsource(convert)}\n"
              f"{convert.__name__}(*sys.argv[1:])")
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{what} ({last})")


def _evict(root: Path, entry: Path) -> bool:
    """Remove a cache entry, renamed first (no half-deleted reads); False if already gone."""
    doomed = root / f".{entry.name}.tmp-{os.getpid()}-evict"
    try:
        os.replace(entry, doomed)
    except OSError:
        return False
    shutil.rmtree(doomed, ignore_errors=True)
    return True


def external_copy(path: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None
                  ) -> Path:
    """A copy of the graph at ``path`` with its weights in one external data file, made once
    per content into a bounded cache (``$TTS_KIT_EXTERNAL_CACHE_MB``, default 2048).

    Example:
        >>> external_copy("bundle/onnx/vocoder.onnx")  # doctest: +SKIP
        PosixPath('~/.cache/tts_kit/external/3f2a.../vocoder.onnx')
    """
    src = Path(path).resolve()
    src.stat()  # a missing graph fails here, naming it
    root = Path(cache_dir) if cache_dir is not None else external_cache_dir()
    return _cached_copy(src, _content_key(src), root, _write_external)


#: The file in each optimised copy's directory that says what it was built from.
OPTIMISED_META = "tts_kit-optimised.json"


def _cpu_fingerprint() -> str:
    """The CPU model and flags: an ``all``-level graph holds layout transforms for this CPU."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        import platform

        text = platform.processor() or platform.machine()
    keep = sorted({ln.strip() for ln in text.splitlines()
                   if ln.startswith(("model name", "flags", "Features", "CPU part"))})
    return hashlib.sha256("\n".join(keep).encode()).hexdigest()[:16]


def optimised_copy(path: str | os.PathLike[str],
                   level: ort.GraphOptimizationLevel = ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
                   cache_dir: str | os.PathLike[str] | None = None, *,
                   prepacked: bool = True) -> Path:
    """The graph at ``path`` as ORT's CPU optimiser leaves it at ``level`` (``prepacked``:
    weights pre-packed too), saved once so a load can skip the optimiser; cached by the
    graph's SHA-256, the ORT version, the level and the CPU.

    Example:
        >>> optimised_copy("bundle/onnx/vocoder.onnx")  # doctest: +SKIP
        PosixPath('~/.cache/tts_kit/external/opt-5be1.../vocoder.onnx')
    """
    import json

    src = Path(path).resolve()
    src.stat()
    root = Path(cache_dir) if cache_dir is not None else external_cache_dir()
    meta = {"source": _content_key(src), "onnxruntime": ort.__version__, "level": level.name,
            "cpu": _cpu_fingerprint(), "prepacked": str(prepacked)}
    key = "opt-" + hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:32]
    entry = root / key / OPTIMISED_META
    if entry.parent.is_dir():
        try:
            stale = json.loads(entry.read_text(encoding="utf-8")) != meta
        except (OSError, ValueError):
            stale = True
        if stale:
            _evict(root, entry.parent)

    def write(src: Path, work: Path) -> None:
        args = [str(src), str(work / src.name), level.name, f"{src.name}.data",
                str(int(prepacked))]
        _convert(_optimise_here, args, src.stat().st_size <= INPROCESS_CONVERT_BYTES,
                 f"{src}: could not write an optimised copy")
        (work / OPTIMISED_META).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")

    return _cached_copy(src, key, root, write)


def _optimise_here(src: str, out: str, level: str, data: str, prepacked: str) -> None:
    """ORT optimises the graph at ``src`` and saves it to ``out``, weights in ``data``."""
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    so.log_severity_level = 3
    so.optimized_model_filepath = out
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", data)
    so.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    so.add_session_config_entry("session.save_external_prepacked_constant_initializers",
                                prepacked)
    ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])


#: Work directories of earlier versions, named ``.<key>.<random>`` (no writer pid).
_LEGACY_WORK = re.compile(r"^\.[0-9a-f]{20}\.[A-Za-z0-9_]{8}$")


def _sweep_dead_writers(root: Path) -> None:
    """Remove dead writers' partial copies (older versions' once an hour old: no pid)."""
    atomic.sweep_stale(root)
    with contextlib.suppress(OSError):
        for entry in os.scandir(root):
            if (_LEGACY_WORK.match(entry.name) and entry.is_dir(follow_symlinks=False)
                    and time.time() - entry.stat(follow_symlinks=False).st_mtime > 3600):
                shutil.rmtree(entry.path, ignore_errors=True)


def session_file(path: str | os.PathLike[str], policy: LoadPolicy | str,
                 sess_options: ort.SessionOptions | None = None,
                 providers: list[Any] | None = None) -> Path:
    """The file a session of ``path`` loads under ``policy``: an optimised copy (``opt``, CPU
    only), an external-data copy (``ext``), or ``path`` itself.

    Example:
        >>> session_file("bundle/onnx/vocoder.onnx", "resident")  # doctest: +SKIP
        PosixPath('bundle/onnx/vocoder.onnx')
    """
    if not isinstance(policy, LoadPolicy):
        policy = LoadPolicy.parse(policy)
    level = _optimised_level(policy, sess_options, providers)
    if level is not None:
        return optimised_copy(path, level, prepacked=policy.prepack)
    return external_copy(path) if policy.external_data else Path(path)


def _optimised_level(policy: LoadPolicy, so: ort.SessionOptions | None,
                     providers: list[Any] | None) -> ort.GraphOptimizationLevel | None:
    """The level an optimised copy is made at, or None when the policy loads none."""
    level = (so if so is not None else ort.SessionOptions()).graph_optimization_level
    cpu_only = all((p[0] if isinstance(p, (tuple, list)) else p) == "CPUExecutionProvider"
                   for p in providers or [])
    off = level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return level if policy.optimised and cpu_only and not off else None


def create_session(
    path: str | os.PathLike[str],
    sess_options: ort.SessionOptions | None = None,
    providers: list[Any] | None = None,
    policy: LoadPolicy | str = "resident",
) -> ort.InferenceSession:
    """Create one stage's session the way ``policy`` (or its spec) loads it.

    Example:
        >>> sess = create_session("bundle/onnx/vocoder.onnx", policy="paged")  # doctest: +SKIP
    """
    if not isinstance(policy, LoadPolicy):
        policy = LoadPolicy.parse(policy)
    so = sess_options if sess_options is not None else ort.SessionOptions()
    model = session_file(path, policy, so, providers)
    if _optimised_level(policy, so, providers) is not None:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # done once
    if not policy.prepack:
        so.add_session_config_entry("session.disable_prepacking", "1")
    try:
        return ort.InferenceSession(str(model), sess_options=so, providers=providers)
    except _GRAPH_ERRORS as exc:  # the graph itself: one line naming the file
        raise BundleError(f"{path}: {_graph_error_text(exc)}") from None


#: What ORT raises when a graph cannot be loaded (as opposed to a provider failing).
_GRAPH_ERRORS = (_ort_state.InvalidGraph, _ort_state.InvalidProtobuf,
                 _ort_state.NotImplemented, _ort_state.Fail, _ort_state.InvalidArgument)


def _graph_error_text(exc: BaseException) -> str:
    msg = " ".join(str(exc).split())
    # "[ONNXRuntimeError] : 10 : INVALID_GRAPH : Load model from /x.onnx failed:Why" -> "Why"
    msg = msg.split(" failed:", 1)[-1].strip() if "Load model from" in msg else msg
    return (f"ONNX Runtime {ort.__version__} cannot load this graph ({msg[:300]}); "
            "re-download or rebuild the bundle, or use an onnxruntime that supports it")


def check_loads(bundle: Any) -> list[str]:
    """Create every stage's session once (CPU, optimiser off) and drop it, so an operator
    this ORT cannot run fails here as a `BundleError`; returns the stages checked.

    Example:
        >>> from tts_kit import Bundle
        >>> check_loads(Bundle.discover())
        ['duration_predictor', 'text_encoder', 'vector_estimator', 'vocoder']
    """
    stages = list(getattr(bundle, "stages", None) or contract.STAGES)  # a Piper voice: one
    for stage in stages:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.log_severity_level = 3
        create_session(bundle.stage_path(stage), so, ["CPUExecutionProvider"])  # then dropped
    return stages
