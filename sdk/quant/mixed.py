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
        node.attrs["precision"] = "fp32"
        for i, name in enumerate(node.inputs):
            t = g.tensors.get(name) if name else None
            if t is None or t.is_const or name in float_tensors:
                continue
            producer = g.producer(name)
            if producer is not None and producer.op == "_Quantize":
                node.inputs[i] = producer.inputs[0]  # float already upstream
                continue
            node.inputs[i] = convert(g, node, name, "_Dequantize", before=True)
            float_tensors.add(node.inputs[i])
        for j, name in enumerate(node.outputs):
            node.outputs[j] = convert(g, node, name, "_Quantize", before=False)
            float_tensors.add(node.outputs[j])
    g.remove_unused()
    return float_tensors


def convert(g: Graph, node: Node, int8_name: str, op: str, before: bool) -> str:
    """Insert a conversion between `node` and the int8 tensor; returns the float tensor."""
    float_name = g.add_tensor(int8_name + "_float", g.tensors[int8_name].shape, "float32")
    src, dst = (int8_name, float_name) if before else (float_name, int8_name)
    at = g.nodes.index(node)
    g.nodes.insert(at if before else at + 1, Node(op, g.fresh_name(op.strip("_").lower()), [src], [dst]))
    return float_name
