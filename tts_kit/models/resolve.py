"""The one way to open a model: a spec (an opened model, ``piper:NAME``, a directory or
``.onnx`` file, or None for discovery) in, the opened model and where it came from out.
"""

from __future__ import annotations

from typing import Any

from tts_kit.core.settings import Settings
from tts_kit.models.discovery import Location, locate
from tts_kit.models.piper.bundle import PiperBundle
from tts_kit.models.supertonic.bundle import Bundle

#: A model of either family.
AnyBundle = Bundle | PiperBundle

_OPENERS: dict[str, type] = {"supertonic": Bundle, "piper": PiperBundle}


def open_location(found: Location) -> AnyBundle:
    """Open (and check) the model `locate` found; what is wrong is a one-line `BundleError`.

    Example:
        >>> open_location(locate()).is_standin
        True
    """
    return _OPENERS[found.family](found.ref)


def resolve_model(model: Any = None, *, settings: Settings | None = None
                  ) -> tuple[AnyBundle, str]:
    """The model ``model`` names, opened and checked, and where it came from (for banners).

    Example:
        >>> resolve_model()[1]
        'stand-in (tiny)'
    """
    if isinstance(model, tuple(_OPENERS.values())):
        return model, "given"
    found = locate(model, settings=settings)
    return open_location(found), found.source


def open_model(model: Any = None, *, settings: Settings | None = None) -> AnyBundle:
    """The model ``model`` names, opened and checked (else a one-line `BundleError`).

    Example:
        >>> open_model().family
        'supertonic'
    """
    return resolve_model(model, settings=settings)[0]


__all__ = ["AnyBundle", "open_location", "open_model", "resolve_model"]
