"""Read an ONNX file's graph inputs, outputs and initializer shapes without loading its weights.

``onnx.load`` parses the whole file, weights included, into Python memory (hundreds of
MB for Supertonic), and glibc seldom gives that memory back. Opening a bundle must stay
cheap, because the engine's memory is measured right after it. So we walk the protobuf
wire format over a memory map, hand only the small ``ValueInfoProto`` messages to
``onnx`` for parsing, and skip tensor payloads by length. A field that runs past the end
of the file means the file is truncated.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

import onnx

# Field numbers from onnx.proto.
_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_GRAPH_INPUT = 11
_GRAPH_OUTPUT = 12
_TENSOR_DIMS = 1
_TENSOR_DATA_TYPE = 2
_TENSOR_NAME = 8


class ScanError(ValueError):
    """The file is not a well-formed ONNX model (truncated, or not protobuf)."""


@dataclass
class GraphScan:
    """What a scan of one ONNX file found."""

    inputs: list[onnx.ValueInfoProto]
    """Graph inputs, in order (initializers listed as inputs are dropped)."""
    outputs: list[onnx.ValueInfoProto]
    """Graph outputs, in order."""
    params: int
    """Total number of elements over all initializers."""
    initializer_types: dict[int, int]
    """Element count per ONNX element type (``onnx.TensorProto.FLOAT`` = 1, FLOAT16 = 10, ...)."""


def _varint(buf: mmap.mmap | bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise ScanError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise ScanError("malformed varint")


def _fields(buf: mmap.mmap | bytes, pos: int, end: int):
    """Yield (field number, wire type, value or (start, stop)) over one message."""
    while pos < end:
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ScanError("field number 0")
        if wire == 0:
            value, pos = _varint(buf, pos, end)
            yield field, wire, value
        elif wire == 2:
            length, pos = _varint(buf, pos, end)
            if pos + length > end:
                raise ScanError("a field runs past the end of the data (file truncated?)")
            yield field, wire, (pos, pos + length)
            pos += length
        elif wire == 1:
            pos += 8
            yield field, wire, None
        elif wire == 5:
            pos += 4
            yield field, wire, None
        else:
            raise ScanError(f"unsupported wire type {wire}")
    if pos != end:
        raise ScanError("message overruns its length (file truncated?)")


def _tensor_info(buf: mmap.mmap | bytes, start: int, stop: int) -> tuple[int, int, str]:
    """(element count, data type, name) of a TensorProto, without touching its payload."""
    count, dtype, seen_dim, name = 1, 0, False, ""
    for field, wire, value in _fields(buf, start, stop):
        if field == _TENSOR_NAME and wire == 2:
            name = bytes(buf[value[0] : value[1]]).decode("utf-8", "replace")
        if field == _TENSOR_DIMS:
            seen_dim = True
            if wire == 0:
                count *= value
            elif wire == 2:  # packed
                p, q = value
                while p < q:
                    d, p = _varint(buf, p, q)
                    count *= d
        elif field == _TENSOR_DATA_TYPE and wire == 0:
            dtype = value
    return (count if seen_dim else 1), dtype, name


def scan_onnx(path: str | Path) -> GraphScan:
    """Scan one ONNX file.

    Example:
        >>> scan = scan_onnx("bundle/onnx/vocoder.onnx")  # doctest: +SKIP
        >>> [i.name for i in scan.inputs], scan.params  # doctest: +SKIP
        (['latent'], 24961025)
    """
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        raise ScanError("the file is empty")
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        graph = None
        for field, wire, value in _fields(buf, 0, size):
            if field == _MODEL_GRAPH and wire == 2:
                graph = value
        if graph is None:
            raise ScanError("no graph in the file")
        inputs: list[onnx.ValueInfoProto] = []
        outputs: list[onnx.ValueInfoProto] = []
        init_names: set[str] = set()
        params = 0
        types: dict[int, int] = {}
        for field, wire, value in _fields(buf, *graph):
            if wire != 2:
                continue
            if field in (_GRAPH_INPUT, _GRAPH_OUTPUT):
                vi = onnx.ValueInfoProto.FromString(bytes(buf[value[0] : value[1]]))
                (inputs if field == _GRAPH_INPUT else outputs).append(vi)
            elif field == _GRAPH_INITIALIZER:
                count, dtype, name = _tensor_info(buf, *value)
                params += count
                types[dtype] = types.get(dtype, 0) + count
                init_names.add(name)  # old exporters also list initializers as inputs
    inputs = [i for i in inputs if i.name not in init_names]
    return GraphScan(inputs, outputs, params, types)
