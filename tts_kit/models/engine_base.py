"""`EngineBase`, the engine every family builds on: sessions, load policy, stage hooks, the
shared request checks and streaming; a family writes ``_check``, ``_plan``, ``_render`` and
``_render_chunk`` (the same audio as ``_render``'s ``k``-th chunk, on any process)."""

from __future__ import annotations

import contextlib
import functools
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tts_kit.core.errors import TtsKitError
from tts_kit.models.synthesis import (
    MAX_TEXT_CHARS,
    AudioChunk,
    StageHook,
    SynthesisConfig,
    SynthesisResult,
    SynthesisStream,
)
from tts_kit.runtime.loading import (
    LoadPolicy,
    StageCosts,
    StageLoader,
    create_session,
    resident_costs_mb,
)
from tts_kit.runtime.sessions import SessionPreset, get_preset


@dataclass
class Plan:
    """A request cut into chunks, before any audio: what ``_plan`` returns."""

    text: str  # the normalised text
    chunks: list[str]  # each chunk's text, as `AudioChunk.text` will say
    work: Any  # what ``_render`` needs per chunk (the family's own)
    seed: int | None = None  # the noise seed the stream reports
    config: SynthesisConfig | None = None  # the checked config (set by `EngineBase.plan`)


def _read_only(a: np.ndarray) -> np.ndarray:
    view = np.asarray(a).view()
    view.flags.writeable = False
    return view


class EngineBase:
    """Loader, stage hooks, checks and streaming for a model of any family.

    Args:
        bundle: the opened model (a `tts_kit.models.base.SpeechModel`).
        preset: session options for every stage (default ``supertonic-default``).
        stage_presets: per-stage overrides, e.g. ``{"vocoder": other_preset}``.
        loading: ``resident`` (default), ``paged`` or ``budget:MB`` (with options), or a
            `LoadPolicy`.
        normalize: spell out numbers, dates, acronyms ... before synthesis (ko, en).
        stage_costs_mb: measured resident MB per stage for the ``budget`` policy (stages
            left out are estimated from file sizes).

    Example:
        >>> from tts_kit import Engine
        >>> Engine(loading="paged").loading
        'paged'
    """

    #: The family's name (``supertonic``, ``piper``, ...).
    family = ""
    #: Seconds of silence that lead every chunk after the first.
    chunk_pause_s = 0.0
    #: Languages whose normalisers are built with the engine (not on the first request).
    normalize_languages: tuple[str, ...] = ("en", "ko")
    _outputs: list[str] | None = None  # the output a run returns first (None: the graph's)
    # Replaced, never mutated: a hook that removes itself does not disturb the loop.
    _stage_hooks: tuple[StageHook, ...] = ()

    def __init__(
        self,
        bundle: Any,
        *,
        preset: SessionPreset | None = None,
        stage_presets: dict[str, SessionPreset] | None = None,
        loading: str | LoadPolicy = "resident",
        normalize: bool = True,
        stage_costs_mb: dict[str, float] | StageCosts | None = None,
    ):
        self.bundle = bundle
        self.preset = preset or get_preset("supertonic-default")
        self.stage_presets = dict(stage_presets or {})
        self.stages: tuple[str, ...] = tuple(bundle.stages)
        unknown = sorted(set(self.stage_presets) - set(self.stages))
        if unknown:
            raise TtsKitError(f"unknown stage(s) {unknown}; {self._stages_phrase()}")
        self.normalize = normalize
        if normalize:  # built now, so the first request's latency is the model's own
            from tts_kit.text import normalize as normalize_text
            from tts_kit.text.charset import unsupported_characters  # noqa: F401

            for lang in self.normalize_languages:
                normalize_text("1", lang)
        self._input_types: dict[str, dict[str, np.dtype]] = {}
        self._policy = LoadPolicy.parse(loading)
        self._spec = loading if isinstance(loading, str) else self._policy.spec
        costs = resident_costs_mb(stage_costs_mb, bundle)
        self._loader = StageLoader(self._make_session, self._policy, costs, stages=self.stages)

    # -- sessions ---------------------------------------------------------------------

    def _stages_phrase(self) -> str:
        return f"stages are {list(self.stages)}"

    def preset_for(self, stage: str) -> SessionPreset:
        """The preset a stage's session is built with."""
        return self.stage_presets.get(stage, self.preset)

    def _graph_path(self, stage: str) -> Path:
        """The graph file a stage's session runs (a family may run a rewritten copy)."""
        return self.bundle.stage_path(stage)

    def _session_made(self, stage: str, sess: Any) -> None:
        """Called with each new session (a family reads its inputs here)."""

    def _make_session(self, stage: str) -> Any:
        preset = self.preset_for(stage)
        sess = create_session(self._graph_path(stage), sess_options=preset.session_options(),
                              providers=preset.provider_list(), policy=self._policy)
        types = {"tensor(float16)": np.float16, "tensor(float)": np.float32}
        self._input_types[stage] = {
            i.name: np.dtype(types[i.type]) for i in sess.get_inputs() if i.type in types
        }
        self._session_made(stage, sess)
        return sess

    def _run(self, stage: str, feeds: Mapping[str, np.ndarray],
             timings: dict[str, float]) -> np.ndarray:
        given = feeds  # what stage hooks see: the pipeline's inputs, before the casts
        with self._loader.session(stage) as sess:
            t0 = time.perf_counter()
            cast = self._input_types.get(stage, {})
            feeds = {k: v.astype(cast[k], copy=False) if k in cast else v
                     for k, v in feeds.items()}
            out = sess.run(self._outputs, feeds)[0].astype(np.float32, copy=False)
            timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - t0
        if self._stage_hooks:
            view_feeds = {k: _read_only(v) for k, v in given.items()}
            view_out = _read_only(out)
            for hook in self._stage_hooks:
                hook(stage, view_feeds, view_out)
        return out

    # -- per-stage hook ---------------------------------------------------------------

    def add_stage_hook(self, fn: StageHook) -> Callable[[], None]:
        """Call ``fn(stage, feeds, output)`` after every stage run; returns its remover.

        ``feeds`` (before any FP16 cast) and ``output`` (float32) are read-only views; hooks
        run in the order added, once per run, outside ``timings``.

        Example:
            >>> from tts_kit import Engine
            >>> engine, seen = Engine(), []
            >>> remove = engine.add_stage_hook(lambda stage, feeds, out: seen.append(stage))
            >>> _ = engine.synthesize("Hi.", steps=2, seed=0)
            >>> print(*seen)
            duration_predictor text_encoder vector_estimator vector_estimator vocoder
        """
        if not callable(fn):
            raise TypeError(f"a stage hook must be callable, got {type(fn).__name__}")
        token = functools.partial(fn)  # a new object: the same fn added twice is two hooks
        self._stage_hooks = (*self._stage_hooks, token)

        def remove() -> None:
            self._stage_hooks = tuple(h for h in self._stage_hooks if h is not token)

        return remove

    def run_stage(self, stage: str, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """Run one stage on given inputs, as the pipeline does (load policy, input casts,
        hooks); returns its first output as float32.

        Example:
            >>> from tts_kit import Engine
            >>> Engine().run_stage("vocoder", {"latent": np.zeros((1, 144, 2), np.float32)}).shape
            (1, 6144)
        """
        if stage not in self.stages:
            raise TtsKitError(f"unknown stage '{stage}'; {self._stages_phrase()}")
        return self._run(stage, feeds, {})

    @property
    def loading(self) -> str:
        """The load policy, as given (``resident``, ``paged``, ``budget:300``)."""
        return self._spec

    @property
    def load_s(self) -> dict[str, float]:
        """Seconds each stage's most recent session creation took."""
        return dict(self._loader.load_s)

    @property
    def loaded_stages(self) -> list[str]:
        """Stages whose sessions are alive now."""
        return self._loader.loaded

    def close(self) -> None:
        """Release every session (the engine loads them again when used)."""
        self._loader.close()

    # -- the request ------------------------------------------------------------------

    def _normalized(self, text: str, lang: str) -> str:
        """``text`` checked (a string, not empty, not too long) and normalised for ``lang``."""
        if not isinstance(text, str):  # None is not "empty": it is not text at all
            raise TtsKitError(f"text must be a string, got {type(text).__name__}")
        if not text.strip():
            raise TtsKitError("text is empty; give at least one word to synthesise")
        if len(text) > MAX_TEXT_CHARS:
            raise TtsKitError(f"text has {len(text):,} characters, more than the "
                              f"{MAX_TEXT_CHARS:,} allowed in one request; split it into "
                              "several requests")
        from tts_kit.text import check_speakable, language_tags, normalize_for_speech

        text = language_tags(text, lang)  # another language's tags: refused, not misread
        if self.normalize and lang in ("ko", "en"):
            return normalize_for_speech(text, lang)
        check_speakable(text, text, lang, normalised=False)
        return text

    def _check(self, cfg: SynthesisConfig) -> SynthesisConfig:
        """The family's checks of ``cfg``; returns it with the model's defaults filled in."""
        raise NotImplementedError

    def _plan(self, text: str, cfg: SynthesisConfig) -> Plan:
        """The request's normalised text, cut into chunks."""
        raise NotImplementedError

    def _render(self, plan: Plan, cfg: SynthesisConfig
                ) -> Iterator[tuple[np.ndarray, dict[str, float]]]:
        """Each chunk's waveform (no pause) and its stage timings, in order: by default each
        chunk through `_render_chunk`."""
        return (self._render_chunk(plan, cfg, k) for k in range(len(plan.chunks)))

    def _render_chunk(self, plan: Plan, cfg: SynthesisConfig, k: int
                      ) -> tuple[np.ndarray, dict[str, float]]:
        """Chunk ``k`` of ``plan`` alone: the waveform (no pause) and its stage timings."""
        raise NotImplementedError

    def plan(self, text: str, config: SynthesisConfig | None = None,
             **overrides: Any) -> Plan:
        """``text`` checked, normalised and cut into chunks, before any audio: what
        `render_chunk` renders one chunk of (``stream``'s arguments).

        Example:
            >>> from tts_kit import Engine
            >>> Engine().plan("One sentence. And another one.", max_chunk_chars=15).chunks
            ['One sentence.', 'And', 'another one.']
        """
        cfg = self.config(config, **overrides)
        plan = self._plan(text, cfg)
        plan.config = cfg
        return plan

    def render_chunk(self, plan: Plan, k: int) -> AudioChunk:
        """Chunk ``k`` of ``plan`` (from `plan`) on its own: the same `AudioChunk` as
        ``stream``'s ``k``-th, pause included, whichever process renders it.

        Example:
            >>> from tts_kit import Engine
            >>> engine = Engine()
            >>> engine.render_chunk(engine.plan("One. Two.", steps=1, seed=0), 0).text
            'One. Two.'
        """
        if plan.config is None:
            raise TtsKitError("render_chunk takes a plan from engine.plan(...)")
        if not 0 <= k < len(plan.chunks):
            raise TtsKitError(f"chunk {k} is not in the plan's {len(plan.chunks)} chunk(s)")
        t0 = time.perf_counter()
        wav, timings = self._render_chunk(plan, plan.config, k)
        timings.setdefault("total", time.perf_counter() - t0)
        return self._audio_chunk(plan, k, wav, timings)

    def _audio_chunk(self, plan: Plan, k: int, wav: np.ndarray,
                     timings: dict[str, float]) -> AudioChunk:
        """Chunk ``k``'s waveform as the stream gives it (after a pause unless first)."""
        sr = self.bundle.sample_rate
        pause = np.zeros(int(self.chunk_pause_s * sr), np.float32)
        samples = wav if k == 0 or not pause.size else np.concatenate([pause, wav])
        return AudioChunk(samples=samples, sample_rate=sr, text=plan.chunks[k], index=k,
                          timings=timings, last=k == len(plan.chunks) - 1)

    def config(self, config: SynthesisConfig | None = None,
               **overrides: Any) -> SynthesisConfig:
        """The `SynthesisConfig` a call means (``config`` with ``overrides``), checked, with
        the model's defaults filled in.

        Example:
            >>> from tts_kit import Engine
            >>> Engine().config(seed=1).voice
            'M1'
        """
        cfg = SynthesisConfig.of(config, **overrides)
        cfg.check()
        return self._check(cfg)

    def stream(self, text: str, config: SynthesisConfig | None = None,
               **overrides: Any) -> SynthesisStream:
        """Synthesise ``text`` one chunk at a time: a `SynthesisStream` of `AudioChunk`.

        ``overrides`` change ``config``'s fields by name. A bad request raises at the call,
        before any audio; the chunks' ``samples`` joined are `synthesize`'s waveform.

        Example:
            >>> from tts_kit import Engine
            >>> parts = Engine().stream("One sentence. And another one.", max_chunk_chars=15)
            >>> [(p.index, p.text, p.last) for p in parts]
            [(0, 'One sentence.', False), (1, 'And', False), (2, 'another one.', True)]
        """
        return self._stream(text, self.config(config, **overrides))

    def _stream(self, text: str, cfg: SynthesisConfig) -> SynthesisStream:
        t0 = time.perf_counter()
        plan = self._plan(text, cfg)
        prep_s = time.perf_counter() - t0
        return SynthesisStream(plan.text, plan.chunks, self._chunks(plan, cfg, prep_s),
                               seed=plan.seed)

    def _chunks(self, plan: Plan, cfg: SynthesisConfig, prep_s: float) -> Iterator[AudioChunk]:
        with contextlib.closing(self._render(plan, cfg)) as parts:
            for k in range(len(plan.chunks)):
                t0 = time.perf_counter()
                wav, timings = next(parts)
                if k == 0:
                    timings["text"] = timings.get("text", 0.0) + prep_s
                timings["total"] = (timings.get("total", time.perf_counter() - t0)
                                    + (prep_s if k == 0 else 0.0))
                yield self._audio_chunk(plan, k, wav, timings)

    def synthesize(self, text: str, config: SynthesisConfig | None = None,
                   **overrides: Any) -> SynthesisResult:
        """Synthesise one text: `stream`'s chunks joined (the same arguments); stage timings
        summed, ``total`` the call's wall time.

        Example:
            >>> from tts_kit import Engine
            >>> from tts_kit.models.synthesis import SynthesisConfig
            >>> Engine().synthesize("Hi.", SynthesisConfig(steps=1, seed=0)).seed
            0
        """
        t0 = time.perf_counter()
        cfg = self.config(config, **overrides)
        parts = self._stream(text, cfg)
        chunks = list(parts)
        timings: Counter[str] = Counter()
        for part in chunks:
            timings.update(part.timings)
        timings["total"] = time.perf_counter() - t0
        return SynthesisResult(wav=np.concatenate([c.samples for c in chunks]),
                               sample_rate=self.bundle.sample_rate, text=parts.text,
                               chunks=parts.chunks, timings=dict(timings),
                               voice=cfg.voice or "", seed=parts.seed)


__all__ = ["EngineBase", "Plan"]
