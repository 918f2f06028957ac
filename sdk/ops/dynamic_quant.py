"""The ops of ONNX Runtime's dynamic quantization (`quantize_dynamic`): DynamicQuantizeLinear,
MatMulInteger, ConvInteger, and com.microsoft's DynamicQuantizeMatMul, MatMulIntegerToFloat and
DynamicQuantizeLSTM.

They are imported, not run: quant/dynamic_import.py rewrites each integer layer, with the
Cast and Mul that dequantize its int32 result, into a float MatMul or Conv whose weights are
the model's int8 weights dequantized (the activation's run-time scale cancels; an LSTM becomes
an LSTM of its dequantized W and R). The model then
builds like a float model: fp32, or int8 by calibration. What is left of these ops after the
import (a layout that quantize_dynamic does not write) is refused by `check`, naming the node.
The float references below follow the ONNX definitions, for compile-time evaluation.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..ir import Graph, Node
from .common import optional_input
from .conv import Conv
from .registry import OpDef, register

IMPORTED = "imported as a float layer (calibrated like one)"


def not_imported(node: Node, layout: str) -> ModelError:
    return ModelError(f"node '{node.name}' ({node.op}): supported only as ONNX Runtime's quantize_dynamic writes it "
                      f"({layout})")


def dynamic_quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX DynamicQuantizeLinear: uint8, the range widened to include 0, ties to even."""
    x = x.astype(np.float32)
    lo, hi = min(0.0, float(x.min(initial=0.0))), max(0.0, float(x.max(initial=0.0)))
    scale = np.float32((hi - lo) / 255.0)
    if scale == 0:
        return np.zeros(x.shape, np.uint8), np.array(0, np.float32), np.array(0, np.uint8)
    zp = np.clip(np.round(-lo / scale), 0, 255)
    y = np.clip(np.round(x / scale) + zp, 0, 255)
    return y.astype(np.uint8), np.array(scale, np.float32), np.array(zp, np.uint8)


@register
class DynamicQuantizeLinear(OpDef):
    op_type = "DynamicQuantizeLinear"
    summary = "imported with the MatMulInteger/ConvInteger it feeds (quantize_dynamic); not run on its own"
    int8_rule = IMPORTED
    integer_inputs = True

    def check(self, node: Node, g: Graph) -> None:
        raise not_imported(node, "its outputs feed MatMulInteger or ConvInteger, whose result a Cast to float and a "
                                 "Mul by the product of the scales dequantize")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape, (), ()]

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return ["uint8", "float32", "uint8"]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return list(dynamic_quantize(xs[0]))


def zero_point(node: Node, xs: list[np.ndarray], index: int) -> np.ndarray:
    present = [name for name in node.inputs if name]
    if not optional_input(node, index):
        return np.array(0, np.int64)
    return xs[present.index(node.inputs[index])].astype(np.int64)


@register
class MatMulInteger(OpDef):
    op_type = "MatMulInteger"
    summary = ("imported: with quantize_dynamic's Cast and scale Mul, a float MatMul of the dequantized weight; "
               "else the integers computed in float (exact below 2^24), constant B and zero points")
    int8_rule = IMPORTED
    integer_inputs = True

    def check(self, node: Node, g: Graph) -> None:
        raise not_imported(node, "A from a DynamicQuantizeLinear, or an integer tensor with a constant zero point; B "
                                 "and its zero point constants")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        a, b = (g.tensors[i].shape for i in node.inputs[:2])
        return [tuple(np.broadcast_shapes(a[:-2], b[:-2])) + (a[-2], b[-1])]

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return ["int32"]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        a_zp = zero_point(node, xs, 2)  # per row of A when a vector
        a = xs[0].astype(np.int64) - (a_zp.reshape(-1, 1) if a_zp.ndim else a_zp)
        b = xs[1].astype(np.int64) - zero_point(node, xs, 3)  # a per-column zero point broadcasts on the last axis
        return [np.matmul(a, b).astype(np.int32)]


# the float Conv whose shapes and sums ConvInteger shares (not a base class: ConvInteger has no
# kernels of its own, it is imported as that Conv)
CONV = Conv()


@register
class ConvInteger(OpDef):
    op_type = "ConvInteger"
    summary = ("imported: with quantize_dynamic's Cast and scale Mul, a float Conv of the dequantized weight; "
               "else the integers computed in float (exact below 2^24), constant w and zero points")
    int8_rule = IMPORTED
    integer_inputs = True
    defaults = Conv.defaults

    def check(self, node: Node, g: Graph) -> None:
        raise not_imported(node, "x from a DynamicQuantizeLinear, or an integer tensor with a constant zero point; w "
                                 "and its zero point constants")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return CONV.infer(node, g)

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return ["int32"]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        x = xs[0].astype(np.int64) - zero_point(node, xs, 2)
        w_zp = zero_point(node, xs, 3)
        w = xs[1].astype(np.int64) - (w_zp.reshape(-1, 1, 1, 1) if w_zp.ndim else w_zp)
        group = int(node.attrs.get("group", 1))
        return [CONV.sums(x, w, CONV.geometry(node, g), group).astype(np.int32)]


@register
class DynamicQuantizeMatMul(OpDef):
    op_type = "com.microsoft::DynamicQuantizeMatMul"
    summary = "imported (ONNX Runtime contrib op): a float MatMul of the dequantized B, plus the bias"
    int8_rule = IMPORTED

    def check(self, node: Node, g: Graph) -> None:
        raise not_imported(node, "B, its scale and zero point constants")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        a, b = (g.tensors[i].shape for i in node.inputs[:2])
        return [tuple(a[:-1]) + (b[-1],)]


@register
class MatMulIntegerToFloat(DynamicQuantizeMatMul):
    op_type = "com.microsoft::MatMulIntegerToFloat"
    summary = "imported (ONNX Runtime contrib op): with the DynamicQuantizeLinear before it, a float MatMul of the " \
              "dequantized B, plus the bias"

    def check(self, node: Node, g: Graph) -> None:
        raise not_imported(node, "A from a DynamicQuantizeLinear whose scale and zero point it takes, B and its "
                                 "scale and zero point constants")


@register
class DynamicQuantizeLSTM(OpDef):
    op_type = "com.microsoft::DynamicQuantizeLSTM"
    summary = "imported (quantize_dynamic's LSTM, ONNX Runtime contrib op): an LSTM of the dequantized W and R"
    int8_rule = IMPORTED

    def check(self, node: Node, g: Graph) -> None:
        raise not_imported(node, "W, R, their scales and zero points constants")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        raise not_imported(node, "W, R, their scales and zero points constants")
