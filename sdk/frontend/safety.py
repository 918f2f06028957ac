"""Checks on untrusted model files, before and while they are parsed."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import numpy as np
import onnx
from onnx.external_data_helper import ExternalDataInfo, uses_external_data

from ..errors import ModelError

CONTROL_FLOW_OPS = {"If", "Loop", "Scan", "SequenceMap"}


def read_model_file(path: Path) -> onnx.ModelProto:
    """Parse the protobuf without touching external data; reject what is not ONNX."""
    if not path.exists():
        raise ModelError(f"model file '{path}' does not exist")
    if not path.is_file():
        raise ModelError(f"model path '{path}' is not a file")
    if path.stat().st_size == 0:
        raise ModelError(f"model file '{path.name}' is empty")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf raises several types for truncated or foreign files
        raise ModelError(f"'{path.name}' is not a valid ONNX model (cannot parse: {type(exc).__name__})") from None
    if not model.HasField("graph") or not model.graph.node:
        raise ModelError(f"'{path.name}' is not a valid ONNX model (no graph or no nodes)")
    refuse_undecodable_names(model.graph)
    return model


def refuse_undecodable_names(graph: onnx.GraphProto) -> None:
    """Protobuf hands a string field that is not valid UTF-8 back as bytes; such a name would
    reach reports and C as bytes. Refuse it, naming what holds it."""
    values = list(graph.input) + list(graph.output) + list(graph.value_info)
    named = [("tensor", v.name) for v in values] + [("initializer", t.name) for t in graph.initializer]
    for node in graph.node:
        named += [("node", node.name), ("op type", node.op_type), ("domain", node.domain)]
        named += [("tensor", t) for t in list(node.input) + list(node.output)]
        named += [("attribute", a.name) for a in node.attribute]
    for what, name in named:
        if isinstance(name, bytes):
            raise ModelError(f"{what} name {name!r} is not valid UTF-8")


def all_tensors(graph: onnx.GraphProto) -> Iterator[onnx.TensorProto]:
    """Initializers and tensors in node attributes (Constant values), subgraphs included:
    everything that onnx.load_external_data_for_model would read."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from all_tensors(attr.g)
            for sub in attr.graphs:
                yield from all_tensors(sub)


def check_external_data(model: onnx.ModelProto, model_dir: Path) -> None:
    """External data must be plain files inside the model's folder: no '..', no absolute
    paths, no symlinks leading out of it."""
    root = model_dir.resolve()
    for tensor in all_tensors(model.graph):
        if not uses_external_data(tensor):
            continue
        # the raw entry: ExternalDataInfo itself raises on a negative or non-numeric offset
        location = next((e.value for e in reversed(tensor.external_data) if e.key == "location"), "")
        where = f"tensor '{tensor.name}' external data '{location}'"
        if not location or os.path.isabs(location) or Path(location).is_absolute():
            raise ModelError(f"{where}: absolute or empty paths are refused")
        if ".." in Path(location).parts:
            raise ModelError(f"{where}: paths that leave the model's folder are refused")
        candidate = model_dir / location
        if candidate.is_symlink() or root not in candidate.resolve().parents:
            raise ModelError(f"{where}: symlinks or paths outside the model's folder are refused")
        if not candidate.is_file():
            raise ModelError(f"{where}: file not found next to the model")
        check_external_span(tensor, where, candidate.stat().st_size)


def external_entry(tensor: onnx.TensorProto, key: str, where: str) -> int | None:
    """An external-data entry's integer (offset, length), or None when absent."""
    values = [e.value for e in tensor.external_data if e.key == key]
    if not values:
        return None
    try:
        number = int(values[-1])
    except ValueError:
        raise ModelError(f"{where}: {key} {values[-1]!r} is not a whole number") from None
    if number < 0:
        raise ModelError(f"{where}: {key} {number} is negative")
    return number


def check_external_span(tensor: onnx.TensorProto, where: str, file_bytes: int) -> None:
    """The bytes an external tensor names lie inside its file (and are as many as its type and
    dims need, where a length is given): a forged offset or length is the model's fault."""
    offset = external_entry(tensor, "offset", where) or 0
    length = external_entry(tensor, "length", where)
    if offset > file_bytes or (length is not None and offset + length > file_bytes):
        span = f"offset {offset}" + (f" + length {length}" if length is not None else "")
        raise ModelError(f"{where}: {span} reaches past the end of the file ({file_bytes} bytes)")


# Weights (element types whose external bytes are the array as numpy lays it out, little-endian)
# of at least MAPPED_BYTES are mapped from their file instead of read into the protobuf. Smaller
# tensors (shapes, axes, scales) are read: the checker's shape inference needs their values.
MAPPABLE = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64, onnx.TensorProto.INT8: np.int8,
            onnx.TensorProto.UINT8: np.uint8}
MAPPED_BYTES = 4096


def map_external_initializers(model: onnx.ModelProto, model_dir: Path) -> dict[str, np.ndarray]:
    """The initializers stored in external files (checked by check_external_data), mapped
    copy-on-write from those files rather than read into the protobuf and then copied into
    numpy: a model's weights are then held once, and only the pages read. Each mapped tensor
    is marked as holding no external data, so load_external_data leaves it alone."""
    mapped = {}
    for tensor in model.graph.initializer:
        if not uses_external_data(tensor) or tensor.data_type not in MAPPABLE:
            continue
        if np.prod(tensor.dims, dtype=np.int64) * np.dtype(MAPPABLE[tensor.data_type]).itemsize < MAPPED_BYTES:
            continue
        mapped[tensor.name] = mapped_array(tensor, model_dir)
        del tensor.external_data[:]
        tensor.data_location = onnx.TensorProto.DEFAULT
    return mapped


def mapped_array(tensor: onnx.TensorProto, model_dir: Path) -> np.ndarray:
    info = ExternalDataInfo(tensor)
    dtype = np.dtype(MAPPABLE[tensor.data_type]).newbyteorder("<")
    shape = tuple(int(d) for d in tensor.dims)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    offset = int(info.offset or 0)
    path = model_dir / info.location
    if (info.length is not None and int(info.length) != nbytes) or offset + nbytes > path.stat().st_size:
        # the message the array conversion gives for raw data of the wrong size
        raise ModelError(f"initializer '{tensor.name}': its data does not match its type and dims {list(shape)} "
                         f"(ValueError)")
    if nbytes == 0:
        return np.zeros(shape, dtype=dtype.newbyteorder("="))
    return np.memmap(path, dtype=dtype, mode="c", offset=offset, shape=shape).view(np.ndarray)


def load_external_data(model: onnx.ModelProto, model_dir: Path) -> None:
    try:
        onnx.load_external_data_for_model(model, str(model_dir))
    except Exception as exc:
        raise ModelError(f"cannot read external data: {str(exc).splitlines()[0][:200]}") from None


def first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
