"""Small graph-building layer over ``onnx.helper`` for the stand-in networks.

Each method appends nodes (and seeded initializers) and returns its output's name, so a
network reads like its PyTorch forward pass (``[B, C, T]`` into convolutions, ``[B, T, C]``
into LayerNorm, MatMul and attention). ``onnx`` is imported by the first `GraphBuilder`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from tts_kit.core.contract import GraphSpec
from tts_kit.core.errors import TtsKitError

if TYPE_CHECKING:
    import onnx

OPSET = 17
IR_VERSION = 8
#: Additive attention bias for padded keys: finite so that an FP16 copy cannot make NaN.
MASK_NEG = -1.0e4

_ELEM = {"float32": 1, "int64": 7}  # onnx.TensorProto.FLOAT, .INT64


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
    """Accumulates nodes and seeded initializers for one ONNX graph.

    Args:
        name: graph name, also the prefix of node names.
        rng: the stage's own random stream; every weight is drawn from it in build order.

    Example:
        >>> import numpy as np
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
        self.params = 0
        self._count = 0
        self._consts: dict[tuple, str] = {}

    # -- primitives ---------------------------------------------------------------------

    def init(self, name: str, array: np.ndarray) -> str:
        """Add an initializer and return its name."""
        self.inits.append(self._numpy_helper.from_array(array, name))
        self.params += int(array.size)
        return name

    def weight(self, name: str, shape: tuple[int, ...], std: float) -> str:
        """A normal(0, std) float32 weight drawn from the stage's stream."""
        w = self.rng.standard_normal(shape, dtype=np.float32)
        w *= np.float32(std)
        return self.init(name, w)

    def near(self, name: str, shape: tuple[int, ...], centre: float, spread: float) -> str:
        """A weight scattered around ``centre`` (LayerNorm scales, biases), like trained ones."""
        w = self.rng.standard_normal(shape, dtype=np.float32)
        w *= np.float32(spread)
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
            y = self.op("Add", [y, self.near(f"{scope}.bias", (dout,), 0.0, 0.02)], scope)
        return y

    def conv1d(self, x: str, cin: int, cout: int, k: int, scope: str, dilation: int = 1,
               groups: int = 1, gain: float = 1.0) -> str:
        """Conv1d with "same" padding on ``[B, C, T]``."""
        fan_in = (cin // groups) * k
        w = self.weight(f"{scope}.weight", (cout, cin // groups, k), gain / math.sqrt(fan_in))
        b = self.near(f"{scope}.bias", (cout,), 0.0, 0.02)
        pad = dilation * (k - 1) // 2
        return self.op("Conv", [x, w, b], scope, dilations=[dilation], group=groups,
                       kernel_shape=[k], pads=[pad, pad], strides=[1])

    def layer_norm(self, x: str, dim: int, scope: str, eps: float = 1e-6) -> str:
        """LayerNorm over the last axis."""
        s = self.near(f"{scope}.weight", (dim,), 1.0, 0.05)
        b = self.near(f"{scope}.bias", (dim,), 0.0, 0.02)
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

    def model(self, spec: GraphSpec, io: dict[str, str], doc: str) -> onnx.ModelProto:
        """Wrap the graph with the contract's I/O; ``io``: output name -> internal tensor."""
        helper = self._helper
        nodes = list(self.nodes)
        for out in spec.outputs:
            nodes.append(helper.make_node("Identity", [io[out.name]], [out.name],
                                          name=f"{self.name}/output_{out.name}"))

        def infos(specs: tuple) -> list:
            return [helper.make_tensor_value_info(t.name, _ELEM[t.dtype], list(t.shape))
                    for t in specs]

        graph = helper.make_graph(nodes, self.name, infos(spec.inputs), infos(spec.outputs),
                                  self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="tts_kit.models.supertonic.standin", doc_string=doc)
        model.ir_version = IR_VERSION
        return model
