"""A synthetic Supertonic bundle: the real layout and architecture, seeded random weights.

The real weights are not redistributable, yet memory, latency and FP16 fidelity can only
be measured on graphs of the real shape and cost. The stand-in builds the four networks
of the published Supertonic-3 architecture (ConvNeXt stacks, masked self- and cross-
attention, a flow-matching vector field, a ConvNeXt vocoder) with ``onnx.helper`` and
fills them with scaled random weights, so activations stay in a realistic range at every
depth. Its audio is noise; its costs are realistic. Durations are plausible (about
14 characters per second), so latent lengths, and with them costs, follow the text.

Scales: ``full`` is the published size (about 99M parameters), ``medium`` about a
quarter of it for memory tests, ``tiny`` a few MB for unit tests. The I/O contract
(`tts_kit.core.contract.GRAPHS`) is identical at every scale.

One concern, kept in one module past 600 lines: the four graph builders, the bundle's
config, indexer and voices, and writing it out all describe the same synthetic bundle,
and each part reads the architecture table (`_ARCH`) next to it.

Example:
    >>> from tts_kit.models.supertonic.standin import build_standin
    >>> summary = build_standin("/tmp/standin-tiny", scale="tiny")  # doctest: +SKIP
    >>> print(summary.table())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
import time
import unicodedata
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from tts_kit.core import contract, procfacts
from tts_kit.core.errors import TtsKitError
from tts_kit.core.settings import Settings
from tts_kit.core.settings import settings as current_settings
from tts_kit.models.supertonic._onnx_builder import GraphBuilder

#: Bumped whenever the graphs or files change, so cached stand-ins are rebuilt.
STANDIN_VERSION = 1
SCALES: tuple[str, ...] = contract.STANDIN_SCALES
#: The scale users get when no model is found
#(`tts_kit.models.supertonic.bundle.resolve_model_dir`): the
#: published size, so every latency and memory figure is the real model's order of
#: magnitude. Tests and CI choose ``tiny`` explicitly (``$TTS_KIT_STANDIN_SCALE``).
DEFAULT_SCALE = contract.DEFAULT_STANDIN_SCALE
#: Scales whose costs (latency, memory, the stage mix) are those of the real model.
REALISTIC_SCALES: tuple[str, ...] = ("full",)
#: What every stand-in is: written into its graphs and ``tts.json`` (the architecture's
#: costs are the real model's at ``full``; `scale_note` says it for a given scale).
NOTE = "synthetic weights: the audio is noise; the costs are realistic"

#: Rows of every character-embedding table: the real Supertonic-3 vocabulary size, so the
#: real ``unicode_indexer.json`` (ids 0..8320) also works with the stand-in graphs.
VOCAB_SIZE = 8321
#: Seconds per character at speed 1.0 (about 14 characters per second).
SECONDS_PER_CHAR = 1.0 / 14.0
#: Per-character duration varies within exp(+-DURATION_SPREAD) of `SECONDS_PER_CHAR`.
DURATION_SPREAD = 0.15
#: Latent normaliser of the real model (``ttl.normalizer.scale``): the vocoder divides by it.
LATENT_SCALE = 0.25
FRAMES = contract.CHUNK_COMPRESS_FACTOR  # latent sub-frames per latent frame (6)


def scale_note(scale: str) -> str:
    """What a stand-in of ``scale`` is good for, in one line (banners, CLI, reports).

    Example:
        >>> scale_note("full").split("; ")[1]
        'the costs are realistic (full scale, the published size)'
        >>> scale_note("tiny").split(";")[1]
        ' the costs are NOT realistic (tiny scale, a few MB for tests)'
    """
    if scale in REALISTIC_SCALES:
        return f"{NOTE} ({scale} scale, the published size)"
    size = {"tiny": "a few MB for tests", "medium": "a quarter of the real model"}.get(
        scale, "not the published size")
    return (f"synthetic weights: the audio is noise; the costs are NOT realistic ({scale} "
            f"scale, {size}); for realistic figures unset TTS_KIT_STANDIN_SCALE (full) or "
            "give the real model")


# -- architecture per scale -------------------------------------------------------------


@dataclass(frozen=True)
class _DPDims:
    ch: int
    """Embedding and hidden width."""
    hidden: int
    """ConvNeXt MLP width."""
    convnext: int
    """Number of ConvNeXt layers."""
    attn_layers: int
    """Self-attention layers."""
    heads: int
    """Attention heads."""
    ffn: int
    """Attention feed-forward width."""
    mlp: int
    """Width of the duration head's hidden layers."""
    mlp_layers: int = 2
    """Hidden layers of the duration head."""
    k: int = 5
    """Depthwise kernel size."""


@dataclass(frozen=True)
class _TEDims:
    ch: int
    """Embedding and hidden width (the output is projected to 256 at every scale)."""
    hidden: int
    """ConvNeXt MLP width."""
    dilations: tuple[int, ...]
    """One ConvNeXt layer per dilation."""
    attn_layers: int
    """Self-attention layers."""
    heads: int
    """Self-attention heads."""
    ffn: int
    """Attention feed-forward width."""
    style_heads: int = 2
    """Heads of the cross-attention to the 50 style tokens."""
    k: int = 5
    """Depthwise kernel size."""


@dataclass(frozen=True)
class _VEDims:
    ch: int
    """Residual-stream width."""
    hidden: int
    """ConvNeXt MLP width."""
    blocks: int
    """Main blocks."""
    dilations0: tuple[int, ...]
    """ConvNeXt stack before time conditioning, one layer per dilation."""
    n1: int
    """ConvNeXt layers between time conditioning and text cross-attention."""
    n2: int
    """ConvNeXt layers between text cross-attention and style conditioning."""
    heads: int
    """Heads of the cross-attention to the text."""
    units: int
    """Width of that cross-attention."""
    last: int
    """ConvNeXt layers after the main blocks."""
    time_hidden: int
    """Time-embedding MLP width."""
    time_dim: int = 64
    """Sinusoidal time-embedding size."""
    k: int = 5
    """Depthwise kernel size."""


@dataclass(frozen=True)
class _VocDims:
    ch: int
    """ConvNeXt width."""
    hidden: int
    """ConvNeXt MLP width."""
    dilations: tuple[int, ...]
    """One ConvNeXt layer per dilation."""
    head_hidden: int
    """Width of the head's first convolution."""
    k: int = 7
    """Kernel size of the input conv and of the depthwise convs."""
    head_k: int = 3
    """Kernel size of the head's first convolution."""


@dataclass(frozen=True)
class _Arch:
    dp: _DPDims
    """Duration predictor."""
    te: _TEDims
    """Text encoder."""
    ve: _VEDims
    """Vector estimator."""
    voc: _VocDims
    """Vocoder."""


_ARCH: dict[str, _Arch] = {
    "full": _Arch(
        _DPDims(ch=64, hidden=256, convnext=6, attn_layers=2, heads=2, ffn=256, mlp=128),
        _TEDims(ch=256, hidden=1024, dilations=(1, 1, 2, 2, 4, 4), attn_layers=4, heads=4,
                ffn=1024),
        _VEDims(ch=512, hidden=2048, blocks=4, dilations0=(1, 2, 4, 8), n1=1, n2=1, heads=8,
                units=512, last=4, time_hidden=256),
        _VocDims(ch=512, hidden=2048, dilations=(1, 2, 4, 1, 2, 4, 1, 1, 1, 1),
                 head_hidden=2048),
    ),
    "medium": _Arch(
        _DPDims(ch=64, hidden=256, convnext=6, attn_layers=2, heads=2, ffn=256, mlp=128),
        _TEDims(ch=128, hidden=512, dilations=(1, 1, 2, 2, 4, 4), attn_layers=4, heads=4,
                ffn=512),
        _VEDims(ch=256, hidden=1024, blocks=4, dilations0=(1, 2, 4, 8), n1=1, n2=1, heads=8,
                units=256, last=4, time_hidden=256),
        _VocDims(ch=256, hidden=1024, dilations=(1, 2, 4, 1, 2, 4, 1, 1, 1, 1),
                 head_hidden=1024),
    ),
    "tiny": _Arch(
        _DPDims(ch=8, hidden=32, convnext=2, attn_layers=1, heads=2, ffn=32, mlp=16),
        _TEDims(ch=24, hidden=96, dilations=(1, 2), attn_layers=1, heads=2, ffn=96),
        _VEDims(ch=64, hidden=256, blocks=1, dilations0=(1, 2), n1=1, n2=1, heads=2,
                units=64, last=1, time_hidden=64),
        _VocDims(ch=64, hidden=256, dilations=(1, 2), head_hidden=128),
    ),
}


def _check_scale(scale: str) -> _Arch:
    if scale not in _ARCH:
        raise TtsKitError(f"unknown stand-in scale {scale!r}; choose one of {', '.join(SCALES)}")
    return _ARCH[scale]


def _stage_rng(seed: int, stage: str) -> np.random.Generator:
    # One independent stream per stage: changing one network never reshuffles another.
    key = contract.STAGES.index(stage) if stage in contract.STAGES else zlib.crc32(stage.encode())
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key,)))


# -- the four networks ------------------------------------------------------------------


def _attn_layer(g: GraphBuilder, x: str, mask_t: str, kb: str, ch: int, heads: int, ffn: int,
                scope: str) -> str:
    """Post-LN transformer layer (the VITS ``attn_encoder`` the real model uses)."""
    a = g.attention(x, x, ch, ch, ch, heads, f"{scope}.attn", key_bias=kb)
    x = g.layer_norm(g.op("Add", [x, a], scope), ch, f"{scope}.norm1", eps=1e-5)
    f = g.linear(x, ch, ffn, f"{scope}.ffn1")
    f = g.linear(g.gelu(f, scope), ffn, ch, f"{scope}.ffn2")
    x = g.layer_norm(g.op("Add", [x, f], scope), ch, f"{scope}.norm2", eps=1e-5)
    return g.op("Mul", [x, mask_t], scope)


def _embed(g: GraphBuilder, ch: int, scope: str) -> str:
    """Character embedding: ``text_ids`` -> masked ``[B, C, T]``."""
    emb = g.weight(f"{scope}.weight", (VOCAB_SIZE, ch), 1.0)
    x = g.op("Gather", [emb, "text_ids"], scope, axis=0)
    return g.op("Mul", [g.transpose(x, [0, 2, 1], scope), "text_mask"], scope)


def _duration_predictor(d: _DPDims, rng: np.random.Generator) -> onnx.ModelProto:
    g = GraphBuilder("duration_predictor", rng)
    mask = "text_mask"
    x = _embed(g, d.ch, "sentence_encoder.text_embedder")
    for i in range(d.convnext):
        x = g.convnext(x, mask, d.ch, d.hidden, d.k, 1, f"sentence_encoder.convnext.{i}")
    x = g.transpose(x, [0, 2, 1])
    mask_t = g.transpose(mask, [0, 2, 1])
    kb = g.key_bias(mask)
    for i in range(d.attn_layers):
        x = _attn_layer(g, x, mask_t, kb, d.ch, d.heads, d.ffn, f"sentence_encoder.attn.{i}")
    x = g.linear(x, d.ch, d.ch, "sentence_encoder.proj_out")
    # Style conditioning = a concat-then-linear over [char state, flattened 8x16 tokens],
    # written as two matmuls so the style half is computed once per item.
    n_style = contract.STYLE_DP_DIMS[1] * contract.STYLE_DP_DIMS[2]
    style = g.op("Reshape", ["style_dp", g.const([0, n_style], "int64")], "predictor")
    # The style tokens are small (std ~0.25): a larger gain lets the voice move the pace.
    s = g.linear(style, n_style, d.mlp, "predictor.style", gain=4.0, bias=False)
    s = g.op("Unsqueeze", [s, g.const([1], "int64")], "predictor")
    h = g.op("Add", [g.linear(x, d.ch, d.mlp, "predictor.layers.0"), s], "predictor")
    h = g.gelu(h, "predictor")
    for i in range(1, d.mlp_layers):
        h = g.gelu(g.linear(h, d.mlp, d.mlp, f"predictor.layers.{i}"), "predictor")
    h = g.linear(h, d.mlp, 1, "predictor.out", gain=1.5)
    h = g.op("Squeeze", [h, g.const([-1], "int64")], "predictor")
    # Bounded per-character duration: (1/14 s) * exp(0.15 * tanh(head)).
    per = g.op("Mul", [g.op("Tanh", [h], "predictor"), g.const(DURATION_SPREAD)], "predictor")
    per = g.op("Mul", [g.op("Exp", [per], "predictor"), g.const(SECONDS_PER_CHAR)], "predictor")
    m2 = g.op("Squeeze", [mask, g.const([1], "int64")], "predictor")
    per = g.op("Mul", [per, m2], "predictor")
    dur = g.op("ReduceSum", [per, g.const([1], "int64")], "predictor", keepdims=0)
    return g.model(contract.GRAPHS["duration_predictor"], {"duration": dur},
                   "tts_kit stand-in duration predictor: " + NOTE)


def _text_encoder(d: _TEDims, rng: np.random.Generator) -> onnx.ModelProto:
    g = GraphBuilder("text_encoder", rng)
    mask = "text_mask"
    x = _embed(g, d.ch, "text_embedder")
    for i, dil in enumerate(d.dilations):
        x = g.convnext(x, mask, d.ch, d.hidden, d.k, dil, f"convnext.{i}")
    x = g.transpose(x, [0, 2, 1])
    mask_t = g.transpose(mask, [0, 2, 1])
    kb = g.key_bias(mask)
    for i in range(d.attn_layers):
        x = _attn_layer(g, x, mask_t, kb, d.ch, d.heads, d.ffn, f"attn_encoder.{i}")
    style_dim = contract.STYLE_TTL_DIMS[2]
    # Normalising the style tokens (std ~0.06) gives the attention real contrast.
    style = g.layer_norm("style_ttl", style_dim, "speech_prompted.style_norm", eps=1e-5)
    a = g.attention(x, style, d.ch, style_dim, d.ch, d.style_heads, "speech_prompted.attn")
    x = g.layer_norm(g.op("Add", [x, a], "speech_prompted"), d.ch, "speech_prompted.norm",
                     eps=1e-5)
    y = g.linear(x, d.ch, 256, "proj_out")
    y = g.op("Mul", [g.transpose(y, [0, 2, 1]), mask], "proj_out")
    return g.model(contract.GRAPHS["text_encoder"], {"text_emb": y},
                   "tts_kit stand-in text encoder: " + NOTE)


def _vector_estimator(d: _VEDims, rng: np.random.Generator) -> onnx.ModelProto:
    g = GraphBuilder("vector_estimator", rng)
    mask, lat_ch, text_dim = "latent_mask", contract.LATENT_CHANNELS, 256
    style_dim = contract.STYLE_TTL_DIMS[2]
    # Sinusoidal embedding of t = current_step / total_step in [0, 1).
    t = g.op("Div", ["current_step", "total_step"], "time_encoder")
    t = g.op("Unsqueeze", [t, g.const([1], "int64")], "time_encoder")
    half = d.time_dim // 2
    freqs = 1000.0 * np.exp(-math.log(10000.0) * np.arange(half) / half)
    args = g.op("Mul", [t, g.const(freqs[None, :].astype(np.float32))], "time_encoder")
    temb = g.op("Concat", [g.op("Sin", [args], "time_encoder"),
                           g.op("Cos", [args], "time_encoder")], "time_encoder", axis=1)
    temb = g.gelu(g.linear(temb, d.time_dim, d.time_hidden, "time_encoder.mlp.0"),
                  "time_encoder")
    temb = g.linear(temb, d.time_hidden, d.time_hidden, "time_encoder.mlp.1")
    # Style: one normalised summary vector per item, used for FiLM in every block.
    pooled = g.op("ReduceMean", ["style_ttl"], "style", axes=[1], keepdims=0)
    pooled = g.layer_norm(pooled, style_dim, "style.norm", eps=1e-5)
    text = g.transpose("text_emb", [0, 2, 1], "text")
    kb = g.key_bias("text_mask")
    x = g.op("Mul", ["noisy_latent", mask], "proj_in")
    x = g.op("Mul", [g.conv1d(x, lat_ch, d.ch, 1, "proj_in"), mask], "proj_in")
    unsq2 = g.const([2], "int64")
    for b in range(d.blocks):
        p = f"main_blocks.{b}"
        for i, dil in enumerate(d.dilations0):
            x = g.convnext(x, mask, d.ch, d.hidden, d.k, dil, f"{p}.convnext_0.{i}")
        tc = g.linear(temb, d.time_hidden, d.ch, f"{p}.time_cond")
        x = g.op("Add", [x, g.op("Unsqueeze", [tc, unsq2], p)], p)
        x = g.op("Mul", [x, mask], p)
        for i in range(d.n1):
            x = g.convnext(x, mask, d.ch, d.hidden, d.k, 1, f"{p}.convnext_1.{i}")
        xt = g.transpose(x, [0, 2, 1], p)
        h = g.layer_norm(xt, d.ch, f"{p}.text_cond.norm")
        a = g.attention(h, text, d.ch, text_dim, d.units, d.heads, f"{p}.text_cond",
                        key_bias=kb, out_gain=0.5)
        x = g.op("Mul", [g.transpose(g.op("Add", [xt, a], p), [0, 2, 1], p), mask], p)
        for i in range(d.n2):
            x = g.convnext(x, mask, d.ch, d.hidden, d.k, 1, f"{p}.convnext_2.{i}")
        film = g.linear(pooled, style_dim, 2 * d.ch, f"{p}.style_cond", gain=0.2)
        film = g.op("Unsqueeze", [film, unsq2], p)
        scale, shift = g.op("Split", [film, g.const([d.ch, d.ch], "int64")], p, n_out=2,
                            axis=1)
        scale = g.op("Add", [scale, g.const(1.0)], p)
        x = g.op("Mul", [g.op("Add", [g.op("Mul", [x, scale], p), shift], p), mask], p)
    for i in range(d.last):
        x = g.convnext(x, mask, d.ch, d.hidden, d.k, 1, f"last_convnext.{i}")
    h = g.layer_norm(g.transpose(x, [0, 2, 1], "proj_out"), d.ch, "proj_out.norm")
    v = g.transpose(g.linear(h, d.ch, lat_ch, "proj_out"), [0, 2, 1], "proj_out")
    # One Euler step of the flow: x + v / total_step, with |v| ~ 1 so magnitudes stay bounded.
    n = g.op("Unsqueeze", ["total_step", g.const([1, 2], "int64")], "flow")
    y = g.op("Add", ["noisy_latent", g.op("Div", [v, n], "flow")], "flow")
    y = g.op("Mul", [y, mask], "flow")
    return g.model(contract.GRAPHS["vector_estimator"], {"denoised_latent": y},
                   "tts_kit stand-in vector estimator: " + NOTE)


def _vocoder(d: _VocDims, rng: np.random.Generator) -> onnx.ModelProto:
    g = GraphBuilder("vocoder", rng)
    ldim = contract.LATENT_DIM
    x = g.op("Mul", ["latent", g.const(1.0 / LATENT_SCALE)], "unscale")
    # Unpack [B, 24*6, L] -> [B, 24, 6L]: each latent frame holds 6 consecutive sub-frames.
    x = g.op("Reshape", [x, g.const([0, ldim, FRAMES, -1], "int64")], "unpack")
    x = g.transpose(x, [0, 1, 3, 2], "unpack")
    x = g.op("Reshape", [x, g.const([0, ldim, -1], "int64")], "unpack")
    # De-normalise with per-channel latent statistics (std ~0.25 undoes the unscale).
    std = rng.uniform(0.15, 0.35, size=(1, ldim, 1)).astype(np.float32)
    mean = (0.05 * rng.standard_normal((1, ldim, 1))).astype(np.float32)
    x = g.op("Mul", [x, g.init("normalizer.std", std)], "denorm")
    x = g.op("Add", [x, g.init("normalizer.mean", mean)], "denorm")
    x = g.conv1d(x, ldim, d.ch, d.k, "decoder.embed")
    for i, dil in enumerate(d.dilations):
        x = g.convnext(x, None, d.ch, d.hidden, d.k, dil, f"decoder.convnext.{i}")
    bn = [g.near("decoder.norm.weight", (d.ch,), 1.0, 0.05),
          g.near("decoder.norm.bias", (d.ch,), 0.0, 0.05),
          g.near("decoder.norm.running_mean", (d.ch,), 0.0, 0.05),
          g.init("decoder.norm.running_var",
                 rng.uniform(0.8, 1.25, size=(d.ch,)).astype(np.float32))]
    x = g.op("BatchNormalization", [x, *bn], "decoder.norm", epsilon=1e-5)
    x = g.conv1d(x, d.ch, d.head_hidden, d.head_k, "decoder.head.0")
    slope = g.near("decoder.head.1.weight", (d.head_hidden, 1), 0.25, 0.02)
    x = g.op("PRelu", [x, slope], "decoder.head.1")
    # Gain 0.25 puts the pre-tanh signal at std ~0.2: speech-like level, rarely clipped.
    x = g.conv1d(x, d.head_hidden, contract.BASE_CHUNK_SIZE, 1, "decoder.head.2", gain=0.25)
    # [B, 512, 6L] -> [B, 6L, 512] -> [B, 3072 L]: each sub-frame emits 512 samples in order.
    x = g.op("Reshape", [g.transpose(x, [0, 2, 1], "head"), g.const([0, -1], "int64")], "head")
    wav = g.op("Tanh", [x], "head")
    return g.model(contract.GRAPHS["vocoder"], {"wav_tts": wav},
                   "tts_kit stand-in vocoder: " + NOTE)


_BUILDERS = {
    "duration_predictor": (_duration_predictor, "dp"),
    "text_encoder": (_text_encoder, "te"),
    "vector_estimator": (_vector_estimator, "ve"),
    "vocoder": (_vocoder, "voc"),
}


def build_graph(stage: str, scale: str = "tiny", seed: int = 0) -> onnx.ModelProto:
    """Build one stand-in graph in memory (what `build_standin` writes to disk).

    Example:
        >>> m = build_graph("vocoder", "tiny")
        >>> [i.name for i in m.graph.input]
        ['latent']
    """
    arch = _check_scale(scale)
    if stage not in _BUILDERS:
        raise TtsKitError(f"unknown stage {stage!r}; choose one of {', '.join(contract.STAGES)}")
    fn, attr = _BUILDERS[stage]
    return fn(getattr(arch, attr), _stage_rng(seed, stage))


# -- tts.json, indexer, voices ----------------------------------------------------------


def _convnext_cfg(idim: int, ksz: int, hidden: int, dilations: Iterable[int]) -> dict:
    dil = list(dilations)
    return {"idim": idim, "ksz": ksz, "intermediate_dim": hidden, "num_layers": len(dil),
            "dilation_lst": dil}


def _config(scale: str, seed: int) -> dict[str, Any]:
    """A ``tts.json`` of the real structure, with this scale's dimensions."""
    a = _check_scale(scale)
    dp, te, ve, voc = a.dp, a.te, a.ve, a.voc
    ldim, ccf = contract.LATENT_DIM, contract.CHUNK_COMPRESS_FACTOR
    return {
        "tts_version": "v1.7.3",
        "split": "opensource-multilingual",
        "ttl": {
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
                    "style_cond_layer": {"idim": ve.ch, "style_dim": 256},
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
        },
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
                "convnext": _convnext_cfg(dp.ch, dp.k, dp.hidden, [1] * dp.convnext),
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
_CJK_START = 0x4E00


def _indexer() -> list[int]:
    """Code point -> token id (-1 = unsupported), exactly `VOCAB_SIZE` ids.

    Thai is deliberately left out, so tests have a script the stand-in cannot read.

    Ids follow code-point order like the real indexer; the remaining ids go to the most
    common CJK ideographs (from U+4E00). Precomposed Hangul syllables are accepted and
    share the id of their leading consonant: the pipeline's NFKD turns them into Jamo
    before lookup, so the vocabulary stays the real size.
    """
    table = np.full(0x10000, -1, dtype=np.int64)
    cps = np.concatenate([np.arange(lo, hi + 1) for lo, hi in _BLOCKS])
    cps = np.array([c for c in cps if unicodedata.category(chr(c)) not in ("Cn", "Cs")])
    n_cjk = VOCAB_SIZE - len(cps)
    cps = np.concatenate([cps, np.arange(_CJK_START, _CJK_START + n_cjk)])
    table[cps] = np.arange(len(cps))
    syl = np.arange(0xAC00, 0xD7A4)
    table[syl] = table[0x1100 + (syl - 0xAC00) // (21 * 28)]
    return table.tolist()


def _float_list(arr: np.ndarray) -> list:
    """Nested lists of the shortest decimal that round-trips each float32 (half the JSON)."""
    # str() of a numpy float32 is its shortest round-trip form; a Python float's is not.
    flat = [float(str(v)) for v in arr.astype(np.float32).ravel()]
    out: Any = np.array(flat, dtype=np.float64).reshape(arr.shape)
    return out.tolist()


def _voice(name: str, seed: int) -> dict[str, Any]:
    """A voice style with the real file's layout and magnitudes (std ~0.06 and ~0.25)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1000 + zlib.crc32(
        name.encode()),)))
    # Per-channel offsets plus token noise, like real style tokens: a voice is a
    # consistent direction, not white noise.
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
    """Size of one built graph.

    Example:
        >>> StageSummary("vocoder", params=25_340_000, bytes=101_400_000).params
        25340000
    """

    stage: str
    """Stage name."""
    params: int
    """Initializer elements."""
    bytes: int
    """Size of the ``.onnx`` file."""


@dataclass
class StandinSummary:
    """What `build_standin` built.

    Example:
        >>> s = build_standin("/tmp/st", "tiny")  # doctest: +SKIP
        >>> s.total_params  # doctest: +SKIP
        812345
    """

    path: Path
    """The bundle directory."""
    scale: str
    """``tiny``, ``medium`` or ``full``."""
    seed: int
    """Weight seed."""
    stages: list[StageSummary] = field(default_factory=list)
    """One entry per graph, in pipeline order."""
    build_s: float = 0.0
    """Wall time of the build."""

    @property
    def total_params(self) -> int:
        """Parameters over all four graphs."""
        return sum(s.params for s in self.stages)

    @property
    def total_bytes(self) -> int:
        """Bytes of the four graphs."""
        return sum(s.bytes for s in self.stages)

    def table(self) -> str:
        """Per-stage parameters and sizes as an aligned text table.

        Example:
            >>> print(StandinSummary(Path("x"), "tiny", 0,
            ...       [StageSummary("vocoder", 2_000_000, 8_000_000)]).table())
            stage                   params       MB
            vocoder                  2.00M      8.0
            total                    2.00M      8.0
        """
        rows = [f"{'stage':<20}{'params':>10}{'MB':>9}"]
        for s in [*self.stages, StageSummary("total", self.total_params, self.total_bytes)]:
            rows.append(f"{s.stage:<20}{s.params / 1e6:>9.2f}M{s.bytes / 1e6:>9.1f}")
        return "\n".join(rows)


_VOICE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def _write_json(path: Path, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(", ", ": "))


def build_standin(
    path: str | os.PathLike[str],
    scale: str = DEFAULT_SCALE,
    seed: int = 0,
    voices: Iterable[str] = ("M1", "F1"),
) -> StandinSummary:
    """Build a stand-in bundle at ``path`` (which must not exist or be an empty directory).

    The bundle is written into a temporary directory beside ``path`` and renamed into
    place at the end, so ``path`` is either absent or complete.

    Raises:
        TtsKitError: unknown scale, bad voice name, or ``path`` is a file or non-empty.

    Example:
        >>> s = build_standin("/tmp/standin-tiny", scale="tiny", seed=0)  # doctest: +SKIP
        >>> [st.stage for st in s.stages]  # doctest: +SKIP
        ['duration_predictor', 'text_encoder', 'vector_estimator', 'vocoder']
    """
    arch = _check_scale(scale)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TtsKitError(f"seed must be an integer >= 0, got {seed!r}")  # not numpy's error
    voices = list(voices)
    bad = [v for v in voices if not _VOICE_NAME.match(v)]
    if not voices or bad:
        raise TtsKitError(f"voice names must be non-empty [A-Za-z0-9_-]+, got {voices!r}")
    target = Path(path).expanduser()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise TtsKitError(f"{path}: already exists and is not an empty directory; "
                         "choose a new path or remove it")
    target.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        (tmp / contract.ONNX_DIR).mkdir()
        (tmp / contract.VOICE_DIR).mkdir()
        stages = []
        for stage in contract.STAGES:
            fn, attr = _BUILDERS[stage]
            model = fn(getattr(arch, attr), _stage_rng(seed, stage))
            params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
            out = tmp / contract.GRAPHS[stage].path
            out.write_bytes(model.SerializeToString())
            del model  # the full vector estimator is ~250 MB; free before the next
            stages.append(StageSummary(stage, params, out.stat().st_size))
        _write_json(tmp / contract.CONFIG_FILE, _config(scale, seed))
        _write_json(tmp / contract.INDEXER_FILE, _indexer())
        for v in voices:
            _write_json(tmp / contract.VOICE_DIR / f"{v}.json", _voice(v, seed))
        # mkdtemp made it 0700 (private while half-built); the bundle gets the mode any
        # new directory gets under the user's umask, as mkdir would have given it.
        os.chmod(tmp, procfacts.umask_mode(0o777))
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return StandinSummary(target, scale, seed, stages, time.perf_counter() - t0)


def standin_cache_dir(*, settings: Settings | None = None) -> Path:
    """Where `ensure_standin` keeps built stand-ins: ``$TTS_KIT_CACHE_DIR`` or ~/.cache/tts_kit.

    Example:
        >>> standin_cache_dir().name  # doctest: +SKIP
        'tts_kit'
    """
    return (settings if settings is not None else current_settings()).tts_kit_cache


def _complete(path: Path) -> bool:
    files = [*(contract.GRAPHS[s].path for s in contract.STAGES), contract.CONFIG_FILE,
             contract.INDEXER_FILE]
    return all((path / f).is_file() for f in files)


def ensure_standin(scale: str = DEFAULT_SCALE, seed: int = 0, *,
                   settings: Settings | None = None) -> Path:
    """The cached stand-in of this scale and seed, built on first use.

    Safe when several processes race: each builds privately and renames into place; a
    loser finds the target already there and discards its own copy.

    Example:
        >>> path = ensure_standin("tiny")  # doctest: +SKIP
        >>> path.name  # doctest: +SKIP
        'standin-tiny-seed0-v1'
    """
    _check_scale(scale)
    cache = standin_cache_dir(settings=settings)
    target = cache / f"standin-{scale}-seed{seed}-v{STANDIN_VERSION}"
    if _complete(target):
        return target
    cache.mkdir(parents=True, exist_ok=True)
    if target.exists():
        # Builds are atomic, so an incomplete target was damaged by hand: rebuild it.
        shutil.rmtree(target, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.build-", dir=cache))
    try:
        build_standin(work / "bundle", scale=scale, seed=seed)
        try:
            os.replace(work / "bundle", target)
        except OSError:
            if not _complete(target):
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target
