"""Unary element-wise functions: Relu, Clip, LeakyRelu, Sigmoid, HardSwish, Tanh, and the
math of today's exporters: Sqrt, Exp, Log, Erf, Neg, Abs, Reciprocal, HardSigmoid, Elu,
Selu, Softplus, Gelu (opset 20, approximate "none" or "tanh"), Mish.

int8 rule: every one of them is a 256-entry lookup table computed in Python (float64) from
the float function and the input/output quantization, so all targets agree bit for bit
(values outside the function's domain, e.g. Sqrt or Log of a negative code, give NaN,
which quantizes to -128 as at the model's boundary). Relu and Clip right after Conv, Gemm,
MatMul or Add are fused into that op's clamp instead. In float one kernel,
activation_f32, computes each by its code with the C library's float functions.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import call
from ..kernels.requant import dequantize, quantize_float
from .common import Weight, io_args, qparams_of, require
from .integer import is_integer_op, unary_call, unary_values
from .registry import OpDef, register

# activation_f32's code of each op (sdk/templates/portable/activation_f32.h); Gelu's tanh
# approximation has its own code.
ACT_CODES = {"Relu": 0, "Clip": 1, "LeakyRelu": 2, "Sigmoid": 3, "HardSwish": 4, "Tanh": 5, "Sqrt": 6, "Exp": 7,
             "Log": 8, "Erf": 9, "Neg": 10, "Abs": 11, "Reciprocal": 12, "HardSigmoid": 13, "Elu": 14, "Selu": 15,
             "Softplus": 16, "Gelu": 17, "Mish": 19}
GELU_TANH_CODE = 18
ALPHA_DEFAULTS = {"LeakyRelu": 0.01, "HardSigmoid": 0.2, "Elu": 1.0, "Selu": 1.67326319217681884765625}
BETA_DEFAULTS = {"HardSigmoid": 0.5, "Selu": 1.05070102214813232421875}  # Selu: its gamma


def clip_bounds(node: Node, g: Graph) -> tuple[float, float]:
    """Clip's bounds: attributes before opset 11, optional constant inputs after."""
    lo, hi = node.attrs.get("min", -np.inf), node.attrs.get("max", np.inf)
    for index, default in ((1, lo), (2, hi)):
        if len(node.inputs) > index and node.inputs[index]:
            value = g.const(node.inputs[index])
            require(value is not None and value.size == 1, node, "min and max must be scalar constants")
            if index == 1:
                lo = float(value.reshape(-1)[0])
            else:
                hi = float(value.reshape(-1)[0])
    return min(float(lo), float(hi)), float(hi)  # min > max: every value becomes max (the ONNX spec)


def alpha_beta(node: Node) -> tuple[float, float]:
    """The float parameters of activation_f32 for this node (Selu's gamma is beta)."""
    beta_key = "gamma" if node.op == "Selu" else "beta"
    return (float(node.attrs.get("alpha", ALPHA_DEFAULTS.get(node.op, 0.0))),
            float(node.attrs.get(beta_key, BETA_DEFAULTS.get(node.op, 0.0))))


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (math.erf per element: numpy has none and the SDK needs no scipy)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def float_function(node: Node, g: Graph) -> Callable[[np.ndarray], np.ndarray]:
    """The node's function in float64 (the float reference and the source of int8 tables)."""
    op = node.op
    alpha, beta = alpha_beta(node)
    if op == "Clip":
        lo, hi = clip_bounds(node, g)
        return lambda x: np.clip(x, lo, hi)
    if op == "Gelu":
        approximate = node.attrs.get("approximate", "none")
        return lambda x: gelu(x, approximate)
    functions: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "Relu": lambda x: np.maximum(x, 0),
        "LeakyRelu": lambda x: np.where(x >= 0, x, x * alpha),
        "Sigmoid": sigmoid,
        "HardSwish": lambda x: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0),
        "Tanh": np.tanh,
        "Sqrt": np.sqrt,
        "Exp": np.exp,
        "Log": np.log,
        "Erf": erf,
        "Neg": np.negative,
        "Abs": np.abs,
        "Reciprocal": lambda x: 1.0 / x,
        "HardSigmoid": lambda x: np.clip(alpha * x + beta, 0.0, 1.0),
        "Elu": lambda x: np.where(x >= 0, x, alpha * np.expm1(np.minimum(x, 0))),
        "Selu": lambda x: beta * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))),
        "Softplus": softplus,
        "Mish": lambda x: x * np.tanh(softplus(x)),
    }
    return functions[op]


def lookup_table(function: Callable[[np.ndarray], np.ndarray], g: Graph, node: Node,
                 source: str | None = None) -> np.ndarray:
    """The int8 rule of a unary element-wise function: f applied (in float64) to each of the
    256 int8 codes of the node's input (`source`, input 0 by default), quantized at its
    output's scale. Indexed by x + 128. Built-in activations, binary ops with a constant
    scalar operand and plugin ops without an int8 rule (sdk/plugins.py) share it."""
    sx, zx = qparams_of(g, source or node.inputs[0])
    sy, zy = qparams_of(g, node.outputs[0])
    codes = np.arange(-128, 128, dtype=np.int32).astype(np.int8)
    real = np.asarray(function(dequantize(codes, sx, zx).astype(np.float64)), dtype=np.float64)
    return quantize_float(real.astype(np.float32), sy, zy)


INTEGER_FUNCTIONS = ("Neg", "Abs", "Clip")  # also on integer tensors (ops/integer.py)


def integer_clip_bounds(node: Node, g: Graph, dtype: str) -> tuple[int, int]:
    """Clip's bounds on an integer tensor, exact: its constant min and max (the type's range without)."""
    info = np.iinfo(np.dtype(dtype))
    lo, hi = int(node.attrs.get("min", info.min)), int(node.attrs.get("max", info.max))
    for index in (1, 2):
        if len(node.inputs) > index and node.inputs[index]:
            value = g.const(node.inputs[index])
            require(value is not None and value.size == 1, node, "min and max must be scalar constants")
            lo, hi = (int(value.reshape(-1)[0]), hi) if index == 1 else (lo, int(value.reshape(-1)[0]))
    return min(lo, hi), hi  # min > max: every value becomes max (the ONNX spec)


def act_code(node: Node) -> int:
    if node.op == "Gelu" and node.attrs.get("approximate", "none") == "tanh":
        return GELU_TANH_CODE
    return ACT_CODES[node.op]


SUMMARIES = {"Relu": "element-wise; fused into the clamp of a Conv, Gemm, MatMul or Add before it",
             "Clip": "element-wise; fused into the clamp of a Conv, Gemm, MatMul or Add before it",
             "Gelu": "element-wise (opset 20), approximate none or tanh"}


def make_activation(op_type: str) -> type[OpDef]:
    class Activation(OpDef):
        summary = SUMMARIES.get(op_type, "element-wise function")
        int8_rule = "256-entry lookup table"
        integer_inputs = op_type in INTEGER_FUNCTIONS

        def integers(self, node: Node, g: Graph) -> bool:
            return g.tensors[node.inputs[0]].is_integer

        def check(self, node: Node, g: Graph) -> None:
            if op_type == "Clip" and not self.integers(node, g):
                clip_bounds(node, g)
            if op_type == "Gelu":
                require(node.attrs.get("approximate", "none") in ("none", "tanh"), node,
                        f"approximate '{node.attrs.get('approximate')}' is not supported (none or tanh)")

        def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
            return [g.tensors[node.inputs[0]].shape]

        def dtypes(self, node: Node, g: Graph) -> list[str]:
            t = g.tensors[node.inputs[0]]
            return [t.dtype if t.is_integer else "float32"]

        def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
            if op_type in INTEGER_FUNCTIONS and xs[0].dtype.kind in "iu":
                bounds = integer_clip_bounds(node, g, str(xs[0].dtype)) if op_type == "Clip" else (0, 0)
                return [unary_values(op_type, xs[0], *bounds)]
            x = xs[0].astype(np.float64)
            with np.errstate(all="ignore"):  # Sqrt/Log outside their domain: NaN and -inf as ORT
                return [float_function(node, g)(x).astype(np.float32)]

        def quantize(self, node: Node, g: Graph) -> None:
            with np.errstate(all="ignore"):
                node.q = {"table": lookup_table(float_function(node, g), g, node)}

        def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
            return [node.q["table"][xs[0].astype(np.int32) + 128]]

        def lower(self, node: Node, g: Graph, precision: str):
            if is_integer_op(node, g):
                dtype = g.tensors[node.inputs[0]].dtype
                bounds = integer_clip_bounds(node, g, dtype) if op_type == "Clip" else (0, 0)
                return unary_call(node, g, op_type, *bounds)
            count = g.tensors[node.inputs[0]].size
            if precision == "int8":
                return call("lut_s8", **io_args(node), count=count, table=Weight("table", node.q["table"], "int8_t"))
            lo, hi = clip_bounds(node, g) if op_type == "Clip" else (-np.inf, np.inf)  # inf: no bound
            alpha, beta = alpha_beta(node)
            return call("activation_f32", **io_args(node), count=count, code=act_code(node), alpha=alpha, beta=beta,
                        lo=lo, hi=hi)

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
