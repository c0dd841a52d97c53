"""What a speech model is, whatever its family: the `SpeechModel` protocol and its `Capabilities`.

Everything above ``tts_kit.models`` asks a model what it can do (``model.capabilities``),
what it is called (``model.label``) and how another process reopens it (``model.ref()``),
never which family it is. A family (``supertonic/``, ``piper/``) provides a class that
satisfies `SpeechModel`; adding a family touches ``tts_kit/models/`` only.

Example:
    >>> from tts_kit.models.base import SpeechModel
    >>> from tts_kit.models.family import open_model
    >>> model = open_model()
    >>> isinstance(model, SpeechModel), model.capabilities.flow_steps
    (True, True)
    >>> model.label
    'Supertonic stand-in (tiny)'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Capabilities:
    """What a model can do, so callers choose by ability, never by family name.

    Example:
        >>> Capabilities(flow_steps=True).official_reference
        False
    """

    #: Synthesis takes a number of flow-matching steps (``steps`` means something).
    flow_steps: bool = False
    #: The caller may hand in the initial noise (an array or a seeded draw) per chunk.
    caller_noise: bool = False
    #: Noise is scaled by ``noise_scale`` / ``noise_w`` (VITS-style voices).
    noise_scales: bool = False
    #: An official reference implementation runs this model (``verify --against official``).
    official_reference: bool = False
    #: Workers on other machines can find the same model by its fingerprint (Dask sweeps).
    distributed: bool = False
    #: Several texts can be synthesised in one batched call (``batch_size`` > 1).
    batching: bool = False
    #: The model is a tts_kit stand-in with random weights: its audio is noise.
    standin: bool = False


@runtime_checkable
class SpeechModel(Protocol):
    """A model opened and checked against its family's contract.

    Both families (`tts_kit.models.supertonic.bundle.Bundle`,
    `tts_kit.models.piper.voice.PiperBundle`) satisfy it; a contract test runs every
    family through the same checks.
    """

    family: str
    path: Path

    @property
    def label(self) -> str:
        """Which model speaks, in a few words, for banners and output."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """What the model can do."""
        ...

    @property
    def stages(self) -> Any:
        """Its graphs by stage name, in pipeline order."""
        ...

    @property
    def sample_rate(self) -> int:
        """Output samples per second."""
        ...

    @property
    def voices(self) -> list[str]:
        """Voice names ``synthesize(voice=...)`` accepts."""
        ...

    @property
    def languages(self) -> list[str]:
        """Language codes ``synthesize(lang=...)`` accepts."""
        ...

    def stage_path(self, stage: str) -> Path:
        """The graph file of ``stage``."""
        ...

    def ref(self) -> str:
        """What reopens this model in another process (a trial's child, a worker)."""
        ...

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description for reports."""
        ...


__all__ = ["Capabilities", "SpeechModel"]
