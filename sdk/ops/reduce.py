"""Reductions: ReduceMean over the spatial axes of a 4-D tensor, the global average pooling
that PyTorch's exporter writes for `adaptive_avg_pool2d(x, 1)` and `x.mean([2, 3])`.

The rewrite pass (passes/reduce_mean.py) turns it into GlobalAveragePool (plus a Flatten for
keepdims=0) before quantization, so it runs on the pooling kernels of every set. Other
reductions are refused by `check`, with the axes named.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from .common import require
from .registry import OpDef, register

SPATIAL = (2, 3)


def reduce_axes(node: Node, g: Graph, rank: int) -> tuple[int, ...] | None:
    """The reduced axes, normalised (attribute before opset 18, a constant input after);
    None when they are a run-time input."""
    if len(node.inputs) > 1 and node.inputs[1]:
        axes = g.const(node.inputs[1])
        if axes is None:
            return None
        values = [int(a) for a in axes.reshape(-1)]
    else:
        values = [int(a) for a in node.attrs.get("axes", range(rank))]
    return tuple(sorted(a + rank if a < 0 else a for a in values))


@register
class ReduceMean(OpDef):
    op_type = "ReduceMean"
    summary = "mean over the spatial axes (2, 3) of a 4-D tensor, keepdims 0 or 1 (global average pooling)"
    defaults = {"keepdims": 1, "noop_with_empty_axes": 0}

    def check(self, node: Node, g: Graph) -> None:
        rank = len(g.tensors[node.inputs[0]].shape)
        axes = reduce_axes(node, g, rank)
        require(axes is not None, node, "the axes must be a constant")
        require(rank == 4 and axes == SPATIAL, node,
                f"only the mean over the spatial axes (2, 3) of a 4-D tensor is supported (axes {list(axes)} "
                f"of a {rank}-D tensor)")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        n, c, _, _ = g.tensors[node.inputs[0]].shape
        return [(n, c, 1, 1) if self.attr(node, "keepdims") else (n, c)]

    def run_float(self, node, g, xs):
        y = xs[0].astype(np.float64).mean(axis=SPATIAL, keepdims=bool(self.attr(node, "keepdims")))
        return [y.astype(np.float32)]
