"""Poolings the 2-D kernels do not take directly, as 2-D poolings between Reshapes (aliases: no
code), so they run on the 2-D kernels and int8 rules:

- 3-D MaxPool and AveragePool: their windows are boxes, so the max, the sum and the element
  count of a window are products over the axes. Reshape (N, C, D, H, W) to (N, C*D, H, W),
  pool over H and W, Reshape to (N, C, D, OH*OW), pool over D with a (kd, 1) window, Reshape
  to (N, C, OD, OH, OW).
- GlobalAveragePool and GlobalMaxPool of any rank: over (N, C, 1, S), S the spatial size.

ops/pool.py (`stages_2d`) states the stages; this pass only builds them."""
from __future__ import annotations

from ..ir import Graph, Node
from ..ops.pool import stages_2d
from .reshape import reshape

POOLS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}


def pools_to_2d(g: Graph) -> None:
    for node in [n for n in g.nodes if n.op in POOLS]:
        stages = stages_2d(node, g.tensors[node.inputs[0]].shape)
        if stages is None:
            continue
        new_nodes, src = [], node.inputs[0]
        for k, (attrs, in_shape, out_shape) in enumerate(stages):
            shaped = g.add_tensor(f"{node.name}_in{k}", in_shape)
            new_nodes.append(reshape(g, f"{node.name}_reshape{k}", src, shaped))
            src = g.add_tensor(f"{node.name}_out{k}", out_shape)
            new_nodes.append(Node(node.op, f"{node.name}_stage{k}", [shaped], [src], dict(attrs)))
        new_nodes.append(reshape(g, f"{node.name}_reshape_out", src, node.outputs[0]))
        at = g.nodes.index(node)
        g.nodes[at:at + 1] = new_nodes
