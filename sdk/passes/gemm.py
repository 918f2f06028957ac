"""Gemm in the form of the fully connected kernels: A not transposed and C a vector over the
outputs. transA=1 becomes a Transpose of A before the Gemm; a C that varies along the rows
(an (M, N) or (M, 1) matrix) becomes an Add after it. Runs after constant folding (alpha and
beta are folded into B and C by then)."""
from __future__ import annotations

from ..ir import Graph, Node


def gemm_to_fc_form(g: Graph) -> None:
    for node in [n for n in g.nodes if n.op == "Gemm"]:
        if node.attrs.get("transA", 0):
            untransposed_a(g, node)
        c = g.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
        if c is not None and c.ndim == 2 and c.shape[0] != 1:
            bias_after(g, node)


def untransposed_a(g: Graph, node: Node) -> None:
    k, m = g.tensors[node.inputs[0]].shape
    a_t = g.add_tensor(f"{node.name}_a", (m, k))
    g.nodes.insert(g.nodes.index(node), Node("Transpose", f"{node.name}_transpose_a", [node.inputs[0]], [a_t],
                                             {"perm": [1, 0]}))
    node.inputs[0] = a_t
    node.attrs["transA"] = 0


def bias_after(g: Graph, node: Node) -> None:
    out = node.outputs[0]
    product = g.add_tensor(f"{node.name}_product", g.tensors[out].shape)
    c = node.inputs[2]
    node.inputs = node.inputs[:2]
    node.outputs = [product]
    g.nodes.insert(g.nodes.index(node) + 1, Node("Add", f"{node.name}_bias", [product, c], [out]))
