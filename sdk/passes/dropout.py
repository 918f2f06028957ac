"""Dropout's mask output in inference: every value is kept, so the mask is a constant tensor of
True (the Dropout itself is an alias, removed by passes/cleanup.py)."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Tensor


def split_dropout_mask(node: Node, g: Graph) -> None:
    """Give a Dropout's mask output (its second) to a `_Fill` node of a constant all-True tensor
    of the input's shape; called by the frontend's shape inference, once that shape is known."""
    if node.op != "Dropout" or len(node.outputs) < 2 or not node.outputs[1]:
        return
    mask = node.outputs[1]
    node.outputs = node.outputs[:1]
    ones = np.ones(g.tensors[node.inputs[0]].shape, dtype=bool)
    if mask not in g.outputs:  # a constant for the nodes that read it
        g.tensors[mask] = Tensor(mask, ones.shape, "bool", ones)
        return
    value = g.add_const(f"{mask}_value", ones)
    g.tensors[mask] = Tensor(mask, ones.shape, "bool")
    g.nodes.insert(g.nodes.index(node) + 1, Node("_Fill", f"{node.name}_mask", [value], [mask]))
