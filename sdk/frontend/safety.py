"""Checks on untrusted model files, before and while they are parsed."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

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
        location = ExternalDataInfo(tensor).location
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


def load_external_data(model: onnx.ModelProto, model_dir: Path) -> None:
    try:
        onnx.load_external_data_for_model(model, str(model_dir))
    except Exception as exc:
        raise ModelError(f"cannot read external data: {str(exc).splitlines()[0][:200]}") from None


def first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
