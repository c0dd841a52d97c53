"""Engines reused within one scope (`reuse_engines`), so a judgement builds the reference's
engine once; outside one, `engine` builds a fresh engine and closes it. Every reading
passes its own seed, so reuse changes no reading."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_LOCK = threading.Lock()
_ENGINES: dict[tuple[str, str], Any] = {}  # the open scope's engines
_DEPTH = [0]  # how many scopes are open (nested scopes share the outermost one's engines)


@contextmanager
def reuse_engines() -> Iterator[None]:
    """A scope in which `engine` hands out one engine per model and preset (thread-safe),
    all closed when the outermost scope ends.

    Example:
        >>> with reuse_engines():
        ...     pass
    """
    with _LOCK:
        _DEPTH[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH[0] -= 1  # the outermost scope takes every engine out, to close
            done = [] if _DEPTH[0] else [_ENGINES.pop(key) for key in list(_ENGINES)]
        for built in done:
            built.close()


def default_preset(threads: int | None = None, optimization: str = "all") -> Any:
    """The preset the readings here are made with: ``supertonic-default`` with graph fusions
    ``optimization`` stated (so every module asks for the same engine) and, when given,
    ``threads`` intra-op threads (one inter-op).

    Example:
        >>> default_preset().graph_optimization_level, default_preset(2).intra_op_num_threads
        ('all', 2)
    """
    from tts_kit.runtime.sessions import get_preset

    preset = get_preset("supertonic-default").replace(graph_optimization_level=optimization)
    if threads is not None:
        preset = preset.replace(intra_op_num_threads=threads, inter_op_num_threads=1)
    return preset


@contextmanager
def engine(model: Any, preset: Any) -> Iterator[Any]:
    """An engine of ``model``'s family with ``preset``: inside `reuse_engines` the scope's
    (built on first use), otherwise a fresh one closed on exit.

    Example:
        >>> from tts_kit.runtime.sessions import get_preset
        >>> with engine(None, get_preset("supertonic-default")) as e:  # doctest: +SKIP
        ...     e.bundle.sample_rate
        44100
    """
    from tts_kit.models.family import make_engine
    from tts_kit.models.resolve import open_model

    if not _DEPTH[0]:
        built = make_engine(model, preset=preset)
        try:
            yield built
        finally:
            built.close()
        return
    bundle = open_model(model)
    # the same model (its `ref`, not the folder several voices may share), same options
    key = (bundle.ref(), repr(preset))
    with _LOCK:  # built under the lock: two threads never build the same engine twice
        if key not in _ENGINES:
            _ENGINES[key] = make_engine(bundle, preset=preset)
        built = _ENGINES[key]
    yield built
