"""`ServeConfig`: everything a server needs, the ``tts-kit serve`` flags one to one, and how
it travels to a server in another process (JSON).

Example:
    >>> cfg = ServeConfig(workers=2, threads=1)
    >>> cfg.architecture, cfg.host
    ('workers', '127.0.0.1')
"""

import json
from dataclasses import asdict, dataclass

from tts_kit.core.errors import TtsKitError
from tts_kit.serve.chunked import scheduling_modes
from tts_kit.serve.worker import WorkerConfig, load_lab

ARCHITECTURES = ("workers", "threads", "blocking", "article")


@dataclass
class ServeConfig:
    """Everything `create_app` needs; the ``tts-kit serve`` flags map onto it one to one."""

    model: str | None = None
    preset: str = "supertonic-default"
    loading: str = "resident"
    threads: int | None = None
    workers: int = 1
    architecture: str = "workers"
    max_queue: int = 8
    timeout_s: float | None = None
    fallback_wav: str | None = None
    max_requests: int | None = None
    max_rss_mb: float | None = None
    api_key: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    max_chars: int = 4096
    max_body_bytes: int = 65536
    first_chunk_chars: int | None = 50
    max_chunk_chars: int | None = None
    order: str = "chunk"
    lang: str = "en"
    header_timeout_s: float = 10.0
    """A connection's request headers must all arrive within this (slow clients)."""
    body_timeout_s: float = 10.0
    """A request's body must all arrive within this (408 after)."""
    limit_concurrency: int | None = 64
    """Connections and requests at once; past it uvicorn answers 503 at once."""
    spinning: bool = False
    """ONNX Runtime's threads busy-wait between operators (off: the CPU goes to other
    workers; ``article`` keeps its own settings)."""
    scheduling: str = "chunk"
    """``workers``: ``request`` (a request's chunks all on the worker that took it) or
    ``chunk`` (each chunk a job for any free worker; `tts_kit.serve.chunked`)."""
    def check(self) -> None:
        """One-line ValueError for a setting that cannot work (a lab experiment's
        scheduling counts once `tts_kit.serve.worker.LAB_ENV` loads it)."""
        load_lab()
        if self.architecture not in ARCHITECTURES:
            raise TtsKitError(f"unknown architecture '{self.architecture}'; use one of: "
                             f"{', '.join(ARCHITECTURES)}")
        if self.scheduling not in scheduling_modes():
            raise TtsKitError(f"unknown scheduling '{self.scheduling}'; use one of: "
                              f"{', '.join(scheduling_modes())}")
        if self.max_chunk_chars is not None and self.max_chunk_chars < 1:
            raise TtsKitError("--max-chunk-chars must be >= 1")
        for name in ("workers", "max_chars", "max_body_bytes"):
            if getattr(self, name) < 1:
                raise TtsKitError(f"--{name.replace('_', '-')} must be >= 1")
        if self.max_queue < 0:
            raise TtsKitError("--max-queue must be >= 0")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise TtsKitError("--timeout must be above 0 seconds")
        if self.limit_concurrency is not None and self.limit_concurrency < 1:
            raise TtsKitError("--limit-concurrency must be >= 1")
        for name in ("header_timeout_s", "body_timeout_s"):
            if not getattr(self, name) > 0:
                raise TtsKitError(f"--{name[:-2].replace('_', '-')} must be above 0 seconds")
        if self.threads is not None and self.threads < 1:
            raise TtsKitError("--threads must be >= 1")
        if self.fallback_wav:
            import soundfile as sf

            try:
                sf.info(self.fallback_wav)
            except Exception as exc:
                raise TtsKitError(f"--fallback-wav {self.fallback_wav}: not a readable audio "
                                 f"file ({str(exc).splitlines()[0]}); give a WAV file") from None

    def worker_config(self) -> WorkerConfig:
        """What each worker builds its engine from. Under ``workers``, without ``threads``,
        workers x intra-op threads = usable cores (each worker its share, at least 1); the
        ``article`` pattern keeps ORT's defaults, as the article does."""
        from tts_kit.core.procfacts import usable_cores

        article = self.architecture == "article"
        threads = self.threads
        if threads is None and self.architecture == "workers":
            threads = max(1, usable_cores() // self.workers)
        return WorkerConfig(model=self.model, preset=self.preset, loading=self.loading,
                            threads=threads, order=self.order,
                            first_chunk_chars=self.first_chunk_chars,
                            max_chunk_chars=self.max_chunk_chars,
                            spinning=None if article else self.spinning)

    def to_json(self) -> str:
        """This configuration as JSON: how it reaches a server in another process.

        Example:
            >>> ServeConfig.from_json(ServeConfig(workers=2).to_json()) == ServeConfig(workers=2)
            True
        """
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "ServeConfig":
        """The configuration `to_json` wrote; TtsKitError for bad JSON or an unknown field."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise TtsKitError(f"server configuration: not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise TtsKitError("server configuration: expected a JSON object of settings")
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise TtsKitError(f"server configuration: unknown setting(s) {', '.join(unknown)}")
        return cls(**data)


__all__ = ["ARCHITECTURES", "ServeConfig"]
