"""Per-stage precision recipes (`RECIPES`; what each does: docs/benchmarks.md), and whether
an INT8 graph really runs integer kernels (`kernel_report`)."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tts_kit.core import contract
from tts_kit.core.errors import TtsKitError
from tts_kit.precision.graphs import _name_nodes, _refill, _save_model

if TYPE_CHECKING:
    import onnx

#: sherpa-onnx's defaults: the vector estimator's last convolutions keep float weights
#: (``--ve-w8dq-exclude-last-conv``), the vocoder's are not statically quantised
#: (``--exclude-last-conv``), calibration latents are cut to a percentile of their lengths.
SHERPA_VE_FLOAT_CONVS = 6
SHERPA_VOCODER_FLOAT_CONVS = 8
CALIBRATION_PERCENTILE = 90

#: Stage methods (``copy``: FP32 as it is; ``int8-matmul+w8conv`` and ``int8-static``:
#: sherpa-onnx's vector estimator and vocoder).
METHODS = ("copy", "fp16", "int8", "int8-matmul+w8conv", "int8-static", "int8-pw")

RECIPES: dict[str, dict[str, str]] = {
    "fp16": {s: "fp16" for s in contract.STAGES},
    "int8": {s: "int8" for s in contract.STAGES},
    "int8-dp32": {s: "copy" if s == "duration_predictor" else "int8" for s in contract.STAGES},
    "int8-pw": {s: "int8-pw" for s in contract.STAGES},  # pointwise Conv -> MatMul, then INT8
    "sherpa-int8": {"duration_predictor": "copy", "text_encoder": "copy",
                    "vector_estimator": "int8-matmul+w8conv", "vocoder": "int8-static"},
}

#: What each recipe is, in a line (kept in contract: the CLI's --help imports no onnxruntime).
DESCRIPTIONS = contract.RECIPE_DESCRIPTIONS


def check_recipe(name: str) -> dict[str, str]:
    """The recipe's stage plan, or a one-line ValueError listing the recipes.

    Example:
        >>> check_recipe("int8-dp32")["duration_predictor"]
        'copy'
    """
    if name not in RECIPES:
        raise TtsKitError(f"unknown recipe '{name}'; use one of: {', '.join(sorted(RECIPES))}")
    return dict(RECIPES[name])


def recipes_for(model: Any) -> dict[str, str]:
    """The recipes an opened model has, name -> what it does in a line, read from its graphs:
    the four contract stages have `RECIPES`, a one-graph voice (Piper) `PIPER_RECIPES`.

    Example:
        >>> from tts_kit.models.resolve import open_model
        >>> sorted(recipes_for(open_model("piper:joe-us")))  # doctest: +SKIP
        ['fp16', 'int8', 'int8-dp32', 'int8-flow', 'sherpa-int8']
    """
    stages = list(model.stages)
    if len(stages) == 1:
        return dict(contract.VOICE_RECIPE_DESCRIPTIONS)
    if set(stages) == set(contract.STAGES):
        return dict(contract.RECIPE_DESCRIPTIONS)
    return {}


def check_recipe_for(src: str | os.PathLike[str], name: str) -> None:
    """A one-line error listing the model's recipes when the model at ``src`` has no recipe
    ``name`` (a graph file no model opens from passes: the conversion says what it can do).

    Example:
        >>> check_recipe_for("piper:joe-us", "int8-flow")  # doctest: +SKIP
    """
    from tts_kit.models.resolve import open_model

    try:
        model = open_model(src)
    except TtsKitError:
        if Path(os.fspath(src)).expanduser().is_file():
            return
        raise
    have = recipes_for(model)
    if name not in have:
        raise TtsKitError(f"recipe '{name}' is not one of {model.label}'s; use one of: "
                          f"{', '.join(sorted(have)) or '(none)'}")


def recipe_target(name: str) -> str:
    """``fp16`` or ``int8``: the precision a recipe mostly converts to (for thresholds).

    Example:
        >>> recipe_target("sherpa-int8")
        'int8'
    """
    methods = set(check_recipe(name).values()) - {"copy"}
    return "fp16" if methods == {"fp16"} else "int8"


# -- weight-only INT8 convolution weights ----------------------------------------------------


def w8_conv_weights(model: onnx.ModelProto, float_last: int) -> int:
    """Store float32 ``Conv`` weights as INT8 behind a ``DequantizeLinear`` (symmetric, per
    output channel; the convolution stays float), except the last ``float_last``
    convolutions; returns how many changed.

    Example:
        >>> w8_conv_weights(onnx.load("vocoder.onnx"), float_last=8)  # doctest: +SKIP
        5
    """
    import onnx
    from onnx import numpy_helper

    inits = {t.name: t for t in model.graph.initializer}
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    chosen = convs[: len(convs) - float_last] if float_last > 0 else convs
    users = Counter(i for n in model.graph.node for i in n.input)
    new_nodes, drop = [], set()
    for n in chosen:
        if len(n.input) < 2 or n.input[1] not in inits or users[n.input[1]] != 1:
            continue
        t = inits[n.input[1]]
        if t.data_type != onnx.TensorProto.FLOAT:
            continue
        w = numpy_helper.to_array(t)
        scale = np.maximum(np.abs(w).reshape(w.shape[0], -1).max(axis=1), 1e-8) / 127.0
        q = np.clip(np.round(w / scale.reshape((-1,) + (1,) * (w.ndim - 1))), -127, 127)
        base = t.name
        model.graph.initializer.extend([
            numpy_helper.from_array(q.astype(np.int8), f"{base}_w8"),
            numpy_helper.from_array(scale.astype(np.float32), f"{base}_w8_scale"),
            numpy_helper.from_array(np.zeros(w.shape[0], np.int8), f"{base}_w8_zero"),
        ])
        new_nodes.append(onnx.helper.make_node(
            "DequantizeLinear", [f"{base}_w8", f"{base}_w8_scale", f"{base}_w8_zero"],
            [f"{base}_w8_float"], name=f"{base}_w8_dequantize", axis=0))
        n.input[1] = f"{base}_w8_float"
        drop.add(base)
    if drop:
        _refill(model.graph.initializer, [t for t in model.graph.initializer
                                          if t.name not in drop])
        # the dequantised constants first: still topological
        _refill(model.graph.node, new_nodes + list(model.graph.node))
    return len(drop)


def convert_sherpa_vector_estimator(src: Path, dst: Path, scratch: Path) -> dict:
    """sherpa-onnx's vector estimator: dynamic INT8 MatMul/Gemm, then INT8 conv weights.

    Example:
        >>> convert_sherpa_vector_estimator(src, dst, scratch)  # doctest: +SKIP
        {'MatMul/Gemm dynamic INT8': 83, 'Conv weights INT8 (weight-only)': 23, ...}
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(src))
    _name_nodes(model)
    named = scratch / "ve-named.onnx"
    _save_model(model, named)
    del model
    quantize_dynamic(named, scratch / "ve-q.onnx", op_types_to_quantize=["MatMul", "Gemm"],
                     weight_type=QuantType.QInt8, per_channel=False, reduce_range=False)
    model = onnx.load(str(scratch / "ve-q.onnx"))
    matmuls = sum(n.op_type == "MatMulInteger" for n in model.graph.node)
    convs = w8_conv_weights(model, SHERPA_VE_FLOAT_CONVS)
    _save_model(model, dst)
    return {"MatMul/Gemm dynamic INT8": matmuls, "Conv weights INT8 (weight-only)": convs,
            "Conv kept float": SHERPA_VE_FLOAT_CONVS}


def _pad_or_crop(a: np.ndarray, length: int) -> np.ndarray:
    if a.shape[-1] >= length:
        start = (a.shape[-1] - length) // 2
        return a[..., start:start + length]
    return np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, length - a.shape[-1])])


def calibration_latents(src_bundle: Path, vector_estimator: Path,
                        texts: Sequence[tuple[str, str]], steps: int = 5,
                        seed: int = 0) -> list[np.ndarray]:
    """Vocoder calibration inputs: the (converted) ``vector_estimator``'s last-step outputs
    on the source bundle's own inputs for ``texts`` (``(text, lang)``), cut to the
    `CALIBRATION_PERCENTILE` length as sherpa-onnx does.

    Example:
        >>> len(calibration_latents(Path("fp32"), ve_int8, CALIBRATION_TEXTS))  # doctest: +SKIP
        8
    """
    import onnxruntime as ort

    from tts_kit.models.supertonic.engine import Engine

    engine = Engine(src_bundle, normalize=False)
    feeds: list[dict[str, np.ndarray]] = []

    def keep(stage: str, f: Any, out: np.ndarray) -> None:
        if stage == "vector_estimator" and float(f["current_step"][0]) == steps - 1:
            feeds.append({k: np.array(v) for k, v in f.items()})

    engine.add_stage_hook(keep)
    voices = engine.bundle.voices
    for i, (text, lang) in enumerate(texts):
        engine.synthesize(text, lang=lang, voice=voices[i % len(voices)], steps=steps,
                          seed=seed + i)
    engine.close()
    sess = ort.InferenceSession(str(vector_estimator), providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    outs = [sess.run(None, {k: v for k, v in f.items() if k in names})[0] for f in feeds]
    length = max(1, int(np.percentile([o.shape[-1] for o in outs], CALIBRATION_PERCENTILE)))
    return [_pad_or_crop(np.asarray(o, np.float32), length) for o in outs]


#: Calibration texts for the static vocoder: both languages, several lengths.
CALIBRATION_TEXTS: tuple[tuple[str, str], ...] = (
    ("The quick brown fox jumps over the lazy dog.", "en"),
    ("On a small server, memory decides how many voices can speak at once.", "en"),
    ("Please call me back when you have a minute.", "en"),
    ("Hello there, how are you today?", "en"),
    ("안녕하세요, 반갑습니다.", "ko"),
    ("오늘 날씨가 정말 좋네요.", "ko"),
    ("작은 서버에서는 메모리가 동시에 말할 수 있는 목소리의 수를 정합니다.", "ko"),
    ("회의는 내일 오후에 시작합니다.", "ko"),
)


def convert_sherpa_vocoder(src: Path, dst: Path, scratch: Path,
                           latents: Sequence[np.ndarray]) -> dict:
    """sherpa-onnx's vocoder: static QDQ INT8 on its convolutions, calibrated on ``latents``,
    the last `SHERPA_VOCODER_FLOAT_CONVS` left out (then given INT8 weight-only storage).

    Example:
        >>> convert_sherpa_vocoder(src, dst, scratch, lat)  # doctest: +SKIP
        {'Conv static QDQ': 5, 'Conv kept float': 8, ...}
    """
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    model = onnx.load(str(src))
    _name_nodes(model)
    convs = [n.name for n in model.graph.node if n.op_type == "Conv"]
    excluded = convs[-SHERPA_VOCODER_FLOAT_CONVS:] if len(convs) >= SHERPA_VOCODER_FLOAT_CONVS \
        else []
    input_name = model.graph.input[0].name
    named = scratch / "voc-named.onnx"
    _save_model(model, named)
    del model

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._it = iter(latents)

        def get_next(self) -> dict[str, np.ndarray] | None:
            x = next(self._it, None)
            return None if x is None else {input_name: x}

    with contextlib.redirect_stdout(io.StringIO()):  # its calibrator prints progress
        quantize_static(
            named, scratch / "voc-q.onnx", Reader(), quant_format=QuantFormat.QDQ,
        op_types_to_quantize=["Conv"], per_channel=True, reduce_range=True,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
        nodes_to_exclude=excluded, calibrate_method=CalibrationMethod.Percentile,
        extra_options={"WeightSymmetric": True, "ActivationSymmetric": False},
    )
    model = onnx.load(str(scratch / "voc-q.onnx"))
    tail = w8_conv_weights(model, 0)  # the excluded convs' float weights: weight-only INT8
    _save_model(model, dst)
    return {"Conv static QDQ": len(convs) - len(excluded), "Conv kept float": len(excluded),
            "of which weights INT8 (weight-only)": tail, "calibration latents": len(latents)}


# -- what really runs ------------------------------------------------------------------------

#: Op types that compute in integers on ONNX Runtime's CPU provider.
INTEGER_OPS = frozenset({
    "MatMulInteger", "ConvInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat",
    "QLinearConv", "QLinearMatMul", "QGemm", "QAttention", "QLinearAdd", "QLinearMul",
    "DynamicQuantizeLSTM", "MatMulNBits", "QLinearSigmoid", "QLinearLeakyRelu",
    "QLinearConcat", "QLinearAveragePool", "QLinearGlobalAveragePool",
})
FLOAT_COMPUTE_OPS = frozenset({"Conv", "MatMul", "Gemm", "FusedConv", "FusedMatMul",
                               "NchwcConv", "FusedGemm", "ConvTranspose"})


@dataclass
class KernelReport:
    """What one graph runs once ONNX Runtime has optimised it.

    Example:
        >>> KernelReport({"ConvInteger": 3, "Conv": 1}, 3, 1, 0, 0).verdict
        'integer kernels (3 of 4 heavy ops)'
    """

    ops: dict[str, int]
    integer_ops: int
    float_ops: int
    weight_dequantize: int  # weight-only DequantizeLinear left to run on every call
    folded_dequantize: int  # those the optimiser folded into float weights at load
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        heavy = self.integer_ops + self.float_ops
        if self.integer_ops:
            return f"integer kernels ({self.integer_ops} of {heavy} heavy ops)"
        if self.weight_dequantize or self.folded_dequantize:
            return "float compute (INT8 weights dequantised to float: no integer kernel)"
        return "float compute"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict}


def _weight_only_dequantize(model: onnx.ModelProto) -> int:
    """Float ops fed a dequantised constant weight but no dequantised activation: no
    integer kernel takes that pair (a QDQ pair fuses into one)."""
    consts = {t.name for t in model.graph.initializer}
    consts |= {o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    made_by = {o: n for n in model.graph.node for o in n.output}
    count = 0
    for n in model.graph.node:
        if n.op_type not in FLOAT_COMPUTE_OPS:
            continue
        dequantized = {s.input[0] in consts for s in map(made_by.get, n.input)
                       if s is not None and s.op_type == "DequantizeLinear" and s.input}
        count += dequantized == {True}  # weights only: no activation dequantised
    return count


def kernel_report(path: str | os.PathLike[str]) -> KernelReport:
    """Load a graph as the engine does (all optimisations, CPU) and count what it runs
    (the optimised graph goes to a temporary directory, never beside the model).

    Example:
        >>> kernel_report("bundle-int8/onnx/vocoder.onnx").verdict  # doctest: +SKIP
        'integer kernels (13 of 14 heavy ops)'
    """
    import onnx
    import onnxruntime as ort

    path = Path(path)
    before = _weight_only_dequantize(onnx.load(str(path), load_external_data=False))
    with tempfile.TemporaryDirectory(prefix="tts_kit-kernels-") as tmp:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3  # not its "hardware-specific optimised model" warning
        out = Path(tmp) / "optimised.onnx"
        so.optimized_model_filepath = str(out)
        so.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                    "optimised.data")
        so.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        model = onnx.load(str(out), load_external_data=False)
    ops = Counter(n.op_type for n in model.graph.node)
    left = _weight_only_dequantize(model)
    report = KernelReport(
        dict(sorted(ops.items())),
        sum(v for k, v in ops.items() if k in INTEGER_OPS),
        sum(v for k, v in ops.items() if k in FLOAT_COMPUTE_OPS),
        left, max(0, before - left),
    )
    if report.folded_dequantize:
        report.notes.append(
            f"{report.folded_dequantize} weight-only DequantizeLinear folded into float "
            "weights at load: smaller file, same float compute and resident weights")
    if report.weight_dequantize:
        report.notes.append(
            f"{report.weight_dequantize} weight-only DequantizeLinear run on every call "
            "before a float op: smaller file, extra work, float compute")
    return report
