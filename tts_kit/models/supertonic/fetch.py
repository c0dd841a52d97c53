"""Download the real Supertonic model from its hub, at the revision the official package
(v1.3.1) pins; validated as a `Bundle` before it is renamed into place."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

from tts_kit.core.atomic import atomic_dir
from tts_kit.core.errors import TtsKitError
from tts_kit.core.settings import settings as current_settings

#: model name -> (hub repository, pinned commit)
MODELS: dict[str, tuple[str, str]] = {
    "supertonic-3": ("Supertone/supertonic-3", "724fb5abbf5502583fb520898d45929e62f02c0b"),
    "supertonic-2": ("Supertone/supertonic-2", "75e6727618a02f323c720cba9478152d4bc16ca4"),
}


class FetchError(TtsKitError):
    """The model could not be downloaded (offline, hub error, or target not empty)."""


def _hub_reachable(timeout_s: float = 3.0) -> bool:
    if current_settings().hf_hub_offline:
        return False
    from huggingface_hub import constants

    host = urlparse(constants.ENDPOINT).hostname or ""
    try:
        with socket.create_connection((host, 443), timeout=timeout_s):
            return True
    except OSError:
        return False


def fetch_model(model: str = "supertonic-3", dest: str | os.PathLike[str] | None = None) -> Path:
    """Download ``model`` into ``dest`` (default: the official package's cache directory).

    Example:
        >>> fetch_model("supertonic-3", "models/supertonic-3")  # doctest: +SKIP
        PosixPath('models/supertonic-3')
    """
    if model not in MODELS:
        raise FetchError(f"unknown model '{model}'; choose one of: {', '.join(MODELS)}")
    s = current_settings()
    if dest or s.supertonic_cache_dir:
        target = Path(dest or s.supertonic_cache_dir).expanduser()
    else:  # the official package's cache
        target = s.home / ".cache" / model.replace("-", "")
    if target.exists() and any(target.iterdir()):
        raise FetchError(f"{target} already exists and is not empty; pass an empty or new --dir")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise FetchError("huggingface_hub is not installed: pip install 'tts_kit[hub]'") from None
    if not _hub_reachable():
        raise FetchError("the model hub is not reachable (offline?); use the stand-in instead "
                         "(`tts-kit standin DIR`, or run without --model), or copy a "
                         "downloaded bundle here and pass --model DIR")
    repo, revision = MODELS[model]
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_dir(target) as tmp:
            snapshot_download(repo_id=repo, revision=revision, local_dir=str(tmp))
            from tts_kit.models.supertonic.bundle import Bundle

            Bundle(tmp)  # refuse to install something that is not a valid bundle
    except Exception as exc:
        raise FetchError(f"download of {repo}@{revision[:12]} failed: {exc}") from None
    return target
