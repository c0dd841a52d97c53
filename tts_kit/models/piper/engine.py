"""Running a Piper voice, `PiperEngine` on `EngineBase`: normalised text -> espeak-ng phonemes
per sentence -> the seeded graph (`seeded_graph`: its noise made inputs, cached), each
sentence's noise drawn from ``seed`` and its index."""

from __future__ import annotations

import functools
import hashlib
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tts_kit.core import atomic
from tts_kit.core.digests import file_sha256
from tts_kit.core.errors import BundleError, TtsKitError
from tts_kit.core.settings import settings as current_settings
from tts_kit.models.engine_base import EngineBase, Plan
from tts_kit.models.piper.bundle import MAX_SPEED, MIN_SPEED, OUTPUT, STAGE, PiperBundle
from tts_kit.models.synthesis import (
    SynthesisConfig,
    SynthesisResult,
    batch_seeds,
    batch_voices,
    check_number,
)

#: Frames of noise drawn per phoneme id at length_scale 1 (speech runs at 2-3); a draw too
#: short is drawn again, longer, with the same prefix.
FRAMES_PER_ID = 8
RETRY_FRAMES_PER_ID = 64
#: The noise inputs of the seeded graph (`seeded_graph`), in the graph's node order.
NOISE_PREFIX = "tts_kit_noise_"
#: Bump when `seeded_graph`'s rewrite changes (part of the cache key).
SEEDED_VERSION = 2


class PiperEngine(EngineBase):
    """Runs a Piper voice (a `PiperBundle` or what it opens) with every engine's surface;
    ``noise_scale`` and ``noise_w`` are the prior's and the duration predictor's noise (None:
    the voice's config; 0: none, every seed gives the same audio); ``options`` are
    `EngineBase`'s, the one stage being ``voice``.

    Of a `SynthesisConfig`, ``noise`` is refused; ``steps``, ``max_chunk_chars``,
    ``first_chunk_chars`` and ``order`` change nothing (sentences are the chunks), so one
    workload serves every family; ``speed`` divides the voice's ``length_scale``.

    Example:
        >>> e = PiperEngine("piper:joe-us", loading="paged")  # doctest: +SKIP
        >>> a, b = (e.synthesize("Hi.", seed=3).wav for _ in range(2))  # doctest: +SKIP
        >>> bool((a == b).all())  # doctest: +SKIP
        True
    """

    family = "piper"
    normalize_languages = ("en",)
    _outputs = [OUTPUT]

    def __init__(self, bundle: PiperBundle | str | os.PathLike[str], *,
                 noise_scale: float | None = None, noise_w: float | None = None,
                 **options: Any):
        bundle = bundle if isinstance(bundle, PiperBundle) else PiperBundle(bundle)
        inf = bundle.inference
        for name, value in (("noise_scale", noise_scale), ("noise_w", noise_w)):
            if value is not None:
                check_number(name, value, 0.0, 2.0)
        self.noise_scale = inf["noise_scale"] if noise_scale is None else float(noise_scale)
        self.noise_w = inf["noise_w"] if noise_w is None else float(noise_w)
        from piper.phoneme_ids import phonemes_to_ids

        with _PHONEMIZE_LOCK:
            self._phonemizer = _phonemizer()
        self._to_ids = phonemes_to_ids
        self._noise_inputs: list[tuple[str, tuple[int, ...]]] = []
        if set(options.get("stage_presets") or {}) <= {STAGE}:  # else the base refuses them
            self._graph = seeded_graph(bundle.model_file)
        super().__init__(bundle, **options)  # loads the sessions now, under resident

    # -- sessions ---------------------------------------------------------------------

    def _stages_phrase(self) -> str:
        return f"a Piper voice has one stage, '{STAGE}'"

    def _graph_path(self, stage: str) -> Path:
        return self._graph

    def _session_made(self, stage: str, sess: Any) -> None:
        self._noise_inputs = [
            (i.name, tuple(d if isinstance(d, int) else -1 for d in i.shape))
            for i in sess.get_inputs() if i.name.startswith(NOISE_PREFIX)
        ]

    # -- the request ------------------------------------------------------------------

    def phonemize(self, text: str) -> list[list[str]]:
        """piper-tts' phonemes of ``text``, one list per sentence (no normalisation here).

        Example:
            >>> PiperEngine("piper:joe-us").phonemize("Hi.")  # doctest: +SKIP
            [['h', 'ˈ', 'a', 'ɪ', '.']]
        """
        voice = self.bundle.config["espeak"]["voice"]
        clusters = self.bundle.config.get("vowel_clusters")
        try:
            with _PHONEMIZE_LOCK:  # espeak-ng is a process-wide C library
                return [p for p in self._phonemizer.phonemize(
                    voice, text,
                    vowel_clusters={tuple(c) for c in clusters} if clusters else None,
                ) if p]
        except RuntimeError as exc:  # espeak-ng's "Failed to set voice: xx"
            if "set voice" not in str(exc):
                raise
            raise TtsKitError(
                f"{self.bundle.label}: its config's espeak.voice {voice!r} is not a voice "
                "espeak-ng knows (e.g. en-us, de, fr-fr); fix the voice's .onnx.json") from None

    def _check(self, cfg: SynthesisConfig) -> SynthesisConfig:
        if cfg.lang != self.bundle.language:
            raise TtsKitError(f"{self.bundle.label} speaks '{self.bundle.language}', not "
                             f"'{cfg.lang}'; use lang='{self.bundle.language}'")
        cfg = cfg.replace(voice=self.bundle.default_voice if cfg.voice is None else cfg.voice,
                          steps=1 if cfg.steps is None else cfg.steps,
                          speed=1.0 if cfg.speed is None else cfg.speed)
        self.bundle.speaker_id(cfg.voice)
        check_number("steps", cfg.steps, 1, 100, integer=True)
        check_number("speed", cfg.speed, MIN_SPEED, MAX_SPEED)
        if cfg.noise is not None:
            raise TtsKitError(f"{self.bundle.label} draws its noise from the seed (scaled by "
                              "noise_scale and noise_w); give seed, not noise")
        return cfg

    def _plan(self, text: str, cfg: SynthesisConfig) -> Plan:
        normalized = self._normalized(text, cfg.lang)
        sentences = self.phonemize(normalized)
        if not sentences:
            raise TtsKitError(f"the phonemiser found nothing to say in {normalized[:40]!r}; "
                              "give words")
        base = int(np.random.SeedSequence().entropy % 2**63) if cfg.seed is None else cfg.seed
        sid = self.bundle.speaker_id(cfg.voice)
        return Plan(normalized, ["".join(p) for p in sentences], (sentences, sid, base),
                    seed=cfg.seed)

    def _render(self, plan: Plan, cfg: SynthesisConfig
                ) -> Iterator[tuple[np.ndarray, dict[str, float]]]:
        with self._loader.session(STAGE):  # one load for the whole request under paged
            yield from super()._render(plan, cfg)

    def _render_chunk(self, plan: Plan, cfg: SynthesisConfig, k: int
                      ) -> tuple[np.ndarray, dict[str, float]]:
        sentences, sid, base = plan.work
        t0 = time.perf_counter()
        ids = self._to_ids(sentences[k], self.bundle.config["phoneme_id_map"])
        timings: dict[str, float] = {"text": time.perf_counter() - t0}
        wav = self._sentence(ids, cfg.speed, sid, (base, k), timings)
        timings["total"] = time.perf_counter() - t0
        return wav, timings

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
        """Synthesise several texts one after another, as `Engine.synthesize_batch` does
        (``voices``: one speaker for all or one per text, None: the default; ``steps`` and
        ``max_chunk_chars`` are ignored): one `SynthesisResult` per text.

        Example:
            >>> PiperEngine("piper:joe-us").synthesize_batch(["Hi.", "Bye."])  # doctest: +SKIP
        """
        voice_list = batch_voices(texts, self.bundle.default_voice if voices is None
                                  else voices)
        cfgs = [self.config(lang=lang, voice=v, steps=steps, speed=speed) for v in voice_list]
        seeds = batch_seeds(len(texts), seed)
        t_start = time.perf_counter()
        plans = [self._plan(t, c.replace(seed=s)) for t, c, s in zip(texts, cfgs, seeds)]
        timings: dict[str, float] = {"text": time.perf_counter() - t_start}
        wavs = []
        with self._loader.session(STAGE):  # one load for the whole call under paged
            for plan, c in zip(plans, cfgs):
                parts = []
                for wav, part in self._render(plan, c):
                    timings["text"] += part["text"]
                    timings[STAGE] = timings.get(STAGE, 0.0) + part.get(STAGE, 0.0)
                    parts.append(wav)
                wavs.append(np.concatenate(parts))
        timings["total"] = time.perf_counter() - t_start
        return [SynthesisResult(wav=wav, sample_rate=self.bundle.sample_rate, text=p.text,
                                chunks=p.chunks, timings=dict(timings), voice=c.voice or "",
                                seed=s)
                for wav, p, c, s in zip(wavs, plans, cfgs, seeds)]

    def _sentence(self, ids: list[int], speed: float, sid: int | None,
                  key: tuple[int, int], timings: dict[str, float]) -> np.ndarray:
        length_scale = self.bundle.inference["length_scale"] / float(speed)
        scales = np.array([self.noise_scale, length_scale, self.noise_w], np.float32)
        feeds = {"input": np.array([ids], np.int64),
                 "input_lengths": np.array([len(ids)], np.int64), "scales": scales}
        if self.bundle.has_sid:
            feeds["sid"] = np.array([0 if sid is None else sid], np.int64)
        for per_id in (FRAMES_PER_ID, RETRY_FRAMES_PER_ID):
            t0 = time.perf_counter()
            with self._loader.session(STAGE):  # made now: the noise shapes are its inputs
                n = math.ceil(per_id * len(ids) * max(float(scales[1]), 0.1)) + 16
                for j, (name, shape) in enumerate(self._noise_inputs):
                    rng = np.random.default_rng([*key, j])
                    # Drawn length-major, so a longer draw starts with the same values.
                    draw = rng.standard_normal((n, *shape[1:-1]), np.float32)
                    feeds[name] = np.moveaxis(draw, 0, -1)[None]
                timings[STAGE] = timings.get(STAGE, 0.0) + time.perf_counter() - t0
                try:
                    wav = self._run(STAGE, feeds, timings).reshape(-1)
                except Exception:  # a draw too short fails to broadcast (ORT has no one class)
                    if per_id == RETRY_FRAMES_PER_ID:
                        raise
                    continue
            break
        if not np.isfinite(wav).all():
            raise TtsKitError("the voice produced NaN or infinite samples; its graph is "
                             "damaged: re-install it")
        return np.clip(wav, -1.0, 1.0)


_PHONEMIZE_LOCK = threading.Lock()


@functools.cache
def _phonemizer() -> Any:
    """The process's one espeak-ng phonemiser (called under `_PHONEMIZE_LOCK`)."""
    from piper.phonemize_espeak import ESPEAK_DATA_DIR, EspeakPhonemizer

    return EspeakPhonemizer(ESPEAK_DATA_DIR)


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


def seeded_graph(path: str | os.PathLike[str]) -> Path:
    """A copy of a Piper graph whose ``RandomNormalLike`` draws are slices of inputs
    (``tts_kit_noise_K``), so the caller decides the noise; built once per graph content,
    in a child process, in ``$TTS_KIT_CACHE_DIR/piper``.

    Example:
        >>> seeded_graph("voice/en_US-joe-medium.onnx")  # doctest: +SKIP
        PosixPath('~/.cache/tts_kit/piper/5a1.../seeded.onnx')
    """
    src = Path(path).resolve()
    key = hashlib.sha256(f"{SEEDED_VERSION}\0{file_sha256(src)}".encode()).hexdigest()[:32]
    target = current_settings().tts_kit_cache / "piper" / key
    out = target / "seeded.onnx"
    with _SEEDED_LOCK:
        if out.is_file():
            return out
        target.parent.mkdir(parents=True, exist_ok=True)
        # Processes starting on a cold cache at once (a server's workers) build it once.
        with atomic.build_lock(atomic.lock_beside(target.parent)):
            if out.is_file():
                return out
            atomic.sweep_stale(target.parent)
            with atomic.atomic_dir(target) as work:  # a child process rewrites the graph
                proc = subprocess.run([sys.executable, "-c", _REWRITE, str(src),
                                       str(work / out.name), NOISE_PREFIX],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                    raise BundleError(f"{src.name}: cannot make its noise an input ({last})")
    return out


__all__ = ["FRAMES_PER_ID", "NOISE_PREFIX", "RETRY_FRAMES_PER_ID", "SEEDED_VERSION", "PiperEngine",
           "seeded_graph"]
