"""Conversion of a Piper voice (one graph) into a new voice directory, and its fidelity
against the source (same texts, same seed, same noise)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tts_kit.core import atomic
from tts_kit.core.errors import TtsKitError
from tts_kit.precision.conversion_report import (
    MAX_LOG_MEL_DB,
    MIN_SNR_DB,
    ConversionReport,
    ConvertSpec,
    Fidelity,
    StageReport,
    check_target,
)
from tts_kit.precision.evaluate import DEFAULT_TEXTS
from tts_kit.precision.graphs import (
    _check_dst_free,
    _check_float32,
    _convert_graph,
    _copy_graph,
    _copy_regular,
    _graph_bytes,
    _open_check,
    _save_model,
    _tool,
    _without_preprocess_advice,
    _write_config,
    sha256_file,
)

#: Recipes for a Piper voice (one graph): recipe -> (target, node-name prefixes kept float:
#: ``/enc_p/`` text encoder, ``/dp/`` duration predictor, ``/dec/`` decoder). Why these:
#: docs/benchmarks.md.
PIPER_RECIPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "fp16": ("fp16", ()),
    "int8": ("int8", ()),
    "int8-dp32": ("int8", ("/enc_p/", "/dp/")),
    "int8-flow": ("int8", ("/enc_p/", "/dp/", "/dec/")),
    "sherpa-int8": ("int8", ()),
}


def convert_piper(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    spec: ConvertSpec | None = None,
    **options: Any,
) -> ConversionReport:
    """Convert a Piper voice (``piper:NAME``, a voice directory or its ``.onnx`` file; only
    read) into a new voice directory, or (``dst`` ending in ``.onnx``) that file and its
    config beside it, built aside and moved into place whole. Reads ``to``,
    ``keep_io_types``, ``op_block_list``, ``measure`` (`piper_fidelity`), ``texts``,
    ``seed`` and ``recipe`` (one of `PIPER_RECIPES`).

    Example:
        >>> r = convert_piper("piper:joe-us", "joe-fp16", to="fp16")  # doctest: +SKIP
        >>> r.fidelity["CPUExecutionProvider"].passed  # doctest: +SKIP
        True
    """
    from tts_kit.models.resolve import open_model

    spec = dataclasses.replace(spec or ConvertSpec(), **options)
    recipe, to, keep_float = spec.recipe, spec.to, ()
    if recipe is not None:
        if recipe not in PIPER_RECIPES:
            raise TtsKitError(f"recipe '{recipe}' is not one for a Piper voice; use one of "
                             f"{', '.join(PIPER_RECIPES)}")
        to, keep_float = PIPER_RECIPES[recipe]
    check_target(to)
    bundle = open_model(src)
    (STAGE,) = bundle.stages  # a one-graph model (the caller routed it here by that)
    src_dir = bundle.path
    dst_p = Path(dst).expanduser()
    if dst_p.resolve().is_relative_to(src_dir):  # the directory itself included
        raise TtsKitError(f"{dst}: the output must be outside the voice's directory {src_dir}")
    _check_float32(bundle.stages[STAGE].precision, bundle.model_file.name)
    as_file = dst_p.suffix == ".onnx"  # that graph with its config beside it; else a directory
    for free in [dst_p, _config_beside(dst_p)] if as_file else [dst_p]:
        _check_dst_free(free, "onnx" if as_file else "bundle")
    files = [bundle.model_file, bundle.config_file]
    extra = [f for f in sorted(src_dir.iterdir()) if f.is_file() and not f.is_symlink()
             and f not in files and f.suffix not in (".onnx", ".json", ".py", ".pyc")
             and not as_file]  # a file output is the graph and its config only
    t0 = time.perf_counter()
    before = {f.name: sha256_file(f) for f in files + extra}
    report = ConversionReport(
        kind="piper", src=str(bundle.name if bundle.name.startswith("piper:")
                              else bundle.model_file),
        dst=str(dst_p), to=to, converted=[STAGE], tool=_tool(to),
        options={"keep_io_types": spec.keep_io_types,
                 "op_block_list": list(spec.op_block_list or []),
                 **({"keep_float_prefixes": list(keep_float)} if keep_float else {})},
        source_sha256=before, recipe=recipe or "",
    )
    dst_p.parent.mkdir(parents=True, exist_ok=True)
    _write_voice(bundle, dst_p, report, files=files, extra=extra, as_file=as_file)
    report.convert_s = time.perf_counter() - t0
    if spec.measure:
        report.measured = True
        report.fidelity["CPUExecutionProvider"] = piper_fidelity(
            bundle, dst_p, to, texts=spec.texts, seed=spec.seed)
        report.texts, report.seed, report.steps = list(spec.texts or DEFAULT_TEXTS), spec.seed, 1
    return report


def _config_beside(graph: Path) -> Path:
    """Where a voice graph's config lives: ``voice.onnx`` -> ``voice.onnx.json``."""
    return graph.with_name(graph.name + ".json")


@contextlib.contextmanager
def _built_aside(dst_p: Path, as_file: bool, graph_name: str) -> Iterator[Path]:
    """A directory to build the voice in, moved to ``dst_p`` when the block succeeds (or,
    ``as_file``, its config then its graph beside it)."""
    if not as_file:
        with atomic.atomic_dir(dst_p) as tmp:
            yield tmp
        return
    with atomic.scratch_dir(dst_p) as tmp:
        yield tmp
        atomic.install_files(tmp, dst_p.parent, [_config_beside(Path(graph_name)).name,
                                                 graph_name])


def _write_voice(bundle: Any, dst_p: Path, report: ConversionReport, *, files: list[Path],
                 extra: list[Path], as_file: bool = False) -> None:
    """Convert the voice's graph as ``report`` says into ``dst_p`` (atomically) with its config
    and the other files; checks that it opens and that the source did not change."""
    from tts_kit.models.resolve import open_model
    from tts_kit.precision.recipes import kernel_report

    (STAGE,) = bundle.stages
    to, recipe, before = report.to, report.recipe or None, report.source_sha256
    opts = report.options
    graph_name = dst_p.name if as_file else bundle.model_file.name
    with _built_aside(dst_p, as_file, graph_name) as tmp:
        out = tmp / graph_name
        if recipe == "sherpa-int8":
            ops, kept = _quantize_sherpa_piper(bundle.model_file, out)
        else:
            ops, kept = _convert_graph(bundle.model_file, out, to, opts["keep_io_types"],
                                       opts["op_block_list"], opts.get("keep_float_prefixes", ()))
        _open_check(out)
        for f in extra:
            _copy_regular(f, tmp / f.name)
        _write_config(tmp / _config_beside(out).name, dict(bundle.config), report, {
            "to": to, "stages": [STAGE], "source_sha256": {STAGE: before[bundle.model_file.name]}})
        converted = open_model(out)  # the result must open like any model of its family
        # INT8: does it run integer kernels, or float after all?
        kernels = kernel_report(out).to_dict() if to == "int8" else None
        report.stages[STAGE] = StageReport(
            STAGE, True, bundle.stages[STAGE].size_bytes, _graph_bytes(out),
            bundle.stages[STAGE].precision, converted.stages[STAGE].precision, ops, kept,
            recipe or to, kernels)
        after = {f.name: sha256_file(f) for f in files + extra}
        if after != before:
            report.source_unchanged = False
            raise RuntimeError(f"{bundle.path}: the voice changed during conversion; nothing was "
                               "written; make sure nothing else writes to it and retry")


def _quantize_sherpa_piper(src: Path, dst: Path) -> tuple[dict[str, int], int]:
    """sherpa-onnx's Piper INT8: ``quantize_dynamic`` with its defaults and QUInt8 weights,
    on a private copy; returns (quantised ops per op type, 0 kept float)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with atomic.scratch_dir(dst) as tmp, _without_preprocess_advice():
        model_in = Path(tmp) / src.name
        _copy_graph(src, model_in)
        quantize_dynamic(model_in, Path(tmp) / "q.onnx", weight_type=QuantType.QUInt8)
        model = onnx.load(str(Path(tmp) / "q.onnx"))
    quantized = {i.name for i in model.graph.initializer if i.name.endswith("_quantized")}
    ops = Counter(n.op_type for n in model.graph.node if any(i in quantized for i in n.input))
    _save_model(model, dst)
    return dict(sorted(ops.items())), 0


def piper_fidelity(reference: Any, candidate: Any, to: str = "fp16",
                   texts: Sequence[str] | None = None, seed: int = 0) -> Fidelity:
    """A converted Piper voice against its source (same texts, seed and noise; on the CPU in
    this process), judged by `Fidelity.evaluate` with the target's thresholds.

    Example:
        >>> piper_fidelity("piper:joe-us", "joe-fp16", "fp16").passed  # doctest: +SKIP
        True
    """
    from tts_kit.fidelity.audio_metrics import waveform_fidelity
    from tts_kit.models.family import make_engine

    texts = list(texts or DEFAULT_TEXTS)
    ref_e = make_engine(reference)
    cand_e = make_engine(candidate)
    (STAGE,) = ref_e.bundle.stages
    f = Fidelity("CPUExecutionProvider", min_snr_db=MIN_SNR_DB[to],
                 max_log_mel_db=MAX_LOG_MEL_DB[to])
    try:
        ref = [r.wav for r in ref_e.synthesize_batch(texts, seed=seed)]
        cand = [r.wav for r in cand_e.synthesize_batch(texts, seed=seed)]
        (f.waveform_snr_db, f.log_mel_distance_db, f.length_ref,
         f.length_candidate) = waveform_fidelity(ref, cand, ref_e.bundle.sample_rate)
        f.stage_snr_db = {STAGE: f.waveform_snr_db}
    except ValueError as exc:
        f.error = str(exc)
    finally:
        ref_e.close()
        cand_e.close()
    return f.evaluate()
