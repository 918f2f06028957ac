"""Sum, Min and Max take any number of inputs; their kernels take two. More than two inputs
become a chain of two-input nodes of the same op (left to right, each intermediate tensor
with the broadcast shape so far, calibrated like any other); one input becomes an Identity,
which remove_identities then drops."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node

VARIADIC = {"Sum", "Min", "Max"}


def split_variadic(g: Graph) -> None:
    for node in [n for n in g.nodes if n.op in VARIADIC and len(n.inputs) != 2]:
        if len(node.inputs) == 1:
            node.op = "Identity"
            continue
        at = g.nodes.index(node)
        chain, acc = [], node.inputs[0]
        for name in node.inputs[1:-1]:
            shape = tuple(np.broadcast_shapes(g.tensors[acc].shape, g.tensors[name].shape))
            out = g.add_tensor(f"{node.name}_partial", shape)
            chain.append(Node(node.op, g.fresh_name(node.name), [acc, name], [out]))
            acc = out
        node.inputs = [acc, node.inputs[-1]]
        g.nodes[at:at] = chain
