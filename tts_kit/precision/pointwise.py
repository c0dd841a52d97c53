"""Pointwise convolutions as matrix multiplies (`pointwise_to_matmul`), so the ``int8-pw``
recipe's dynamic INT8 of MatMul and Gather weights runs integer GEMM kernels. Why:
docs/benchmarks.md."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx


def _is_pointwise(node: onnx.NodeProto, inits: dict, users: Counter) -> bool:
    """A 1-D ``Conv`` that is exactly a matrix multiply over channels."""
    from onnx import TensorProto, helper

    if node.op_type != "Conv" or len(node.input) < 2 or node.input[1] not in inits:
        return False
    w = inits[node.input[1]]
    if w.data_type != TensorProto.FLOAT or len(w.dims) != 3 or w.dims[2] != 1:
        return False
    if users[node.input[1]] != 1:  # a shared weight: leave it as it is
        return False
    if len(node.input) > 2 and node.input[2] and node.input[2] not in inits:
        return False
    a = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
    auto_pad = a.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    return (a.get("group", 1) == 1 and list(a.get("strides", [1])) == [1]
            and not any(a.get("pads", [0, 0])) and list(a.get("kernel_shape", [1])) == [1]
            and auto_pad in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"))


def pointwise_to_matmul(model: onnx.ModelProto) -> int:
    """Rewrite every pointwise 1-D ``Conv`` of ``model`` (kernel 1, no groups, stride 1, no
    padding; a float32 weight used by it alone, an initializer bias) in place as Transpose,
    MatMul, Add, Transpose, keeping its output name; returns how many were rewritten.

    Example:
        >>> pointwise_to_matmul(onnx.load("vocoder.onnx"))  # doctest: +SKIP
        1
    """
    from onnx import helper, numpy_helper

    inits = {t.name: t for t in model.graph.initializer}
    users = Counter(i for n in model.graph.node for i in n.input)
    out_nodes, drop, count = [], set(), 0
    for node in model.graph.node:
        if not _is_pointwise(node, inits, users):
            out_nodes.append(node)
            continue
        base = node.name or f"tts_kit_pointwise_{count}"
        x, wname, y = node.input[0], node.input[1], node.output[0]
        w = numpy_helper.to_array(inits[wname])[:, :, 0]  # [Cout, Cin]
        model.graph.initializer.append(
            numpy_helper.from_array(np.ascontiguousarray(w.T), f"{wname}_matmul"))
        drop.add(wname)
        xt, prod = f"{base}/x_t", f"{base}/matmul"
        out_nodes.append(helper.make_node("Transpose", [x], [xt], name=f"{base}/transpose_in",
                                          perm=[0, 2, 1]))
        out_nodes.append(helper.make_node("MatMul", [xt, f"{wname}_matmul"], [prod],
                                          name=f"{base}/MatMul"))
        if len(node.input) > 2 and node.input[2]:
            biased = f"{base}/biased"
            out_nodes.append(helper.make_node("Add", [prod, node.input[2]], [biased],
                                              name=f"{base}/bias"))
            prod = biased
        out_nodes.append(helper.make_node("Transpose", [prod], [y], name=f"{base}/transpose_out",
                                          perm=[0, 2, 1]))
        count += 1
    if count:
        from tts_kit.precision.graphs import _refill

        _refill(model.graph.initializer, [t for t in model.graph.initializer
                                          if t.name not in drop])
        # Shape annotations of the rewritten outputs still hold ([B, Cout, T]); the new
        # intermediates get theirs from ONNX Runtime on load.
        _refill(model.graph.node, out_nodes)
    return count


def convert_int8_pw(src: Path, dst: Path, scratch: Path,
                    op_block_list: Sequence[str] | None = None) -> tuple[dict[str, int], int]:
    """The ``int8-pw`` method: `pointwise_to_matmul`, then dynamic INT8 of the MatMul and
    Gather weights (other convolutions stay float); returns (ops report, ops kept float).

    Example:
        >>> convert_int8_pw(src, dst, scratch)  # doctest: +SKIP
        ({'Conv 1x1 -> MatMul': 1, 'MatMul': 4}, 0)
    """
    import onnx

    from tts_kit.precision.graphs import _convert_graph, _save_model

    model = onnx.load(str(src))
    rewritten = pointwise_to_matmul(model)
    staged = scratch / src.name
    _save_model(model, staged)
    del model
    blocked = sorted({"Conv", *(op_block_list or ())})
    ops, kept = _convert_graph(staged, dst, "int8", True, blocked)
    return {"Conv 1x1 -> MatMul": rewritten, **ops}, kept
