"""The four-stage Supertonic pipeline on ONNX Runtime: `Engine` and `SynthesisResult`.

Text -> normalise (`tts_kit.text`) -> chunk -> ids and masks (`tts_kit.core.textproc`) ->
duration predictor -> text encoder -> N flow steps of the vector estimator ->
vocoder -> trim to the predicted duration -> chunks joined by 0.3 s of silence.

Session options and providers come in as a `SessionPreset` (one for all stages, with
per-stage overrides), and the load policy (`resident`, `paged`, `budget:MB`) as a
string, so tuning code plugs in without touching the engine.

Example:
    >>> from tts_kit import Engine
    >>> engine = Engine()                    # the discovered bundle (stand-in by default)
    >>> result = engine.synthesize("Hello there.", lang="en", voice="M1", seed=0)
    >>> result.sample_rate, round(result.duration_s, 2) > 0
    (44100, True)
"""

from __future__ import annotations

import io
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnxruntime as ort

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.core.textproc import encode
from tts_kit.models.supertonic.bundle import Bundle
from tts_kit.runtime.loading import (
    LoadPolicy,
    StageCosts,
    StageLoader,
    create_session,
    resident_costs_mb,
)
from tts_kit.runtime.sessions import SessionPreset

#: Hard cap on one request, as in the official package (no silent truncation anywhere).
MAX_TEXT_CHARS = 100_000
#: Ceiling on a predicted duration: seconds per character of the chunk, plus a margin.
#: Speech runs at 0.05-0.1 s per character (the slowest speed, 0.7, stays far below 1 s);
#: a duration above this comes from a broken graph, and would allocate noise for it.
MAX_SECONDS_PER_CHAR = 1.0
MAX_SECONDS_MARGIN = 2.0


def _is_seed(value: object) -> bool:
    """A noise seed: an integer >= 0 (numpy's too), not a bool."""
    return (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            and value >= 0)


#: ``noise(frames) -> array [B, LATENT_CHANNELS, max(frames)]``: the initial latent of one
#: batch of chunks, where ``frames[b]`` is item ``b``'s latent length. The engine zeroes
#: what lies past each item's length (the latent mask), as the official package does.
NoiseSource = Callable[[list[int]], np.ndarray]


class OfficialNoise:
    """Draws the initial latent as the official ``supertonic`` package does.

    The official engine calls ``np.random.randn(B, 144, L)`` on numpy's global legacy
    generator for each batch of chunks (``L``: the longest item's frames) and multiplies
    it by the latent mask. This source draws the same numbers from its own
    ``np.random.RandomState(seed)``, so ``np.random.seed(seed)`` before an official call
    and ``noise=OfficialNoise(seed)`` here feed both pipelines the same noise, batch by
    batch and chunk by chunk, without touching numpy's global state.

    Example:
        >>> a = OfficialNoise(0)([2, 3])
        >>> np.random.seed(0); b = np.random.randn(2, contract.LATENT_CHANNELS, 3)
        >>> a.shape, bool(np.array_equal(a, b.astype(np.float32)))
        ((2, 144, 3), True)
    """

    def __init__(self, seed: int):
        if not _is_seed(seed):
            raise TtsKitError(f"seed must be an integer >= 0, got {seed!r}")
        self.seed = int(seed)
        self._rs = np.random.RandomState(self.seed)

    def __call__(self, frames: list[int]) -> np.ndarray:
        shape = (len(frames), contract.LATENT_CHANNELS, max(frames))
        return self._rs.randn(*shape).astype(np.float32)


class FixedNoise:
    """A caller's initial latent, ``[B, 144, L]`` (or ``[144, L]`` for one item).

    Used for one batch of chunks (one round: texts that fit one chunk each); ``L`` must
    cover the longest item; a longer array is cut to the batch's length.

    Example:
        >>> FixedNoise(np.ones((144, 5), np.float32))([3]).shape
        (1, 144, 3)
    """

    def __init__(self, latent: np.ndarray):
        a = np.asarray(latent, np.float32)
        if a.ndim == 2:
            a = a[None]
        if a.ndim != 3 or a.shape[1] != contract.LATENT_CHANNELS:
            raise TtsKitError(
                f"noise must have shape [batch, {contract.LATENT_CHANNELS}, frames], got "
                f"{list(np.shape(latent))}"
            )
        self.latent = a
        self._used = False

    def __call__(self, frames: list[int]) -> np.ndarray:
        if self._used:
            raise TtsKitError("a noise array covers one batch of chunks, but the text was "
                             "split into several; give shorter texts or a noise source "
                             "(e.g. OfficialNoise(seed))")
        self._used = True
        want = (len(frames), contract.LATENT_CHANNELS, max(frames))
        if self.latent.shape[0] != want[0] or self.latent.shape[2] < want[2]:
            raise TtsKitError(f"noise has shape {list(self.latent.shape)}, the batch needs "
                             f"{list(want)} (or more frames)")
        return self.latent[:, :, : want[2]]


def _noise_source(noise: np.ndarray | NoiseSource | None) -> NoiseSource | None:
    if noise is None or callable(noise):
        return noise
    if isinstance(noise, (np.ndarray, list, tuple)):
        return FixedNoise(np.asarray(noise))
    raise TtsKitError(f"noise must be an array, a noise source (OfficialNoise(seed)) or None, "
                     f"got {type(noise).__name__}")


@dataclass
class SynthesisResult:
    """One synthesised utterance."""

    wav: np.ndarray
    """Mono waveform, float32, in [-1, 1]."""
    sample_rate: int
    """Samples per second (44100)."""
    text: str
    """The text the model read, after normalisation."""
    chunks: list[str] = field(default_factory=list)
    """The chunks the text was split into."""
    timings: dict[str, float] = field(default_factory=dict)
    """Wall seconds per stage (``duration_predictor`` ... ``vocoder``, ``text``, ``total``)."""
    voice: str = ""
    """Voice style name."""
    seed: int | None = None
    """Noise seed used (None: random)."""

    @property
    def duration_s(self) -> float:
        """Audio length in seconds."""
        return len(self.wav) / self.sample_rate

    @property
    def rtf(self) -> float:
        """Real-time factor: synthesis wall time / audio duration (lower is faster)."""
        return self.timings.get("total", 0.0) / max(self.duration_s, 1e-9)

    def wav_bytes(self, subtype: str = "PCM_16") -> bytes:
        """The audio as a WAV file in memory (no temporary file), via soundfile."""
        import soundfile as sf

        buf = io.BytesIO()
        sf.write(buf, self.wav, self.sample_rate, format="WAV", subtype=subtype)
        return buf.getvalue()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write a 16-bit mono WAV file."""
        Path(path).write_bytes(self.wav_bytes())


def _check_number(name: str, value: float, lo: float, hi: float, integer: bool = False) -> None:
    ok = isinstance(value, (int, np.integer)) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or not (lo <= value <= hi):
        kind = "an integer" if integer else "a number"
        raise TtsKitError(f"{name} must be {kind} in {lo:g}..{hi:g}, got {value!r}")


class Engine:
    """Runs a `Bundle` end to end.

    Args:
        bundle: a `Bundle`, a bundle directory, or None to discover one
            (see `tts_kit.models.supertonic.bundle.resolve_model_dir`).
        preset: session options and providers for every stage (default: the official
            package's settings, ``supertonic-default``).
        stage_presets: per-stage overrides, e.g. ``{"vocoder": other_preset}``.
        loading: ``resident`` (default), ``paged`` or ``budget:MB``, with options
            (``paged+notrim``, ``resident+ext``; see `tts_kit.runtime.loading`), or a `LoadPolicy`.
        normalize: spell out numbers, dates, acronyms ... before synthesis (ko, en).
        stage_costs_mb: measured resident MB per stage for the ``budget`` policy: a
            `tts_kit.runtime.loading.StageCosts` or ``{stage: MB}``; stages left out are estimated
            from their file sizes. A budget below the cheapest stage raises ValueError here.

    Example:
        >>> engine = Engine("standin-dir", loading="paged")  # doctest: +SKIP
        >>> engine.synthesize("안녕하세요.", lang="ko").duration_s  # doctest: +SKIP
        0.71
    """

    def __init__(
        self,
        bundle: Bundle | str | os.PathLike[str] | None = None,
        preset: SessionPreset | None = None,
        stage_presets: dict[str, SessionPreset] | None = None,
        loading: str | LoadPolicy = "resident",
        normalize: bool = True,
        stage_costs_mb: dict[str, float] | StageCosts | None = None,
    ):
        self.bundle = bundle if isinstance(bundle, Bundle) else Bundle.discover(bundle)
        self.preset = preset or _default_preset()
        self.stage_presets = dict(stage_presets or {})
        unknown = sorted(set(self.stage_presets) - set(contract.STAGES))
        if unknown:
            raise TtsKitError(f"unknown stage(s) {unknown}; stages are {list(contract.STAGES)}")
        self.normalize = normalize
        if normalize:
            # Build the normalisers now (imports, num2words, lexicon regexes: 150-250 ms
            # once per process), so the first request's latency is the model's own, not
            # a one-off set-up (the player showed "text 223 ms" on its first synthesis).
            from tts_kit.text import normalize as normalize_text
            from tts_kit.text.charset import unsupported_characters  # noqa: F401

            for lang in ("en", "ko"):
                normalize_text("1", lang)
        self._input_types: dict[str, dict[str, np.dtype]] = {}
        # Parsed once, here; the loader and every session creation get the object.
        self._policy = LoadPolicy.parse(loading)
        self._spec = loading if isinstance(loading, str) else self._policy.spec
        costs = resident_costs_mb(stage_costs_mb, self.bundle)
        self._loader = StageLoader(self._make_session, self._policy, costs)

    # -- sessions ---------------------------------------------------------------------

    def preset_for(self, stage: str) -> SessionPreset:
        """The preset a stage's session is built with."""
        return self.stage_presets.get(stage, self.preset)

    def _make_session(self, stage: str) -> ort.InferenceSession:
        preset = self.preset_for(stage)
        sess = create_session(
            self.bundle.stage_path(stage),
            sess_options=preset.session_options(),
            providers=preset.provider_list(),
            policy=self._policy,
        )
        types = {"tensor(float16)": np.float16, "tensor(float)": np.float32}
        self._input_types[stage] = {
            i.name: np.dtype(types[i.type]) for i in sess.get_inputs() if i.type in types
        }
        return sess

    def _run(self, stage: str, feeds: dict[str, np.ndarray], timings: dict[str, float]):
        given = feeds  # what stage hooks see: the pipeline's inputs, before the casts
        with self._loader.session(stage) as sess:
            t0 = time.perf_counter()
            cast = self._input_types.get(stage, {})
            feeds = {k: v.astype(cast[k], copy=False) if k in cast else v for k, v in feeds.items()}
            out = sess.run(None, feeds)[0].astype(np.float32, copy=False)
            timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - t0
        if self._stage_hooks:
            self._call_stage_hooks(stage, given, out)
        return out

    # -- per-stage hook ---------------------------------------------------------------

    # A tuple, replaced (never mutated) on add and remove, so a hook that removes itself
    # while being called does not disturb the loop over the others.
    _stage_hooks: tuple[StageHook, ...] = ()

    def add_stage_hook(self, fn: StageHook) -> Callable[[], None]:
        """Call ``fn(stage, feeds, output)`` after every stage run; returns its remover.

        ``stage`` is the stage name, ``feeds`` its inputs as the pipeline computed them
        (before any cast to an FP16 graph's input types) and ``output`` its first output
        as float32; both are read-only views, so copy what you keep. Hooks run in
        the order added, after the stage's time was taken (they do not count in
        ``timings``), once per run: every flow step of the vector estimator and every
        item of the vocoder is a run. The return value is ignored: a hook observes, it
        cannot change the audio; an exception in a hook propagates out of the synthesis
        call. Calling the remover twice is harmless.

        Example:
            >>> engine = Engine()
            >>> seen = []
            >>> remove = engine.add_stage_hook(lambda stage, feeds, out: seen.append(stage))
            >>> _ = engine.synthesize("Hi.", steps=2, seed=0)
            >>> remove()
            >>> print(*seen)
            duration_predictor text_encoder vector_estimator vector_estimator vocoder
        """
        if not callable(fn):
            raise TypeError(f"a stage hook must be callable, got {type(fn).__name__}")
        token = _HookEntry(fn)
        self._stage_hooks = (*self._stage_hooks, token)

        def remove() -> None:
            self._stage_hooks = tuple(h for h in self._stage_hooks if h is not token)

        return remove

    def run_stage(self, stage: str, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """Run one stage on given inputs, as the pipeline does; returns its first output.

        The session comes from the engine's load policy (loaded for this call under
        ``paged``), inputs are cast to the graph's float types, the output is float32,
        and stage hooks see the run. Lets callers replay recorded inputs on another
        bundle (`tts_kit.precision.fidelity` judges each converted stage this way).

        Example:
            >>> latent = np.zeros((1, contract.LATENT_CHANNELS, 2), np.float32)  # 2 frames
            >>> Engine().run_stage("vocoder", {"latent": latent}).shape
            (1, 6144)
        """
        if stage not in contract.STAGES:
            raise TtsKitError(f"unknown stage '{stage}'; stages are {list(contract.STAGES)}")
        return self._run(stage, feeds, {})

    def _call_stage_hooks(
        self, stage: str, feeds: dict[str, np.ndarray], out: np.ndarray
    ) -> None:
        view_feeds = {k: _read_only(v) for k, v in feeds.items()}
        view_out = _read_only(out)
        for hook in self._stage_hooks:
            hook(stage, view_feeds, view_out)

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

    # -- validation -------------------------------------------------------------------

    def _prepare(self, text: str, lang: str, max_chars: int | None) -> tuple[str, list[str]]:
        if not isinstance(text, str):  # None is not "empty": it is not text at all
            raise TtsKitError(f"text must be a string, got {type(text).__name__}")
        if not text.strip():
            raise TtsKitError("text is empty; give at least one word to synthesise")
        if len(text) > MAX_TEXT_CHARS:
            raise TtsKitError(
                f"text has {len(text):,} characters, more than the {MAX_TEXT_CHARS:,} allowed "
                "in one request; split it into several requests"
            )
        from tts_kit.text import check_speakable, language_tags, normalize_for_speech

        text = language_tags(text, lang)  # another language's tags: refused, not misread
        if self.normalize and lang in ("ko", "en"):
            # Warns about what was dropped; refuses text with nothing (or mostly nothing)
            # left to say, which was synthesised as "," or as the one word left.
            text = normalize_for_speech(text, lang)
        else:
            check_speakable(text, text, lang, normalised=False)
        from tts_kit.text.charset import (
            unsupported_characters,  # lazy: tts_kit.text loads num2words
        )

        bad = unsupported_characters(text, self.bundle.indexer, model_cleanup=True)
        if bad:
            shown = " ".join(repr(c) for c in bad[:20]) + (" ..." if len(bad) > 20 else "")
            raise TtsKitError(
                f"text has {len(bad)} character(s) this model cannot read: {shown}; "
                "remove or replace them"
            )
        from tts_kit.text import chunk

        return text, chunk(text, lang, max_chars)

    def _validate(self, lang: str, steps: int, speed: float, voices: list[str]) -> None:
        if lang not in contract.LANGUAGES:
            raise TtsKitError(
                f"unknown language '{lang}'; use one of: {', '.join(contract.LANGUAGES)}"
            )
        _check_number("steps", steps, contract.MIN_STEPS, contract.MAX_STEPS, integer=True)
        _check_number("speed", speed, contract.MIN_SPEED, contract.MAX_SPEED)
        for v in voices:
            self.bundle.voice(v)  # raises ValueError listing the voices

    # -- synthesis --------------------------------------------------------------------

    def synthesize(
        self,
        text: str,
        lang: str = "en",
        voice: str = "M1",
        steps: int = contract.DEFAULT_STEPS,
        speed: float = contract.DEFAULT_SPEED,
        seed: int | None = None,
        max_chunk_chars: int | None = None,
        first_chunk_chars: int | None = None,
        order: str = "chunk",
        noise: np.ndarray | NoiseSource | None = None,
    ) -> SynthesisResult:
        """Synthesise one text: `stream`'s chunks joined (see `synthesize_batch` for the
        arguments, `stream` for ``first_chunk_chars`` and ``order``).

        Stage timings are summed over the chunks; ``total`` is the call's wall time.
        """
        t0 = time.perf_counter()
        parts = self._stream(text, lang, voice, steps, speed, seed, max_chunk_chars,
                             first_chunk_chars, order, noise)
        timings: dict[str, float] = {}
        pieces = []
        for part in parts:
            pieces.append(part.samples)
            for k, v in part.timings.items():
                if k != "total":
                    timings[k] = timings.get(k, 0.0) + v
        timings["total"] = time.perf_counter() - t0
        return SynthesisResult(
            wav=np.concatenate(pieces), sample_rate=self.bundle.sample_rate, text=parts.text,
            chunks=parts.chunks, timings=timings, voice=voice, seed=parts.seed,
        )

    def synthesize_batch(
        self,
        texts: list[str],
        lang: str = "en",
        voices: str | list[str] = "M1",
        steps: int = contract.DEFAULT_STEPS,
        speed: float = contract.DEFAULT_SPEED,
        seed: int | list[int | None] | None = None,
        max_chunk_chars: int | None = None,
        noise: np.ndarray | NoiseSource | None = None,
    ) -> list[SynthesisResult]:
        """Synthesise several texts in one batch, one voice per text.

        Args:
            texts: the texts (each may be long: it is chunked).
            lang: language code (``en``, ``ko``, ... or ``na``).
            voices: one voice name for all, or one per text.
            steps: flow-matching steps, 1..100 (more: slower, cleaner).
            speed: 0.7..2.0; durations are divided by it.
            seed: noise seed; an int gives text ``i`` the seed ``seed + i``, so a batch
                equals the single calls with those seeds. None: fresh noise.
            max_chunk_chars: chunk limit in model (NFKD) characters (default 300).
            noise: the initial latent noise instead of ``seed``'s: an array
                ``[B, 144, L]`` (texts of one chunk each), or a source called with each
                batch's latent lengths, e.g. `OfficialNoise` (the official package's draw,
                so both pipelines can be fed the same noise; `tts_kit.experiments.verify` does).

        Returns:
            One `SynthesisResult` per text, in order. Stage timings are those of the
            whole batch.
        """
        if isinstance(texts, str):
            raise TtsKitError("texts must be a list of strings; use synthesize() for one text")
        if not texts:
            raise TtsKitError("texts is empty; give at least one text")
        voice_list = [voices] * len(texts) if isinstance(voices, str) else list(voices)
        if len(voice_list) != len(texts):
            raise TtsKitError(f"{len(texts)} texts but {len(voice_list)} voices; give one per text")
        self._validate(lang, steps, speed, voice_list)
        if seed is None or _is_seed(seed):
            seeds = [None if seed is None else int(seed) + i for i in range(len(texts))]
        elif isinstance(seed, (list, tuple, np.ndarray)):
            seeds = list(seed)
            if len(seeds) != len(texts):
                raise TtsKitError(f"{len(texts)} texts but {len(seeds)} seeds; give one per text")
        else:
            seeds = [seed]  # checked below, in the same words as a bad list item
        # numpy's own words were "expected non-negative integer" for -1 and "'float' object
        # is not iterable" for 1.5: say what a seed is instead.
        for s in seeds:
            if s is not None and not _is_seed(s):
                raise TtsKitError(f"seed must be an integer >= 0 or None (one per text in a "
                                 f"list), got {s!r}")
        seeds = [None if s is None else int(s) for s in seeds]  # plain ints in results
        source = _noise_source(noise)
        if source is not None:
            if any(x is not None for x in seeds):
                raise TtsKitError("give seed or noise, not both: the noise is the initial "
                                 "latent a seed would draw (OfficialNoise(seed) draws it "
                                 "as the official package does)")
            seeds = [getattr(source, "seed", None)] * len(texts)

        t_start = time.perf_counter()
        timings: dict[str, float] = {}
        prepared = [self._prepare(t, lang, max_chunk_chars) for t in texts]
        timings["text"] = time.perf_counter() - t_start
        rngs = [np.random.default_rng(s) for s in seeds]
        styles = [self.bundle.voice(v) for v in voice_list]
        pieces: list[list[np.ndarray]] = [[] for _ in texts]
        # Round k synthesises the k-th chunk of every text that has one, as one batch.
        for k in range(max(len(chunks) for _, chunks in prepared)):
            items = [i for i, (_, chunks) in enumerate(prepared) if k < len(chunks)]
            wavs = self._synthesize_chunks(
                [prepared[i][1][k] for i in items],
                lang,
                [styles[i] for i in items],
                steps,
                speed,
                [rngs[i] for i in items],
                timings,
                source,
            )
            for i, wav in zip(items, wavs):
                pieces[i].append(wav)
        timings["total"] = time.perf_counter() - t_start
        silence = np.zeros(int(contract.CHUNK_SILENCE_S * self.bundle.sample_rate), np.float32)
        results = []
        for i, parts in enumerate(pieces):
            joined = [p for part in parts for p in (part, silence)][:-1]
            results.append(
                SynthesisResult(
                    wav=np.concatenate(joined),
                    sample_rate=self.bundle.sample_rate,
                    text=prepared[i][0],
                    chunks=prepared[i][1],
                    timings=dict(timings),
                    voice=voice_list[i],
                    seed=seeds[i],
                )
            )
        return results

    def _synthesize_chunks(self, chunks, lang, styles, steps, speed, rngs, timings, source=None):
        front = self._front(chunks, lang, styles, speed, timings)
        front = self._encode_text(front, timings)
        with self._loader.session("vector_estimator"):  # one load for all steps
            latent = self._flow(front, steps, rngs, timings, source)
        with self._loader.session("vocoder"):  # one load for all items
            return self._vocode(front, latent, timings)

    # The pipeline's phases, each on a batch of chunks; composed per chunk (`stream`,
    # chunk-major) or per stage over all chunks (stage-major), or for a whole batch.

    def _front(self, chunks, lang, styles, speed, timings) -> _Front:
        """Ids, masks and styles of a batch of chunks, and their predicted durations."""
        t0 = time.perf_counter()
        ids, text_mask = encode(chunks, lang, self.bundle.indexer)
        style_dp = np.concatenate([s.dp for s in styles])
        style_ttl = np.concatenate([s.ttl for s in styles])
        timings["text"] = timings.get("text", 0.0) + time.perf_counter() - t0
        duration = self._run(
            "duration_predictor",
            {"text_ids": ids, "style_dp": style_dp, "text_mask": text_mask},
            timings,
        ).reshape(-1) / np.float32(speed)
        _check_durations(duration, chunks)
        sr = self.bundle.sample_rate
        n_samples = [max(1, int(d * sr)) for d in duration]
        frames = [math.ceil(n / contract.FRAME_SAMPLES) for n in n_samples]
        return _Front(ids, text_mask, style_ttl, n_samples, frames)

    def _encode_text(self, front: _Front, timings: dict[str, float]) -> _Front:
        front.text_emb = self._run(
            "text_encoder",
            {"text_ids": front.ids, "style_ttl": front.style_ttl, "text_mask": front.text_mask},
            timings,
        )
        return front

    def _flow(self, front: _Front, steps: int, rngs, timings, source=None) -> np.ndarray:
        frames = front.frames
        length = max(frames)
        batch = len(frames)
        latent_mask = np.zeros((batch, 1, length), np.float32)
        for b, n in enumerate(frames):
            latent_mask[b, :, :n] = 1.0
        if source is not None:  # the caller's noise, masked as the official package does
            drawn = np.asarray(source(list(frames)), np.float32)
            if drawn.shape != (batch, contract.LATENT_CHANNELS, length):
                raise TtsKitError(f"the noise source gave shape {list(drawn.shape)}; the batch "
                                 f"needs {[batch, contract.LATENT_CHANNELS, length]}")
            xt = drawn * latent_mask
        else:
            # Each item draws its own noise, so a batch equals the single calls.
            xt = np.zeros((batch, contract.LATENT_CHANNELS, length), np.float32)
            for b, (rng, n) in enumerate(zip(rngs, frames)):
                xt[b, :, :n] = rng.standard_normal((contract.LATENT_CHANNELS, n), np.float32)
        total = np.full(batch, steps, np.float32)
        for step in range(steps):
            xt = self._run(
                "vector_estimator",
                {
                    "noisy_latent": xt,
                    "text_emb": front.text_emb,
                    "style_ttl": front.style_ttl,
                    "latent_mask": latent_mask,
                    "text_mask": front.text_mask,
                    "current_step": np.full(batch, step, np.float32),
                    "total_step": total,
                },
                timings,
            )
        return xt

    def _vocode(self, front: _Front, xt: np.ndarray, timings) -> list[np.ndarray]:
        # The vocoder has no mask: run each item unpadded so padding cannot leak into it.
        wavs = []
        for b, (n, f) in enumerate(zip(front.n_samples, front.frames)):
            wav = self._run("vocoder", {"latent": xt[b : b + 1, :, :f]}, timings)
            wavs.append(wav[0, :n])
        # NaN samples are written as full-scale DC: a damaged graph must fail, not play.
        if not all(np.isfinite(w).all() for w in wavs):
            raise TtsKitError("the model produced NaN or infinite samples; its graphs are "
                             "damaged: re-download or rebuild the bundle")
        return wavs

    # -- streaming --------------------------------------------------------------------

    def stream(
        self,
        text: str,
        lang: str = "en",
        voice: str = "M1",
        steps: int = contract.DEFAULT_STEPS,
        speed: float = contract.DEFAULT_SPEED,
        seed: int | None = None,
        max_chunk_chars: int | None = None,
        first_chunk_chars: int | None = None,
        order: str = "chunk",
        noise: np.ndarray | NoiseSource | None = None,
    ) -> SynthesisStream:
        """Synthesise ``text`` one chunk at a time: an iterator of `AudioChunk`
        (a `SynthesisStream`, which also tells the normalised text and its chunks).

        The text is checked, normalised and chunked here, at the call (a bad request
        raises ValueError before anything is synthesised); the audio comes as the
        iterator is consumed, so memory holds one chunk's audio, not the text's.
        Concatenating the chunks' ``samples`` gives `synthesize`'s waveform exactly:
        every chunk after the first starts with the 0.3 s pause that separates chunks.

        Args:
            text, lang, voice, steps, speed, seed, max_chunk_chars, noise: as
                `synthesize_batch` (a noise source is called once per chunk, in order).
            first_chunk_chars: make the first chunk at most this long, cut at a clause
                (`first_chunk`), so the first audio is ready sooner (None: no cut).
            order: ``chunk`` (chunk-major: each chunk runs all four stages, then the
                next; first audio soonest) or ``stage`` (stage-major: each stage runs on
                every chunk before the next stage, so under ``paged`` loading each graph
                is loaded once per request, not once per chunk; the audio still comes
                chunk by chunk from the vocoder, and memory holds every chunk's latent,
                about 1/20 of its audio).

        Example:
            >>> engine = Engine()
            >>> parts = list(engine.stream("One sentence. And another one.", steps=1,
            ...                            seed=0, max_chunk_chars=15))
            >>> [(p.index, p.text, p.last) for p in parts]
            [(0, 'One sentence.', False), (1, 'And', False), (2, 'another one.', True)]
            >>> whole = engine.synthesize("One sentence. And another one.", steps=1,
            ...                           seed=0, max_chunk_chars=15)
            >>> bool(np.array_equal(np.concatenate([p.samples for p in parts]), whole.wav))
            True
        """
        return self._stream(text, lang, voice, steps, speed, seed, max_chunk_chars,
                            first_chunk_chars, order, noise)

    def _stream(self, text, lang, voice, steps, speed, seed, max_chunk_chars,
                first_chunk_chars, order, noise=None) -> SynthesisStream:
        if order not in ("chunk", "stage"):
            raise TtsKitError(f"order must be 'chunk' or 'stage', got {order!r}")
        if first_chunk_chars is not None:
            _check_number("first_chunk_chars", first_chunk_chars, 1, MAX_TEXT_CHARS,
                          integer=True)
        self._validate(lang, steps, speed, [voice])
        if seed is not None and not _is_seed(seed):
            raise TtsKitError(f"seed must be an integer >= 0 or None (one per text in a "
                             f"list), got {seed!r}")
        source = _noise_source(noise)
        if source is not None and seed is not None:
            raise TtsKitError("give seed or noise, not both: the noise is the initial "
                             "latent a seed would draw (OfficialNoise(seed) draws it "
                             "as the official package does)")
        t0 = time.perf_counter()
        normalized, chunks = self._prepare(text, lang, max_chunk_chars)
        if first_chunk_chars is not None:
            chunks = first_chunk(chunks, lang, first_chunk_chars)
        prep_s = time.perf_counter() - t0
        style = self.bundle.voice(voice)
        rng = np.random.default_rng(None if seed is None else int(seed))
        run = self._stream_chunks if order == "chunk" else self._stream_stages
        used = getattr(source, "seed", None) if source is not None else seed
        return SynthesisStream(normalized, chunks,
                               run(chunks, lang, style, steps, speed, rng, prep_s, source),
                               seed=None if used is None else int(used))

    def _pause(self) -> np.ndarray:
        return np.zeros(int(contract.CHUNK_SILENCE_S * self.bundle.sample_rate), np.float32)

    def _chunk(self, k: int, chunks: list[str], wav: np.ndarray,
               timings: dict[str, float]) -> AudioChunk:
        samples = wav if k == 0 else np.concatenate([self._pause(), wav])
        return AudioChunk(samples=samples, sample_rate=self.bundle.sample_rate, text=chunks[k],
                          index=k, timings=timings, last=k == len(chunks) - 1)

    def _stream_chunks(self, chunks, lang, style, steps, speed, rng, prep_s, source=None):
        for k, piece in enumerate(chunks):
            t0 = time.perf_counter()
            timings: dict[str, float] = {"text": prep_s} if k == 0 else {}
            (wav,) = self._synthesize_chunks([piece], lang, [style], steps, speed, [rng],
                                             timings, source)
            timings["total"] = time.perf_counter() - t0 + (prep_s if k == 0 else 0.0)
            yield self._chunk(k, chunks, wav, timings)

    def _stream_stages(self, chunks, lang, style, steps, speed, rng, prep_s, source=None):
        per = [{"text": prep_s} if k == 0 else {} for k in range(len(chunks))]
        elapsed = [prep_s] + [0.0] * (len(chunks) - 1)

        def timed(k: int, fn, *args):
            t0 = time.perf_counter()
            out = fn(*args)
            elapsed[k] += time.perf_counter() - t0
            return out

        with self._loader.session("duration_predictor"):
            fronts = [timed(k, self._front, [c], lang, [style], speed, per[k])
                      for k, c in enumerate(chunks)]
        with self._loader.session("text_encoder"):
            for k, f in enumerate(fronts):
                timed(k, self._encode_text, f, per[k])
        with self._loader.session("vector_estimator"):
            latents = []
            for k, f in enumerate(fronts):
                latents.append(timed(k, self._flow, f, steps, [rng], per[k], source))
                f.text_emb = None  # done with it: only the latent goes on
        with self._loader.session("vocoder"):
            for k, f in enumerate(fronts):
                (wav,) = timed(k, self._vocode, f, latents[k], per[k])
                latents[k] = None
                per[k]["total"] = elapsed[k]
                yield self._chunk(k, chunks, wav, per[k])


class SynthesisStream:
    """The chunks of one request, synthesised as they are iterated (`Engine.stream`).

    ``text`` is the normalised text and ``chunks`` its pieces, known before any audio;
    `close` (or leaving a ``with`` block) stops the work and releases what it holds.

    Example:
        >>> with Engine().stream("Hello. Bye.", steps=1, seed=0) as s:
        ...     s.chunks, [c.index for c in s]
        (['Hello. Bye.'], [0])
    """

    def __init__(self, text: str, chunks: list[str], parts: Iterator[AudioChunk],
                 seed: int | None = None):
        self.text = text
        self.chunks = chunks
        self.seed = seed  # the noise seed (None: fresh noise, or noise without a seed)
        self._parts = parts

    def __iter__(self) -> SynthesisStream:
        return self

    def __next__(self) -> AudioChunk:
        return next(self._parts)

    def close(self) -> None:
        """Stop synthesising (sessions pinned by the current stage are released)."""
        close = getattr(self._parts, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> SynthesisStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class _Front:
    """A batch of chunks between the phases of the pipeline."""

    ids: np.ndarray
    text_mask: np.ndarray
    style_ttl: np.ndarray
    n_samples: list[int]
    frames: list[int]
    text_emb: np.ndarray | None = None


@dataclass
class AudioChunk:
    """One chunk of streamed audio (`Engine.stream`).

    Example:
        >>> c = AudioChunk(np.zeros(441, np.float32), 44100, "Hi.", 0, {"total": 0.01}, True)
        >>> round(c.duration_s, 3), c.last
        (0.01, True)
    """

    samples: np.ndarray
    """Mono float32 in [-1, 1]; from the second chunk on, led by the 0.3 s pause."""
    sample_rate: int
    """Samples per second (44100)."""
    text: str
    """The chunk's text, as the model read it."""
    index: int
    """0 for the first chunk."""
    timings: dict[str, float]
    """Wall seconds of this chunk's stages (``text`` on the first: the whole text's
    checks, normalisation and chunking), and ``total``."""
    last: bool = False
    """True on the request's final chunk."""

    @property
    def duration_s(self) -> float:
        """Audio length in seconds (the leading pause included)."""
        return len(self.samples) / self.sample_rate

    def pcm16(self) -> bytes:
        """The samples as 16-bit little-endian PCM bytes (what a WAV's data chunk holds).

        Example:
            >>> AudioChunk(np.array([0.0, 1.0, -1.0], np.float32), 44100, "", 0, {}).pcm16()
            b'\\x00\\x00\\xff\\x7f\\x01\\x80'
        """
        return pcm16(self.samples)


def pcm16(samples: np.ndarray) -> bytes:
    """Float samples in [-1, 1] as 16-bit little-endian PCM, as soundfile writes PCM_16.

    Example:
        >>> pcm16(np.array([0.5], np.float32))
        b'\\x00@'
    """
    clipped = np.clip(np.asarray(samples, np.float32), -1.0, 1.0)
    return (clipped * 32767.0).round().astype("<i2").tobytes()


def first_chunk(chunks: list[str], lang: str, max_chars: int) -> list[str]:
    """Cut the first chunk down to at most ``max_chars`` at the chunker's best boundary
    (a clause, else a space), the rest of it becoming the second chunk.

    The cut comes from `tts_kit.text.chunk`, so it never falls where the chunker would not
    cut. A short enough first chunk is left as it is.

    Example:
        >>> first_chunk(["Well, that went better than expected."], "en", 10)
        ['Well,', 'that went better than expected.']
    """
    if not chunks or len(chunks[0]) <= max_chars:
        return list(chunks)
    from tts_kit.text import chunk

    head = chunk(chunks[0], lang, max_chars)[0]
    rest = chunks[0][len(head):].strip() if chunks[0].startswith(head) else ""
    if not rest:  # the chunker changed the text (it should not): keep the chunk whole
        return list(chunks)
    return [head, rest, *chunks[1:]]


def _check_durations(duration: np.ndarray, chunks: list[str]) -> None:
    """Refuse predicted durations no speech has, before anything is allocated for them.

    Example:
        >>> _check_durations(np.array([0.8], np.float32), ["Hello there."])
        >>> _check_durations(np.array([np.nan], np.float32), ["Hello there."])
        Traceback (most recent call last):
        ...
        tts_kit.TtsKitError: duration_predictor predicted nan s for a 12-character chunk ...
    """
    if duration.shape != (len(chunks),):
        raise TtsKitError(
            f"duration_predictor gave {duration.size} duration(s) for {len(chunks)} chunk(s); "
            "the graph is damaged or not a Supertonic duration predictor; re-download or "
            "rebuild the bundle"
        )
    for d, text in zip(duration.tolist(), chunks):
        limit = MAX_SECONDS_PER_CHAR * len(text) + MAX_SECONDS_MARGIN
        if not (0.0 < d <= limit):  # False for NaN too
            shown = text if len(text) <= 30 else text[:27] + "..."
            raise TtsKitError(
                f"duration_predictor predicted {d:g} s for a {len(text)}-character chunk "
                f"({shown!r}); a duration must be finite, above 0 and at most "
                f"{MAX_SECONDS_PER_CHAR:g} s per character + {MAX_SECONDS_MARGIN:g} s "
                f"({limit:g} s here): the graph is damaged or not a Supertonic duration "
                "predictor; re-download or rebuild the bundle"
            )


#: ``fn(stage, feeds, output)``, called after every stage run (`Engine.add_stage_hook`).
StageHook = Callable[[str, Mapping[str, np.ndarray], np.ndarray], object]


class _HookEntry:
    """One registration: identity, not equality, decides what a remover removes (the same
    function added twice is two registrations)."""

    __slots__ = ("fn",)

    def __init__(self, fn: StageHook):
        self.fn = fn

    def __call__(self, stage: str, feeds: Mapping[str, np.ndarray], out: np.ndarray) -> None:
        self.fn(stage, feeds, out)


def _read_only(a: np.ndarray) -> np.ndarray:
    view = np.asarray(a).view()
    view.flags.writeable = False
    return view


def _default_preset() -> SessionPreset:
    try:
        from tts_kit.runtime.sessions import get_preset

        return get_preset("supertonic-default")
    except (ImportError, ValueError):
        return SessionPreset(
            name="supertonic-default", graph_optimization_level="all", execution_mode="sequential"
        )
