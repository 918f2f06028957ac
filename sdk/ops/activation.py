"""Unary activations: Relu, Clip, LeakyRelu, Sigmoid, HardSwish, Tanh.

In int8 every one of them is a 256-entry lookup table computed in Python from the float
function and the input/output quantization, so all targets agree bit for bit. Relu and
Clip right after Conv, Gemm, MatMul or Add are fused into that op's clamp instead.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir import Graph, Node
from ..quant.requant import dequantize, quantize_float
from ..codegen.kernel_api import call
from .common import Weight, io_args, qparams_of, require
from .registry import OpDef, register

ACT_CODES = {"Relu": 0, "Clip": 1, "LeakyRelu": 2, "Sigmoid": 3, "HardSwish": 4, "Tanh": 5}


def clip_bounds(node: Node, g: Graph) -> tuple[float, float]:
    """Clip's bounds: attributes before opset 11, optional constant inputs after."""
    lo, hi = node.attrs.get("min", -np.inf), node.attrs.get("max", np.inf)
    for index, default in ((1, lo), (2, hi)):
        if len(node.inputs) > index and node.inputs[index]:
            value = g.const(node.inputs[index])
            require(value is not None, node, "min and max must be constants")
            if index == 1:
                lo = float(value)
            else:
                hi = float(value)
    return min(float(lo), float(hi)), float(hi)  # min > max: every value becomes max (the ONNX spec)


def float_function(node: Node, g: Graph) -> Callable[[np.ndarray], np.ndarray]:
    op = node.op
    if op == "Relu":
        return lambda x: np.maximum(x, 0)
    if op == "Clip":
        lo, hi = clip_bounds(node, g)
        return lambda x: np.clip(x, lo, hi)
    if op == "LeakyRelu":
        alpha = float(node.attrs.get("alpha", 0.01))
        return lambda x: np.where(x >= 0, x, x * alpha)
    if op == "Sigmoid":
        return sigmoid
    if op == "HardSwish":
        return lambda x: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0)
    return np.tanh


def lookup_table(function: Callable[[np.ndarray], np.ndarray], g: Graph, node: Node) -> np.ndarray:
    """The int8 rule of a unary element-wise function: f applied (in float64) to each of the
    256 int8 codes of the node's input, quantized at its output's scale. Indexed by x + 128.
    Built-in activations and plugin ops without an int8 rule (sdk/plugins.py) share it."""
    sx, zx = qparams_of(g, node.inputs[0])
    sy, zy = qparams_of(g, node.outputs[0])
    codes = np.arange(-128, 128, dtype=np.int32).astype(np.int8)
    real = np.asarray(function(dequantize(codes, sx, zx).astype(np.float64)), dtype=np.float64)
    return quantize_float(real.astype(np.float32), sy, zy)


def make_activation(op_type: str) -> type[OpDef]:
    class Activation(OpDef):
        summary = "element-wise activation (int8: 256-entry lookup table)"

        def check(self, node, g):
            if op_type == "Clip":
                clip_bounds(node, g)

        def infer(self, node, g):
            return [g.tensors[node.inputs[0]].shape]

        def run_float(self, node, g, xs):
            x = xs[0].astype(np.float64)
            return [float_function(node, g)(x).astype(np.float32)]

        def quantize(self, node, g):
            node.q = {"table": lookup_table(float_function(node, g), g, node)}

        def run_int(self, node, g, xs):
            return [node.q["table"][xs[0].astype(np.int32) + 128]]

        def lower(self, node, g, precision):
            count = g.tensors[node.inputs[0]].size
            if precision == "int8":
                return call("lut_s8", **io_args(node), count=count, table=Weight("table", node.q["table"], "int8_t"))
            lo, hi = clip_bounds(node, g) if op_type == "Clip" else (-3.0e38, 3.0e38)
            alpha = float(node.attrs.get("alpha", 0.01))
            return call("activation_f32", **io_args(node), count=count, code=ACT_CODES[op_type], alpha=alpha,
                        lo=max(lo, -3.0e38), hi=min(hi, 3.0e38))

    Activation.op_type = op_type
    Activation.__name__ = op_type
    return Activation


for _op in ACT_CODES:
    register(make_activation(_op))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)). For very negative x, exp(-x) overflows to inf on purpose: 1 / inf is
    the exact 0, so that overflow is expected here and not reported to the user."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))
