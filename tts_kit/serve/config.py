"""`ServeConfig`: everything a server needs, the ``tts-kit serve`` flags one to one, as JSON
for a server in another process."""

import functools
import json
import re
import socket
from dataclasses import asdict, dataclass
from typing import Any, get_args

from tts_kit.core.contract import PRESET_NAMES
from tts_kit.core.errors import TtsKitError
from tts_kit.core.validate import SERVE_FIELDS, serve_flag
from tts_kit.runtime.policy import LoadPolicy
from tts_kit.serve.backends import architectures
from tts_kit.serve.chunked import scheduling_modes
from tts_kit.serve.worker import WorkerConfig, load_lab

ORDERS = ("chunk", "stage")
#: 0 given for these means None ("no limit"; for max_chunk_chars the engine's own).
_ZERO_IS_NONE = ("limit_concurrency", "first_chunk_chars", "max_chunk_chars")
#: A language code: ``en``, ``pt-br``, ``zh_Hans`` (the model says which it speaks).
_LANG = re.compile(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*")


def _name(field: str, source: str | None) -> str:
    """A setting in an error: ``source: "max_rss_mb"``, or its flag (``--max-rss-mb``)."""
    flag = serve_flag(field)
    return "--" + flag.replace("_", "-") if flag and not source \
        else f'{source or "ServeConfig"}: "{field}"'


def _text(value: Any, name: str) -> str:
    """``value`` if it is text a server can use (no NUL, no lone surrogate); else one line."""
    if not isinstance(value, str):
        raise TtsKitError(f"{name} {str(value)[:40]}: give text, not {type(value).__name__}")
    if "\0" in value or value.encode("utf-8", "replace").decode() != value:
        raise TtsKitError(f"{name} {value[:40]!r}: a NUL or a lone surrogate in it; remove it")
    return value


def _check_host(host: str, name: str) -> None:
    """One-line `TtsKitError` unless a socket can bind ``host`` (a name is resolved)."""
    fix = "give one such as 127.0.0.1 or 0.0.0.0"
    try:  # '' would be every address: refused as no host
        family, *_, address = socket.getaddrinfo(host if host.strip() else "''", 0,
                                                 flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError, ValueError):
        raise TtsKitError(f"{name} {host[:60]!r}: not a host name or IP address; {fix}") from None
    try:
        with socket.socket(family) as probe:
            probe.bind(address)
    except OSError as exc:
        raise TtsKitError(f"{name} {host[:60]!r}: this machine cannot listen on it "
                          f"({exc.strerror}); {fix}, or an address of this machine") from None


@dataclass
class ServeConfig:
    """Everything `create_app` needs; the ``tts-kit serve`` flags map onto it one to one.

    Example:
        >>> ServeConfig(workers=2).architecture, ServeConfig().host
        ('workers', '127.0.0.1')
    """

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
    max_chunk_chars: int | None = 100  #: later chunks (0 or None: the engine's 300)
    order: str = "chunk"
    lang: str = "en"
    header_timeout_s: float = 10.0  #: for a connection's request headers
    body_timeout_s: float = 10.0  #: for a request's body (408 after)
    limit_concurrency: int | None = 64  #: connections at once; past it, 503 at once
    spinning: bool = False  #: ONNX Runtime's threads busy-wait between operators
    scheduling: str = "chunk"  #: ``request`` or ``chunk`` (`tts_kit.serve.chunked`)
    voice_map: str | None = None  #: ``alloy=F1,echo=M1``, over OpenAI's voice names

    def check(self, source: str | None = None) -> None:
        """One-line `TtsKitError` for a setting that cannot work (a wrong type, a number
        outside `tts_kit.core.validate.SERVE_FIELDS`, an unknown name, a host it cannot
        bind), named as ``source`` (``--config-json FILE``) says or as its flag."""
        load_lab()
        where = functools.partial(_name, source=source)
        for field, rule in SERVE_FIELDS.items():
            value = getattr(self, field)
            if value is None and type(None) in get_args(self.__dataclass_fields__[field].type):
                continue
            value = rule.check(value, where(field))
            setattr(self, field, None if value == 0 and field in _ZERO_IS_NONE else value)
        if not isinstance(self.spinning, bool):
            raise TtsKitError(f"{where('spinning')} {self.spinning!r}: give true or false")
        for field, choices in (("preset", PRESET_NAMES), ("architecture", architectures()),
                               ("scheduling", scheduling_modes()), ("order", ORDERS)):
            if _text(getattr(self, field), where(field)) not in choices:
                raise TtsKitError(f"{where(field)} {getattr(self, field)!r}: unknown {field}; "
                                  f"use one of: {', '.join(choices)}")
        # None: model discovery, 503 on a timeout, no key, OpenAI's voice names only
        for field in ("model", "fallback_wav", "api_key", "voice_map"):
            _text("" if getattr(self, field) is None else getattr(self, field), where(field))
        if not _LANG.fullmatch(_text(self.lang, where("lang"))):
            raise TtsKitError(f"{where('lang')} {self.lang[:20]!r}: give a language code "
                              "such as en or ko")
        try:
            LoadPolicy.parse(_text(self.loading, where("loading")))
        except TtsKitError as exc:
            raise TtsKitError(f"{where('loading')}: {exc}") from None
        _check_host(_text(self.host, where("host")), where("host"))
        if self.fallback_wav:
            import soundfile as sf

            try:
                sf.info(self.fallback_wav)
            except Exception as exc:
                raise TtsKitError(f"{where('fallback_wav')} {self.fallback_wav}: not a "
                                  f"readable audio file ({str(exc).splitlines()[0]}); give a "
                                  "WAV file") from None

    def worker_config(self) -> WorkerConfig:
        """What each worker builds its engine from (without ``threads``: its share of the
        usable cores, at least 1)."""
        from tts_kit.core.procfacts import usable_cores

        return WorkerConfig(model=self.model, preset=self.preset, loading=self.loading,
                            threads=self.threads or max(1, usable_cores() // self.workers),
                            order=self.order, first_chunk_chars=self.first_chunk_chars,
                            max_chunk_chars=self.max_chunk_chars, spinning=self.spinning)

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
        except (ValueError, RecursionError) as exc:
            raise TtsKitError(f"server configuration: not JSON ({exc})") from None
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> "ServeConfig":
        """The configuration in ``data`` (parsed JSON); TtsKitError for an unknown field.

        Example:
            >>> ServeConfig.from_dict({"workers": 2}).workers
            2
        """
        if not isinstance(data, dict):
            raise TtsKitError("server configuration: expected a JSON object of settings")
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise TtsKitError(f"server configuration: unknown setting(s) {str(unknown)[1:-1]}"
                              f"; the settings are: {', '.join(cls.__dataclass_fields__)}")
        return cls(**data)


__all__ = ["ServeConfig"]
