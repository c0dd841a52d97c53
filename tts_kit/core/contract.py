"""The Supertonic 2/3 bundle layout and tensor contract, as data, in one place so the loader,
engine and stand-in builder cannot drift apart (source: the assets' ``CONTRACT.md``).

Example:
    >>> STAGES[0], [t.name for t in GRAPHS["vocoder"].inputs]
    ('duration_predictor', ['latent'])
"""

from __future__ import annotations

from dataclasses import dataclass

#: The four graphs, in pipeline order.
STAGES: tuple[str, ...] = ("duration_predictor", "text_encoder", "vector_estimator", "vocoder")
#: Short stage names for narrow tables and labels.
STAGE_SHORT: dict[str, str] = {"duration_predictor": "DP", "text_encoder": "TE",
                               "vector_estimator": "VE", "vocoder": "voc"}

ONNX_DIR = "onnx"
VOICE_DIR = "voice_styles"
CONFIG_FILE = "onnx/tts.json"
INDEXER_FILE = "onnx/unicode_indexer.json"

#: Marker key written into the stand-in's ``tts.json``.
STANDIN_KEY = "tts_kit_standin"
#: Stand-in scales (`tts_kit.models.supertonic.standin`), smallest first.
STANDIN_SCALES: tuple[str, ...] = ("tiny", "medium", "full")
#: The scale users get when no model is found: the published size (realistic costs).
DEFAULT_STANDIN_SCALE = "full"

SAMPLE_RATE = 44100
BASE_CHUNK_SIZE = 512
CHUNK_COMPRESS_FACTOR = 6
LATENT_DIM = 24
#: Samples per latent frame (512 * 6) and latent channels (24 * 6).
FRAME_SAMPLES = BASE_CHUNK_SIZE * CHUNK_COMPRESS_FACTOR
LATENT_CHANNELS = LATENT_DIM * CHUNK_COMPRESS_FACTOR

STYLE_TTL_DIMS = (1, 50, 256)
STYLE_DP_DIMS = (1, 8, 16)

#: Languages the multilingual models accept (31 codes plus ``na``).
LANGUAGES: tuple[str, ...] = (
    "en", "ko", "ja", "ar", "bg", "cs", "da", "de", "el", "es", "et", "fi", "fr", "hi",
    "hr", "hu", "id", "it", "lt", "lv", "nl", "pl", "pt", "ro", "ru", "sk", "sl", "sv",
    "tr", "uk", "vi", "na",
)

#: The shipped session presets' names, in `tts_kit.runtime.sessions.PRESETS`' order (defined
#: there; named here so the CLI's help lists them without importing onnxruntime).
PRESET_NAMES: tuple[str, ...] = ("ort-default", "supertonic-default", "seed-2vcpu",
                                 "low-memory", "lean")
#: What a sweep measures unless told otherwise (`tts-kit tune`, `tts-kit report`,
#: `tts_kit.report.SweepSpec`): every preset, ONNX Runtime's defaults first as the baseline.
SWEEP_PRESETS: tuple[str, ...] = PRESET_NAMES

#: The language a text is read in when none is given: the CLI's synth and normalize and
#: the measurement workload share it.
DEFAULT_LANG = "en"

MIN_STEPS, MAX_STEPS = 1, 100
MIN_SPEED, MAX_SPEED = 0.7, 2.0
#: Flow steps when none are given: the official package's ``DEFAULT_TOTAL_STEPS`` (8), so
#: tts_kit's default figures are the work a deployed ``supertonic.TTS`` does.
DEFAULT_STEPS = 8
DEFAULT_SPEED = 1.05
CHUNK_CHARS = 300
CHUNK_CHARS_KO = 120  # upstream, in code points; tts_kit.text.chunk counts NFKD (300)
CHUNK_SILENCE_S = 0.3


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a graph."""

    name: str
    dtype: str  # as numpy spells it (``float32``, ``int64``)
    shape: tuple[str | int, ...]  # strings are dynamic axes (B, T, L), ints are fixed

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class GraphSpec:
    """The I/O contract of one stage."""

    stage: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]

    @property
    def path(self) -> str:
        """Path of the graph inside a bundle."""
        return f"{ONNX_DIR}/{self.stage}.onnx"


_f, _i = "float32", "int64"
_TEXT_IDS = TensorSpec("text_ids", _i, ("B", "T"))
_TEXT_MASK = TensorSpec("text_mask", _f, ("B", 1, "T"))
_STYLE_TTL = TensorSpec("style_ttl", _f, ("B", 50, 256))
_TEXT_EMB = TensorSpec("text_emb", _f, ("B", 256, "T"))
_LATENT = ("B", 144, "L")
GRAPHS: dict[str, GraphSpec] = {g.stage: g for g in (
    GraphSpec("duration_predictor",
              (_TEXT_IDS, TensorSpec("style_dp", _f, ("B", 8, 16)), _TEXT_MASK),
              (TensorSpec("duration", _f, ("B",)),)),
    GraphSpec("text_encoder", (_TEXT_IDS, _STYLE_TTL, _TEXT_MASK), (_TEXT_EMB,)),
    GraphSpec("vector_estimator",
              (TensorSpec("noisy_latent", _f, _LATENT), _TEXT_EMB, _STYLE_TTL,
               TensorSpec("latent_mask", _f, ("B", 1, "L")), _TEXT_MASK,
               TensorSpec("current_step", _f, ("B",)), TensorSpec("total_step", _f, ("B",))),
              (TensorSpec("denoised_latent", _f, _LATENT),)),
    GraphSpec("vocoder", (TensorSpec("latent", _f, _LATENT),),
              (TensorSpec("wav_tts", _f, ("B", "3072*L")),)),
)}


#: The precision recipes of a four-stage bundle (`tts_kit.precision.recipes.RECIPES`), each
#: in a line: data only, so the CLI lists them without importing onnxruntime (a test keeps
#: both in step). A model says which it has: `tts_kit.precision.recipes.recipes_for`.
RECIPE_DESCRIPTIONS: dict[str, str] = {
    "fp16": "all stages FP16",
    "int8": "all stages dynamic INT8 (MatMul, Conv, Gather weights)",
    "int8-dp32": "dynamic INT8, duration predictor kept FP32",
    "int8-pw": "pointwise convs rewritten as MatMul, then dynamic INT8 of MatMul/Gather only",
    "sherpa-int8": "sherpa-onnx's Supertonic recipe: DP and text encoder FP32; vector "
                   "estimator dynamic INT8 MatMul + INT8 conv weights (last 6 float); vocoder "
                   "static INT8 calibrated on the INT8 vector estimator's outputs (last 8 "
                   "convs float)",
}

#: The recipes of a one-graph voice (a VITS voice such as Piper's;
#: `tts_kit.precision.piper_conversion.PIPER_RECIPES`), each in a line.
VOICE_RECIPE_DESCRIPTIONS: dict[str, str] = {
    "fp16": "the graph FP16",
    "int8": "the graph dynamic INT8",
    "int8-dp32": "dynamic INT8, text encoder and duration predictor kept float",
    "int8-flow": "dynamic INT8 of the flow only; text encoder, duration predictor and decoder "
                 "kept float",
    "sherpa-int8": "sherpa-onnx's Piper recipe: ONNX Runtime's dynamic INT8 with its defaults "
                   "(per tensor, QUInt8 weights), nothing kept float",
}
