"""16x8 layers (as TFLite defines them): int16 activations in and out, int8 weights, for
the layers whose int8 activations lose too much. Their int16 tensors are symmetric
(zero point 0); _Requant nodes convert at the boundaries, and consecutive 16x8 layers
hand int16 tensors to each other directly."""
from __future__ import annotations

import numpy as np

from ..errors import UsageError
from ..ir import Graph, Node, QParams
from .calibrate import RangeObserver
from .mixed import convert_node

WIDENABLE = {"Conv", "Gemm", "MatMul"}


def symmetric_int16(observer: RangeObserver, name: str) -> QParams:
    low, high = observer.range(name)
    scale = max(abs(low), abs(high)) / 32767.0 or 1.0 / 32767.0
    return QParams(np.array(scale, dtype=np.float32), np.array(0, dtype=np.int32))


def widen_layers(g: Graph, names: set[str], observer: RangeObserver | None) -> set[str]:
    """Make the named layers 16x8; returns the names of the int16 tensors created."""
    if observer is None:
        raise UsageError("int16 layers need calibration data (--calib) for their int16 scales")
    unknown = names - {n.name for n in g.nodes}
    if unknown:
        raise UsageError(f"--int16-layers names no layer: {', '.join(sorted(unknown))} "
                         f"(layers that can be int16: {', '.join(candidates(g)) or 'none'})")
    wide: set[str] = set()
    for node in [n for n in g.nodes if n.name in names]:
        if node.op not in WIDENABLE:
            raise UsageError(f"layer '{node.name}' ({node.op}) cannot be int16: only {', '.join(sorted(WIDENABLE))}")
        node.precision = "int16"
        x = node.inputs[0]
        producer = g.producer(x)
        if producer is not None and producer.op == "_Requant" and producer.inputs[0] in wide:
            node.inputs[0] = producer.inputs[0]
        else:
            node.inputs[0] = widened(g, node, x, observer, before=True)
            wide.add(node.inputs[0])
        node.outputs[0] = widened(g, node, node.outputs[0], observer, before=False)
        wide.add(node.outputs[0])
    g.remove_unused()
    return wide


def widened(g: Graph, node: Node, name: str, observer: RangeObserver, before: bool) -> str:
    wide = convert_node(g, node, name, "_Requant", "int16", before)
    g.tensors[wide].q = symmetric_int16(observer, name)
    return wide


def candidates(g: Graph) -> list[str]:
    return [n.name for n in g.nodes if n.op in WIDENABLE]
