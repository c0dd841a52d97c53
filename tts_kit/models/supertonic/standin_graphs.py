"""The stand-in's four networks: the published Supertonic-3 architecture per scale
(`_ARCH`) built with ``onnx.helper`` and filled with scaled, seeded random weights
(`build_graph`). `tts_kit.models.supertonic.standin` writes them out as a bundle.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.models.supertonic._onnx_builder import Attention, GraphBuilder

if TYPE_CHECKING:
    import onnx

#: What every stand-in is, written into its graphs and ``tts.json`` (`standin.scale_note`
#: says it for a given scale).
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


# -- architecture per scale -------------------------------------------------------------


@dataclass(frozen=True)
class _DPDims:
    ch: int  # embedding and hidden width
    hidden: int  # ConvNeXt MLP width
    convnext: int  # number of ConvNeXt layers
    attn_layers: int  # self-attention layers
    heads: int  # attention heads
    ffn: int  # attention feed-forward width
    mlp: int  # width of the duration head's hidden layers
    mlp_layers: int = 2  # hidden layers of the duration head
    k: int = 5  # depthwise kernel size


@dataclass(frozen=True)
class _TEDims:
    ch: int  # embedding and hidden width (the output is projected to 256 at every scale)
    hidden: int  # ConvNeXt MLP width
    dilations: tuple[int, ...]  # one ConvNeXt layer per dilation
    attn_layers: int  # self-attention layers
    heads: int  # self-attention heads
    ffn: int  # attention feed-forward width
    style_heads: int = 2  # heads of the cross-attention to the 50 style tokens
    k: int = 5  # depthwise kernel size


@dataclass(frozen=True)
class _VEDims:
    ch: int  # residual-stream width
    hidden: int  # ConvNeXt MLP width
    blocks: int  # main blocks
    dilations0: tuple[int, ...]  # ConvNeXt stack before time conditioning, one layer per dilation
    n1: int  # ConvNeXt layers between time conditioning and text cross-attention
    n2: int  # ConvNeXt layers between text cross-attention and style conditioning
    heads: int  # heads of the cross-attention to the text
    units: int  # width of that cross-attention
    last: int  # ConvNeXt layers after the main blocks
    time_hidden: int  # time-embedding MLP width
    style_units: int = 256  # width of the cross-attention to the style tokens (own k and v)
    style_heads: int = 2  # heads of that cross-attention
    time_dim: int = 64  # sinusoidal time-embedding size
    k: int = 5  # depthwise kernel size


@dataclass(frozen=True)
class _VocDims:
    ch: int  # ConvNeXt width
    hidden: int  # ConvNeXt MLP width
    dilations: tuple[int, ...]  # one ConvNeXt layer per dilation
    head_hidden: int  # width of the head's first convolution
    k: int = 7  # kernel size of the input conv and of the depthwise convs
    head_k: int = 3  # kernel size of the head's first convolution


@dataclass(frozen=True)
class _Arch:
    dp: _DPDims  # duration predictor
    te: _TEDims  # text encoder
    ve: _VEDims  # vector estimator
    voc: _VocDims  # vocoder


def _published(w: int) -> _Arch:
    """The published architecture's depths with text-encoder width ``w`` (``full``: 256),
    the other widths in proportion (``medium``: half of each)."""
    return _Arch(
        _DPDims(ch=64, hidden=256, convnext=6, attn_layers=2, heads=2, ffn=256, mlp=128),
        _TEDims(ch=w, hidden=4 * w, dilations=(1, 1, 2, 2, 4, 4), attn_layers=4, heads=4,
                ffn=4 * w),
        _VEDims(ch=2 * w, hidden=8 * w, blocks=4, dilations0=(1, 2, 4, 8), n1=1, n2=1,
                heads=8, units=2 * w, last=4, time_hidden=256),
        _VocDims(ch=2 * w, hidden=8 * w, dilations=(1, 2, 4, 1, 2, 4, 1, 1, 1, 1),
                 head_hidden=8 * w),
    )


_ARCH: dict[str, _Arch] = {
    "full": _published(256),
    "medium": _published(128),
    "tiny": _Arch(
        _DPDims(ch=8, hidden=32, convnext=2, attn_layers=1, heads=2, ffn=32, mlp=16),
        _TEDims(ch=24, hidden=96, dilations=(1, 2), attn_layers=1, heads=2, ffn=96),
        _VEDims(ch=64, hidden=256, blocks=1, dilations0=(1, 2), n1=1, n2=1, heads=2,
                units=64, last=1, time_hidden=64, style_units=64),
        _VocDims(ch=64, hidden=256, dilations=(1, 2), head_hidden=128),
    ),
}


def _check_scale(scale: str) -> _Arch:
    if scale not in _ARCH:
        raise TtsKitError(f"unknown stand-in scale {scale!r}; choose one of "
                          f"{', '.join(contract.STANDIN_SCALES)}")
    return _ARCH[scale]


def _stage_rng(seed: int, stage: str) -> np.random.Generator:
    # One independent stream per stage: changing one network never reshuffles another.
    key = contract.STAGES.index(stage)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(key,)))


# -- the four networks ------------------------------------------------------------------


def _attn_layer(g: GraphBuilder, x: str, mask_t: str, kb: str, ch: int, heads: int, ffn: int,
                scope: str) -> str:
    """Post-LN transformer layer (the VITS ``attn_encoder`` the real model uses)."""
    a = g.attention(x, x, Attention(ch, ch, ch, heads), f"{scope}.attn", key_bias=kb)
    x = g.layer_norm(g.op("Add", [x, a], scope), ch, f"{scope}.norm1", eps=1e-5)
    f = g.linear(x, ch, ffn, f"{scope}.ffn1")
    f = g.linear(g.gelu(f, scope), ffn, ch, f"{scope}.ffn2")
    x = g.layer_norm(g.op("Add", [x, f], scope), ch, f"{scope}.norm2", eps=1e-5)
    return g.op("Mul", [x, mask_t], scope)


def _char_encoder(g: GraphBuilder, d: _DPDims | _TEDims, dilations: Iterable[int],
                  prefix: str, attn: str) -> str:
    """Character embedding (masked), ConvNeXt layers, then self-attention: ``[B, T, C]``."""
    mask = "text_mask"
    emb = g.weight(f"{prefix}text_embedder.weight", (VOCAB_SIZE, d.ch), 1.0)
    x = g.op("Gather", [emb, "text_ids"], f"{prefix}text_embedder", axis=0)
    x = g.op("Mul", [g.transpose(x, [0, 2, 1], f"{prefix}text_embedder"), mask],
             f"{prefix}text_embedder")
    for i, dil in enumerate(dilations):
        x = g.convnext(x, mask, d.ch, d.hidden, d.k, dil, f"{prefix}convnext.{i}")
    x = g.transpose(x, [0, 2, 1])
    mask_t = g.transpose(mask, [0, 2, 1])
    kb = g.key_bias(mask)
    for i in range(d.attn_layers):
        x = _attn_layer(g, x, mask_t, kb, d.ch, d.heads, d.ffn, f"{prefix}{attn}.{i}")
    return x


def _duration_predictor(d: _DPDims, rng: np.random.Generator) -> onnx.ModelProto:
    g = GraphBuilder("duration_predictor", rng)
    mask = "text_mask"
    x = _char_encoder(g, d, [1] * d.convnext, "sentence_encoder.", "attn")
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
    x = _char_encoder(g, d, d.dilations, "", "attn_encoder")
    style_dim = contract.STYLE_TTL_DIMS[2]
    # Normalising the style tokens (std ~0.06) gives the attention real contrast.
    style = g.layer_norm("style_ttl", style_dim, "speech_prompted.style_norm", eps=1e-5)
    a = g.attention(x, style, Attention(d.ch, style_dim, d.ch, d.style_heads),
                    "speech_prompted.attn")
    x = g.layer_norm(g.op("Add", [x, a], "speech_prompted"), d.ch, "speech_prompted.norm",
                     eps=1e-5)
    y = g.linear(x, d.ch, 256, "proj_out")
    y = g.op("Mul", [g.transpose(y, [0, 2, 1]), mask], "proj_out")
    return g.model(contract.GRAPHS["text_encoder"], {"text_emb": y},
                   "tts_kit stand-in text encoder: " + NOTE)


#: Classifier-free guidance inside the vector estimator, as in the real Supertonic-3 graph:
#: the step is ``noisy + (W * cond - (W - 1) * uncond) / total_step`` with W = 4.
GUIDANCE_SCALE = 4.0
#: Initializer names (and shapes, below) of the real graph's guidance tokens: the learned
#: conditional style key and the unconditional masker's special tokens.
COND_STYLE_KEY = "/vector_estimator/Expand_output_0"
UNCOND_TEXT = "vector_estimator.tts.ttl.uncond_masker.text_special_token"
UNCOND_STYLE_KEY = "vector_estimator.tts.ttl.uncond_masker.style_key_special_token"
UNCOND_STYLE_VALUE = "vector_estimator.tts.ttl.uncond_masker.style_value_special_token"


def _time_embedding(g: GraphBuilder, d: _VEDims) -> str:
    """Sinusoidal embedding of t = current_step / total_step in [0, 1), then an MLP."""
    t = g.op("Div", ["current_step", "total_step"], "time_encoder")
    t = g.op("Unsqueeze", [t, g.const([1], "int64")], "time_encoder")
    half = d.time_dim // 2
    freqs = 1000.0 * np.exp(-math.log(10000.0) * np.arange(half) / half)
    args = g.op("Mul", [t, g.const(freqs[None, :].astype(np.float32))], "time_encoder")
    temb = g.op("Concat", [g.op("Sin", [args], "time_encoder"),
                           g.op("Cos", [args], "time_encoder")], "time_encoder", axis=1)
    temb = g.gelu(g.linear(temb, d.time_dim, d.time_hidden, "time_encoder.mlp.0"),
                  "time_encoder")
    return g.linear(temb, d.time_hidden, d.time_hidden, "time_encoder.mlp.1")


def _guidance_batch(g: GraphBuilder) -> dict[str, str]:
    """The doubled batch ``[cond; uncond]`` the real graph builds before its vector field:
    the user's text and style, then the masker's special tokens expanded over the batch."""
    style = contract.STYLE_TTL_DIMS
    two = g.const([2, 1, 1], "int64")
    s_shape = g.op("Shape", ["style_ttl"], "guidance")
    tok = (1, style[1], style[2])
    key_c = g.op("Expand", [g.weight(COND_STYLE_KEY, tok, 1.0), s_shape], "guidance")
    key_u = g.op("Expand", [g.weight(UNCOND_STYLE_KEY, tok, 1.0), s_shape], "guidance")
    val_u = g.op("Expand", [g.weight(UNCOND_STYLE_VALUE, tok, 0.06), s_shape], "guidance")
    text_u = g.op("Expand", [g.weight(UNCOND_TEXT, (1, 256, 1), 1.0),
                             g.op("Shape", ["text_emb"], "guidance")], "guidance")
    cat = lambda a, b: g.op("Concat", [a, b], "guidance", axis=0)  # noqa: E731
    return {
        "latent": g.op("Tile", ["noisy_latent", two], "guidance"),
        "mask": g.op("Tile", ["latent_mask", two], "guidance"),
        "text_mask": g.op("Tile", ["text_mask", two], "guidance"),
        "text": cat("text_emb", text_u),
        "style_key": cat(key_c, key_u),
        "style_value": cat("style_ttl", val_u),
    }


def _main_block(g: GraphBuilder, d: _VEDims, x: str, c: dict[str, str], p: str) -> str:
    """One main block: ConvNeXt, time, ConvNeXt, text attention, ConvNeXt, style attention."""
    mask, unsq2, style_dim = c["mask"], g.const([2], "int64"), contract.STYLE_TTL_DIMS[2]
    for i, dil in enumerate(d.dilations0):
        x = g.convnext(x, mask, d.ch, d.hidden, d.k, dil, f"{p}.convnext_0.{i}")
    tc = g.linear(c["temb"], d.time_hidden, d.ch, f"{p}.time_cond")
    x = g.op("Mul", [g.op("Add", [x, g.op("Unsqueeze", [tc, unsq2], p)], p), mask], p)
    for i in range(d.n1):
        x = g.convnext(x, mask, d.ch, d.hidden, d.k, 1, f"{p}.convnext_1.{i}")
    xt = g.transpose(x, [0, 2, 1], p)
    h = g.layer_norm(xt, d.ch, f"{p}.text_cond.norm")
    a = g.attention(h, c["text"], Attention(d.ch, 256, d.units, d.heads, out_gain=0.5),
                    f"{p}.text_cond", key_bias=c["key_bias"])
    x = g.op("Mul", [g.transpose(g.op("Add", [xt, a], p), [0, 2, 1], p), mask], p)
    for i in range(d.n2):
        x = g.convnext(x, mask, d.ch, d.hidden, d.k, 1, f"{p}.convnext_2.{i}")
    xt = g.transpose(x, [0, 2, 1], p)
    h = g.layer_norm(xt, d.ch, f"{p}.style_cond.norm")
    a = g.attention(h, c["style_key"],
                    Attention(d.ch, style_dim, d.style_units, d.style_heads, out_gain=0.5),
                    f"{p}.style_cond", v_in=c["style_value"])
    return g.op("Mul", [g.transpose(g.op("Add", [xt, a], p), [0, 2, 1], p), mask], p)


def _vector_estimator(d: _VEDims, rng: np.random.Generator) -> onnx.ModelProto:
    g = GraphBuilder("vector_estimator", rng)
    lat_ch, style_dim = contract.LATENT_CHANNELS, contract.STYLE_TTL_DIMS[2]
    c = _guidance_batch(g)
    c["temb"] = g.op("Tile", [_time_embedding(g, d), g.const([2, 1], "int64")], "guidance")
    # Normalising the style tokens (std ~0.06) gives the attention real contrast.
    c["style_key"] = g.layer_norm(c["style_key"], style_dim, "style.key_norm", eps=1e-5)
    c["style_value"] = g.layer_norm(c["style_value"], style_dim, "style.value_norm", eps=1e-5)
    c["key_bias"] = g.key_bias(c["text_mask"])
    c["text"] = g.transpose(c["text"], [0, 2, 1], "text")
    mask = c["mask"]
    x = g.op("Mul", [c["latent"], mask], "proj_in")
    x = g.op("Mul", [g.conv1d(x, lat_ch, d.ch, 1, "proj_in"), mask], "proj_in")
    for b in range(d.blocks):
        x = _main_block(g, d, x, c, f"main_blocks.{b}")
    for i in range(d.last):
        x = g.convnext(x, mask, d.ch, d.hidden, d.k, 1, f"last_convnext.{i}")
    h = g.layer_norm(g.transpose(x, [0, 2, 1], "proj_out"), d.ch, "proj_out.norm")
    v = g.transpose(g.linear(h, d.ch, lat_ch, "proj_out"), [0, 2, 1], "proj_out")
    # Guidance: split the doubled batch and combine 4 * cond - 3 * uncond.
    cond, uncond = g.op("Split", [v], "guidance", n_out=2, axis=0)
    v = g.op("Sub", [g.op("Mul", [cond, g.const(GUIDANCE_SCALE)], "guidance"),
                     g.op("Mul", [uncond, g.const(GUIDANCE_SCALE - 1.0)], "guidance")],
             "guidance")
    # One Euler step of the flow: x + v / total_step.
    n = g.op("Unsqueeze", ["total_step", g.const([1, 2], "int64")], "flow")
    y = g.op("Add", ["noisy_latent", g.op("Div", [v, n], "flow")], "flow")
    y = g.op("Mul", [y, "latent_mask"], "flow")
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
