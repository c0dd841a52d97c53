"""FP16 and INT8 conversion of a bundle (or any ``.onnx`` file): atomic output, checked.

Tools:

* FP16: ``onnxruntime.transformers.float16.convert_float_to_float16``. It is the
  ``onnxconverter_common`` algorithm (the file says so) maintained inside ONNX Runtime,
  with fixes for Resize/GroupNorm mixed inputs and opset-aware blocking, and it ships with
  the ``onnxruntime`` wheel we already depend on, so no extra dependency. ``keep_io_types``
  keeps float32 graph inputs and outputs (Casts inside the graph), so callers need not
  change; the engine casts for graphs converted without it.
* INT8: ``onnxruntime.quantization.quantize_dynamic`` with signed 8-bit weights
  (``QInt8``, per output channel) for ``MatMul`` with a constant weight (the ConvNeXt
  pointwise layers and every linear layer), ``Conv`` (depthwise and ordinary convs, as
  ``ConvInteger``) and ``Gather`` (the character embeddings). Activations are quantised
  at run time (``DynamicQuantizeLinear``, uint8), which is what the CPU provider's
  ``MatMulInteger``/``ConvInteger`` kernels take. Weights under
  `INT8_MIN_WEIGHT_ELEMENTS` elements stay float: each quantised op adds four to five
  nodes plus a scale and zero point, more bytes and more time than a small weight saves.

Safety: the destination must not exist (or be an empty directory); the output is built in
a temporary directory beside it (`tts_kit.core.atomic`: removed on any failure, Ctrl-C, SIGTERM
or SIGHUP), checked (it opens as a `tts_kit.Bundle`, every converted graph opens in ONNX
Runtime), and renamed into place only when complete. The source is only ever read: the
INT8 quantiser, whose shape inference writes ``<graph>-inferred.onnx`` beside the graph it
is given, gets a private copy in a scratch directory. The source is hashed (SHA-256,
every regular file) before and after; a change is an error. Only regular files are
copied: a symbolic link among the other files (``README -> ~/.ssh/...``) is skipped with a
note, and a link in place of a file the layout needs is refused, so a crafted bundle
cannot pull a file from outside into an output a user may pass on. Voice styles and JSON
files are copied; ``tts.json`` gains a ``tts_kit_precision`` record of the conversion.

What `convert` measures afterwards is `tts_kit.precision.measure`'s; a single ``.onnx``
file is instead compared with its source on random inputs here (`random_feeds`).

Example:
    >>> from tts_kit.precision import convert
    >>> r = convert("supertonic-3", "supertonic-3-int8", to="int8", measure=False)  # doctest: +SKIP
    >>> r.stages["vocoder"].ratio  # doctest: +SKIP
    0.27
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from tts_kit.core import atomic, contract
from tts_kit.core.errors import TtsKitError
from tts_kit.experiments.audio_metrics import snr_db
from tts_kit.precision.measure import judge_against_floor, measure_conversion
from tts_kit.precision.records import (
    MAX_LOG_MEL_DB,
    MIN_SNR_DB,
    ConversionReport,
    Fidelity,
    StageReport,
    check_target,
)

#: Op types `quantize_dynamic` is asked to quantise (see the module docstring).
INT8_OP_TYPES: tuple[str, ...] = ("MatMul", "Conv", "Gather")
#: Weights with fewer elements than this stay float in INT8 conversions.
INT8_MIN_WEIGHT_ELEMENTS = 1024
#: Key of the conversion record in a converted bundle's ``tts.json``.
PRECISION_KEY = "tts_kit_precision"


def _tool(to: str) -> str:
    if to == "fp16":
        return (
            "onnxruntime.transformers.float16.convert_float_to_float16 "
            f"(onnxruntime {ort.__version__})"
        )
    return (
        f"onnxruntime.quantization.quantize_dynamic (onnxruntime {ort.__version__}; "
        f"QInt8 per-channel weights, ops {', '.join(INT8_OP_TYPES)})"
    )


# -- hashing and file safety ------------------------------------------------------------


def sha256_file(path: str | os.PathLike[str]) -> str:
    """SHA-256 of one file, read in 1 MiB blocks.

    Example:
        >>> sha256_file(__file__) == sha256_file(__file__)
        True
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _walk_files(root: Path) -> tuple[list[str], list[str]]:
    """(regular files, symbolic links) under ``root`` as sorted relative POSIX paths.

    Links are listed, never followed (a linked directory is not entered).
    """
    files, links = [], []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        for name in [*dirnames, *filenames]:
            p = here / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                links.append(rel)
            elif name in filenames and p.is_file():
                files.append(rel)
    return sorted(files), sorted(links)


def sha256_tree(path: str | os.PathLike[str]) -> dict[str, str]:
    """SHA-256 of every regular file under ``path`` (relative POSIX path -> hex).

    A file maps to itself. Symbolic links inside a directory are not followed: what they
    point at is not part of the tree (and may be anybody's file).

    Example:
        >>> list(sha256_tree(__file__))
        ['conversion.py']
    """
    root = Path(path)
    if root.is_file():
        return {root.name: sha256_file(root)}
    return {rel: sha256_file(root / rel) for rel in _walk_files(root)[0]}


def _layout_files(bundle: Any) -> set[str]:
    """The files a bundle cannot do without (relative POSIX paths)."""
    need = {contract.CONFIG_FILE, contract.INDEXER_FILE}
    need |= {contract.GRAPHS[s].path for s in contract.STAGES}
    need |= {f"{contract.VOICE_DIR}/{name}.json" for name in bundle.voices}
    return need


def _check_links(src_p: Path, bundle: Any) -> list[str]:
    """Refuse links the layout needs; return the other links (skipped, with a note)."""
    _, links = _walk_files(src_p)
    need = _layout_files(bundle)
    needed = sorted(rel for rel in links
                    if rel in need or any(n.startswith(rel + "/") for n in need))
    if needed:
        raise TtsKitError(
            f"{src_p}: {needed[0]} is a symbolic link; convert reads only regular files "
            f"of a bundle: copy it with `cp -rL {src_p} COPY` and convert the copy"
        )
    return links


def _check_dst_free(dst: Path, kind: str) -> None:
    if dst.is_symlink():  # dangling or not: os.replace cannot put the output there
        raise TtsKitError(f"{dst}: is a symbolic link (to {os.readlink(dst)}); give a new path "
                         "that is not a link")
    if kind == "onnx":
        if dst.exists() or dst.is_symlink():
            raise TtsKitError(f"{dst}: already exists; give a new output file path")
        return
    if dst.exists() and (not dst.is_dir() or any(dst.iterdir())):
        raise TtsKitError(
            f"{dst}: already exists and is not an empty directory; choose a new path or remove it"
        )


def _graph_bytes(path: Path) -> int:
    return path.stat().st_size + sum(
        p.stat().st_size for p in path.parent.glob(f"{path.name}.data*")
    )


# -- the converters ---------------------------------------------------------------------


def _strip_added_value_info(model: onnx.ModelProto, keep: set[str]) -> None:
    """Drop shape-inference annotations the converters add (ORT infers them again on load).

    They are metadata, not weights: a few KB that make small graphs look larger.
    """
    kept = [vi for vi in model.graph.value_info if vi.name in keep]
    del model.graph.value_info[:]
    model.graph.value_info.extend(kept)


def _save_model(model: onnx.ModelProto, path: Path) -> None:
    # Protobuf cannot serialise 2 GB; larger graphs go to an external data file.
    big = model.ByteSize() > 1_800_000_000
    onnx.save_model(model, str(path), save_as_external_data=big,
                    location=f"{path.name}.data" if big else None)


def _weights_of(model: onnx.ModelProto) -> dict[str, int]:
    return {i.name: int(np.prod(i.dims)) for i in model.graph.initializer}


def _convert_graph(
    src: Path, dst: Path, to: str, keep_io_types: bool, op_block_list: Sequence[str] | None,
    keep_float_prefixes: Sequence[str] = (),
) -> tuple[dict[str, int], int]:
    """Convert one ONNX file to ``dst``; returns (ops report, number of ops kept float).

    ``keep_float_prefixes``: nodes whose names start with one of these stay float (a
    Piper voice's duration predictor is ``/dp/...``: `PIPER_RECIPES`).
    """
    source = onnx.load(str(src))
    prefixes = tuple(keep_float_prefixes)
    keep_vi = {vi.name for vi in source.graph.value_info}
    if to == "fp16":
        from onnxruntime.transformers.float16 import (
            DEFAULT_OP_BLOCK_LIST,
            convert_float_to_float16,
        )

        casts_before = sum(n.op_type == "Cast" for n in source.graph.node)
        blocked = sorted(set(DEFAULT_OP_BLOCK_LIST) | set(op_block_list or ()))
        keep = [n.name for n in source.graph.node if prefixes and n.name.startswith(prefixes)]
        model = convert_float_to_float16(source, keep_io_types=keep_io_types,
                                         op_block_list=blocked, node_block_list=keep or None)
        del source
        _strip_added_value_info(model, keep_vi)
        casts = sum(n.op_type == "Cast" for n in model.graph.node) - casts_before
        _save_model(model, dst)
        return {"Cast": casts}, 0

    from onnxruntime.quantization import QuantType, quantize_dynamic

    weights = _weights_of(source)
    blocked_ops = set(op_block_list or ())
    op_types = [t for t in INT8_OP_TYPES if t not in blocked_ops]
    unnamed = False
    for k, n in enumerate(source.graph.node):
        if not n.name:  # nodes_to_exclude works by name; this is our private copy
            n.name = f"tts_kit_node_{k}"
            unnamed = True
    # Only ops with a weight are candidates (activation x activation MatMuls never are).
    candidates = [
        n for n in source.graph.node
        if n.op_type in INT8_OP_TYPES and any(i in weights for i in n.input)
    ]
    exclude = [
        n.name for n in candidates
        if n.op_type in blocked_ops
        or not any(weights.get(i, 0) >= INT8_MIN_WEIGHT_ELEMENTS for i in n.input)
        or (prefixes and n.name.startswith(prefixes))
    ]
    consumer = {}
    for n in candidates:
        for i in n.input:
            if i in weights:
                consumer.setdefault(i, n.op_type)
    # The quantiser's shape inference writes "<graph>-inferred.onnx" beside the graph it is
    # handed (truncating a user's file of that name) and unlinks it, so it never sees the
    # source: only a private copy in a scratch directory that goes with any failure.
    with atomic.scratch_dir(dst) as tmp, _without_preprocess_advice():
        model_in = Path(tmp) / src.name
        if unnamed:
            _save_model(source, model_in)
        else:
            _copy_graph(src, model_in)
        # The quantiser loads its own copy; not holding ours too saves a model's worth
        # of RAM (about 250 MB for the vector estimator).
        del source
        quantize_dynamic(
            model_in,
            Path(tmp) / "q.onnx",
            op_types_to_quantize=op_types,
            per_channel=True,
            weight_type=QuantType.QInt8,
            nodes_to_exclude=exclude,
            extra_options={"MatMulConstBOnly": True},
        )
        model = onnx.load(str(Path(tmp) / "q.onnx"))
    _strip_added_value_info(model, keep_vi)
    out_names = {i.name for i in model.graph.initializer}
    ops = Counter(
        op for name, op in consumer.items() if f"{name}_quantized" in out_names
    )
    _save_model(model, dst)
    return dict(sorted(ops.items())), len(exclude)


def _copy_graph(src: Path, dst: Path) -> None:
    """Copy a graph and its external data files (``<name>.data*``, as `_save_model` names
    them) into ``dst``'s directory, contents only."""
    shutil.copyfile(src, dst)
    for data in src.parent.glob(f"{src.name}.data*"):
        if data.is_file() and not data.is_symlink():
            shutil.copyfile(data, dst.parent / data.name.replace(src.name, dst.name, 1))


class _DropPreprocessAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        # quantize_dynamic says "Please consider to run ...", quantize_static "Please
        # consider pre-processing ...".
        return not str(record.msg).startswith("Please consider")


@contextlib.contextmanager
def _without_preprocess_advice() -> Iterator[None]:
    """Silence quantize_dynamic's per-call root-logger advice to run quant_pre_process.

    tts_kit does not run that step: it rewrites the graph with ORT's optimiser, so the
    saved stage would no longer be the source graph plus quantisation; the INT8 result
    is judged by its measured fidelity instead. The advice, repeated for every stage,
    buried the conversion's own output in notebooks.
    """
    drop = _DropPreprocessAdvice()
    root = logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def _precision_of(path: Path) -> str:
    from tts_kit.core._protoscan import scan_onnx
    from tts_kit.models.supertonic.bundle import _precision

    return _precision(scan_onnx(path).initializer_types)


def _open_check(path: Path) -> ort.InferenceSession:
    """Open a graph in ONNX Runtime on the CPU (what every machine has)."""
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])


def _check_float32(found: str, name: str) -> None:
    # Converting twice compounds the error, and FP16 over INT8 breaks the quantisation
    # scales; always start from the FP32 original.
    if found != "float32":
        raise TtsKitError(
            f"{name}: weights are already {found}; convert from the FP32 original instead"
        )


def convert(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    to: str = "fp16",
    stages: Iterable[str] | None = None,
    keep_io_types: bool = True,
    op_block_list: Sequence[str] | None = None,
    measure: bool | str = True,
    texts: Sequence[str] | None = None,
    providers: Sequence[str] | None = None,
    *,
    seed: int = 0,
    steps: int = contract.DEFAULT_STEPS,
    repeats: int = 3,
    lang: str = "en",
    preset: Any = None,
    recipe: str | None = None,
    floor: bool | None = None,
) -> ConversionReport:
    """Convert a bundle or one ``.onnx`` file to FP16 or INT8 and report what it changed.

    Args:
        src: a bundle directory, or a single ``.onnx`` file (any model).
        dst: the new bundle directory (must not exist, or be empty), or for a file the
            output file path (must not exist).
        to: ``"fp16"`` or ``"int8"``.
        stages: bundle stages to convert (default: all four); the others are copied.
            The public FP16 bundle keeps the duration predictor FP32:
            ``stages=["text_encoder", "vector_estimator", "vocoder"]``.
        keep_io_types: FP16 only: keep float32 graph inputs and outputs.
        op_block_list: op types to leave in FP32 (FP16: added to ONNX Runtime's default
            block list; INT8: op types not to quantise, e.g. ``["Gather"]``).
        measure: measure afterwards (default). For a bundle: memory and latency of
            source and result (each in a fresh process) and their fidelity
            (`tts_kit.precision.fidelity`, in a third); seconds for the tiny stand-in, a
            minute or two at full size.
            ``"fidelity"``: only the fidelity check. For a single file: compare its
            outputs with the source's on random inputs (cheap, in this process).
        texts: texts the measurements synthesise (default `tts_kit.precision.DEFAULT_TEXTS`).
        providers: execution providers to measure on (default: CPU, and CUDA when
            this ONNX Runtime has it).
        seed, steps, repeats, lang: noise seed, flow steps, timed repeats per text and
            language of the measurements.
        preset: session preset name or `SessionPreset` for the measurements (default
            ``supertonic-default``); its providers are replaced per measured provider.
        recipe: a per-stage recipe instead of ``to``/``stages`` (bundles only; see
            `tts_kit.precision.recipes.RECIPES`: ``fp16``, ``int8``, ``int8-dp32``,
            ``sherpa-int8``). Every INT8 stage written gets a `kernel_report` (does
            ONNX Runtime really run integer kernels?).
        floor: also judge the result against the source's measured noise floor
            (`tts_kit.precision.measure.judge_against_floor`: ``report.judgement``,
            within the floor, audible risk or broken; on the CPU). Default: whenever
            ``measure`` is set and the CPU is among ``providers``, for a bundle or a voice
            (about a minute more at full size).

    Returns:
        The `ConversionReport` (also describes measurements that failed, in ``status``).

    Raises:
        TtsKitError: bad target, unknown stage, ``dst`` not free, ``src`` not a bundle
            or ``.onnx`` file (`tts_kit.BundleError` is a ValueError).
        RuntimeError: the source changed during conversion (nothing is written).

    Example:
        >>> r = convert("supertonic-3", "supertonic-3-int8", to="int8")  # doctest: +SKIP
        >>> r.stages["vocoder"].ops  # doctest: +SKIP
        {'Conv': 13, 'MatMul': 20}
    """
    from tts_kit.models.family import is_piper

    if is_piper(src):  # one graph: `convert_piper`, with the recipes that mean something there
        if stages is not None and list(stages) != ["voice"]:
            raise TtsKitError("a Piper voice has one stage, 'voice'; drop stages")
        if measure not in (True, False, "fidelity"):
            raise TtsKitError(f"measure must be True, False or 'fidelity', got {measure!r}")
        report = convert_piper(src, dst, to, keep_io_types, op_block_list,
                               measure=bool(measure), texts=texts, seed=seed, recipe=recipe)
        if floor if floor is not None else bool(measure):
            report.judgement = judge_against_floor(src, report.dst, report.texts or None)
        return report
    plan: dict[str, str] | None = None
    if recipe is not None:
        from tts_kit.precision.recipes import check_recipe, recipe_target

        plan = check_recipe(recipe)
        if stages is not None:
            raise TtsKitError("give a recipe or stages, not both: the recipe says what each "
                             "stage becomes")
        to = recipe_target(recipe)
        stages = [s for s, m in plan.items() if m != "copy"]
    check_target(to)
    if measure not in (True, False, "fidelity"):
        raise TtsKitError(f"measure must be True, False or 'fidelity', got {measure!r}")
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
    if src_p.resolve() == dst_p.resolve() or dst_p.resolve().is_relative_to(src_p.resolve()):
        raise TtsKitError(f"{dst}: the output must be outside the source {src}")
    if kind == "bundle":
        from tts_kit.models.supertonic.bundle import Bundle

        bundle = Bundle(src_p)  # validates; raises BundleError naming the file
        chosen = list(contract.STAGES) if stages is None else list(stages)
        unknown = [s for s in chosen if s not in contract.STAGES]
        if unknown or not chosen:
            raise TtsKitError(
                f"unknown stage(s) {unknown or chosen}; stages are {', '.join(contract.STAGES)}"
            )
        chosen = [s for s in contract.STAGES if s in chosen]  # pipeline order, no repeats
        for s in chosen:
            _check_float32(bundle.stages[s].precision, contract.GRAPHS[s].path)
        skipped_links = _check_links(src_p, bundle)
    else:
        if stages is not None:
            raise TtsKitError("stages only apply to bundles; a single .onnx file is one graph")
        chosen = ["model"]
        _check_float32(_precision_of(src_p), src_p.name)
    _check_dst_free(dst_p, kind)

    t0 = time.perf_counter()
    before = sha256_tree(src_p)
    report = ConversionReport(
        kind=kind, src=str(src_p), dst=str(dst_p), to=to, converted=chosen, tool=_tool(to),
        options={
            "keep_io_types": keep_io_types,
            "op_block_list": list(op_block_list or []),
            **({"int8": {"weight_type": "QInt8", "per_channel": True,
                         "op_types": list(INT8_OP_TYPES),
                         "min_weight_elements": INT8_MIN_WEIGHT_ELEMENTS,
                         "activations": "uint8, dynamic"}} if to == "int8" else {}),
        },
        source_sha256=before,
        recipe=recipe or "",
    )
    if plan is not None:
        if kind != "bundle":
            raise TtsKitError("recipes apply to bundles; a single .onnx file takes --to")
        report.options["recipe"] = {s: plan[s] for s in contract.STAGES}
    if kind == "bundle":
        for rel in skipped_links:
            note = (f"skipped {rel}: a symbolic link (only the bundle's regular files are "
                    "copied)")
            report.notes.append(note)
            warnings.warn(note, stacklevel=2)
    dst_p.parent.mkdir(parents=True, exist_ok=True)
    if kind == "bundle":
        _convert_bundle(bundle, src_p, dst_p, to, chosen, keep_io_types, op_block_list, report,
                        plan)
    else:
        _convert_file(src_p, dst_p, to, keep_io_types, op_block_list, report)
    report.convert_s = time.perf_counter() - t0

    if kind == "onnx":
        if measure:
            report.measured = True
            _compare_outputs(report, src_p, dst_p)
        return report
    if measure:
        report.measured = True
        measure_conversion(report, texts, providers, seed, steps, repeats, lang, preset,
                           runs=measure is True)
    # The floor is measured on the CPU: by default only when the CPU is among the providers.
    cpu = providers is None or "CPUExecutionProvider" in providers
    if floor if floor is not None else bool(measure) and cpu:
        report.judgement = judge_against_floor(src_p, dst_p)
    return report


def _convert_bundle(
    bundle: Any, src_p: Path, dst_p: Path, to: str, chosen: list[str], keep_io_types: bool,
    op_block_list: Sequence[str] | None, report: ConversionReport,
    plan: dict[str, str] | None = None,
) -> None:
    from tts_kit.models.supertonic.bundle import Bundle
    from tts_kit.precision.recipes import kernel_report

    with atomic.atomic_dir(dst_p) as tmp:
        graph_files = {contract.GRAPHS[s].path for s in chosen}
        for rel in report.source_sha256:
            if rel in graph_files or any(rel.startswith(g + ".data") for g in graph_files):
                continue
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            _copy_regular(src_p / rel, tmp / rel)
        for stage in contract.STAGES:
            info = bundle.stages[stage]
            out = tmp / contract.GRAPHS[stage].path
            method = (plan or {}).get(stage, to) if stage in chosen else "copy"
            kernels = None
            if stage in chosen:
                ops, kept = _convert_stage(method, info.path, out, to, keep_io_types,
                                           op_block_list, src_p, tmp)
                sess = _open_check(out)  # fails here, not in the user's engine
                del sess
                if method != "fp16":  # does it run integer kernels, or float after all?
                    kernels = kernel_report(out).to_dict()
            else:
                ops, kept = {}, 0
            report.stages[stage] = StageReport(
                stage, stage in chosen, info.size_bytes, _graph_bytes(out), info.precision,
                _precision_of(out), ops, kept, method if plan else "", kernels,
            )
        cfg_path = tmp / contract.CONFIG_FILE
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        record = {
            "to": to,
            **({"recipe": report.recipe, "methods": report.options["recipe"]}
               if report.recipe else {}),
            "stages": chosen,
            "source_sha256": {
                s: report.source_sha256.get(contract.GRAPHS[s].path, "") for s in contract.STAGES
            },
            "tool": report.tool,
            "options": report.options,
        }
        if PRECISION_KEY in cfg:
            record["previous"] = cfg[PRECISION_KEY]
        cfg[PRECISION_KEY] = record
        cfg_path.write_text(json.dumps(cfg, ensure_ascii=False, indent=1) + "\n",
                            encoding="utf-8")
        Bundle(tmp)  # the result must open like any bundle
        _check_finished(report, src_p, dst_p)


def _convert_stage(
    method: str, src: Path, out: Path, to: str, keep_io_types: bool,
    op_block_list: Sequence[str] | None, src_bundle: Path, tmp: Path,
) -> tuple[dict[str, int], int]:
    """Convert one stage's graph by a recipe method (`tts_kit.precision.recipes.METHODS`).

    ``tmp`` is the output bundle being built: stages are converted in pipeline order, so
    the static vocoder's calibration runs the vector estimator already written there.
    """
    from tts_kit.precision import recipes

    if method in ("fp16", "int8"):
        return _convert_graph(src, out, method, keep_io_types, op_block_list)
    with atomic.scratch_dir(out) as scratch, _without_preprocess_advice():
        if method == "int8-matmul+w8conv":
            info = recipes.convert_sherpa_vector_estimator(src, out, scratch, _save_model)
        elif method == "int8-static":
            ve = tmp / contract.GRAPHS["vector_estimator"].path
            latents = recipes.calibration_latents(src_bundle, ve, recipes.CALIBRATION_TEXTS)
            info = recipes.convert_sherpa_vocoder(src, out, scratch, latents, _save_model)
        else:
            raise TtsKitError(f"unknown conversion method '{method}'; use one of "
                             f"{', '.join(recipes.METHODS)}")
    return {k: int(v) for k, v in info.items()}, int(info.get("Conv kept float", 0))


def _copy_regular(src: Path, dst: Path) -> None:
    """Copy a regular file's bytes and times; never through a link (one may have been put
    in its place since the tree was listed)."""
    fd = os.open(src, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fin, open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
    shutil.copystat(src, dst, follow_symlinks=False)


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


def _convert_file(
    src_p: Path, dst_p: Path, to: str, keep_io_types: bool, op_block_list: Sequence[str] | None,
    report: ConversionReport,
) -> None:
    # replace=False: a file that appears at dst meanwhile is never overwritten.
    with atomic.atomic_file(dst_p, replace=False, suffix=".onnx") as tmp:
        ops, kept = _convert_graph(src_p, tmp, to, keep_io_types, op_block_list)
        del ops  # reported below
        sess = _open_check(tmp)
        del sess
        report.stages["model"] = StageReport(
            "model", True, _graph_bytes(src_p), _graph_bytes(tmp), _precision_of(src_p),
            _precision_of(tmp), _ops_again(src_p, tmp, to), kept,
        )
        _check_finished(report, src_p, dst_p)


def _ops_again(src_p: Path, out: Path, to: str) -> dict[str, int]:
    """The ops report for a single file (recomputed from both graphs)."""
    a, b = onnx.load(str(src_p), load_external_data=False), onnx.load(
        str(out), load_external_data=False)
    if to == "fp16":
        return {"Cast": sum(n.op_type == "Cast" for n in b.graph.node)
                - sum(n.op_type == "Cast" for n in a.graph.node)}
    weights = {i.name for i in a.graph.initializer}
    outs = {i.name for i in b.graph.initializer}
    ops: Counter[str] = Counter()
    for n in a.graph.node:
        if n.op_type in INT8_OP_TYPES and any(
            i in weights and f"{i}_quantized" in outs for i in n.input
        ):
            ops[n.op_type] += 1
    return dict(sorted(ops.items()))


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
        if np.issubdtype(dt, np.floating):
            feeds[i.name] = rng.standard_normal(shape).astype(dt)
        else:
            feeds[i.name] = np.zeros(shape, dt)
    return feeds


def _compare_outputs(report: ConversionReport, src_p: Path, dst_p: Path) -> None:
    try:
        ref = _open_check(src_p)
        cand = _open_check(dst_p)
        feeds = random_feeds(ref)
        types = {i.name: _ORT_NP.get(i.type) for i in cand.get_inputs()}
        cfeeds = {k: v.astype(types[k]) if types.get(k) is not None else v
                  for k, v in feeds.items()}
        names = [o.name for o in ref.get_outputs()]
        for name, a, b in zip(names, ref.run(None, feeds), cand.run(None, cfeeds)):
            if np.issubdtype(np.asarray(a).dtype, np.floating):
                report.output_snr_db[name] = snr_db(a, np.asarray(b, np.float32))
    except Exception as exc:  # any model: inputs we cannot invent are a note, not a failure
        report.notes.append(f"output comparison skipped: {type(exc).__name__}: {exc}")



# -- Piper voices --------------------------------------------------------------------------


#: Recipes for a Piper voice (one graph): recipe -> (target, node-name prefixes kept float).
#: ``int8-dp32`` keeps what sets the durations float, as the recipe of that name keeps
#: Supertonic's duration predictor FP32: durations that move change the length, and with
#: it every sample after. In a VITS voice the duration predictor (``/dp/``) reads the text
#: encoder's output (``/enc_p/``), so both stay float (measured on en_US-joe-medium: with
#: ``/dp/`` alone float, INT8 still moved the length by 70 ms). The flow and the decoder
#: are quantised. sherpa-onnx's recipe is Supertonic's only.
PIPER_RECIPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "fp16": ("fp16", ()),
    "int8": ("int8", ()),
    "int8-dp32": ("int8", ("/enc_p/", "/dp/")),
}


def convert_piper(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    to: str = "fp16",
    keep_io_types: bool = True,
    op_block_list: Sequence[str] | None = None,
    measure: bool = True,
    texts: Sequence[str] | None = None,
    seed: int = 0,
    recipe: str | None = None,
) -> ConversionReport:
    """Convert a Piper voice (`tts_kit.models.piper.voice`) into a new voice directory.

    ``src``: ``piper:NAME``, a voice directory or its ``.onnx`` file; it is only read
    (hashed before and after). ``dst``: a new directory (must not exist, or be empty),
    built aside and moved into place whole: the converted graph, its ``.onnx.json`` with
    a ``tts_kit_precision`` record, and the voice's other regular files (model card).
    With ``measure``, both voices read ``texts`` (default: the precision texts) with the
    same seed, so the same noise, and the waveforms are compared (SNR, log-mel distance,
    length), on the CPU, in this process. Memory and latency: ``tts-kit tune --model DST``.

    ``recipe``: one of `PIPER_RECIPES` instead of ``to`` (``int8-dp32``: INT8 with the
    duration predictor kept float).

    Example:
        >>> r = convert_piper("piper:joe-us", "joe-fp16", "fp16")  # doctest: +SKIP
        >>> r.fidelity["CPUExecutionProvider"].passed  # doctest: +SKIP
        True
    """
    from tts_kit.models.piper.voice import STAGE, PiperBundle

    keep_float: tuple[str, ...] = ()
    if recipe is not None:
        if recipe not in PIPER_RECIPES:
            raise TtsKitError(f"recipe '{recipe}' is not one for a Piper voice; use one of "
                             f"{', '.join(PIPER_RECIPES)} (sherpa-int8 is Supertonic's)")
        to, keep_float = PIPER_RECIPES[recipe]
    check_target(to)
    bundle = PiperBundle(src)
    src_dir = bundle.path
    dst_p = Path(dst).expanduser()
    if dst_p.resolve() == src_dir or dst_p.resolve().is_relative_to(src_dir):
        raise TtsKitError(f"{dst}: the output must be outside the voice's directory {src_dir}")
    _check_float32(bundle.stages[STAGE].precision, bundle.model_file.name)
    _check_dst_free(dst_p, "bundle")
    files = [bundle.model_file, bundle.config_file]
    extra = [f for f in sorted(src_dir.iterdir()) if f.is_file() and not f.is_symlink()
             and f not in files and f.suffix not in (".onnx", ".json", ".py", ".pyc")]
    t0 = time.perf_counter()
    before = {f.name: sha256_file(f) for f in files + extra}
    report = ConversionReport(
        kind="piper", src=str(bundle.name if bundle.name.startswith("piper:")
                              else bundle.model_file),
        dst=str(dst_p), to=to, converted=[STAGE], tool=_tool(to),
        options={"keep_io_types": keep_io_types, "op_block_list": list(op_block_list or []),
                 **({"keep_float_prefixes": list(keep_float)} if keep_float else {})},
        source_sha256=before, recipe=recipe or "",
    )
    dst_p.parent.mkdir(parents=True, exist_ok=True)
    with atomic.atomic_dir(dst_p) as tmp:
        out = tmp / bundle.model_file.name
        ops, kept = _convert_graph(bundle.model_file, out, to, keep_io_types, op_block_list,
                                   keep_float)
        sess = _open_check(out)
        del sess
        for f in extra:
            _copy_regular(f, tmp / f.name)
        cfg = dict(bundle.config)
        record = {"to": to, "stages": [STAGE],
                  "source_sha256": {STAGE: before[bundle.model_file.name]},
                  "tool": report.tool, "options": report.options}
        if PRECISION_KEY in cfg:
            record["previous"] = cfg[PRECISION_KEY]
        cfg[PRECISION_KEY] = record
        (tmp / bundle.config_file.name).write_text(
            json.dumps(cfg, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        converted = PiperBundle(out)  # the result must open like any voice
        kernels = None
        if to == "int8":  # does it run integer kernels, or float after all?
            from tts_kit.precision.recipes import kernel_report

            kernels = kernel_report(out).to_dict()
        report.stages[STAGE] = StageReport(
            STAGE, True, bundle.stages[STAGE].size_bytes, _graph_bytes(out),
            bundle.stages[STAGE].precision, converted.stages[STAGE].precision, ops, kept,
            recipe or to, kernels)
        after = {f.name: sha256_file(f) for f in files + extra}
        if after != before:
            report.source_unchanged = False
            raise RuntimeError(f"{src_dir}: the voice changed during conversion; nothing was "
                               "written; make sure nothing else writes to it and retry")
    report.convert_s = time.perf_counter() - t0
    if measure:
        report.measured = True
        report.fidelity["CPUExecutionProvider"] = piper_fidelity(
            bundle, dst_p, to, texts=texts, seed=seed)
        report.texts = list(texts or _piper_texts())
        report.seed = seed
        report.steps = 1
    return report


def _piper_texts() -> list[str]:
    from tts_kit.precision.measure import DEFAULT_TEXTS

    return list(DEFAULT_TEXTS)


def piper_fidelity(reference: Any, candidate: Any, to: str = "fp16",
                   texts: Sequence[str] | None = None, seed: int = 0) -> Fidelity:
    """A converted Piper voice against its source: same texts, same seed, same noise.

    Both engines run on the CPU in this process; the waveforms are compared with
    `tts_kit.experiments.audio_metrics.waveform_fidelity` and judged by `Fidelity.evaluate` with the
    target's thresholds (``stage_snr_db`` holds the one stage, ``voice``).

    Example:
        >>> piper_fidelity("piper:joe-us", "joe-fp16", "fp16").passed  # doctest: +SKIP
        True
    """
    from tts_kit.experiments.audio_metrics import waveform_fidelity
    from tts_kit.models.piper.voice import STAGE, PiperEngine

    texts = list(texts or _piper_texts())
    ref_e = PiperEngine(reference)
    cand_e = PiperEngine(candidate)
    f = Fidelity("CPUExecutionProvider", min_snr_db=MIN_SNR_DB[to],
                 max_log_mel_db=MAX_LOG_MEL_DB[to])
    try:
        ref = [r.wav for r in ref_e.synthesize_batch(texts, seed=seed)]
        cand = [r.wav for r in cand_e.synthesize_batch(texts, seed=seed)]
        snr, lmd, n_ref, n_cand = waveform_fidelity(ref, cand, ref_e.bundle.sample_rate)
        f.waveform_snr_db, f.log_mel_distance_db = snr, lmd
        f.length_ref, f.length_candidate = n_ref, n_cand
        f.stage_snr_db = {STAGE: snr}
    except ValueError as exc:
        f.error = str(exc)
    finally:
        ref_e.close()
        cand_e.close()
    return f.evaluate()
