"""The graph-level steps of a conversion: one ONNX file to FP16 or INT8 (`_convert_graph`),
and the file safety around it (hashing, links, a free destination, checks that a
written graph opens)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from tts_kit.core import atomic, contract
from tts_kit.core.digests import file_sha256 as sha256_file  # one file's SHA-256, remembered
from tts_kit.core.errors import TtsKitError

#: Op types `quantize_dynamic` is asked to quantise (see the module docstring).
INT8_OP_TYPES: tuple[str, ...] = ("MatMul", "Conv", "Gather")
#: Weights with fewer elements than this stay float in INT8 conversions.
INT8_MIN_WEIGHT_ELEMENTS = 1024
#: Key of the conversion record in a converted bundle's ``tts.json``.
PRECISION_KEY = "tts_kit_precision"


def _tool(to: str) -> str:
    if to == "fp16":
        return ("onnxruntime.transformers.float16.convert_float_to_float16 "
                f"(onnxruntime {ort.__version__})")
    return (f"onnxruntime.quantization.quantize_dynamic (onnxruntime {ort.__version__}; "
            f"QInt8 per-channel weights, ops {', '.join(INT8_OP_TYPES)})")


# -- hashing and file safety ------------------------------------------------------------


def _walk_files(root: Path) -> tuple[list[str], list[str]]:
    """(regular files, symbolic links) under ``root`` as sorted relative POSIX paths;
    links are listed, never followed."""
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
    """SHA-256 of every regular file under ``path`` (relative POSIX path -> hex); a file maps
    to itself; symbolic links are not followed.

    Example:
        >>> list(sha256_tree(__file__))
        ['graphs.py']
    """
    root = Path(path)
    if root.is_file():
        return {root.name: sha256_file(root)}
    return {rel: sha256_file(root / rel) for rel in _walk_files(root)[0]}


def _check_links(src_p: Path, bundle: Any) -> list[str]:
    """Refuse links the layout needs; return the other links (skipped, with a note)."""
    _, links = _walk_files(src_p)
    need = {contract.CONFIG_FILE, contract.INDEXER_FILE,
            *(contract.GRAPHS[s].path for s in contract.STAGES),
            *(f"{contract.VOICE_DIR}/{name}.json" for name in bundle.voices)}
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
    if kind != "onnx":
        # A file, a full directory, a place that takes no new directory: one line each, now.
        atomic.check_dir_destination(dst)
    elif dst.exists():
        raise TtsKitError(f"{dst}: already exists; give a new output file path")


def _write_config(path: Path, cfg: dict[str, Any], report: Any, record: dict[str, Any]) -> None:
    """Write ``cfg`` to ``path`` with the conversion's ``record`` (and the report's tool and
    options) under `PRECISION_KEY`, an earlier conversion's record kept as ``previous``."""
    record = {**record, "tool": report.tool, "options": report.options}
    if PRECISION_KEY in cfg:
        record["previous"] = cfg[PRECISION_KEY]
    text = json.dumps({**cfg, PRECISION_KEY: record}, ensure_ascii=False, indent=1)
    path.write_text(text + "\n", encoding="utf-8")


def _graph_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in [path, *path.parent.glob(f"{path.name}.data*")])


# -- the converters ---------------------------------------------------------------------


def _refill(field: Any, items: list[Any]) -> None:
    """Replace a repeated protobuf field's contents with ``items``."""
    del field[:]
    field.extend(items)


def _save_model(model: onnx.ModelProto, path: Path) -> None:
    # Protobuf cannot serialise 2 GB; larger graphs go to an external data file.
    big = model.ByteSize() > 1_800_000_000
    onnx.save_model(model, str(path), save_as_external_data=big,
                    location=f"{path.name}.data" if big else None)


def _convert_graph(
    src: Path, dst: Path, to: str, keep_io_types: bool, op_block_list: Sequence[str] | None,
    keep_float_prefixes: Sequence[str] = (),
) -> tuple[dict[str, int], int]:
    """Convert one ONNX file to ``dst``, nodes named with one of ``keep_float_prefixes`` kept
    float (`PIPER_RECIPES`); returns (ops report, number of ops kept float)."""
    prefixes = tuple(keep_float_prefixes)
    if to != "fp16":
        return _quantize_int8(src, dst, op_block_list, prefixes)
    source = onnx.load(str(src))
    keep_vi = {vi.name for vi in source.graph.value_info}
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
    # Drop the shape annotations the converter added (metadata ORT infers again on load).
    _refill(model.graph.value_info, [vi for vi in model.graph.value_info if vi.name in keep_vi])
    casts = sum(n.op_type == "Cast" for n in model.graph.node) - casts_before
    _save_model(model, dst)
    return {"Cast": casts}, 0


def _quantize_int8(src: Path, dst: Path, op_block_list: Sequence[str] | None,
                   prefixes: tuple[str, ...]) -> tuple[dict[str, int], int]:
    """`_convert_graph`'s INT8 half: dynamic quantisation of the ops with a weight."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source = onnx.load(str(src))
    keep_vi = {vi.name for vi in source.graph.value_info}

    weights = {i.name: int(np.prod(i.dims)) for i in source.graph.initializer}
    blocked_ops = set(op_block_list or ())
    op_types = [t for t in INT8_OP_TYPES if t not in blocked_ops]
    unnamed = not all(n.name for n in source.graph.node)
    _name_nodes(source)  # nodes_to_exclude works by name; this is our private copy
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
    consumer = {}  # weight -> the op type that reads it first
    for n in candidates:
        consumer.update({i: n.op_type for i in n.input if i in weights and i not in consumer})
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
        quantize_dynamic(model_in, Path(tmp) / "q.onnx", op_types_to_quantize=op_types,
                         per_channel=True, weight_type=QuantType.QInt8,
                         nodes_to_exclude=exclude, extra_options={"MatMulConstBOnly": True})
        model = onnx.load(str(Path(tmp) / "q.onnx"))
    _refill(model.graph.value_info, [vi for vi in model.graph.value_info if vi.name in keep_vi])
    out_names = {i.name for i in model.graph.initializer}
    ops = Counter(op for name, op in consumer.items() if f"{name}_quantized" in out_names)
    _save_model(model, dst)
    return dict(sorted(ops.items())), len(exclude)


def _name_nodes(model: onnx.ModelProto) -> None:
    """Give every unnamed node a name (the quantisers exclude nodes by name)."""
    for k, n in enumerate(model.graph.node):
        if not n.name:
            n.name = f"tts_kit_node_{k}"


def _copy_graph(src: Path, dst: Path) -> None:
    """Copy a graph and its external data files (``<name>.data*``, as `_save_model` names
    them) into ``dst``'s directory, contents only."""
    shutil.copyfile(src, dst)
    for data in src.parent.glob(f"{src.name}.data*"):
        if data.is_file() and not data.is_symlink():
            shutil.copyfile(data, dst.parent / data.name.replace(src.name, dst.name, 1))


@contextlib.contextmanager
def _without_preprocess_advice() -> Iterator[None]:
    """Silence the quantisers' per-call root-logger advice to run ``quant_pre_process`` (it
    would rewrite the graph; the result is judged by its measured fidelity instead) and
    (every op type) their page per integer tensor left alone."""
    def not_advice(record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("Please consider", "Inference failed or "
                                               "unsupported type to quantize"))

    logging.getLogger().addFilter(not_advice)
    try:
        yield
    finally:
        logging.getLogger().removeFilter(not_advice)


def _precision_of(path: Path) -> str:
    from tts_kit.core.protoscan import scan_onnx
    from tts_kit.models.supertonic.bundle import precision_of

    return precision_of(scan_onnx(path).initializer_types)


def _open_check(path: Path) -> ort.InferenceSession:
    """Open a graph in ONNX Runtime on the CPU (what every machine has)."""
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])


def _check_float32(found: str, name: str) -> None:
    # Converting twice compounds the error, and FP16 over INT8 breaks the quantisation
    # scales; always start from the FP32 original.
    if found != "float32":
        raise TtsKitError(f"{name}: weights are already {found}; convert from the FP32 "
                         "original instead")


def _copy_regular(src: Path, dst: Path) -> None:
    """Copy a regular file's bytes and times; never through a link (one may have been put
    in its place since the tree was listed)."""
    fd = os.open(src, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fin, open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
    shutil.copystat(src, dst, follow_symlinks=False)

