"""The stand-in's four networks: the published Supertonic-3 architecture per scale (`_ARCH`)
built with ``onnx.helper`` (`GraphBuilder`) and seeded random weights (`build_graph`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError

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
#: Additive attention bias for padded keys: finite so that an FP16 copy cannot make NaN.
MASK_NEG = -1.0e4


# -- the graph builder: a network reads like its PyTorch forward pass ----------------------


@dataclass(frozen=True)
class Attention:
    """The widths of one multi-head attention (`GraphBuilder.attention`).

    Example:
        >>> Attention(dq=64, dkv=256, units=64, heads=2).out_gain
        1.0
    """

    dq: int  # query width, and the output's
    dkv: int  # key (and value) width
    units: int  # inner width, split over the heads
    heads: int
    out_gain: float = 1.0  # gain of the output projection


class GraphBuilder:
    """Accumulates nodes and seeded initializers for the graph ``name`` (the stage, also the
    prefix of node names), every weight drawn from ``rng`` in build order; each method returns
    its output's name (``[B, C, T]`` into convolutions, ``[B, T, C]`` into LayerNorm, MatMul
    and attention).

    Example:
        >>> g = GraphBuilder("demo", np.random.default_rng(0))
        >>> g.gelu("x").startswith("demo/")
        True
    """

    def __init__(self, name: str, rng: np.random.Generator):
        from onnx import helper, numpy_helper

        self._helper, self._numpy_helper = helper, numpy_helper
        self.name = name
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._count = 0
        self._consts: dict[tuple, str] = {}

    # -- primitives ---------------------------------------------------------------------

    def init(self, name: str, array: np.ndarray) -> str:
        """Add an initializer and return its name."""
        self.inits.append(self._numpy_helper.from_array(array, name))
        return name

    def weight(self, name: str, shape: tuple[int, ...], std: float, centre: float = 0.0) -> str:
        """A normal(centre, std) float32 weight drawn from the stage's stream."""
        w = self.rng.standard_normal(shape, dtype=np.float32)
        w *= np.float32(std)
        if centre:
            w += np.float32(centre)
        return self.init(name, w)

    def const(self, value: float | list[int] | np.ndarray, dtype: str = "float32") -> str:
        """A shared small constant (scalars, shapes, axes)."""
        arr = np.asarray(value, dtype=dtype)
        key = (dtype, arr.shape, arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.init(f"const_{len(self._consts)}", arr)
        return self._consts[key]

    def op(self, op_type: str, inputs: list[str], scope: str = "", n_out: int = 1, **attrs):
        """Append one node; returns its output name (or a list when ``n_out`` > 1)."""
        self._count += 1
        base = f"{self.name}/{scope + '/' if scope else ''}{op_type}_{self._count}"
        outs = [f"{base}:{i}" for i in range(n_out)]
        self.nodes.append(self._helper.make_node(op_type, inputs, outs, name=base, **attrs))
        return outs[0] if n_out == 1 else outs

    # -- layers -------------------------------------------------------------------------

    def linear(self, x: str, din: int, dout: int, scope: str, gain: float = 1.0,
               bias: bool = True) -> str:
        """``x @ W + b`` over the last axis; std = gain / sqrt(din) keeps the scale."""
        y = self.op("MatMul", [x, self.weight(f"{scope}.weight", (din, dout),
                                              gain / math.sqrt(din))], scope)
        if bias:
            y = self.op("Add", [y, self.weight(f"{scope}.bias", (dout,), 0.02)], scope)
        return y

    def conv1d(self, x: str, cin: int, cout: int, k: int, scope: str, dilation: int = 1,
               groups: int = 1, gain: float = 1.0) -> str:
        """Conv1d with "same" padding on ``[B, C, T]``."""
        fan_in = (cin // groups) * k
        w = self.weight(f"{scope}.weight", (cout, cin // groups, k), gain / math.sqrt(fan_in))
        b = self.weight(f"{scope}.bias", (cout,), 0.02)
        pad = dilation * (k - 1) // 2
        return self.op("Conv", [x, w, b], scope, dilations=[dilation], group=groups,
                       kernel_shape=[k], pads=[pad, pad], strides=[1])

    def layer_norm(self, x: str, dim: int, scope: str, eps: float = 1e-6) -> str:
        """LayerNorm over the last axis."""
        s = self.weight(f"{scope}.weight", (dim,), 0.05, centre=1.0)
        b = self.weight(f"{scope}.bias", (dim,), 0.02)
        return self.op("LayerNormalization", [x, s, b], scope, axis=-1, epsilon=eps)

    def gelu(self, x: str, scope: str = "") -> str:
        """Exact GELU spelled as PyTorch exports it before opset 20 (ORT fuses it back)."""
        h = self.op("Div", [x, self.const(math.sqrt(2.0))], scope)
        h = self.op("Erf", [h], scope)
        h = self.op("Add", [h, self.const(1.0)], scope)
        h = self.op("Mul", [x, h], scope)
        return self.op("Mul", [h, self.const(0.5)], scope)

    def transpose(self, x: str, perm: list[int], scope: str = "") -> str:
        """Transpose with an explicit permutation."""
        return self.op("Transpose", [x], scope, perm=perm)

    def convnext(self, x: str, mask: str | None, ch: int, hidden: int, k: int, dilation: int,
                 scope: str) -> str:
        """ConvNeXt block on ``[B, C, T]``: masked depthwise conv, LN, MLP, layer scale, residual.

        Masked before the conv, so a padded batch equals single calls."""
        h = self.op("Mul", [x, mask], scope) if mask else x
        h = self.conv1d(h, ch, ch, k, f"{scope}.dwconv", dilation=dilation, groups=ch)
        h = self.transpose(h, [0, 2, 1], scope)
        h = self.layer_norm(h, ch, f"{scope}.norm")
        h = self.linear(h, ch, hidden, f"{scope}.pwconv1")
        h = self.gelu(h, scope)
        h = self.linear(h, hidden, ch, f"{scope}.pwconv2", gain=1.4)
        # Trained ConvNeXt layer scales sit around 1e-2 .. 1e-1; the residual stream then
        # grows slowly with depth instead of doubling per block.
        gamma = self.rng.uniform(0.02, 0.1, size=(ch,)).astype(np.float32)
        h = self.op("Mul", [h, self.init(f"{scope}.gamma", gamma)], scope)
        h = self.transpose(h, [0, 2, 1], scope)
        y = self.op("Add", [x, h], scope)
        return self.op("Mul", [y, mask], scope) if mask else y

    def attention(self, q_in: str, kv_in: str, spec: Attention, scope: str,
                  key_bias: str | None = None, v_in: str | None = None) -> str:
        """Multi-head attention on ``[B, T, C]`` tensors; returns ``[B, Tq, spec.dq]``.

        ``key_bias`` ``[B, 1, 1, Tk]``: 0 for real keys, `MASK_NEG` for padding; ``v_in``
        gives the values their own source (as the real style attention).
        """
        units, heads = spec.units, spec.heads
        if units % heads:
            raise TtsKitError(f"{scope}: {units} units do not split into {heads} heads")
        d = units // heads
        q = self.linear(q_in, spec.dq, units, f"{scope}.q")
        k = self.linear(kv_in, spec.dkv, units, f"{scope}.k")
        v = self.linear(v_in or kv_in, spec.dkv, units, f"{scope}.v")
        split = self.const([0, 0, heads, d], "int64")
        q = self.transpose(self.op("Reshape", [q, split], scope), [0, 2, 1, 3], scope)
        k = self.transpose(self.op("Reshape", [k, split], scope), [0, 2, 3, 1], scope)
        v = self.transpose(self.op("Reshape", [v, split], scope), [0, 2, 1, 3], scope)
        s = self.op("MatMul", [q, k], scope)
        s = self.op("Mul", [s, self.const(1.0 / math.sqrt(d))], scope)
        if key_bias:
            s = self.op("Add", [s, key_bias], scope)
        p = self.op("Softmax", [s], scope, axis=-1)
        o = self.op("MatMul", [p, v], scope)
        o = self.transpose(o, [0, 2, 1, 3], scope)
        o = self.op("Reshape", [o, self.const([0, 0, units], "int64")], scope)
        return self.linear(o, units, spec.dq, f"{scope}.o", gain=spec.out_gain)

    def key_bias(self, mask: str, scope: str = "key_bias") -> str:
        """``[B, 1, T]`` mask -> ``[B, 1, 1, T]`` additive bias (0 or `MASK_NEG`)."""
        b = self.op("Sub", [mask, self.const(1.0)], scope)
        b = self.op("Mul", [b, self.const(-MASK_NEG)], scope)
        return self.op("Unsqueeze", [b, self.const([1], "int64")], scope)

    def model(self, io: dict[str, str]) -> onnx.ModelProto:
        """Wrap the graph with its stage's I/O (the contract's); ``io``: output name ->
        internal tensor."""
        helper, spec = self._helper, contract.GRAPHS[self.name]
        doc = f"tts_kit stand-in {self.name.replace('_', ' ')}: {NOTE}"
        nodes = list(self.nodes)
        for out in spec.outputs:
            nodes.append(helper.make_node("Identity", [io[out.name]], [out.name],
                                          name=f"{self.name}/output_{out.name}"))

        def info(t: contract.TensorSpec) -> onnx.ValueInfoProto:
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(t.dtype))
            return helper.make_tensor_value_info(t.name, elem, list(t.shape))

        graph = helper.make_graph(nodes, self.name, [info(t) for t in spec.inputs],
                                  [info(t) for t in spec.outputs], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  producer_name="tts_kit.models.supertonic.standin", doc_string=doc)
        model.ir_version = 8
        return model


# -- architecture per scale -------------------------------------------------------------


@dataclass(frozen=True)
class _CharDims:
    """A character encoder: the duration predictor's, or the text encoder's."""

    ch: int  # embedding and hidden width (the text encoder projects its output to 256)
    hidden: int  # ConvNeXt MLP width
    dilations: tuple[int, ...]  # one ConvNeXt layer per dilation
    attn_layers: int  # self-attention layers
    heads: int  # self-attention heads
    ffn: int  # attention feed-forward width
    mlp: int = 0  # duration predictor: width of the duration head's hidden layers
    mlp_layers: int = 2  # duration predictor: hidden layers of the duration head
    style_heads: int = 2  # text encoder: heads of the cross-attention to the 50 style tokens
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
    dp: _CharDims  # duration predictor
    te: _CharDims  # text encoder
    ve: _VEDims  # vector estimator
    voc: _VocDims  # vocoder


def _published(w: int) -> _Arch:
    """The published architecture's depths with text-encoder width ``w`` (``full``: 256),
    the other widths in proportion (``medium``: half of each)."""
    return _Arch(
        _CharDims(ch=64, hidden=256, dilations=(1,) * 6, attn_layers=2, heads=2, ffn=256,
                  mlp=128),
        _CharDims(ch=w, hidden=4 * w, dilations=(1, 1, 2, 2, 4, 4), attn_layers=4, heads=4,
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
        _CharDims(ch=8, hidden=32, dilations=(1, 1), attn_layers=1, heads=2, ffn=32, mlp=16),
        _CharDims(ch=24, hidden=96, dilations=(1, 2), attn_layers=1, heads=2, ffn=96),
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


# -- the four networks ------------------------------------------------------------------


def _attn_layer(g: GraphBuilder, x: str, mask_t: str, kb: str, d: _CharDims, scope: str) -> str:
    """Post-LN transformer layer (the VITS ``attn_encoder`` the real model uses)."""
    ch, heads, ffn = d.ch, d.heads, d.ffn
    a = g.attention(x, x, Attention(ch, ch, ch, heads), f"{scope}.attn", key_bias=kb)
    x = g.layer_norm(g.op("Add", [x, a], scope), ch, f"{scope}.norm1", eps=1e-5)
    f = g.linear(x, ch, ffn, f"{scope}.ffn1")
    f = g.linear(g.gelu(f, scope), ffn, ch, f"{scope}.ffn2")
    x = g.layer_norm(g.op("Add", [x, f], scope), ch, f"{scope}.norm2", eps=1e-5)
    return g.op("Mul", [x, mask_t], scope)


def _char_encoder(g: GraphBuilder, d: _CharDims, prefix: str, attn: str) -> str:
    """Character embedding (masked), ConvNeXt layers, then self-attention: ``[B, T, C]``."""
    mask = "text_mask"
    emb = g.weight(f"{prefix}text_embedder.weight", (VOCAB_SIZE, d.ch), 1.0)
    x = g.op("Gather", [emb, "text_ids"], f"{prefix}text_embedder", axis=0)
    x = g.op("Mul", [g.transpose(x, [0, 2, 1], f"{prefix}text_embedder"), mask],
             f"{prefix}text_embedder")
    for i, dil in enumerate(d.dilations):
        x = g.convnext(x, mask, d.ch, d.hidden, d.k, dil, f"{prefix}convnext.{i}")
    x = g.transpose(x, [0, 2, 1])
    mask_t = g.transpose(mask, [0, 2, 1])
    kb = g.key_bias(mask)
    for i in range(d.attn_layers):
        x = _attn_layer(g, x, mask_t, kb, d, f"{prefix}{attn}.{i}")
    return x


def _duration_predictor(d: _CharDims, rng: np.random.Generator) -> onnx.ModelProto:
    g = GraphBuilder("duration_predictor", rng)
    mask = "text_mask"
    x = _char_encoder(g, d, "sentence_encoder.", "attn")
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
    return g.model({"duration": dur})


def _text_encoder(d: _CharDims, rng: np.random.Generator) -> onnx.ModelProto:
    g = GraphBuilder("text_encoder", rng)
    mask = "text_mask"
    x = _char_encoder(g, d, "", "attn_encoder")
    style_dim = contract.STYLE_TTL_DIMS[2]
    # Normalising the style tokens (std ~0.06) gives the attention real contrast.
    style = g.layer_norm("style_ttl", style_dim, "speech_prompted.style_norm", eps=1e-5)
    a = g.attention(x, style, Attention(d.ch, style_dim, d.ch, d.style_heads),
                    "speech_prompted.attn")
    x = g.layer_norm(g.op("Add", [x, a], "speech_prompted"), d.ch, "speech_prompted.norm",
                     eps=1e-5)
    y = g.linear(x, d.ch, 256, "proj_out")
    y = g.op("Mul", [g.transpose(y, [0, 2, 1]), mask], "proj_out")
    return g.model({"text_emb": y})


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
    return g.model({"denoised_latent": y})


def _vocoder(d: _VocDims, rng: np.random.Generator) -> onnx.ModelProto:
    g = GraphBuilder("vocoder", rng)
    ldim = contract.LATENT_DIM
    x = g.op("Mul", ["latent", g.const(1.0 / LATENT_SCALE)], "unscale")
    # Unpack [B, 24*6, L] -> [B, 24, 6L]: each latent frame holds 6 consecutive sub-frames.
    frames = contract.CHUNK_COMPRESS_FACTOR
    x = g.op("Reshape", [x, g.const([0, ldim, frames, -1], "int64")], "unpack")
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
    bn = [g.weight("decoder.norm.weight", (d.ch,), 0.05, centre=1.0),
          g.weight("decoder.norm.bias", (d.ch,), 0.05),
          g.weight("decoder.norm.running_mean", (d.ch,), 0.05),
          g.init("decoder.norm.running_var",
                 rng.uniform(0.8, 1.25, size=(d.ch,)).astype(np.float32))]
    x = g.op("BatchNormalization", [x, *bn], "decoder.norm", epsilon=1e-5)
    x = g.conv1d(x, d.ch, d.head_hidden, d.head_k, "decoder.head.0")
    slope = g.weight("decoder.head.1.weight", (d.head_hidden, 1), 0.02, centre=0.25)
    x = g.op("PRelu", [x, slope], "decoder.head.1")
    # Gain 0.25 puts the pre-tanh signal at std ~0.2: speech-like level, rarely clipped.
    x = g.conv1d(x, d.head_hidden, contract.BASE_CHUNK_SIZE, 1, "decoder.head.2", gain=0.25)
    # [B, 512, 6L] -> [B, 6L, 512] -> [B, 3072 L]: each sub-frame emits 512 samples in order.
    x = g.op("Reshape", [g.transpose(x, [0, 2, 1], "head"), g.const([0, -1], "int64")], "head")
    wav = g.op("Tanh", [x], "head")
    return g.model({"wav_tts": wav})


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
    # One independent stream per stage: changing one network never reshuffles another.
    stream = np.random.SeedSequence(seed, spawn_key=(contract.STAGES.index(stage),))
    return fn(getattr(arch, attr), np.random.default_rng(stream))
