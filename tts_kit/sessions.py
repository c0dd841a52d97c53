"""ONNX Runtime session presets: what each option does, and why a preset sets it.

A `SessionPreset` is plain data (JSON round-trips) that builds an
``onnxruntime.SessionOptions`` and the provider list. The engine takes one preset
for all stages, with optional per-stage overrides.

Example:
    >>> from tts_kit.sessions import SessionPreset
    >>> p = SessionPreset(name="two-threads", intra_op_num_threads=2)
    >>> p.session_options().intra_op_num_threads
    2
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnxruntime as ort

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


@dataclass
class SessionPreset:
    """A named set of ONNX Runtime session options. ``None`` means "leave ORT's default"."""

    name: str = "ort-default"
    """Short identifier, used in records and reports."""
    intra_op_num_threads: int | None = None
    """Threads inside one operator (0 or None: ORT picks, usually one per core)."""
    inter_op_num_threads: int | None = None
    """Threads across independent operators; only used in parallel execution mode."""
    execution_mode: str | None = None
    """``"sequential"`` or ``"parallel"``."""
    graph_optimization_level: str | None = None
    """``"disable"``, ``"basic"``, ``"extended"`` or ``"all"``."""
    enable_cpu_mem_arena: bool | None = None
    """Whether the CPU allocator keeps freed blocks in an arena for reuse."""
    enable_mem_pattern: bool | None = None
    """Whether ORT pre-plans one big buffer per input shape (memory pattern)."""
    config_entries: dict[str, str] = field(default_factory=dict)
    """Extra ``SessionOptions.add_session_config_entry`` keys (spinning, prepacking, ...)."""
    providers: list[str] = field(default_factory=lambda: ["CPUExecutionProvider"])
    """Execution providers in priority order; unavailable ones are skipped."""
    provider_options: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per-provider options, e.g. ``{"CUDAExecutionProvider": {"gpu_mem_limit": "..."}}``."""
    source: str = ""
    """Where the preset comes from (an article, the official package, a measurement)."""

    def session_options(self) -> ort.SessionOptions:
        """Build a fresh ``onnxruntime.SessionOptions`` with exactly the fields that are set."""
        so = ort.SessionOptions()
        if self.intra_op_num_threads is not None:
            so.intra_op_num_threads = int(self.intra_op_num_threads)
        if self.inter_op_num_threads is not None:
            so.inter_op_num_threads = int(self.inter_op_num_threads)
        if self.execution_mode is not None:
            so.execution_mode = _EXECUTION_MODES[self.execution_mode]
        if self.graph_optimization_level is not None:
            so.graph_optimization_level = _OPT_LEVELS[self.graph_optimization_level]
        if self.enable_cpu_mem_arena is not None:
            so.enable_cpu_mem_arena = bool(self.enable_cpu_mem_arena)
        if self.enable_mem_pattern is not None:
            so.enable_mem_pattern = bool(self.enable_mem_pattern)
        for key, value in self.config_entries.items():
            so.add_session_config_entry(key, str(value))
        return so

    def provider_list(self) -> list[str | tuple[str, dict[str, str]]]:
        """Providers that this ORT build has, with their options, for ``InferenceSession``."""
        available = set(ort.get_available_providers())
        chosen: list[str | tuple[str, dict[str, str]]] = []
        for p in self.providers:
            if p in available:
                opts = self.provider_options.get(p)
                chosen.append((p, dict(opts)) if opts else p)
        return chosen or ["CPUExecutionProvider"]

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
            raise ValueError(f"unknown SessionPreset field(s): {', '.join(unknown)}")
        return cls(**data)

    def save(self, path: str | Path) -> None:
        """Write the preset as JSON."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> SessionPreset:
        """Read a preset written by `save`."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
