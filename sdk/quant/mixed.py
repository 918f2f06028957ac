"""Per-layer float fallback: chosen layers of an int8 graph run in float, between a
_Dequantize of their int8 inputs and a _Quantize of their outputs. Consecutive float
layers hand float tensors to each other directly (no int8 round trip between them).

The model's own boundary is never quantized for a float layer: a graph input that a float
layer reads stays a float input (its int8 readers, if any, read a _Quantize of it), and a
graph output that a float layer writes stays a float output (its int8 readers read a
_Quantize of it). So a build with every layer in float quantizes nothing (issue 39), and
--input-precision NAME=float keeps an audio or state input exactly as the user passed it."""
from __future__ import annotations

import copy

from ..ir import Graph, Node
from ..ops import get_op
from ..ops.common import integer_node


def keep_in_float(g: Graph, names: set[str]) -> set[str]:
    """Rewire the named nodes to float; returns the names of the float tensors created.
    Runs after quantization parameters are assigned and before ops compute constants."""
    names = set(names) | set(bridged_layers(g, sorted(names)))
    float_tensors: set[str] = set()
    for node in [n for n in g.nodes if n.name in names]:
        node.precision = "fp32"
        for i, name in enumerate(node.inputs):
            t = g.tensors.get(name) if name else None
            if t is None or t.is_const or t.is_integer or name in float_tensors:
                continue
            producer = g.producer(name)
            if producer is not None and producer.op == "_Quantize":
                node.inputs[i] = producer.inputs[0]  # float already upstream
                continue
            if name in g.inputs:
                float_tensors.add(float_boundary(g, name, before=True))
                continue
            node.inputs[i] = convert_node(g, node, name, "_Dequantize", "float32", before=True)
            float_tensors.add(node.inputs[i])
        for j, name in enumerate(node.outputs):
            if not name or g.tensors[name].is_integer:  # integer outputs are the same in float
                continue
            if name in g.outputs:
                float_tensors.add(float_boundary(g, name, before=False))
                continue
            node.outputs[j] = convert_node(g, node, name, "_Quantize", "float32", before=False)
            float_tensors.add(node.outputs[j])
    g.remove_unused()
    return float_tensors


def bridged_layers(g: Graph, float_layers: list[str]) -> list[str]:
    """The layers that lie wholly between layers kept in float, kept in float too rather than
    quantized and dequantized again in between for nothing: one that computes (a Relu between a
    float filter bank and a float LSTM) when every input comes from a float layer and every
    output is read by float layers alone; one that only moves values (Reshape, Transpose: their
    output keeps their input's scale) also between a model input and float layers (the audio's
    Reshape before a float filter bank) or between float layers and a model output. So inputs
    and outputs next to float layers stay float (float_boundary), and with every layer that
    computes in float, nothing is quantized at all."""
    chosen = set(float_layers)
    if not chosen:
        return []
    producers = {o: n.name for n in g.nodes for o in n.outputs if o}

    def moving(node: Node) -> bool:
        return get_op(node.op).qparams_rule(node, g) == "same"

    def values(node: Node) -> list[str]:
        return [i for i in node.inputs if i and not g.tensors[i].is_const and not g.tensors[i].is_integer]
    from_float, from_input = set(chosen), set()
    for node in g.nodes:  # topological order: forward from the float layers (and inputs, for moves)
        if node.name in chosen or integer_node(node, g) or not values(node):
            continue
        if all(producers.get(i) in from_float for i in values(node)):
            from_float.add(node.name)
        elif moving(node) and all(i in g.inputs or producers.get(i) in from_float | from_input for i in values(node)):
            from_input.add(node.name)
    kept = set(chosen)
    for node in reversed(g.nodes):  # backward: only what float layers (or, for moves, outputs) read
        if node.name in chosen or node.name not in from_float | from_input:
            continue
        outputs = [o for o in node.outputs if o]
        readers = [c.name for o in outputs for c in g.consumers(o)]
        ends = any(o in g.outputs for o in outputs)
        may_end = moving(node) and node.name in from_float
        if all(r in kept for r in readers) and (readers or ends) and (may_end or not ends):
            kept.add(node.name)
    return [n.name for n in g.nodes if n.name in kept - chosen]


def float_boundary(g: Graph, name: str, before: bool) -> str:
    """Make the graph input (before) or output `name` a float tensor without quantization
    parameters; the int8 layers that read it read a _Quantize of it (at its calibrated
    parameters), placed right after its producer, or first for an input. Returns `name`."""
    t = g.tensors[name]
    readers = [n for n in g.nodes if n.precision != "fp32" and name in n.inputs]
    if readers:
        copy_name = g.add_tensor(f"{name}_int8", t.shape, "float32")
        g.tensors[copy_name].q = copy.deepcopy(t.q)
        producer = g.producer(name)
        at = 0 if before or producer is None else g.nodes.index(producer) + 1
        g.nodes.insert(at, Node("_Quantize", g.fresh_name("quantize"), [name], [copy_name]))
        for n in readers:
            n.inputs = [copy_name if i == name else i for i in n.inputs]
    t.q = None
    return name


def convert_node(g: Graph, node: Node, int8_name: str, op: str, dtype: str, before: bool) -> str:
    """Insert a conversion op between `node` and its int8 tensor (before: on its input,
    else on its output); returns the new tensor on the node's side, of `dtype`."""
    new = g.add_tensor(f"{int8_name}_{dtype}", g.tensors[int8_name].shape, dtype)
    src, dst = (int8_name, new) if before else (new, int8_name)
    at = g.nodes.index(node)
    g.nodes.insert(at if before else at + 1, Node(op, g.fresh_name(op.strip("_").lower()), [src], [dst]))
    return new
