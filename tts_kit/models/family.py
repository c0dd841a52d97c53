"""Model families and their engines: `make_engine` opens a model (`tts_kit.models.resolve`)
and gives the engine of its family.
"""

from __future__ import annotations

from typing import Any

from tts_kit.core.errors import BundleError, TtsKitError
from tts_kit.models import resolve
from tts_kit.models.piper.bundle import PiperBundle
from tts_kit.models.piper.engine import PiperEngine
from tts_kit.models.resolve import AnyBundle
from tts_kit.models.supertonic.engine import Engine

AnyEngine = Engine | PiperEngine


def resolve_speaker(voice: Any, fallback: AnyBundle) -> tuple[AnyBundle, str]:
    """The model that speaks in a notebook's players: ``voice`` when it opens, else
    ``fallback``, with a banner line saying why.

    Example:
        >>> resolve_speaker(None, "the fallback bundle")
        ('the fallback bundle', 'speaks in the players below')
    """
    if not voice:
        return fallback, "speaks in the players below"
    try:
        return resolve.open_model(voice), "speaks in the players below"
    except BundleError as exc:  # the voice extra is not installed: the bundle speaks
        return fallback, f"speaks in the players below ({exc})"


def make_engine(model: Any = None, **kwargs: Any) -> AnyEngine:
    """An engine of its family for ``model`` (anything `open_model` takes), given ``kwargs``.

    Example:
        >>> make_engine(loading="paged").loading
        'paged'
    """
    bundle = resolve.open_model(model)
    if isinstance(bundle, PiperBundle):
        return PiperEngine(bundle, **kwargs)
    piper_only = sorted({"noise_scale", "noise_w"} & set(kwargs))
    if piper_only:
        raise TtsKitError(f"{', '.join(piper_only)} apply to Piper voices only; a Supertonic "
                         "bundle's noise is its seed")
    return Engine(bundle, **kwargs)


def model_ref(bundle: AnyBundle) -> str:
    """What reopens ``bundle`` in another process (a trial's child, a Dask worker).

    Example:
        >>> model_ref(resolve.open_model()) == str(resolve.open_model().path)
        True
    """
    return bundle.ref()


def model_label(bundle: AnyBundle) -> str:
    """Which model speaks, in a few words, for banners and CLI output.

    Example:
        >>> model_label(resolve.open_model())
        'Supertonic stand-in (tiny)'
    """
    return bundle.label


__all__ = ["AnyEngine", "make_engine", "model_label", "model_ref", "resolve_speaker"]
