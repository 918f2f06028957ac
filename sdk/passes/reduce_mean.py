"""ReduceMean over the spatial axes of a 4-D tensor -> GlobalAveragePool (keepdims=1), or
GlobalAveragePool + Flatten (keepdims=0): the same values, on the pooling kernels (and their
int8 rule) of every kernel set. Every other reduction runs on the reduce kernels (ops/reduce.py)."""
from __future__ import annotations

from ..ir import Graph, Node
from ..ops.reduce import is_spatial_mean


def reduce_mean_to_global_pool(g: Graph) -> None:
    for node in list(g.nodes):
        if not is_spatial_mean(node, g):
            continue
        at = g.nodes.index(node)
        n, c = g.tensors[node.inputs[0]].shape[:2]
        pool = Node("GlobalAveragePool", node.name, [node.inputs[0]], list(node.outputs))
        if node.attrs.get("keepdims", 1):
            g.nodes[at] = pool
            continue
        pooled = g.add_tensor(f"{node.name}_pooled", (n, c, 1, 1))
        pool.outputs = [pooled]
        g.nodes[at:at + 1] = [pool, Node("Flatten", f"{node.name}_flatten", [pooled], list(node.outputs), {"axis": 1})]
