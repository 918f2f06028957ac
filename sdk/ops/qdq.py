"""QuantizeLinear / DequantizeLinear: the markers of a QDQ model. The quantizer's QDQ
import reads their scales and removes them; the float reference runs them as fake
quantization so a QDQ model can also be simulated before import."""
from __future__ import annotations

import numpy as np

from ..kernels.contract import call
from ..kernels.requant import INT16_MAX, INT16_MIN, clamp_to, dequantize, quantize_float, quantize_multiplier, requant
from .common import io_args, require
from .registry import OpDef, register


def _broadcast(param: np.ndarray, x: np.ndarray, axis: int) -> np.ndarray:
    if param.ndim == 0 or param.size == 1:
        return param.reshape(())
    shape = [1] * x.ndim
    shape[axis % x.ndim] = -1
    return param.reshape(shape)


class QDQ(OpDef):
    defaults = {"axis": 1}

    def check(self, node, g) -> None:
        for i in (1, 2):
            if len(node.inputs) > i and node.inputs[i]:
                require(g.const(node.inputs[i]) is not None, node, "scale and zero point must be constants")
        if len(node.inputs) > 2 and node.inputs[2]:
            zp = g.const(node.inputs[2])
            allowed = (np.int8, np.uint8, np.int32) if g.tensors[node.inputs[0]].is_const else (np.int8, np.uint8)
            require(zp.dtype in allowed, node, f"only 8-bit quantization is supported, not {zp.dtype}")

    def infer(self, node, g) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def params(self, node, g, x) -> tuple[np.ndarray, np.ndarray, np.dtype]:
        scale = _broadcast(g.const(node.inputs[1]).astype(np.float32), x, self.attr(node, "axis"))
        zp_data = g.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else np.array(0, np.uint8)
        return scale, _broadcast(zp_data.astype(np.int32), x, self.attr(node, "axis")), zp_data.dtype


@register
class QuantizeLinear(QDQ):
    op_type = "QuantizeLinear"
    summary = "QDQ models: imported as the scale of the tensor it quantizes"

    def infer(self, node, g) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def run_float(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        scale, zp, dtype = self.params(node, g, xs[0])
        info = np.iinfo(dtype)
        q = np.clip(np.round(xs[0] / scale) + zp, info.min, info.max)
        return [q.astype(dtype)]


@register
class DequantizeLinear(QDQ):
    op_type = "DequantizeLinear"
    summary = "QDQ models: imported as the scale of the tensor it dequantizes"

    def run_float(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        scale, zp, _ = self.params(node, g, xs[0])
        return [((xs[0].astype(np.int32) - zp) * scale).astype(np.float32)]


class Conversion(OpDef):
    """Internal: the boundary of a layer kept in float inside an int8 graph (inserted by
    quant.mixed, never read from ONNX)."""

    output_qparams = "none"

    def infer(self, node, g) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def run_float(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [xs[0]]

    def int_side(self, node, g) -> tuple[float, int]:
        raise NotImplementedError

    def quantize(self, node, g) -> None:
        scale, zp = self.int_side(node, g)
        node.q = {"scale": scale, "zp": zp}


@register
class _Quantize(Conversion):
    op_type = "_Quantize"
    summary = "float -> int8 after a layer kept in float"

    def int_side(self, node, g) -> tuple[float, int]:
        return g.tensors[node.outputs[0]].q.scalar()

    def run_int(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [quantize_float(xs[0], node.q["scale"], node.q["zp"])]

    def lower(self, node, g, precision: str):
        return call("quantize_f32_s8", **io_args(node), count=g.tensors[node.inputs[0]].size, scale=node.q["scale"],
                    zp=node.q["zp"])


@register
class _Dequantize(Conversion):
    op_type = "_Dequantize"
    summary = "int8 -> float before a layer kept in float"

    def int_side(self, node, g) -> tuple[float, int]:
        return g.tensors[node.inputs[0]].q.scalar()

    def run_int(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [dequantize(xs[0], node.q["scale"], node.q["zp"])]

    def lower(self, node, g, precision: str):
        return call("dequantize_s8_f32", **io_args(node), count=g.tensors[node.inputs[0]].size,
                    scale=node.q["scale"], zp=node.q["zp"])


@register
class _Requant(OpDef):
    """Internal: int8 <-> int16 at the boundary of 16x8 layers (inserted by quant.int16)."""

    op_type = "_Requant"
    summary = "int8 <-> int16 rescale around 16x8 layers"
    output_qparams = "none"

    def infer(self, node, g) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def run_float(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [xs[0]]

    def quantize(self, node, g) -> None:
        sx, zx = g.tensors[node.inputs[0]].q.scalar()
        sy, zy = g.tensors[node.outputs[0]].q.scalar()
        mult, shift = quantize_multiplier(sx / sy)
        wide_out = g.tensors[node.outputs[0]].dtype == "int16"
        lo, hi = (INT16_MIN, INT16_MAX) if wide_out else (-128, 127)
        node.q = {"zx": zx, "zy": zy, "mult": mult, "shift": shift, "lo": lo, "hi": hi,
                  "dtype": "int16" if wide_out else "int8"}

    def run_int(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        q = node.q
        y = requant(xs[0].astype(np.int64) - q["zx"], q["mult"], q["shift"]) + q["zy"]
        return [clamp_to(y, q["lo"], q["hi"], q["dtype"])]

    def lower(self, node, g, precision: str):
        q = node.q
        kernel = "requant_s8_s16" if q["dtype"] == "int16" else "requant_s16_s8"
        return call(kernel, **io_args(node), count=g.tensors[node.inputs[0]].size, zx=q["zx"], zy=q["zy"],
                    mult=q["mult"], shift=q["shift"])
