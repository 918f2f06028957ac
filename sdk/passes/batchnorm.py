"""Fold BatchNormalization into the Conv that feeds it; a BatchNormalization with no such
Conv becomes a depthwise 1x1 Conv, so it needs no kernel of its own."""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..ir import Graph, Node
from ..ops.normalization import bn_affine


def fold_batchnorm(g: Graph) -> None:
    for bn in [n for n in g.nodes if n.op == "BatchNormalization"]:
        a, b = bn_affine(*(g.const(bn.inputs[i]) for i in range(1, 5)), float(bn.attrs.get("epsilon", 1e-5)))
        conv = g.producer(bn.inputs[0])
        if conv is not None and conv.op == "Conv" and len(g.consumers(conv.outputs[0])) == 1 \
                and conv.activation is None and bn.inputs[0] not in g.outputs:
            fold_into_conv(g, conv, bn, a, b)
        else:
            replace_with_depthwise(g, bn, a, b)
    g.remove_unused()


def fold_into_conv(g: Graph, conv: Node, bn: Node, a: np.ndarray, b: np.ndarray) -> None:
    w = g.const(conv.inputs[1]).astype(np.float64)
    bias = g.const(conv.inputs[2]).astype(np.float64) if len(conv.inputs) > 2 and conv.inputs[2] else 0.0
    new_w = (w * a.reshape(-1, 1, 1, 1)).astype(np.float32)
    new_b = (bias * a + b).astype(np.float32)
    conv.inputs = [conv.inputs[0], g.add_const(conv.name + "_w", new_w), g.add_const(conv.name + "_b", new_b)]
    g.nodes.remove(bn)
    g.replace_uses(bn.outputs[0], conv.outputs[0])


def replace_with_depthwise(g: Graph, bn: Node, a: np.ndarray, b: np.ndarray) -> None:
    shape = g.tensors[bn.inputs[0]].shape
    if len(shape) != 4:
        raise ModelError(f"node '{bn.name}' (BatchNormalization): only 4-D inputs are supported")
    channels = shape[1]
    w = g.add_const(bn.name + "_w", a.astype(np.float32).reshape(channels, 1, 1, 1))
    bias = g.add_const(bn.name + "_b", b.astype(np.float32))
    bn.op, bn.inputs = "Conv", [bn.inputs[0], w, bias]
    bn.attrs = {"group": channels, "kernel_shape": [1, 1]}
