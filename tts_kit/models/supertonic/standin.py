"""A synthetic Supertonic bundle: the real layout and architecture, seeded random weights
(docs/guide.md, "The stand-in"); the networks are built in `standin_graphs`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import unicodedata
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tts_kit.core import atomic, contract
from tts_kit.core.errors import TtsKitError
from tts_kit.core.settings import Settings
from tts_kit.core.settings import settings as current_settings
from tts_kit.models.supertonic.standin_graphs import (
    LATENT_SCALE,
    NOTE,
    VOCAB_SIZE,
    _Arch,
    _check_scale,
    build_graph,
)
from tts_kit.models.synthesis import is_seed

#: Bumped whenever the graphs or files change, so cached stand-ins are rebuilt.
STANDIN_VERSION = 2  # 2: classifier-free guidance inside the vector estimator (issue 22)
#: The scale users get when no model is found: the published size (tests choose ``tiny``).
DEFAULT_SCALE = contract.DEFAULT_STANDIN_SCALE
#: Scales whose costs (latency, memory, the stage mix) are those of the real model.
REALISTIC_SCALES: tuple[str, ...] = ("full",)


def scale_note(scale: str) -> str:
    """What a stand-in of ``scale`` is good for, in one line (banners, CLI, reports).

    Example:
        >>> scale_note("tiny").split("; ")[1]
        'the costs are NOT realistic (tiny scale, a few MB for tests)'
    """
    if scale in REALISTIC_SCALES:
        return f"{NOTE} ({scale} scale, the published size)"
    size = {"tiny": "a few MB for tests", "medium": "a quarter of the real model"}.get(
        scale, "not the published size")
    return (f"synthetic weights: the audio is noise; the costs are NOT realistic ({scale} "
            f"scale, {size}); for realistic figures unset TTS_KIT_STANDIN_SCALE (full) or "
            "give the real model")


# -- tts.json, indexer, voices ----------------------------------------------------------


def _convnext_cfg(idim: int, ksz: int, hidden: int, dilations: Iterable[int]) -> dict:
    dil = list(dilations)
    return {"idim": idim, "ksz": ksz, "intermediate_dim": hidden, "num_layers": len(dil),
            "dilation_lst": dil}


def _ttl_config(a: _Arch) -> dict[str, Any]:
    """The ``ttl`` part of `_config`: text encoder, style encoder and vector field."""
    te, ve = a.te, a.ve
    ldim, ccf = contract.LATENT_DIM, contract.CHUNK_COMPRESS_FACTOR
    return {
        "latent_dim": ldim,
        "chunk_compress_factor": ccf,
        "batch_expander": {"n_batch_expand": 6},
        "normalizer": {"scale": LATENT_SCALE},
        "text_encoder": {
            "n_langs": 0, "lang_emb_dim": 0,
            "text_embedder": {"char_emb_dim": te.ch},
            "convnext": _convnext_cfg(te.ch, te.k, te.hidden, te.dilations),
            "attn_encoder": {"hidden_channels": te.ch, "filter_channels": te.ffn,
                             "n_heads": te.heads, "n_layers": te.attn_layers,
                             "p_dropout": 0.0},
            "proj_out": {"idim": te.ch, "odim": 256},
        },
        "flow_matching": {"sig_min": 1e-08},
        "style_encoder": {
            "proj_in": {"ldim": ldim, "chunk_compress_factor": ccf, "odim": 256},
            "convnext": _convnext_cfg(256, 5, 1024, [1] * 6),
            "style_token_layer": {"input_dim": 256, "n_style": 50, "style_key_dim": 256,
                                  "style_value_dim": 256, "prototype_dim": 256,
                                  "n_units": 256, "n_heads": 2},
        },
        "speech_prompted_text_encoder": {"text_dim": te.ch, "style_dim": 256,
                                         "n_units": te.ch, "n_heads": te.style_heads},
        "uncond_masker": {"prob_both_uncond": 0.04, "prob_text_uncond": 0.01, "std": 0.1,
                          "text_dim": 256, "n_style": 50, "style_key_dim": 256,
                          "style_value_dim": 256},
        "vector_field": {
            "n_langs": 0, "lang_emb_dim": 0,
            "proj_in": {"ldim": ldim, "chunk_compress_factor": ccf, "odim": ve.ch},
            "time_encoder": {"time_dim": ve.time_dim, "hdim": ve.time_hidden},
            "main_blocks": {
                "n_blocks": ve.blocks,
                "time_cond_layer": {"idim": ve.ch, "time_dim": ve.time_dim},
                "style_cond_layer": {"idim": ve.ch, "style_dim": 256, "n_heads": ve.style_heads,
                                     "n_units": ve.style_units},
                "text_cond_layer": {"idim": ve.ch, "text_dim": 256, "n_heads": ve.heads,
                                    "n_units": ve.units, "use_residual": True,
                                    "rotary_base": 10000, "rotary_scale": 10},
                "convnext_0": _convnext_cfg(ve.ch, ve.k, ve.hidden, ve.dilations0),
                "convnext_1": _convnext_cfg(ve.ch, ve.k, ve.hidden, [1] * ve.n1),
                "convnext_2": _convnext_cfg(ve.ch, ve.k, ve.hidden, [1] * ve.n2),
            },
            "last_convnext": _convnext_cfg(ve.ch, ve.k, ve.hidden, [1] * ve.last),
            "proj_out": {"idim": ve.ch, "chunk_compress_factor": ccf, "ldim": ldim},
        },
    }


def _config(scale: str, seed: int) -> dict[str, Any]:
    """A ``tts.json`` of the real structure, with this scale's dimensions."""
    a = _check_scale(scale)
    dp, voc = a.dp, a.voc
    ldim, ccf = contract.LATENT_DIM, contract.CHUNK_COMPRESS_FACTOR
    return {
        "tts_version": "v1.7.3",
        "split": "opensource-multilingual",
        "ttl": _ttl_config(a),
        "ae": {
            "sample_rate": contract.SAMPLE_RATE,
            "n_delay": 0,
            "base_chunk_size": contract.BASE_CHUNK_SIZE,
            "chunk_compress_factor": 1,
            "ldim": ldim,
            "decoder": {
                "ksz_init": voc.k, "ksz": voc.k, "num_layers": len(voc.dilations),
                "dilation_lst": list(voc.dilations), "intermediate_dim": voc.hidden,
                "idim": ldim, "hdim": voc.ch,
                "head": {"idim": voc.ch, "hdim": voc.head_hidden,
                         "odim": contract.BASE_CHUNK_SIZE, "ksz": voc.head_k},
            },
        },
        "dp": {
            "latent_dim": ldim,
            "chunk_compress_factor": ccf,
            "normalizer": {"scale": 1.0},
            "sentence_encoder": {
                "char_emb_dim": dp.ch,
                "text_embedder": {"char_emb_dim": dp.ch},
                "convnext": _convnext_cfg(dp.ch, dp.k, dp.hidden, dp.dilations),
                "attn_encoder": {"hidden_channels": dp.ch, "filter_channels": dp.ffn,
                                 "n_heads": dp.heads, "n_layers": dp.attn_layers,
                                 "p_dropout": 0.0},
                "proj_out": {"idim": dp.ch, "odim": dp.ch},
            },
            "predictor": {"sentence_dim": dp.ch, "n_style": contract.STYLE_DP_DIMS[1],
                          "style_dim": contract.STYLE_DP_DIMS[2], "hdim": dp.mlp,
                          "n_layer": dp.mlp_layers},
        },
        contract.STANDIN_KEY: {"scale": scale, "seed": seed, "version": STANDIN_VERSION,
                               "note": NOTE},
    }


#: Code-point blocks the stand-in supports, besides Hangul syllables (see `_indexer`).
_BLOCKS: tuple[tuple[int, int], ...] = (
    (0x0020, 0x007E),  # ASCII printable
    (0x00A0, 0x00FF),  # Latin-1 supplement
    (0x0100, 0x024F),  # Latin extended A and B
    (0x0300, 0x036F),  # combining diacritics: NFKD splits accented letters into these
    (0x0370, 0x03FF),  # Greek
    (0x0400, 0x04FF),  # Cyrillic
    (0x0600, 0x06FF),  # Arabic
    (0x0900, 0x097F),  # Devanagari
    (0x1100, 0x11FF),  # Hangul Jamo: what NFKD turns Hangul syllables into
    (0x1E00, 0x1EFF),  # Latin extended additional (Vietnamese)
    (0x2010, 0x2027),  # general punctuation
    (0x2030, 0x205E),
    (0x20A0, 0x20C0),  # currency
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0xFF01, 0xFF5E),  # full-width forms
)


def _indexer() -> list[int]:
    """Code point -> token id (-1 = unsupported), `VOCAB_SIZE` ids in code-point order like
    the real indexer. Thai is left out, so tests have a script the stand-in cannot read."""
    table = np.full(0x10000, -1, dtype=np.int64)
    cps = np.concatenate([np.arange(lo, hi + 1) for lo, hi in _BLOCKS])
    cps = np.array([c for c in cps if unicodedata.category(chr(c)) not in ("Cn", "Cs")])
    n_cjk = VOCAB_SIZE - len(cps)
    cps = np.concatenate([cps, np.arange(0x4E00, 0x4E00 + n_cjk)])  # then CJK ideographs
    table[cps] = np.arange(len(cps))
    syl = np.arange(0xAC00, 0xD7A4)
    table[syl] = table[0x1100 + (syl - 0xAC00) // (21 * 28)]
    return table.tolist()


def _float_list(arr: np.ndarray) -> list:
    """Nested lists of the shortest decimal that round-trips each float32 (half the JSON)."""
    flat = [float(str(v)) for v in arr.astype(np.float32).ravel()]
    return np.array(flat, dtype=np.float64).reshape(arr.shape).tolist()


def _voice(name: str, seed: int) -> dict[str, Any]:
    """A voice style with the real file's layout and magnitudes (std ~0.06 and ~0.25)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1000 + zlib.crc32(
        name.encode()),)))
    # Per-channel offsets plus token noise: a voice is a direction, not white noise.
    ttl = 0.02 * rng.standard_normal((1, 1, 256)) + 0.058 * rng.standard_normal((1, 50, 256))
    dp = 0.1 * rng.standard_normal((1, 1, 16)) + 0.23 * rng.standard_normal((1, 8, 16))
    return {
        "style_ttl": {"dims": list(contract.STYLE_TTL_DIMS), "data": _float_list(ttl),
                      "type": "float32"},
        "style_dp": {"dims": list(contract.STYLE_DP_DIMS), "data": _float_list(dp),
                     "type": "float32"},
        "metadata": {"synthetic": True, "voice": name, "seed": seed, "note": NOTE},
    }


# -- building ---------------------------------------------------------------------------


@dataclass
class StageSummary:
    """Size of one built graph: its stage, initializer elements and ``.onnx`` bytes.

    Example:
        >>> StageSummary("vocoder", params=25_340_000, bytes=101_400_000).params
        25340000
    """

    stage: str
    params: int
    bytes: int


@dataclass
class StandinSummary:
    """What `build_standin` built: where, at which scale and weight seed, each graph (in
    pipeline order) and the build's wall time."""

    path: Path
    scale: str
    seed: int
    stages: list[StageSummary] = field(default_factory=list)
    build_s: float = 0.0

    @property
    def total_params(self) -> int:
        """Parameters over all four graphs."""
        return sum(s.params for s in self.stages)

    def table(self) -> str:
        """Per-stage parameters and sizes as an aligned text table.

        Example:
            >>> print(StandinSummary(Path("x"), "tiny", 0).table())
            stage                   params       MB
            total                    0.00M      0.0
        """
        total = StageSummary("total", self.total_params, sum(s.bytes for s in self.stages))
        rows = [f"{s.stage:<20}{s.params / 1e6:>9.2f}M{s.bytes / 1e6:>9.1f}"
                for s in [*self.stages, total]]
        return "\n".join([f"{'stage':<20}{'params':>10}{'MB':>9}", *rows])


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False, separators=(", ", ": ")), encoding="utf-8")


def build_standin(
    path: str | os.PathLike[str],
    scale: str = DEFAULT_SCALE,
    seed: int = 0,
    voices: Iterable[str] = ("M1", "F1"),
) -> StandinSummary:
    """Build a stand-in bundle at ``path`` (absent or an empty directory), atomically; a bad
    scale, voice name or destination is a `TtsKitError`.

    Example:
        >>> s = build_standin("/tmp/standin-tiny", scale="tiny", seed=0)  # doctest: +SKIP
        >>> [st.stage for st in s.stages]  # doctest: +SKIP
        ['duration_predictor', 'text_encoder', 'vector_estimator', 'vocoder']
    """
    _check_scale(scale)
    if not is_seed(seed):
        raise TtsKitError(f"seed must be an integer >= 0, got {seed!r}")  # not numpy's error
    voices = list(voices)
    bad = [v for v in voices if not re.match(r"^[A-Za-z0-9_-]+$", v)]
    if not voices or bad:
        raise TtsKitError(f"voice names must be non-empty [A-Za-z0-9_-]+, got {voices!r}")
    target = atomic.check_dir_destination(path)  # a file, a full directory: one line now
    target.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with atomic.atomic_dir(target, last=Path(contract.CONFIG_FILE).parts[0]) as tmp:
        (tmp / contract.ONNX_DIR).mkdir()
        (tmp / contract.VOICE_DIR).mkdir()
        stages = []
        for stage in contract.STAGES:
            model = build_graph(stage, scale, seed)
            params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
            out = tmp / contract.GRAPHS[stage].path
            out.write_bytes(model.SerializeToString())
            del model  # the full vector estimator is ~250 MB; free before the next
            stages.append(StageSummary(stage, params, out.stat().st_size))
        _write_json(tmp / contract.CONFIG_FILE, _config(scale, seed))
        _write_json(tmp / contract.INDEXER_FILE, _indexer())
        for v in voices:
            _write_json(tmp / contract.VOICE_DIR / f"{v}.json", _voice(v, seed))
    return StandinSummary(target, scale, seed, stages, time.perf_counter() - t0)


def _complete(path: Path) -> bool:
    files = [*(contract.GRAPHS[s].path for s in contract.STAGES), contract.CONFIG_FILE,
             contract.INDEXER_FILE]
    return all((path / f).is_file() for f in files)


def ensure_standin(scale: str = DEFAULT_SCALE, seed: int = 0, *,
                   settings: Settings | None = None) -> Path:
    """The cached stand-in of this scale and seed in tts_kit's cache (``$TTS_KIT_CACHE_DIR``),
    built on first use (racing processes each build privately; a loser's copy is discarded).

    Example:
        >>> path = ensure_standin("tiny")  # doctest: +SKIP
        >>> path.name  # doctest: +SKIP
        'standin-tiny-seed0-v1'
    """
    _check_scale(scale)
    cache = (settings if settings is not None else current_settings()).tts_kit_cache
    target = cache / f"standin-{scale}-seed{seed}-v{STANDIN_VERSION}"
    if _complete(target):
        return target
    cache.mkdir(parents=True, exist_ok=True)
    if target.exists():  # builds are atomic: an incomplete one was damaged by hand
        shutil.rmtree(target, ignore_errors=True)
    try:
        build_standin(target, scale=scale, seed=seed)
    except (OSError, TtsKitError):
        if not _complete(target):  # else another process built it first: that copy serves
            raise
    return target
