"""16x8 layers (as TFLite defines them): int16 activations in and out, int8 weights, for
the layers whose int8 activations lose too much. Their int16 tensors are symmetric
(zero point 0); _Requant nodes convert at the boundaries, and consecutive 16x8 layers
hand int16 tensors to each other directly."""
from __future__ import annotations

import copy

import numpy as np

from ..errors import UsageError
from ..ir import Graph, Node, QParams
from ..ops import get_op
from .calibrate import RangeObserver
from .mixed import convert_node

WIDENABLE = {"Conv", "Gemm", "MatMul"}


def symmetric_int16(observer: RangeObserver, name: str) -> QParams:
    low, high = observer.range(name)
    scale = max(abs(low), abs(high)) / 32767.0 or 1.0 / 32767.0
    return QParams(np.array(scale, dtype=np.float32), np.array(0, dtype=np.int32))


def widen_layers(g: Graph, names: set[str], observer: RangeObserver | None,
                 inputs: set[str] = frozenset(), states: set[str] = frozenset()) -> set[str]:
    """Make the named layers 16x8; returns the names of the int16 tensors created. The model
    inputs named in `inputs` (--input-precision NAME=int16) are int16 themselves, and so are
    the tensors that layers only moving values (Reshape, Squeeze: aliases) make of them on the
    way to their first 16x8 layer: no int8 step between the user's data and that layer. The
    recurrent states named in `states` (an LSTM's Y_h and Y_c paired with int16 state inputs)
    are written in int16 (wide_states)."""
    if observer is None:
        raise UsageError("int16 layers need calibration data (--calib) for their int16 scales")
    unknown = names - {n.name for n in g.nodes}
    if unknown:
        raise UsageError(f"--int16-layers names no layer: {', '.join(sorted(unknown))} "
                         f"(layers that can be int16: {', '.join(candidates(g)) or 'none'})")
    wide = wide_inputs(g, inputs, observer) | wide_states(g, states, observer)
    for node in [n for n in g.nodes if n.name in names]:
        if node.op not in WIDENABLE:
            raise UsageError(f"layer '{node.name}' ({node.op}) cannot be int16: only {', '.join(sorted(WIDENABLE))}")
        node.precision = "int16"
        x = node.inputs[0]
        producer = g.producer(x)
        if x in wide:
            pass  # an int16 input (or an alias of one) already
        elif producer is not None and producer.op == "_Requant" and producer.inputs[0] in wide:
            node.inputs[0] = producer.inputs[0]
        else:
            node.inputs[0] = widened(g, node, x, observer, before=True)
            wide.add(node.inputs[0])
        node.outputs[0] = widened(g, node, node.outputs[0], observer, before=False)
        wide.add(node.outputs[0])
    g.remove_unused()
    return wide


def wide_inputs(g: Graph, inputs: set[str], observer: RangeObserver) -> set[str]:
    """The int16 model inputs and their aliases (symmetric int16 at the input's calibrated
    range). Every other layer that reads them is a 16x8 one (compiler.int16_chain checks)."""
    wide: set[str] = set()
    for name in inputs:
        g.tensors[name].q, g.tensors[name].dtype = symmetric_int16(observer, name), "int16"
        wide.add(name)
    for node in list(g.nodes):  # topological order: an alias of a wide tensor is wide
        if get_op(node.op).alias and node.inputs[0] in wide:
            g.tensors[node.outputs[0]].q = copy.deepcopy(g.tensors[node.inputs[0]].q)
            g.tensors[node.outputs[0]].dtype = "int16"
            wide.add(node.outputs[0])
    return wide


def wide_states(g: Graph, names: set[str], observer: RangeObserver) -> set[str]:
    """Recurrent state outputs written in int16 (symmetric, at their calibrated range), so that
    they feed back as the int16 state inputs they pair with; layers that read them read a
    _Requant of them to their calibrated int8 parameters, placed right after the recurrent layer."""
    for name in names:
        t = g.tensors[name]
        readers = g.consumers(name)
        if readers:
            narrow = g.add_tensor(f"{name}_int8", t.shape, "int8")
            g.tensors[narrow].q = copy.deepcopy(t.q)
            producer = g.producer(name)
            g.nodes.insert(g.nodes.index(producer) + 1, Node("_Requant", g.fresh_name("requant"), [name], [narrow]))
            for node in readers:
                node.inputs = [narrow if i == name else i for i in node.inputs]
        t.q, t.dtype = symmetric_int16(observer, name), "int16"
    return set(names)


def widened(g: Graph, node: Node, name: str, observer: RangeObserver, before: bool) -> str:
    wide = convert_node(g, node, name, "_Requant", "int16", before)
    g.tensors[wide].q = symmetric_int16(observer, name)
    return wide


def candidates(g: Graph) -> list[str]:
    return [n.name for n in g.nodes if n.op in WIDENABLE]
