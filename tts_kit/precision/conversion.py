"""FP16 and INT8 conversion of a bundle (or any ``.onnx`` file): built aside, checked and
moved into place; the source only read and hashed before and after (docs/benchmarks.md)."""

from __future__ import annotations

import dataclasses
import json
import os
import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from tts_kit.core import atomic, contract
from tts_kit.core.errors import TtsKitError
from tts_kit.fidelity.audio_metrics import snr_db
from tts_kit.fidelity.engine_reuse import reuse_engines
from tts_kit.fidelity.listening import judge_quality
from tts_kit.precision.conversion_report import (
    ConversionReport,
    ConvertSpec,
    StageReport,
    check_target,
)
from tts_kit.precision.evaluate import judge_against_floor, measure_conversion
from tts_kit.precision.graphs import (  # noqa: F401  (re-exported: the conversion API)
    INT8_MIN_WEIGHT_ELEMENTS,
    INT8_OP_TYPES,
    PRECISION_KEY,
    _check_dst_free,
    _check_float32,
    _check_links,
    _convert_graph,
    _copy_regular,
    _graph_bytes,
    _open_check,
    _precision_of,
    _tool,
    _without_preprocess_advice,
    _write_config,
    sha256_file,
    sha256_tree,
)
from tts_kit.precision.piper_conversion import (  # noqa: F401  (PIPER_RECIPES: re-exported)
    PIPER_RECIPES,
    convert_piper,
)
from tts_kit.precision.verdict_file import VERDICT_FILE, save_verdict


def convert(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    spec: ConvertSpec | None = None,
    **options: Any,
) -> ConversionReport:
    """Convert a bundle, a voice or one ``.onnx`` file to FP16 or INT8 into ``dst`` (new, or
    an empty directory) and report what it changed (a `ConversionReport`).

    Options: a `ConvertSpec` or its fields as keywords. ``to`` and ``stages`` (default all;
    the others copied), or a per-stage ``recipe`` (`tts_kit.precision.recipes.RECIPES`);
    ``keep_io_types``, ``op_block_list`` (op types left FP32); ``measure``: memory, latency
    and fidelity of both, each in a fresh process (``"fidelity"``: only that), on
    ``providers`` (default: CPU, and CUDA if present) with ``texts``, ``seed``, ``steps``,
    ``repeats``, ``lang``, ``preset``; ``floor`` (default: when measuring on the CPU) and
    ``quality`` (default: as ``floor``): the copy against the source's noise floor and
    the listener's verdict. Raises RuntimeError when the source changed meanwhile.

    Example:
        >>> r = convert("supertonic-3", "supertonic-3-int8", to="int8")  # doctest: +SKIP
        >>> r.stages["vocoder"].ops  # doctest: +SKIP
        {'Conv': 13, 'MatMul': 20}
    """
    spec = dataclasses.replace(spec or ConvertSpec(), **options)
    if spec.measure not in (True, False, "fidelity"):
        raise TtsKitError(f"measure must be True, False or 'fidelity', got {spec.measure!r}")
    model = _open_source(src)
    if model is not None and len(model.stages) == 1:
        # One graph (a Piper voice): `convert_piper`, with the recipes that mean something there.
        return _keep_verdict(_convert_one_graph(src, dst, model, spec))
    plan, to, stages = _apply_recipe(spec.recipe, spec.to, spec.stages)
    spec = dataclasses.replace(spec, to=to, stages=stages)
    check_target(spec.to)  # every check before any work
    src_p, dst_p, kind = _source_and_kind(src, dst)
    bundle, chosen, links = _choose_stages(kind, src_p, spec.stages, model)
    _check_dst_free(dst_p, kind)
    t0 = time.perf_counter()
    report = _new_report(kind, src_p, dst_p, chosen, spec, plan)
    for rel in links:
        report.notes.append(f"skipped {rel}: a symbolic link (only the bundle's regular "
                            "files are copied)")
        warnings.warn(report.notes[-1], stacklevel=2)  # at `convert`'s caller
    dst_p.parent.mkdir(parents=True, exist_ok=True)
    if kind == "bundle":
        _convert_bundle(bundle, report, plan, spec)
    else:
        _convert_file(report, spec)
    report.convert_s = time.perf_counter() - t0
    _measure_result(report, spec)
    return _keep_verdict(report)


# -- the steps of `convert` --------------------------------------------------------------


def _open_source(src: str | os.PathLike[str]) -> Any:
    """The model at ``src``, checked to load, or None for a file no model opens from (a
    single graph of any model: converted as a file)."""
    from tts_kit.models.resolve import open_model
    from tts_kit.runtime.loading import check_loads

    path = Path(os.fspath(src)).expanduser()
    try:
        model = open_model(src)
    except TtsKitError as exc:
        if path.is_dir():
            raise
        if path.exists():
            return None
        raise FileNotFoundError(f"{src}: no such bundle directory or .onnx file ({exc})") from None
    check_loads(model)
    return model


def _convert_one_graph(src: str | os.PathLike[str], dst: str | os.PathLike[str], model: Any,
                       spec: ConvertSpec) -> ConversionReport:
    """`convert` for a model of one graph (a Piper voice): `convert_piper`, then the floor."""
    if spec.stages is not None and list(spec.stages) != list(model.stages):
        raise TtsKitError(f"this model has one stage, {list(model.stages)[0]!r}; drop stages")
    measure = bool(spec.measure)
    report = convert_piper(src, dst, dataclasses.replace(spec, measure=measure))
    _judge(report, src, spec, measure, report.texts or None)
    return report


def _keep_verdict(report: ConversionReport) -> ConversionReport:
    """Save the listener's verdict beside the copy (`tts_kit.precision.verdict_file`), so
    whoever measures the copy later sees how it was judged."""
    if report.quality:
        save_verdict(report.dst, report.quality, recipe=report.recipe or report.to,
                     source=Path(report.src).name)
    return report


def _judge(report: ConversionReport, src: Any, spec: ConvertSpec, default: bool,
           floor_texts: Any = None) -> None:
    """The floor's conformance figure (``spec.floor``, else ``default``) and the listener's
    verdict (``spec.quality``, else as the floor), reading the same two engines."""
    floor, dst = spec.floor if spec.floor is not None else default, Path(report.dst)
    with reuse_engines():
        if floor:
            report.conformance = judge_against_floor(src, dst, floor_texts)
        if spec.quality if spec.quality is not None else floor:
            report.quality = judge_quality(src, dst, spec.texts)


def _apply_recipe(recipe: str | None, to: str, stages: Iterable[str] | None
                  ) -> tuple[dict[str, str] | None, str, Iterable[str] | None]:
    """(plan, target, stages) a recipe implies; ``(None, to, stages)`` without one."""
    if recipe is None:
        return None, to, stages
    from tts_kit.precision.recipes import check_recipe, recipe_target

    plan = check_recipe(recipe)
    if stages is not None:
        raise TtsKitError("give a recipe or stages, not both: the recipe says what each "
                         "stage becomes")
    return plan, recipe_target(recipe), [s for s, m in plan.items() if m != "copy"]


def _source_and_kind(src: str | os.PathLike[str], dst: str | os.PathLike[str]
                     ) -> tuple[Path, Path, str]:
    """(source, destination, ``"bundle"`` or ``"onnx"``); the output outside the source."""
    src_p = Path(src).expanduser()
    dst_p = Path(dst).expanduser()
    if src_p.is_dir():
        kind = "bundle"
    elif src_p.is_file() and src_p.suffix == ".onnx":
        kind = "onnx"
    elif src_p.exists():
        raise TtsKitError(f"{src}: not a bundle directory or an .onnx file")
    else:
        raise FileNotFoundError(f"{src}: no such bundle directory or .onnx file")
    if dst_p.resolve().is_relative_to(src_p.resolve()):  # the source itself included
        raise TtsKitError(f"{dst}: the output must be outside the source {src}")
    return src_p, dst_p, kind


def _choose_stages(kind: str, src_p: Path, stages: Iterable[str] | None, model: Any
                   ) -> tuple[Any, list[str], list[str]]:
    """(bundle or None, stages to convert in pipeline order, links skipped), all checked
    FP32; a single file is one stage, ``model``."""
    if kind != "bundle":
        if stages is not None:
            raise TtsKitError("stages only apply to bundles; a single .onnx file is one graph")
        _check_float32(_precision_of(src_p), src_p.name)
        return None, ["model"], []
    from tts_kit.models.supertonic.bundle import Bundle

    bundle = model if model is not None else Bundle(src_p)  # raises BundleError naming the file
    chosen = list(contract.STAGES) if stages is None else list(stages)
    unknown = [s for s in chosen if s not in contract.STAGES]
    if unknown or not chosen:
        raise TtsKitError(
            f"unknown stage(s) {unknown or chosen}; stages are {', '.join(contract.STAGES)}"
        )
    chosen = [s for s in contract.STAGES if s in chosen]  # pipeline order, no repeats
    for s in chosen:
        _check_float32(bundle.stages[s].precision, contract.GRAPHS[s].path)
    return bundle, chosen, _check_links(src_p, bundle)


def _new_report(kind: str, src_p: Path, dst_p: Path, chosen: list[str], spec: ConvertSpec,
                plan: dict[str, str] | None) -> ConversionReport:
    """The report of a conversion about to start: options, and the source's hashes."""
    to, recipe = spec.to, spec.recipe
    report = ConversionReport(
        kind=kind, src=str(src_p), dst=str(dst_p), to=to, converted=chosen, tool=_tool(to),
        options={
            "keep_io_types": spec.keep_io_types,
            "op_block_list": list(spec.op_block_list or []),
            **({"int8": {"weight_type": "QInt8", "per_channel": True,
                         "op_types": list(INT8_OP_TYPES),
                         "min_weight_elements": INT8_MIN_WEIGHT_ELEMENTS,
                         "activations": "uint8, dynamic"}} if to == "int8" else {}),
        },
        source_sha256=sha256_tree(src_p),
        recipe=recipe or "",
    )
    if plan is not None:
        if kind != "bundle":
            raise TtsKitError("recipes apply to bundles; a single .onnx file takes --to")
        report.options["recipe"] = {s: plan[s] for s in contract.STAGES}
    return report


def _measure_result(report: ConversionReport, spec: ConvertSpec) -> None:
    """`convert`'s measurements of the written result (see ``measure`` and ``floor``)."""
    src_p, measure, providers = Path(report.src), spec.measure, spec.providers
    report.measured = bool(measure)
    if report.kind == "onnx":
        if measure:
            _compare_outputs(report, src_p, Path(report.dst))
        return
    if measure:
        measure_conversion(report, spec, providers, runs=measure is True)
    # The floor is measured on the CPU: by default only when the CPU is among the providers.
    _judge(report, src_p, spec, bool(measure) and (providers is None
                                                   or "CPUExecutionProvider" in providers))


def _convert_bundle(bundle: Any, report: ConversionReport, plan: dict[str, str] | None,
                    spec: ConvertSpec) -> None:
    from tts_kit.models.supertonic.bundle import Bundle
    from tts_kit.precision.recipes import kernel_report

    src_p, dst_p, to, chosen = Path(report.src), Path(report.dst), report.to, report.converted
    # An existing empty directory (a mount point) is filled, the config's folder last.
    with atomic.atomic_dir(dst_p, last=Path(contract.CONFIG_FILE).parts[0]) as tmp:
        graph_files = {contract.GRAPHS[s].path for s in chosen}
        for rel in report.source_sha256:
            # (the source's own verdict file says nothing of this copy)
            if rel in graph_files or rel == VERDICT_FILE or any(
                    rel.startswith(g + ".data") for g in graph_files):
                continue
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            _copy_regular(src_p / rel, tmp / rel)
        for stage in contract.STAGES:
            info = bundle.stages[stage]
            out = tmp / contract.GRAPHS[stage].path
            method = (plan or {}).get(stage, to) if stage in chosen else "copy"
            kernels = None
            if stage in chosen:
                ops, kept = _convert_stage(method, info.path, out, spec, src_p, tmp)
                _open_check(out)  # fails here, not in the user's engine
                if method != "fp16":  # does it run integer kernels, or float after all?
                    kernels = kernel_report(out).to_dict()
            else:
                ops, kept = {}, 0
            report.stages[stage] = StageReport(
                stage, stage in chosen, info.size_bytes, _graph_bytes(out), info.precision,
                _precision_of(out), ops, kept, method if plan else "", kernels,
            )
        cfg_path = tmp / contract.CONFIG_FILE
        hashes = {s: report.source_sha256.get(contract.GRAPHS[s].path, "")
                  for s in contract.STAGES}
        _write_config(cfg_path, json.loads(cfg_path.read_text(encoding="utf-8")), report, {
            "to": to,
            **({"recipe": report.recipe, "methods": report.options["recipe"]}
               if report.recipe else {}),
            "stages": chosen, "source_sha256": hashes})
        Bundle(tmp)  # the result must open like any bundle
        _check_finished(report, src_p, dst_p)


def _convert_stage(method: str, src: Path, out: Path, spec: ConvertSpec, src_bundle: Path,
                   tmp: Path) -> tuple[dict[str, int], int]:
    """Convert one stage's graph by a recipe method (`tts_kit.precision.recipes.METHODS`);
    ``tmp``: the bundle being built (the static vocoder calibrates on its vector estimator)."""
    from tts_kit.precision import recipes

    if method in ("fp16", "int8"):
        return _convert_graph(src, out, method, spec.keep_io_types, spec.op_block_list)
    if method == "int8-pw":
        from tts_kit.precision.pointwise import convert_int8_pw

        with atomic.scratch_dir(out) as scratch:
            return convert_int8_pw(src, out, scratch, spec.op_block_list)
    with atomic.scratch_dir(out) as scratch, _without_preprocess_advice():
        if method == "int8-matmul+w8conv":
            info = recipes.convert_sherpa_vector_estimator(src, out, scratch)
        elif method == "int8-static":
            ve = tmp / contract.GRAPHS["vector_estimator"].path
            latents = recipes.calibration_latents(src_bundle, ve, recipes.CALIBRATION_TEXTS)
            info = recipes.convert_sherpa_vocoder(src, out, scratch, latents)
        else:
            raise TtsKitError(f"unknown conversion method '{method}'; use one of "
                             f"{', '.join(recipes.METHODS)}")
    return {k: int(v) for k, v in info.items()}, int(info.get("Conv kept float", 0))


def _check_finished(report: ConversionReport, src_p: Path, dst_p: Path) -> None:
    """Last checks before the output is moved into place (`tts_kit.core.atomic` moves it)."""
    after = sha256_tree(src_p)
    if after != report.source_sha256:
        changed = sorted(k for k in set(after) | set(report.source_sha256)
                         if after.get(k) != report.source_sha256.get(k))
        report.source_unchanged = False
        raise RuntimeError(
            f"{src_p}: source changed during conversion ({', '.join(changed[:5])}); "
            "nothing was written; make sure nothing else writes to it and retry"
        )
    _check_dst_free(dst_p, report.kind)  # someone may have created it meanwhile


def _convert_file(report: ConversionReport, spec: ConvertSpec) -> None:
    src_p, dst_p, to = Path(report.src), Path(report.dst), report.to
    # replace=False: a file that appears at dst meanwhile is never overwritten.
    with atomic.atomic_file(dst_p, replace=False, suffix=".onnx") as tmp:
        ops, kept = _convert_graph(src_p, tmp, to, spec.keep_io_types, spec.op_block_list)
        _open_check(tmp)
        report.stages["model"] = StageReport(
            "model", True, _graph_bytes(src_p), _graph_bytes(tmp), _precision_of(src_p),
            _precision_of(tmp), ops, kept,
        )
        _check_finished(report, src_p, dst_p)


# -- single-file output check -----------------------------------------------------------


_ORT_NP = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
}


def random_feeds(sess: ort.InferenceSession, seed: int = 0, dynamic: int = 4) -> dict:
    """Inputs for any session: normal floats, zero integers, dynamic axes of size ``dynamic``.

    Example:
        >>> feeds = random_feeds(ort.InferenceSession("model.onnx"))  # doctest: +SKIP
    """
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        if i.type not in _ORT_NP:
            raise TtsKitError(f"input '{i.name}' has type {i.type}; no random input for it")
        shape = [d if isinstance(d, int) and d > 0 else dynamic for d in i.shape]
        dt = _ORT_NP[i.type]
        feeds[i.name] = (rng.standard_normal(shape).astype(dt) if np.issubdtype(dt, np.floating)
                         else np.zeros(shape, dt))
    return feeds


def _compare_outputs(report: ConversionReport, src_p: Path, dst_p: Path) -> None:
    try:
        ref, cand = _open_check(src_p), _open_check(dst_p)
        feeds = random_feeds(ref)
        types = {i.name: _ORT_NP.get(i.type) for i in cand.get_inputs()}
        cfeeds = {k: v.astype(types[k]) if types.get(k) is not None else v
                  for k, v in feeds.items()}
        for out, a, b in zip(ref.get_outputs(), ref.run(None, feeds), cand.run(None, cfeeds)):
            if np.issubdtype(np.asarray(a).dtype, np.floating):
                report.output_snr_db[out.name] = snr_db(a, np.asarray(b, np.float32))
    except Exception as exc:  # any model: inputs we cannot invent are a note, not a failure
        report.notes.append(f"output comparison skipped: {type(exc).__name__}: {exc}")


