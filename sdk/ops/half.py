"""Internal: the boundary of a layer computed in fp32 inside an fp16 build (inserted by
quant.half, never read from ONNX). _ToFloat widens its fp16 input (exact), _ToHalf rounds its
float output to fp16 (nearest even); the float reference applies the same rounding."""
from __future__ import annotations

import numpy as np

from ..kernels.contract import call
from .common import io_args
from .registry import OpDef, register


class HalfConversion(OpDef):
    output_qparams = "none"
    kernel = ""

    def infer(self, node, g) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def lower(self, node, g, precision: str):
        return call(self.kernel, **io_args(node), count=g.tensors[node.inputs[0]].size)


@register
class _ToFloat(HalfConversion):
    op_type = "_ToFloat"
    summary = "fp16 -> float before a layer without an fp16 kernel"
    kernel = "convert_f16_f32"

    def run_float(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(xs[0], np.float32)]


@register
class _ToHalf(HalfConversion):
    op_type = "_ToHalf"
    summary = "float -> fp16 after a layer without an fp16 kernel"
    kernel = "convert_f32_f16"

    def run_float(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(xs[0], np.float32).astype(np.float16).astype(np.float32)]
