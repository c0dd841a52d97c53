"""What a speech model is, whatever its family: the `SpeechModel` protocol and its
`Capabilities` (everything above ``tts_kit.models`` asks what a model can do, never its family).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tts_kit.core.digests import file_sha256
from tts_kit.core.errors import BundleError
from tts_kit.core.protoscan import ELEM_NAMES, FLOAT, FLOAT16, INT8, UINT8

if TYPE_CHECKING:
    from tts_kit.models.synthesis import SynthesisResult, SynthesisStream


@dataclass(frozen=True)
class StageInfo:
    """What a model knows about one of its graphs without loading it (any family)."""

    stage: str  # stage name (``duration_predictor``, ``text_encoder``, ... or Piper's ``voice``)
    path: Path  # absolute path of the ``.onnx`` file
    size_bytes: int  # file size on disk (external data files included)
    params: int  # number of weight elements (sum over initializers)
    precision: str  # dominant weight type: ``float32``, ``float16``, ``int8`` or ``mixed``


def precision_of(types: dict[int, int]) -> str:
    """The dominant weight type of a graph, from its element counts per ONNX type.

    Example:
        >>> precision_of({FLOAT: 95, FLOAT16: 5}), precision_of({FLOAT: 1, INT8: 1})
        ('float32', 'mixed')
    """
    names = {FLOAT: "float32", FLOAT16: "float16", INT8: "int8", UINT8: "int8"}
    top, n = max(types.items(), key=lambda kv: kv[1], default=(None, 0))
    if n / (sum(types.values()) or 1) < 0.9:
        return "mixed"
    return names.get(top, ELEM_NAMES.get(top, str(top)))


class StagedModel:
    """What a model derives from its ``stages`` (`StageInfo` by name), whatever its family.

    Example:
        >>> from tts_kit.models.resolve import open_model
        >>> model = open_model()
        >>> model.params == sum(s.params for s in model.stages.values())
        True
    """

    path: Path
    stages: dict[str, StageInfo]

    @property
    def params(self) -> int:
        """Weight elements over every graph."""
        return sum(s.params for s in self.stages.values())

    def stage_path(self, stage: str) -> Path:
        """The graph file of ``stage``."""
        return self.stages[stage].path

    def sha256(self, stage: str) -> str:
        """SHA-256 of one graph file (`file_sha256`: read once per version of the file)."""
        return file_sha256(self.stages[stage].path)

    def fingerprint(self) -> dict[str, str]:
        """SHA-256 of every graph, for reports (``{'vocoder': 'ab12...', ...}``)."""
        return {s: self.sha256(s) for s in self.stages}

    def describe_stages(self) -> dict[str, dict[str, Any]]:
        """Each graph's file (relative to ``path``), size, parameters, precision and SHA-256."""
        return {s: {"file": str(i.path.relative_to(self.path)), "size_bytes": i.size_bytes,
                    "params": i.params, "precision": i.precision, "sha256": self.sha256(s)}
                for s, i in self.stages.items()}


@dataclass(frozen=True)
class Capabilities:
    """What a model can do, so callers choose by ability, never by family name.

    Example:
        >>> Capabilities(flow_steps=True).official_reference
        False
    """

    flow_steps: bool = False  # ``steps`` (flow-matching steps) means something
    caller_noise: bool = False  # the caller may hand in the initial noise
    noise_scales: bool = False  # noise scaled by ``noise_scale`` / ``noise_w`` (VITS voices)
    official_reference: bool = False  # ``verify --against official`` runs
    distributed: bool = False  # workers elsewhere find the model by its fingerprint (Dask)
    batching: bool = False  # several texts in one batched call
    standin: bool = False  # a tts_kit stand-in: random weights, its audio is noise
    #: Each chunk of a plan renders on its own, in any process, to the same audio
    #: (`render_chunk`, the server's chunk-level scheduling).
    chunk_jobs: bool = False


@runtime_checkable
class SpeechModel(Protocol):
    """A model opened and checked against its family's contract.

    Example:
        >>> from tts_kit.models.resolve import open_model
        >>> isinstance(open_model(), SpeechModel)
        True
    """

    family: str
    path: Path
    label: str  # which model speaks, in a few words, for banners and output
    capabilities: Capabilities
    stages: Any  # its graphs by stage name, in pipeline order
    sample_rate: int
    voices: list[str]  # what ``synthesize(voice=...)`` accepts
    languages: list[str]  # what ``synthesize(lang=...)`` accepts

    def stage_path(self, stage: str) -> Path:
        """The graph file of ``stage``."""

    def ref(self) -> str:
        """What reopens this model in another process (a trial's child, a worker)."""

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description for reports."""


@runtime_checkable
class SpeechEngine(Protocol):
    """An engine running a `SpeechModel` (built on `tts_kit.models.engine_base.EngineBase`).

    Example:
        >>> from tts_kit.models.family import make_engine
        >>> isinstance(make_engine(), SpeechEngine)
        True
    """

    bundle: Any
    loading: str  # the load policy, as given

    def add_stage_hook(self, fn: Callable[..., object]) -> Callable[[], None]:
        """Call ``fn(stage, feeds, output)`` after every stage run; returns its remover."""

    def run_stage(self, stage: str, feeds: dict[str, Any]) -> Any:
        """Run one stage on given inputs; returns its first output."""

    def stream(self, text: str, *args: Any, **kwargs: Any) -> SynthesisStream:
        """Synthesise ``text`` chunk by chunk."""

    def synthesize(self, text: str, *args: Any, **kwargs: Any) -> SynthesisResult:
        """Synthesise ``text`` whole."""

    def synthesize_batch(self, texts: list[str], *args: Any, **kwargs: Any) -> list[Any]:
        """Synthesise several texts."""

    def close(self) -> None:
        """Release every session."""


__all__ = ["BundleError", "Capabilities", "SpeechEngine", "SpeechModel", "StageInfo", "StagedModel",
           "precision_of"]
