"""Serving under load: the HTTP server (`app`, ``tts-kit serve``), its worker processes
(`worker`), a server in a subprocess (`launch`), the load test (`loadtest`, ``tts-kit
loadtest``) and the serving sweep (`sweep`); docs/architecture.md lists every module.

Example:
    >>> from tts_kit.serve import ServeConfig
    >>> ServeConfig(workers=2).workers
    2
"""

from __future__ import annotations

from tts_kit.serve.app import create_app, run_server
from tts_kit.serve.config import ServeConfig

__all__ = ["ServeConfig", "create_app", "run_server"]
