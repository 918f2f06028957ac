"""Per-layer float fallback: chosen layers of an int8 graph run in float, between a
_Dequantize of their int8 inputs and a _Quantize of their outputs. Consecutive float
layers hand float tensors to each other directly (no int8 round trip between them)."""
from __future__ import annotations

from ..ir import Graph, Node


def keep_in_float(g: Graph, names: set[str]) -> set[str]:
    """Rewire the named nodes to float; returns the names of the float tensors created.
    Runs after quantization parameters are assigned and before ops compute constants."""
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
            node.inputs[i] = convert_node(g, node, name, "_Dequantize", "float32", before=True)
            float_tensors.add(node.inputs[i])
        for j, name in enumerate(node.outputs):
            if not name or g.tensors[name].is_integer:  # integer outputs are the same in float
                continue
            node.outputs[j] = convert_node(g, node, name, "_Quantize", "float32", before=False)
            float_tensors.add(node.outputs[j])
    g.remove_unused()
    return float_tensors


def convert_node(g: Graph, node: Node, int8_name: str, op: str, dtype: str, before: bool) -> str:
    """Insert a conversion op between `node` and its int8 tensor (before: on its input,
    else on its output); returns the new tensor on the node's side, of `dtype`."""
    new = g.add_tensor(f"{int8_name}_{dtype}", g.tensors[int8_name].shape, dtype)
    src, dst = (int8_name, new) if before else (new, int8_name)
    at = g.nodes.index(node)
    g.nodes.insert(at if before else at + 1, Node(op, g.fresh_name(op.strip("_").lower()), [src], [dst]))
    return new
