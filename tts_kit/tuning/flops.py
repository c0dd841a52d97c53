"""A cost model read off the graphs: parameters and FLOPs per stage, per second of audio
(2 x the multiply-adds of each MatMul, Gemm and Conv; the vector estimator once per flow
step)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import shape_inference

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError

#: Seconds of audio one latent frame holds (6 sub-frames of 512 samples).
SECONDS_PER_FRAME = contract.LATENT_CHANNELS // contract.LATENT_DIM * contract.BASE_CHUNK_SIZE \
    / contract.SAMPLE_RATE
#: Characters per second of speech at speed 1.0 (the stand-in's duration model).
CHARS_PER_SECOND = 14.0
#: The audio length FLOPs are counted at (attention is quadratic): a typical 8 s chunk.
REFERENCE_SECONDS = 8.0
#: Operators whose multiply-adds are counted.
COUNTED_OPS = ("MatMul", "Gemm", "Conv")


def reference_dims(seconds: float = REFERENCE_SECONDS, batch: int = 1) -> dict[str, int]:
    """Concrete values of the contract's symbolic dims for ``seconds`` of audio.

    Example:
        >>> reference_dims(1.0)["L"]
        14
    """
    if not seconds > 0:
        raise TtsKitError(f"seconds must be positive, got {seconds}")
    return {"B": int(batch), "T": max(1, round(seconds * CHARS_PER_SECOND)),
            "L": max(1, round(seconds / SECONDS_PER_FRAME))}


def _fix_inputs(model: onnx.ModelProto, dims: Mapping[str, int]) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for vi in m.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param"):
                if d.dim_param not in dims:
                    raise TtsKitError(f"input {vi.name}: no value for dimension {d.dim_param!r}")
                d.dim_value = int(dims[d.dim_param])
    del m.graph.output[:]  # symbolic outputs (3072*L) would clash with inferred ones
    m.graph.output.extend(
        [onnx.helper.make_tensor_value_info(o.name, o.type.tensor_type.elem_type, None)
         for o in model.graph.output])
    return m


def _shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    inferred = shape_inference.infer_shapes(model, data_prop=True)
    out: dict[str, tuple[int, ...]] = {}
    for vi in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        dims = vi.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            out[vi.name] = tuple(d.dim_value for d in dims)
    for init in model.graph.initializer:
        out[init.name] = tuple(init.dims)
    return out


def _node_flops(node: onnx.NodeProto, shapes: Mapping[str, tuple[int, ...]]) -> int:
    def need(name: str) -> tuple[int, ...]:
        if name not in shapes:
            raise TtsKitError(f"{node.name}: shape of {name!r} not inferred")
        return shapes[name]

    out = need(node.output[0])
    if node.op_type == "MatMul":
        return 2 * int(np.prod(out)) * need(node.input[0])[-1]
    if node.op_type == "Gemm":
        trans_a = next((a.i for a in node.attribute if a.name == "transA"), 0)
        a = need(node.input[0])
        return 2 * int(np.prod(out)) * (a[0] if trans_a else a[1])
    w = need(node.input[1])  # Conv: [Cout, Cin/groups, *k]
    return 2 * int(np.prod(out)) * int(np.prod(w[1:]))


def graph_flops(model: onnx.ModelProto | str | Path, dims: Mapping[str, int]) -> int:
    """FLOPs of one run of ``model`` with its symbolic input dims fixed to ``dims``.

    Example:
        >>> from tts_kit.models.supertonic.standin_graphs import build_graph
        >>> graph_flops(build_graph("vocoder", "tiny"), {"B": 1, "L": 10}) > 0
        True
    """
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model), load_external_data=False)
    shapes = _shapes(_fix_inputs(model, dims))
    return sum(_node_flops(n, shapes) for n in model.graph.node if n.op_type in COUNTED_OPS)


def graph_params(model: onnx.ModelProto) -> int:
    """Number of weights (initializer elements) of a graph.

    Example:
        >>> from tts_kit.models.supertonic.standin_graphs import build_graph
        >>> graph_params(build_graph("vocoder", "tiny")) > 1000
        True
    """
    return sum(int(np.prod(i.dims)) for i in model.graph.initializer)


@dataclass(frozen=True)
class StageFlops:
    """What one stage costs for ``seconds`` of audio at ``steps`` flow steps."""

    stage: str
    params: int  #: weights of the graph
    runs: int  #: per chunk (``steps`` for the vector estimator, else 1)
    flops_per_run: int  #: at the reference dims
    seconds: float  #: of audio the reference dims hold

    @property
    def gflops_per_audio_s(self) -> float:
        """GFLOP per second of audio (all runs)."""
        return self.runs * self.flops_per_run / self.seconds / 1e9

    def as_dict(self) -> dict[str, float | int | str]:
        """Plain values for JSON."""
        return {**asdict(self), "gflops_per_audio_s": self.gflops_per_audio_s}


def stage_flops(
    graphs: Mapping[str, onnx.ModelProto | str | Path],
    *,
    steps: int = contract.DEFAULT_STEPS,
    seconds: float = REFERENCE_SECONDS,
) -> list[StageFlops]:
    """Per stage (``graphs``: stage -> graph or ``.onnx`` path): parameters and FLOPs per
    second of audio at ``steps`` flow steps.

    Example:
        >>> from tts_kit.models.supertonic.standin_graphs import build_graph
        >>> costs = stage_flops({"vocoder": build_graph("vocoder", "tiny")}, steps=8)
        >>> costs[0].stage, costs[0].runs
        ('vocoder', 1)
    """
    _check_steps(steps)
    dims = reference_dims(seconds)
    audio_s = dims["L"] * SECONDS_PER_FRAME
    out = []
    for stage, g in graphs.items():
        model = g if isinstance(g, onnx.ModelProto) else onnx.load(str(g),
                                                                   load_external_data=False)
        runs = steps if stage == "vector_estimator" else 1
        out.append(StageFlops(stage, graph_params(model), runs, graph_flops(model, dims),
                             audio_s))
    return out


def model_costs(bundle: Any, *, steps: int = contract.DEFAULT_STEPS,
                seconds: float = REFERENCE_SECONDS) -> dict[str, Any]:
    """The cost model of an opened model, as plain values for JSON.

    Example:
        >>> from tts_kit.models.resolve import resolve_model
        >>> model_costs(resolve_model("/path/to/bundle")[0])["steps"]  # doctest: +SKIP
        8
    """
    _check_counted(bundle, steps, "the cost model")
    costs = stage_flops({s: st.path for s, st in bundle.stages.items()}, steps=steps,
                        seconds=seconds)
    return {"steps": steps, "seconds": costs[0].seconds if costs else seconds,
            "counted": list(COUNTED_OPS), "stages": [c.as_dict() for c in costs],
            "gflops_per_audio_s": sum(c.gflops_per_audio_s for c in costs)}


def _check_steps(steps: int) -> None:
    if not contract.MIN_STEPS <= steps <= contract.MAX_STEPS:
        raise TtsKitError(f"steps must be in {contract.MIN_STEPS}..{contract.MAX_STEPS}")


def _check_counted(model: Any, steps: int, what: str) -> None:
    """Refuse a model whose graphs are not the Supertonic contract's, or steps out of range."""
    other = sorted(set(model.stages) - set(contract.STAGES))
    if other:
        raise TtsKitError(f"{what} counts graphs of the Supertonic contract; this model's "
                          f"{', '.join(other)} graph has other inputs")
    _check_steps(steps)


def costs_table(costs: list[StageFlops]) -> str:
    """A small aligned table of `stage_flops` for the terminal.

    Example:
        >>> t = costs_table([StageFlops("vocoder", 10**6, 1, 2 * 10**9, 8.0)])
        >>> t.splitlines()[1].split()
        ['vocoder', '1.00', 'M', '1', '2.000', '2.000', '0.250']
    """
    lines = [f"{'stage':<18} {'params':>8} {'runs':>4} {'GFLOP/run':>10} {'GFLOP/chunk':>11} "
             f"{'GFLOP/audio s':>13}"]
    for c in costs:
        lines.append(f"{c.stage:<18} {c.params / 1e6:>6.2f} M {c.runs:>4} "
                     f"{c.flops_per_run / 1e9:>10.3f} {c.runs * c.flops_per_run / 1e9:>11.3f} "
                     f"{c.gflops_per_audio_s:>13.3f}")
    tot_p = sum(c.params for c in costs)
    tot_chunk = sum(c.flops_per_run * c.runs for c in costs) / 1e9
    tot_s = sum(c.gflops_per_audio_s for c in costs)
    lines.append(f"{'total':<18} {tot_p / 1e6:>6.2f} M {'':>4} {'':>10} {tot_chunk:>11.3f} "
                 f"{tot_s:>13.3f}")
    return "\n".join(lines)


def matmul_peak_gflops(threads: int = 1, n: int = 1024, repeats: int = 5) -> float:
    """This machine's best ORT GFLOP/s on an ``n`` x ``n`` float32 MatMul with ``threads``
    intra-op threads (best of ``repeats`` after a warm-up).

    Example:
        >>> matmul_peak_gflops(1, n=128, repeats=1) > 0
        True
    """
    import time

    import onnxruntime as ort

    from tts_kit.runtime.devices import one_node_model

    if threads < 1 or n < 1 or repeats < 1:
        raise TtsKitError("threads, n and repeats must be positive")
    rng = np.random.default_rng(0)
    w = rng.standard_normal((n, n), dtype=np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(one_node_model("MatMul", (n, n), w), so,
                                providers=["CPUExecutionProvider"])
    x = rng.standard_normal((n, n), dtype=np.float32)
    sess.run(None, {"x": x})
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        sess.run(None, {"x": x})
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best / 1e9
