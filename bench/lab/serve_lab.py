"""The server's lab seam, from the lab's side: which ``bench/lab`` experiments the servers
started from this process (and their workers) load.

A server imports the modules `tts_kit.serve.worker.LAB_ENV` names at start, and each
worker too; each module registers itself there (a scheduler in
`tts_kit.serve.chunked.SCHEDULERS`, message handlers in
`tts_kit.serve.worker.WORKER_HANDLERS`, stage hooks in `tts_kit.serve.worker.WORKER_HOOKS`).
`enable` sets that variable, puts ``bench/`` on the servers' path, and passes an
experiment's settings as ``TTS_KIT_LAB_NAME`` variables.

Example:
    >>> import os
    >>> saved = dict(os.environ)
    >>> enable("lab.nesting", batch=4)
    >>> os.environ["TTS_KIT_SERVE_LAB"], os.environ["TTS_KIT_LAB_BATCH"]
    ('lab.nesting', '4')
    >>> os.environ.clear(); os.environ.update(saved)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tts_kit.core.settings import reset_settings
from tts_kit.serve.worker import LAB_ENV

#: ``bench/``: what ``import lab`` needs on a server's path.
BENCH = str(Path(__file__).resolve().parents[1])


def enable(*modules: str, **settings: Any) -> None:
    """Servers started from now on load ``modules`` (none: no experiment); ``settings``
    become ``TTS_KIT_LAB_<NAME>`` environment variables for them."""
    os.environ[LAB_ENV] = ",".join(modules)
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if BENCH not in path:
        os.environ["PYTHONPATH"] = os.pathsep.join([BENCH, *path])
    for name, value in settings.items():
        os.environ[f"TTS_KIT_LAB_{name.upper()}"] = str(value)
    reset_settings()  # this process checks the servers' configurations with them too


def setting(name: str, default: float) -> float:
    """An experiment's setting (`enable`'s keyword), or ``default``."""
    return float(os.environ.get(f"TTS_KIT_LAB_{name.upper()}", default))


def job_length(scheduler: Any, req: Any, k: int) -> int:
    """Job ``k``'s characters: planned, or for a first chunk not yet planned, its text
    up to the worker's first-chunk cut."""
    if req.lengths is not None:
        return req.lengths[k]
    wc = getattr(scheduler.pool, "cfg", None)
    cut = getattr(wc, "first_chunk_chars", None) or getattr(wc, "max_chunk_chars", None)
    text = str(req.params.get("text", ""))
    return max(1, min(len(text), cut or 300))
