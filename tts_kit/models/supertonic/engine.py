"""The four-stage Supertonic pipeline, `Engine` on `EngineBase`: normalised text in chunks ->
ids -> duration predictor -> text encoder -> N flow steps from the initial noise (seeded, or
`OfficialNoise`, `FixedNoise`) -> vocoder -> trimmed to the predicted duration; chunks joined
by 0.3 s of silence."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.core.textproc import encode
from tts_kit.models.engine_base import EngineBase, Plan
from tts_kit.models.supertonic.bundle import Bundle
from tts_kit.models.synthesis import (
    SynthesisConfig,
    SynthesisResult,
    batch_seeds,
    batch_voices,
    check_number,
    is_seed,
)

#: Ceiling on a predicted duration: seconds per character of the chunk, plus a margin
#: (speech runs at 0.05-0.1 s per character; above this, the graph is broken).
MAX_SECONDS_PER_CHAR = 1.0
MAX_SECONDS_MARGIN = 2.0

_SEED_OR_NOISE = ("give seed or noise, not both: the noise is the initial latent a seed "
                  "would draw (OfficialNoise(seed) draws it as the official package does)")


class Engine(EngineBase):
    """Runs a `Bundle` (or a bundle directory; None: discovery) end to end; ``options`` are
    `EngineBase`'s (``preset``, ``stage_presets``, ``loading``, ``normalize``, ...).

    Example:
        >>> Engine().synthesize("Hello there.", seed=0).sample_rate
        44100
    """

    family = "supertonic"
    chunk_pause_s = contract.CHUNK_SILENCE_S

    def __init__(self, bundle: Bundle | str | os.PathLike[str] | None = None, **options: Any):
        super().__init__(bundle if isinstance(bundle, Bundle) else Bundle.discover(bundle),
                         **options)

    # -- the request ------------------------------------------------------------------

    def _prepare(self, text: str, lang: str, max_chars: int | None) -> tuple[str, list[str]]:
        text = self._normalized(text, lang)
        from tts_kit.text.charset import unsupported_characters

        bad = unsupported_characters(text, self.bundle.indexer, model_cleanup=True)
        if bad:
            shown = " ".join(repr(c) for c in bad[:20]) + (" ..." if len(bad) > 20 else "")
            raise TtsKitError(f"text has {len(bad)} character(s) this model cannot read: "
                              f"{shown}; remove or replace them")
        from tts_kit.text import chunk

        return text, chunk(text, lang, max_chars)

    def _check(self, cfg: SynthesisConfig) -> SynthesisConfig:
        cfg = cfg.replace(
            voice=self.bundle.default_voice if cfg.voice is None else cfg.voice,
            steps=contract.DEFAULT_STEPS if cfg.steps is None else cfg.steps,
            speed=contract.DEFAULT_SPEED if cfg.speed is None else cfg.speed)
        if cfg.lang not in contract.LANGUAGES:
            raise TtsKitError(f"unknown language '{cfg.lang}'; use one of: "
                              f"{', '.join(contract.LANGUAGES)}")
        check_number("steps", cfg.steps, contract.MIN_STEPS, contract.MAX_STEPS, integer=True)
        check_number("speed", cfg.speed, contract.MIN_SPEED, contract.MAX_SPEED)
        self.bundle.voice(cfg.voice)  # an unknown one: a TtsKitError listing the voices
        if cfg.noise is not None:
            source = _noise_source(cfg.noise)
            if cfg.seed is not None:
                raise TtsKitError(_SEED_OR_NOISE)
            cfg = cfg.replace(noise=source)
        return cfg

    def _plan(self, text: str, cfg: SynthesisConfig) -> Plan:
        normalized, chunks = self._prepare(text, cfg.lang, cfg.max_chunk_chars)
        if cfg.first_chunk_chars is not None:
            chunks = first_chunk(chunks, cfg.lang, cfg.first_chunk_chars)
        used = getattr(cfg.noise, "seed", None) if cfg.noise is not None else cfg.seed
        return Plan(normalized, chunks, (self.bundle.voice(cfg.voice), cfg.seed),
                    seed=None if used is None else int(used))

    def _render(self, plan: Plan, cfg: SynthesisConfig
                ) -> Iterator[tuple[np.ndarray, dict[str, float]]]:
        if cfg.order == "stage":
            return self._stream_stages(plan, cfg)
        return super()._render(plan, cfg)

    def _render_chunk(self, plan: Plan, cfg: SynthesisConfig, k: int
                      ) -> tuple[np.ndarray, dict[str, float]]:
        style, seed = plan.work
        timings: dict[str, float] = {}
        (wav,) = self._synthesize_chunks([plan.chunks[k]], cfg.lang, [style], cfg.steps,
                                         cfg.speed, [chunk_rng(seed, k)], timings, cfg.noise)
        return wav, timings

    def _stream_stages(self, plan: Plan, cfg: SynthesisConfig
                       ) -> Iterator[tuple[np.ndarray, dict[str, float]]]:
        """Stage-major: each stage on every chunk before the next (under ``paged`` loading
        each graph loads once per request); memory holds every chunk's latent."""
        chunks, (style, seed) = plan.chunks, plan.work
        per: list[dict[str, float]] = [{} for _ in chunks]
        elapsed = [0.0] * len(chunks)

        def timed(k: int, fn, *args):
            t0 = time.perf_counter()
            out = fn(*args)
            elapsed[k] += time.perf_counter() - t0
            return out

        with self._loader.session("duration_predictor"):
            fronts = [timed(k, self._front, [c], cfg.lang, [style], cfg.speed, per[k])
                      for k, c in enumerate(chunks)]
        with self._loader.session("text_encoder"):
            for k, f in enumerate(fronts):
                timed(k, self._encode_text, f, per[k])
        with self._loader.session("vector_estimator"):
            latents = []
            for k, f in enumerate(fronts):
                latents.append(timed(k, self._flow, f, cfg.steps, [chunk_rng(seed, k)],
                                     per[k], cfg.noise))
                f.text_emb = None  # done with it: only the latent goes on
        with self._loader.session("vocoder"):
            for k, f in enumerate(fronts):
                (wav,) = timed(k, self._vocode, f, latents[k], per[k])
                latents[k] = None
                per[k]["total"] = elapsed[k]
                yield wav, per[k]

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
        """Synthesise several texts in one batch (round ``k`` runs every text's ``k``-th
        chunk together): one `SynthesisResult` per text, each with the batch's timings.

        ``voices``: one name for all, or a list; ``seed``: an int gives text ``i`` the seed
        ``seed + i`` (a batch equals the single calls), a list one each; ``noise``: the
        initial latent, an array ``[B, 144, L]`` or a source such as `OfficialNoise`.

        Example:
            >>> [r.seed for r in Engine().synthesize_batch(["Hi.", "Bye."], steps=1, seed=4)]
            [4, 5]
        """
        voice_list = batch_voices(texts, voices)
        for voice in dict.fromkeys(voice_list):  # each checked as a single call checks it
            self.config(lang=lang, voice=voice, steps=steps, speed=speed)
        seeds = batch_seeds(len(texts), seed)
        source = _noise_source(noise)
        if source is not None:
            if any(x is not None for x in seeds):
                raise TtsKitError(_SEED_OR_NOISE)
            seeds = [getattr(source, "seed", None)] * len(texts)

        t_start = time.perf_counter()
        timings: dict[str, float] = {}
        prepared = [self._prepare(t, lang, max_chunk_chars) for t in texts]
        timings["text"] = time.perf_counter() - t_start
        styles = [self.bundle.voice(v) for v in voice_list]
        pieces: list[list[np.ndarray]] = [[] for _ in texts]
        # Round k synthesises the k-th chunk of every text that has one, as one batch.
        for k in range(max(len(chunks) for _, chunks in prepared)):
            items = [i for i, (_, chunks) in enumerate(prepared) if k < len(chunks)]
            wavs = self._synthesize_chunks(
                [prepared[i][1][k] for i in items], lang, [styles[i] for i in items],
                steps, speed, [chunk_rng(seeds[i], k) for i in items], timings, source)
            for i, wav in zip(items, wavs):
                pieces[i].append(wav)
        timings["total"] = time.perf_counter() - t_start
        silence = np.zeros(int(self.chunk_pause_s * self.bundle.sample_rate), np.float32)
        joined = [np.concatenate([w for part in parts for w in (silence, part)][1:])
                  for parts in pieces]
        return [SynthesisResult(wav=wav, sample_rate=self.bundle.sample_rate, text=text,
                                chunks=chunks, timings=dict(timings), voice=voice, seed=s)
                for wav, (text, chunks), voice, s in zip(joined, prepared, voice_list, seeds)]

    def _synthesize_chunks(self, chunks, lang, styles, steps, speed, rngs, timings, source=None):
        front = self._encode_text(self._front(chunks, lang, styles, speed, timings), timings)
        with self._loader.session("vector_estimator"):  # one load for all steps
            latent = self._flow(front, steps, rngs, timings, source)
        with self._loader.session("vocoder"):  # one load for all items
            return self._vocode(front, latent, timings)

    # The pipeline's phases, each on a batch of chunks.

    def _front(self, chunks, lang, styles, speed, timings) -> _Front:
        """Ids, masks and styles of a batch of chunks, and their predicted durations."""
        t0 = time.perf_counter()
        ids, text_mask = encode(chunks, lang, self.bundle.indexer)
        style_dp = np.concatenate([s.dp for s in styles])
        style_ttl = np.concatenate([s.ttl for s in styles])
        timings["text"] = timings.get("text", 0.0) + time.perf_counter() - t0
        feeds = {"text_ids": ids, "style_dp": style_dp, "text_mask": text_mask}
        duration = self._run("duration_predictor", feeds, timings).reshape(-1) / np.float32(speed)
        _check_durations(duration, chunks)
        n_samples = [max(1, int(d * self.bundle.sample_rate)) for d in duration]
        frames = [math.ceil(n / contract.FRAME_SAMPLES) for n in n_samples]
        return _Front(ids, text_mask, style_ttl, n_samples, frames)

    def _encode_text(self, front: _Front, timings: dict[str, float]) -> _Front:
        feeds = {"text_ids": front.ids, "style_ttl": front.style_ttl,
                 "text_mask": front.text_mask}
        front.text_emb = self._run("text_encoder", feeds, timings)
        return front

    def _flow(self, front: _Front, steps: int, rngs, timings, source=None) -> np.ndarray:
        frames = front.frames
        length = max(frames)
        batch = len(frames)
        latent_mask = (np.arange(length) < np.array(frames)[:, None, None]).astype(np.float32)
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
        feeds = {"text_emb": front.text_emb, "style_ttl": front.style_ttl,
                 "latent_mask": latent_mask, "text_mask": front.text_mask,
                 "total_step": np.full(batch, steps, np.float32)}
        for step in range(steps):
            feeds.update(noisy_latent=xt, current_step=np.full(batch, step, np.float32))
            xt = self._run("vector_estimator", feeds, timings)
        return xt

    def _vocode(self, front: _Front, xt: np.ndarray, timings) -> list[np.ndarray]:
        # The vocoder has no mask: run each item unpadded so padding cannot leak into it.
        wavs = [self._run("vocoder", {"latent": xt[b : b + 1, :, :f]}, timings)[0, :n]
                for b, (n, f) in enumerate(zip(front.n_samples, front.frames))]
        # NaN samples are written as full-scale DC: a damaged graph must fail, not play.
        if not all(np.isfinite(w).all() for w in wavs):
            raise TtsKitError("the model produced NaN or infinite samples; its graphs are "
                             "damaged: re-download or rebuild the bundle")
        return wavs


@dataclass
class _Front:
    """A batch of chunks between the phases of the pipeline."""

    ids: np.ndarray
    text_mask: np.ndarray
    style_ttl: np.ndarray
    n_samples: list[int]
    frames: list[int]
    text_emb: np.ndarray | None = None


def first_chunk(chunks: list[str], lang: str, max_chars: int) -> list[str]:
    """Cut the first chunk down to at most ``max_chars`` where `tts_kit.text.chunk` would
    (a clause, else a space), the rest of it becoming the second chunk.

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
    """Refuse predicted durations no speech has, before anything is allocated."""
    if duration.shape != (len(chunks),):
        raise TtsKitError(f"duration_predictor gave {duration.size} duration(s) for "
                          f"{len(chunks)} chunk(s); the graph is damaged or not a Supertonic "
                          "duration predictor; re-download or rebuild the bundle")
    for d, text in zip(duration.tolist(), chunks):
        limit = MAX_SECONDS_PER_CHAR * len(text) + MAX_SECONDS_MARGIN
        if not (0.0 < d <= limit):  # False for NaN too
            shown = text if len(text) <= 30 else text[:27] + "..."
            raise TtsKitError(f"duration_predictor predicted {d:g} s for a {len(text)}-character "
                              f"chunk ({shown!r}); a duration must be finite, above 0 and at "
                              f"most {MAX_SECONDS_PER_CHAR:g} s per character + "
                              f"{MAX_SECONDS_MARGIN:g} s ({limit:g} s here): the graph is "
                              "damaged or not a Supertonic duration predictor; re-download or "
                              "rebuild the bundle")


# -- the initial noise of the flow ---------------------------------------------------

#: ``noise(frames) -> array [B, LATENT_CHANNELS, max(frames)]``: a batch's initial latent
#: (``frames[b]``: item ``b``'s length; the engine masks what lies past it).
NoiseSource = Callable[[list[int]], np.ndarray]


class OfficialNoise:
    """Draws the initial latent as the official package does after ``np.random.seed(seed)``
    (``np.random.randn(B, 144, L)`` per batch), from its own ``RandomState``.

    Example:
        >>> OfficialNoise(0)([2, 3]).shape
        (2, 144, 3)
    """

    def __init__(self, seed: int):
        if not is_seed(seed):
            raise TtsKitError(f"seed must be an integer >= 0, got {seed!r}")
        self.seed = int(seed)
        self._rs = np.random.RandomState(self.seed)

    def __call__(self, frames: list[int]) -> np.ndarray:
        shape = (len(frames), contract.LATENT_CHANNELS, max(frames))
        return self._rs.randn(*shape).astype(np.float32)


class FixedNoise:
    """A caller's initial latent for one batch, ``[B, 144, L]`` (or ``[144, L]``); ``L`` must
    cover the longest item.

    Example:
        >>> FixedNoise(np.ones((144, 5), np.float32))([3]).shape
        (1, 144, 3)
    """

    def __init__(self, latent: np.ndarray):
        a = np.asarray(latent, np.float32)
        if a.ndim == 2:
            a = a[None]
        if a.ndim != 3 or a.shape[1] != contract.LATENT_CHANNELS:
            raise TtsKitError(f"noise must have shape [batch, {contract.LATENT_CHANNELS}, "
                              f"frames], got {list(np.shape(latent))}")
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


def chunk_rng(seed: int | None, index: int) -> np.random.Generator:
    """The generator of chunk ``index``'s initial noise, from the seed and the index only
    (chunk 0 draws as ``np.random.default_rng(seed)``); ``seed`` None: fresh noise.

    Example:
        >>> a = chunk_rng(7, 0).standard_normal(2)
        >>> bool(np.array_equal(a, np.random.default_rng(7).standard_normal(2)))
        True
    """
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(np.random.SeedSequence(int(seed),
                                                        spawn_key=(index,) if index else ()))


def _noise_source(noise: np.ndarray | NoiseSource | None) -> NoiseSource | None:
    if noise is None or callable(noise):
        return noise
    if isinstance(noise, (np.ndarray, list, tuple)):
        return FixedNoise(np.asarray(noise))
    raise TtsKitError(f"noise must be an array, a noise source (OfficialNoise(seed)) or None, "
                     f"got {type(noise).__name__}")


__all__ = ["Engine", "FixedNoise", "NoiseSource", "OfficialNoise", "chunk_rng", "first_chunk"]
