"""The environment tts_kit reads, read once into one `Settings` object (the table:
docs/guide.md, "Environment variables"); nothing else reads ``os.environ`` for these.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: The variables `Settings.from_env` reads, field name -> variable.
VARIABLES: dict[str, str] = {
    "model_dir": "TTS_KIT_MODEL_DIR",
    "standin_scale": "TTS_KIT_STANDIN_SCALE",
    "cache_dir": "TTS_KIT_CACHE_DIR",
    "external_cache_mb": "TTS_KIT_EXTERNAL_CACHE_MB",
    "cpus": "TTS_KIT_CPUS",
    "cgroup_root": "TTS_KIT_CGROUP_ROOT",
    "report_notebook": "TTS_KIT_REPORT_NOTEBOOK",
    "api_key": "TTS_KIT_API_KEY",
    "serve_lab": "TTS_KIT_SERVE_LAB",
    "supertonic_cache_dir": "SUPERTONIC_CACHE_DIR",
}


@dataclass(frozen=True)
class Settings:
    """What the environment says; an unset or empty variable is None. Values are checked
    where used, so a bad one fails only its command.

    Example:
        >>> Settings(model_dir="piper:joe-us").model_dir
        'piper:joe-us'
    """

    model_dir: str | None = None
    standin_scale: str | None = None
    cache_dir: str | None = None
    external_cache_mb: str | None = None
    cpus: str | None = None
    cgroup_root: str | None = None
    report_notebook: str | None = None
    api_key: str | None = None
    serve_lab: str | None = None
    supertonic_cache_dir: str | None = None
    hf_hub_offline: bool = False
    home: Path = field(default_factory=Path.home)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings ``environ`` (default: this process's environment) holds.

        Example:
            >>> Settings.from_env({"HF_HUB_OFFLINE": "1"}).hf_hub_offline
            True
        """
        env = os.environ if environ is None else environ
        values = {name: env.get(var) or None for name, var in VARIABLES.items()}
        offline = (env.get("HF_HUB_OFFLINE") or "").strip().lower() in ("1", "true", "yes")
        home = Path(env["HOME"]) if env.get("HOME") else Path.home()
        return cls(**values, hf_hub_offline=offline, home=home)

    @property
    def tts_kit_cache(self) -> Path:
        """tts_kit's cache: ``$TTS_KIT_CACHE_DIR``, else ``~/.cache/tts_kit``.

        Example:
            >>> str(Settings(cache_dir="/tmp/c").tts_kit_cache)
            '/tmp/c'
        """
        if self.cache_dir:
            return Path(self.cache_dir).expanduser()
        return self.home / ".cache" / "tts_kit"

    @property
    def official_cache(self) -> Path:
        """The official package's cache: ``$SUPERTONIC_CACHE_DIR``, else ``~/.cache/supertonic3``

        Example:
            >>> str(Settings(home=Path("/h")).official_cache)
            '/h/.cache/supertonic3'
        """
        if self.supertonic_cache_dir:
            return Path(self.supertonic_cache_dir).expanduser()
        return self.home / ".cache" / "supertonic3"


@functools.lru_cache(maxsize=1)
def settings() -> Settings:
    """This process's settings: read from the environment on first use, then kept.

    Example:
        >>> settings() is settings()
        True
    """
    return Settings.from_env()


def reset_settings() -> None:
    """Forget the kept settings: the next `settings()` reads the environment again.

    Example:
        >>> reset_settings(); settings() is settings()
        True
    """
    settings.cache_clear()


__all__ = ["VARIABLES", "Settings", "reset_settings", "settings"]
