"""Serving Supertonic under load: the HTTP server, its worker processes, the load test
and the serving sweep.

- `app`: ``tts-kit serve``: FastAPI on uvicorn, ``POST /v1/audio/speech`` (a drop-in for
  OpenAI's clients: their voices and formats, `encode`; chunked streaming), ``/health``,
  ``/voices``, ``/metrics``, served by worker processes (`backends`).
- `worker`: worker processes each owning a warmed-up `tts_kit.models.supertonic.engine.Engine`;
  the pool with its bounded queue (429), real deadlines (the late worker is killed and
  replaced), crash replacement and recycling.
- `launch`: a server in a subprocess on a free port, for tests, sweeps and notebooks.
- `loadtest`: ``tts-kit loadtest``: closed and open loop with httpx; TTFA and latency
  percentiles, throughput, errors, server CPU and memory from ``/metrics``.
- `sweep`: a fresh server per configuration, the load test on each, a recommendation
  in `tts_kit.tuning.records`' vocabulary.

Example:
    >>> from tts_kit.serve import ServeConfig
    >>> ServeConfig(workers=2).workers
    2
"""

from __future__ import annotations

from tts_kit.serve.app import create_app, run_server
from tts_kit.serve.config import ServeConfig

__all__ = ["ServeConfig", "create_app", "run_server"]
