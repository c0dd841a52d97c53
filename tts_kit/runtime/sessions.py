"""ONNX Runtime session presets (`SessionPreset`: plain data that builds ``SessionOptions`` and
explains each option it sets) and `PRESETS`, the shipped ones."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import onnxruntime as ort

from tts_kit.core import procfacts
from tts_kit.core.errors import TtsKitError

_EXECUTION_MODES = {
    "sequential": ort.ExecutionMode.ORT_SEQUENTIAL,
    "parallel": ort.ExecutionMode.ORT_PARALLEL,
}
_OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}
#: Thread-count value meaning "one per core in force" (`cores_in_force`, not ORT's physical
#: core count).
CORES = "cores"

CUDA = "CUDAExecutionProvider"
_ARENA_STRATEGIES = ("kNextPowerOfTwo", "kSameAsRequested")
_CUDNN_SEARCH = ("EXHAUSTIVE", "HEURISTIC", "DEFAULT")

#: What each option does, keyed by `SessionPreset` field or session config key.
OPTION_DOCS: dict[str, str] = {
    "intra_op_num_threads": (
        "threads that split one operator (GEMM, conv) between them; ORT's default is one per "
        "physical core, and more threads than cores only adds contention"),
    "inter_op_num_threads": ("threads that run independent graph nodes at the same time; only "
                             "used in parallel execution mode"),
    "execution_mode": ("sequential runs one node at a time (all threads inside it); parallel "
                       "also runs independent branches at once, which needs the inter-op pool"),
    "graph_optimization_level": (
        "graph rewrites at load: constant folding, node fusions (all: also layout transforms); "
        "more fusion means fewer intermediate tensors but a slower load"),
    "enable_cpu_mem_arena": (
        "the CPU allocator keeps freed blocks in an arena for reuse: fewer mallocs, but RSS "
        "stays at the largest working set ever seen and does not shrink between requests"),
    "enable_mem_pattern": (
        "ORT records the allocation plan per input shape and pre-allocates one block for it; "
        "TTS input shapes change with every text, so each new shape plans a new block"),
    "session.dynamic_block_base": (
        "intra-op loops are cut into blocks that shrink as work runs out (base N); evens out "
        "load between threads on shared or small machines"),
    "session.intra_op.allow_spinning": (
        "1 (default): idle intra-op threads busy-wait for the next piece of work; 0: they "
        "sleep, saving CPU between operators; the latency effect depends on the machine "
        "(bench/options.py measures it)"),
    "session.inter_op.allow_spinning": (
        "as intra_op.allow_spinning, for the inter-op pool (parallel mode only)"),
    "session.disable_prepacking": (
        "1: do not pre-pack constant weights into the GEMM/conv kernels' blocked layout at "
        "load; saves the packed copy (and the load-time peak of holding both), may cost speed"),
    "session.use_ort_model_bytes_directly": (
        "1: a session created from an ORT-format model in memory uses those bytes instead of "
        "copying them; no effect for .onnx files or sessions created from a path"),
    "session.use_ort_model_bytes_for_initializers": (
        "1: with use_ort_model_bytes_directly, initializers point into the model bytes instead "
        "of being copied (ORT-format models only)"),
    "malloc_mmap_threshold_kb": (
        "glibc, process-wide: blocks above this size are mmapped and unmapped on free; a fixed "
        "value stops glibc raising the threshold to 32 MB after the first large free, which "
        "otherwise leaves the copies a session makes while loading in the heap"),
    "providers": "execution providers in priority order; unavailable ones are skipped",
    "gpu_mem_limit": "CUDA: the most bytes the CUDA arena may hold for this session",
    "arena_extend_strategy": (
        "CUDA: how the arena grows; kNextPowerOfTwo (ORT's default) rounds each extension up "
        "to a power of two, kSameAsRequested grows by exactly what is asked (less memory)"),
    "cudnn_conv_algo_search": (
        "CUDA: how cuDNN picks a convolution algorithm; EXHAUSTIVE (ORT's default) benchmarks "
        "all, again for every new input shape, HEURISTIC (tts_kit's default) asks cuDNN, "
        "DEFAULT uses the first one"),
    "device_id": "CUDA: which GPU",
}

# glibc's mallopt parameter number and the largest threshold it accepts (HEAP_MAX / 2).
_M_MMAP_THRESHOLD = -3
_MMAP_MAX_KB = 32 * 1024


def set_malloc_mmap_threshold(kb: int) -> bool:
    """Fix glibc's mmap threshold (as ``MALLOC_MMAP_THRESHOLD_``) for this process; False
    where there is no glibc.

    Example:
        >>> set_malloc_mmap_threshold(1024) in (True, False)
        True
    """
    return procfacts.mallopt(_M_MMAP_THRESHOLD, int(kb) * 1024)


def cores_in_force() -> int:
    """Cores a ``"cores"`` thread count resolves to here: N inside ``run_isolated(cpus=N)``,
    else `tts_kit.core.procfacts.usable_cores`.

    Example:
        >>> cores_in_force() >= 1
        True
    """
    n = procfacts.current_cpus()
    return n if n is not None else procfacts.usable_cores()


@dataclass
class SessionPreset:
    """A named set of ONNX Runtime session options. ``None`` means "leave ORT's default"."""

    name: str = "ort-default"  #: used in records and reports
    #: A number, ``"cores"`` (the cores in force) or None (ORT's default, or the trial's
    #: ``cpus`` inside `tts_kit.runtime.measure.run_isolated`).
    intra_op_num_threads: int | str | None = None
    inter_op_num_threads: int | None = None  #: only used in parallel execution mode
    execution_mode: str | None = None  #: ``sequential`` or ``parallel``
    graph_optimization_level: str | None = None  #: ``disable``, ``basic``, ``extended``, ``all``
    enable_cpu_mem_arena: bool | None = None
    enable_mem_pattern: bool | None = None
    #: Extra ``SessionOptions.add_session_config_entry`` keys (spinning, prepacking, ...).
    config_entries: dict[str, str] = field(default_factory=dict)
    providers: list[str] = field(default_factory=lambda: ["CPUExecutionProvider"])
    provider_options: dict[str, dict[str, str]] = field(default_factory=dict)
    source: str = ""  #: where the preset comes from (an article, a measurement, ...)
    notes: dict[str, str] = field(default_factory=dict)  #: why each option, for `explain`
    #: Not an ORT option: glibc's ``M_MMAP_THRESHOLD`` for the whole process, set when
    #: `session_options` is built; ignored off glibc.
    malloc_mmap_threshold_kb: int | None = None

    def __post_init__(self) -> None:
        threads, mmap_kb = self.intra_op_num_threads, self.malloc_mmap_threshold_kb
        head = f"preset '{self.name}'"
        if mmap_kb is not None and (isinstance(mmap_kb, bool) or not isinstance(mmap_kb, int)
                                    or not 0 < mmap_kb <= _MMAP_MAX_KB):
            raise TtsKitError(f"{head}: malloc_mmap_threshold_kb must be an integer in "
                              f"1..{_MMAP_MAX_KB}, got {mmap_kb!r}")
        if isinstance(threads, str) and threads != CORES:
            if not threads.isdigit():
                raise TtsKitError(f"{head}: intra_op_num_threads must be a number, "
                                  f"'{CORES}' or null, got {threads!r}")
            self.intra_op_num_threads = int(threads)
        for fname in ("intra_op_num_threads", "inter_op_num_threads"):
            value = getattr(self, fname)
            if isinstance(value, bool) or (isinstance(value, int) and value < 0):
                raise TtsKitError(f"{head}: {fname} must be >= 0, got {value!r}")
        for fname, allowed in (("execution_mode", _EXECUTION_MODES),
                               ("graph_optimization_level", _OPT_LEVELS)):
            value = getattr(self, fname)
            if value is not None and value not in allowed:
                raise TtsKitError(f"{head}: {fname} {value!r}; use one of {list(allowed)}")
        # ORT wants strings; "1"/"0" rather than Python's "True"/"False".
        self.config_entries = {str(k): ("1" if v else "0") if isinstance(v, bool) else str(v)
                               for k, v in self.config_entries.items()}
        self.provider_options = {p: {str(k): str(v) for k, v in opts.items()}
                                 for p, opts in self.provider_options.items()}

    def threads(self) -> int | None:
        """The intra-op thread count `session_options` sets now (None: ORT's choice).

        Example:
            >>> SessionPreset(intra_op_num_threads=3).threads()
            3
        """
        value = self.intra_op_num_threads
        if value == CORES:
            return cores_in_force()
        if value is None:
            return procfacts.current_cpus()
        return int(value)

    def session_options(self) -> ort.SessionOptions:
        """Build a fresh ``onnxruntime.SessionOptions`` with exactly the fields that are set.

        Example:
            >>> SessionPreset(execution_mode="parallel").session_options().execution_mode.name
            'ORT_PARALLEL'
        """
        if self.malloc_mmap_threshold_kb is not None:
            # Process-wide, so it must be in force before the session's load allocates.
            set_malloc_mmap_threshold(self.malloc_mmap_threshold_kb)
        so = ort.SessionOptions()
        given = {"intra_op_num_threads": self.threads(),
                 "inter_op_num_threads": self.inter_op_num_threads,
                 "execution_mode": _EXECUTION_MODES.get(self.execution_mode or ""),
                 "graph_optimization_level": _OPT_LEVELS.get(self.graph_optimization_level or ""),
                 "enable_cpu_mem_arena": self.enable_cpu_mem_arena,
                 "enable_mem_pattern": self.enable_mem_pattern}
        for name, value in given.items():
            if value is not None:
                setattr(so, name, value)
        for key, value in self.config_entries.items():
            so.add_session_config_entry(key, str(value))
        return so

    def provider_list(self) -> list[str | tuple[str, dict[str, str]]]:
        """Providers that this ORT build has, with their options, for ``InferenceSession``.

        Example:
            >>> SessionPreset().provider_list()
            ['CPUExecutionProvider']
        """
        available = set(ort.get_available_providers())
        chosen: list[str | tuple[str, dict[str, str]]] = [
            (p, dict(self.provider_options[p])) if self.provider_options.get(p) else p
            for p in self.providers if p in available]
        return chosen or ["CPUExecutionProvider"]

    def cuda(self, gpu_mem_limit_mb: float | None = None, arena_extend_strategy: str | None = None,
             cudnn_conv_algo_search: str | None = None, device_id: int | None = None
             ) -> SessionPreset:
        """A copy that tries the CUDA provider first, with its memory options (None: ORT's
        default, except the convolution search: ``HEURISTIC``, docs/benchmarks.md).

        Example:
            >>> p = get_preset("low-memory").cuda(1024, "kSameAsRequested", "HEURISTIC")
            >>> p.providers[0], p.provider_options["CUDAExecutionProvider"]["gpu_mem_limit"]
            ('CUDAExecutionProvider', '1073741824')
        """
        opts = dict(self.provider_options.get(CUDA, {}))
        notes = dict(self.notes)
        if gpu_mem_limit_mb is not None:
            if not gpu_mem_limit_mb > 0:
                raise TtsKitError(f"gpu_mem_limit_mb must be positive, got {gpu_mem_limit_mb!r}")
            opts["gpu_mem_limit"] = str(int(gpu_mem_limit_mb * 1024 * 1024))
            notes.setdefault("gpu_mem_limit", "caps the GPU arena (article 004)")
        for key, value, allowed in (
            ("arena_extend_strategy", arena_extend_strategy, _ARENA_STRATEGIES),
            ("cudnn_conv_algo_search", cudnn_conv_algo_search, _CUDNN_SEARCH),
        ):
            if value is not None:
                if value not in allowed:
                    raise TtsKitError(f"{key} {value!r}; use one of {list(allowed)}")
                opts[key] = value
        if "cudnn_conv_algo_search" not in opts:
            opts["cudnn_conv_algo_search"] = "HEURISTIC"
            notes.setdefault("cudnn_conv_algo_search", (
                "tts_kit's CUDA default: ORT's EXHAUSTIVE benchmarks again at every new input "
                "shape, and each text brings new shapes (docs/benchmarks.md, 'On a GPU')"))
        if device_id is not None:
            opts["device_id"] = str(int(device_id))
        name = self.name if self.name.endswith("+cuda") else f"{self.name}+cuda"
        return self.replace(name=name, providers=[CUDA] + [p for p in self.providers if p != CUDA],
                            provider_options={**self.provider_options, CUDA: opts}, notes=notes)

    def set_options(self) -> dict[str, Any]:
        """The options this preset sets, keyed like `OPTION_DOCS`, in build order.

        Example:
            >>> SessionPreset(enable_mem_pattern=False).set_options()
            {'enable_mem_pattern': False}
        """
        names = ("intra_op_num_threads", "inter_op_num_threads", "execution_mode",
                 "graph_optimization_level", "enable_cpu_mem_arena", "enable_mem_pattern",
                 "malloc_mmap_threshold_kb")
        out = {n: getattr(self, n) for n in names if getattr(self, n) is not None}
        out.update(self.config_entries)
        if self.providers != ["CPUExecutionProvider"]:
            out["providers"] = list(self.providers)
        for opts in self.provider_options.values():
            out.update(opts)
        return out

    def explain(self) -> list[str]:
        """One line per option set: its value, what it does and why this preset sets it.

        Example:
            >>> get_preset("low-memory").explain()[0].split(":")[0]
            'enable_cpu_mem_arena = False'
        """
        options = self.set_options()
        if not options:
            return [f"{self.name}: nothing set; every option is ONNX Runtime's default"
                    + (f" ({self.source})" if self.source else "")]
        lines = []
        for key, value in options.items():
            shown = value
            if key == "intra_op_num_threads" and value == CORES:
                shown = f"cores (= {cores_in_force()} here)"
            doc = OPTION_DOCS.get(key, "an ONNX Runtime session config entry")
            why = self.notes.get(key) or (f"from {self.source}" if self.source else "not stated")
            lines.append(f"{key} = {shown}: {doc}. Why: {why}")
        return lines

    def replace(self, **changes: Any) -> SessionPreset:
        """A copy with some fields changed, e.g. ``preset.replace(intra_op_num_threads=1)``."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionPreset:
        """Inverse of `to_dict`; unknown keys raise ``ValueError`` naming them."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise TtsKitError(f"unknown SessionPreset field(s): {', '.join(unknown)}")
        return cls(**data)


_SPIN_OFF = "spinning threads burn CPU between operators; on a small shared box that CPU is the"
#: What seed-2vcpu and lean share: one thread per core in force in one pool, fused graphs.
_ONE_POOL: dict[str, Any] = {"intra_op_num_threads": CORES, "inter_op_num_threads": 1,
                             "execution_mode": "sequential", "graph_optimization_level": "all"}
_PRESET_LIST = [
    SessionPreset(name="ort-default", source="ONNX Runtime itself"),
    SessionPreset(
        name="supertonic-default",
        execution_mode="sequential",
        graph_optimization_level="all",
        source="the official supertonic package (loader.load_onnx_modules)",
        notes={
            "execution_mode": "the official package sets ORT_SEQUENTIAL",
            "graph_optimization_level": "the official package sets ORT_ENABLE_ALL",
        },
    ),
    SessionPreset(
        name="seed-2vcpu",
        **_ONE_POOL,
        enable_cpu_mem_arena=True,
        config_entries={"session.dynamic_block_base": "4", "session.intra_op.allow_spinning": "0"},
        source="seed article 000 (Supertonic 3 on a 2 vCPU server)",
        notes={
            "intra_op_num_threads": "article 000: one thread per vCPU, no oversubscription",
            "inter_op_num_threads": "article 000: no second pool competing for the 2 vCPUs",
            "execution_mode": "article 000: sequential, all threads inside one operator",
            "graph_optimization_level": "article 000: full fusion",
            "enable_cpu_mem_arena": "article 000: keep the arena for allocation speed",
            "session.dynamic_block_base": "article 000: better balance on shared vCPUs",
            "session.intra_op.allow_spinning": f"article 000: {_SPIN_OFF} request's",
        },
    ),
    SessionPreset(
        name="low-memory",
        enable_mem_pattern=False,
        enable_cpu_mem_arena=False,
        source="seed article 004 (practical tips to reduce Supertonic's memory)",
        notes={
            "enable_mem_pattern": "article 004: variable text lengths defeat pre-planning",
            "enable_cpu_mem_arena": "article 004: free intermediates back instead of caching",
        },
    ),
    SessionPreset(
        name="lean",
        **_ONE_POOL,
        enable_cpu_mem_arena=False,
        enable_mem_pattern=True,
        config_entries={
            "session.intra_op.allow_spinning": "0",
            "session.inter_op.allow_spinning": "0",
        },
        malloc_mmap_threshold_kb=1024,
        source=(
            "tts_kit: chosen by measurement with tts_kit.tuning.tune on the full stand-in "
            "(2 cores): memory first: the lowest peak RSS of the presets in every run; its latency "
            "ranged from faster to slower than supertonic-default between runs (the mmap "
            "threshold makes large tensors fresh pages on every call); measure it on your "
            "machine with bench/presets.py and bench/options.py (one option each)"
        ),
        notes={
            "intra_op_num_threads": "one per core in force, as seed-2vcpu",
            "inter_op_num_threads": "sequential mode: a second pool would only idle",
            "execution_mode": "the graphs are chains; parallel mode buys nothing",
            "graph_optimization_level": "fusion removes intermediates (less memory, faster)",
            "enable_cpu_mem_arena": (
                "off: the arena keeps the requests' largest working set resident; alone, turning "
                "it off changes little, but with the mmap threshold below freed tensors leave "
                "RSS at once"),
            "enable_mem_pattern": ("on: with the arena off, one planned block per run instead of "
                                   "many allocations: the same peak as off, less CPU per call"),
            "session.intra_op.allow_spinning": f"{_SPIN_OFF} request's",
            "session.inter_op.allow_spinning": "same, for the inter-op pool",
            "malloc_mmap_threshold_kb": (
                "1 MB: a lower loading peak, since glibc otherwise keeps the load's transient "
                "copies in the heap; the price is slower runs (fresh pages for every large "
                "tensor)"),
        },
    ),
]

#: The shipped presets by name. Use `get_preset` for a copy you may change.
PRESETS: dict[str, SessionPreset] = {p.name: p for p in _PRESET_LIST}


def get_preset(name: str | SessionPreset) -> SessionPreset:
    """A copy of the shipped preset ``name`` (a `SessionPreset` is returned as is).

    Example:
        >>> get_preset("seed-2vcpu").config_entries["session.dynamic_block_base"]
        '4'
    """
    if isinstance(name, SessionPreset):
        return name
    if name not in PRESETS:
        raise TtsKitError(f"unknown session preset '{name}'; choose one of: {', '.join(PRESETS)}")
    return copy.deepcopy(PRESETS[name])
