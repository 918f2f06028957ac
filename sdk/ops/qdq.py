"""QuantizeLinear / DequantizeLinear: the markers of a QDQ model. The quantizer's QDQ
import reads their scales and removes them; the float reference runs them as fake
quantization so a QDQ model can also be simulated before import."""
from __future__ import annotations

import numpy as np

from .common import require
from .registry import OpDef, register


def _broadcast(param: np.ndarray, x: np.ndarray, axis: int) -> np.ndarray:
    if param.ndim == 0 or param.size == 1:
        return param.reshape(())
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1
    return param.reshape(shape)


class QDQ(OpDef):
    defaults = {"axis": 1}

    def check(self, node, g):
        for i in (1, 2):
            if len(node.inputs) > i and node.inputs[i]:
                require(g.const(node.inputs[i]) is not None, node, "scale and zero point must be constants")
        if len(node.inputs) > 2 and node.inputs[2]:
            zp = g.const(node.inputs[2])
            allowed = (np.int8, np.uint8, np.int32) if g.tensors[node.inputs[0]].is_const else (np.int8, np.uint8)
            require(zp.dtype in allowed, node, f"only 8-bit quantization is supported, not {zp.dtype}")

    def infer(self, node, g):
        return [g.tensors[node.inputs[0]].shape]

    def params(self, node, g, x):
        scale = _broadcast(g.const(node.inputs[1]).astype(np.float32), x, self.attr(node, "axis"))
        zp_data = g.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else np.array(0, np.uint8)
        return scale, _broadcast(zp_data.astype(np.int32), x, self.attr(node, "axis")), zp_data.dtype


@register
class QuantizeLinear(QDQ):
    op_type = "QuantizeLinear"
    summary = "QDQ models: imported as the scale of the tensor it quantizes"

    def infer(self, node, g):
        return [g.tensors[node.inputs[0]].shape]

    def run_float(self, node, g, xs):
        scale, zp, dtype = self.params(node, g, xs[0])
        info = np.iinfo(dtype)
        q = np.clip(np.round(xs[0] / scale) + zp, info.min, info.max)
        return [q.astype(dtype)]


@register
class DequantizeLinear(QDQ):
    op_type = "DequantizeLinear"
    summary = "QDQ models: imported as the scale of the tensor it dequantizes"

    def run_float(self, node, g, xs):
        scale, zp, _ = self.params(node, g, xs[0])
        return [((xs[0].astype(np.int32) - zp) * scale).astype(np.float32)]
