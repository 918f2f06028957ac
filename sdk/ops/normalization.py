"""BatchNormalization (inference form). The passes fold it into the Conv before it or,
when there is none, turn it into a depthwise 1x1 Conv, so it has no kernel of its own."""
from __future__ import annotations

import numpy as np

from .common import require
from .registry import OpDef, register


def bn_affine(scale, bias, mean, var, eps) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (a, b) such that BatchNormalization(x) = a * x + b."""
    a = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    return a, bias.astype(np.float64) - mean.astype(np.float64) * a


@register
class BatchNormalization(OpDef):
    op_type = "BatchNormalization"
    summary = "inference batch norm with constant statistics (folded into Conv)"
    defaults = {"epsilon": 1e-5}

    def check(self, node, g):
        for i in range(1, 5):
            require(g.const(node.inputs[i]) is not None, node, "scale, bias, mean and var must be constants")
        require(len([o for o in node.outputs if o]) == 1, node, "training outputs are not supported")

    def infer(self, node, g):
        return [g.tensors[node.inputs[0]].shape]

    def params(self, node, g):
        return bn_affine(*(g.const(node.inputs[i]) for i in range(1, 5)), self.attr(node, "epsilon"))

    def run_float(self, node, g, xs):
        a, b = self.params(node, g)
        x = xs[0]
        shape = [1] * x.ndim
        shape[-1 if node.channels_last else 1] = -1
        return [(x * a.reshape(shape) + b.reshape(shape)).astype(np.float32)]
