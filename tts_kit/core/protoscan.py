"""Read an ONNX file's graph inputs, outputs and initializer shapes without loading its weights
(the protobuf wire format over a memory map), so ``onnx`` is never imported on the engine's path.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

from tts_kit.core.errors import TtsKitError

# Field numbers from onnx.proto.
_MODEL_GRAPH = 7
_GRAPH_INITIALIZER, _GRAPH_INPUT, _GRAPH_OUTPUT = 5, 11, 12  # GraphProto
_TENSOR_DIMS, _TENSOR_DATA_TYPE, _TENSOR_NAME, _TENSOR_RAW = 1, 2, 8, 9  # TensorProto
_VALUE_NAME, _VALUE_TYPE = 1, 2  # ValueInfoProto
_TYPE_TENSOR = 1  # TypeProto.tensor_type
_TENSOR_TYPE_ELEM, _TENSOR_TYPE_SHAPE = 1, 2  # TypeProto.Tensor
_SHAPE_DIM = 1  # TensorShapeProto
_DIM_VALUE, _DIM_PARAM = 1, 2  # TensorShapeProto.Dimension

#: ONNX element types (``TensorProto.DataType``) by number, for messages.
ELEM_NAMES: dict[int, str] = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
    16: "bfloat16",
}
FLOAT, UINT8, INT8, INT64, FLOAT16 = 1, 2, 3, 7, 10
_ELEM_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}
#: More values than any graph holds (2^40: 4 TB of float32): dims saying so are corrupt.
MAX_ELEMENTS = 1 << 40


class ScanError(TtsKitError):
    """The file is not a well-formed ONNX model (truncated, or not protobuf)."""


@dataclass
class ValueInfo:
    """A graph input or output: what ``ValueInfoProto`` says of a tensor."""

    name: str
    elem_type: int  # `ELEM_NAMES`; 0 when the value is not a tensor
    dims: list[int | str | None]  # per axis: a size, a symbolic name or None; [] without a shape


@dataclass
class GraphScan:
    """What a scan of one ONNX file found."""

    inputs: list[ValueInfo]  # in order, without initializers listed as inputs
    outputs: list[ValueInfo]
    params: int  # elements over all initializers
    initializer_types: dict[int, int]  # element count per ONNX element type (`ELEM_NAMES`)


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
        elif wire in (1, 5):  # fixed64, fixed32
            pos += 8 if wire == 1 else 4
            yield field, wire, None
        else:
            raise ScanError(f"unsupported wire type {wire}")
    if pos != end:
        raise ScanError("message overruns its length (file truncated?)")


def _tensor_info(buf: mmap.mmap | bytes, start: int, stop: int) -> tuple[int, int, str]:
    """(element count, data type, name) of a TensorProto, payload unread; bad dims: ScanError."""
    count, dtype, name, raw = 1, 0, "", None
    for field, wire, value in _fields(buf, start, stop):
        if field == _TENSOR_NAME and wire == 2:
            name = _text(buf, value)
        if field == _TENSOR_RAW and wire == 2:
            raw = value[1] - value[0]
        if field == _TENSOR_DIMS:
            if wire == 0:
                count *= value
            elif wire == 2:  # packed
                p, q = value
                while p < q:
                    d, p = _varint(buf, p, q)
                    count *= d
        elif field == _TENSOR_DATA_TYPE and wire == 0:
            dtype = value
    size = _ELEM_BYTES.get(dtype)
    if count > MAX_ELEMENTS or (raw is not None and size and raw != count * size):
        raise ScanError(f"initializer {name!r}: its dims say {count:,} values but it holds "
                        f"{raw if raw is not None else 'no'} bytes of data (a corrupt file)")
    return count, dtype, name


def _text(buf: mmap.mmap | bytes, span: tuple[int, int]) -> str:
    return bytes(buf[span[0] : span[1]]).decode("utf-8", "replace")


def _value_info(buf: mmap.mmap | bytes, start: int, stop: int) -> ValueInfo:
    name, elem, dims = "", 0, []
    for field, wire, value in _fields(buf, start, stop):
        if field == _VALUE_NAME and wire == 2:
            name = _text(buf, value)
        elif field == _VALUE_TYPE and wire == 2:
            for f2, w2, v2 in _fields(buf, *value):
                if f2 != _TYPE_TENSOR or w2 != 2:
                    continue  # sequence, map, optional ...: not a tensor (elem stays 0)
                for f3, w3, v3 in _fields(buf, *v2):
                    if f3 == _TENSOR_TYPE_ELEM and w3 == 0:
                        elem = v3
                    elif f3 == _TENSOR_TYPE_SHAPE and w3 == 2:
                        for f4, w4, v4 in _fields(buf, *v3):
                            if f4 == _SHAPE_DIM and w4 == 2:
                                dims.append(_dim(buf, *v4))
    return ValueInfo(name, elem, dims)


def _dim(buf: mmap.mmap | bytes, start: int, stop: int) -> int | str | None:
    for field, wire, value in _fields(buf, start, stop):
        if field == _DIM_VALUE and wire == 0:
            return value
        if field == _DIM_PARAM and wire == 2:
            return _text(buf, value) or None
    return None


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
        values: dict[int, list[ValueInfo]] = {_GRAPH_INPUT: [], _GRAPH_OUTPUT: []}
        init_names: set[str] = set()
        types: dict[int, int] = {}
        for field, wire, value in _fields(buf, *graph):
            if wire == 2 and field in values:
                values[field].append(_value_info(buf, *value))
            elif wire == 2 and field == _GRAPH_INITIALIZER:
                count, dtype, name = _tensor_info(buf, *value)
                types[dtype] = types.get(dtype, 0) + count
                init_names.add(name)  # old exporters also list initializers as inputs
    inputs = [i for i in values[_GRAPH_INPUT] if i.name not in init_names]
    return GraphScan(inputs, values[_GRAPH_OUTPUT], sum(types.values()), types)
