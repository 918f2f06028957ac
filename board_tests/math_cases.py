"""Kernel cases of the element-wise math, reduction, softmax and normalization ops (issue 14),
registered into kernel_cases.CASES with the prefix `math_` and built at opset 21 (Gelu 20,
Mish 18, LayerNormalization 17, GroupNormalization 21; reductions take their axes as an
input). Input ranges keep Sqrt, Log, Reciprocal and the divisor of Div in their domain
even after float_samples widens them by 25%.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

import kernel_cases as kc
from kernel_cases import case

OPSET = 21
POSITIVE = (1.0, 4.0)


def axes(b, values) -> str:
    return b.const(np.array(values), "axes", np.int64)


# --- element-wise, two operands -------------------------------------------------------------
@case((1, 3, 5, 7), (1, 3, 1, 7), ranges=((-2.0, 1.0), (-1.0, 3.0)))
def math_sub_bcast(b, x):
    return b.op("Sub", x)


@case((1, 2, 9))
def math_sub_from_scalar(b, x):
    """a constant scalar operand first: a lookup table"""
    return b.op("Sub", [b.const(1.5), x[0]])


@case((1, 3, 5, 7), (1, 3, 5, 7), ranges=((-2.0, 2.0), (0.5, 2.0)))
def math_div_two(b, x):
    return b.op("Div", x)


@case((1, 3, 7))
def math_div_const_tensor(b, x):
    """a constant divisor: Mul by its reciprocal"""
    return b.op("Div", [x[0], b.const(np.abs(b.randn((7,))) + 0.5)])


@case((1, 3, 7), (1, 3, 7), ranges=((0.5, 2.0), (-1.0, 2.0)))
def math_pow_two(b, x):
    """two activations: the 256 x 256 table"""
    return b.op("Pow", x)


@case((1, 3, 7))
def math_pow_scalar(b, x):
    return b.op("Pow", [x[0], b.const(2.0)])


@case((1, 2, 3, 5), (1, 3, 5), (1, 1, 5), ranges=((-2.0, 1.0), (-1.0, 3.0), (-0.5, 0.5)))
def math_min3(b, x):
    """three inputs: a chain of two Min nodes, with broadcasting"""
    return b.op("Min", x)


@case((1, 4, 3, 5), (1, 4, 1, 1), ranges=((-2.0, 1.0), (-1.0, 3.0)))
def math_max_bcast(b, x):
    return b.op("Max", x)


@case((1, 2, 6), (1, 2, 6), (1, 2, 6), ranges=((-2.0, 1.0), (-1.0, 3.0), (0.0, 4.0)))
def math_sum3(b, x):
    return b.op("Sum", x)


@case((1, 3, 5, 6))
def math_prelu_channel(b, x):
    return b.op("PRelu", [x[0], b.const(b.randn((3, 1, 1), 0.3))])


@case((1, 11))
def math_prelu_scalar(b, x):
    return b.op("PRelu", [x[0], b.const([0.2])])


@case((1, 3, 6, 7))
def math_after_conv(b, x):
    """between convolutions (channels-last): the layout pass moves its transposes through
    PRelu, Div and Max, permuting their per-channel constants"""
    y = b.op("PRelu", [b.conv(x[0], 3, 4, (3, 3), pads=[1, 1, 1, 1]), b.const(b.randn((4, 1, 1), 0.3))])
    y = b.op("Gelu", [b.op("Div", [y, b.const(np.abs(b.randn((4, 1, 1))) + 0.5)])])
    return b.conv(b.op("Max", [y, b.conv(x[0], 3, 4, (1, 1))]), 4, 5, (1, 1))


# --- element-wise, one operand (int8: lookup tables; fp32: activation_f32 codes) ------------
def unary(op: str, shape=(1, 3, 7), ranges=(), **attrs):
    def make(b, x):
        return b.op(op, x, **attrs)
    make.__name__ = f"math_{op.lower()}" + ("_tanh" if attrs.get("approximate") == "tanh" else "")
    return case(shape, ranges=ranges)(make)


for _op, _ranges, _attrs in (("Sqrt", (POSITIVE,), {}), ("Exp", (), {}), ("Log", (POSITIVE,), {}),
                             ("Erf", (), {}), ("Neg", (), {}), ("Abs", (), {}), ("Reciprocal", (POSITIVE,), {}),
                             ("HardSigmoid", ((-4.0, 4.0),), {"alpha": 0.25, "beta": 0.4}),
                             ("Elu", ((-3.0, 2.0),), {"alpha": 0.7}), ("Selu", ((-3.0, 2.0),), {}),
                             ("Softplus", ((-6.0, 6.0),), {}), ("Gelu", ((-3.0, 3.0),), {}),
                             ("Gelu", ((-3.0, 3.0),), {"approximate": "tanh"}), ("Mish", ((-4.0, 3.0),), {})):
    unary(_op, ranges=_ranges, **_attrs)


# --- softmax ---------------------------------------------------------------------------------
@case((1, 5, 4, 3), ranges=((-3.0, 3.0),))
def math_softmax_axis1(b, x):
    return b.op("Softmax", x, axis=1)


@case((1, 3, 10), ranges=((-4.0, 4.0),))
def math_logsoftmax_last(b, x):
    return b.op("LogSoftmax", x)


@case((1, 4, 3, 5), ranges=((-2.0, 2.0),))
def math_logsoftmax_inner(b, x):
    return b.op("LogSoftmax", x, axis=1)


# --- reductions --------------------------------------------------------------------------------
@case((1, 5, 6))
def math_reducesum_axis1(b, x):
    return b.op("ReduceSum", [x[0], axes(b, [1])], keepdims=0)


@case((1, 2, 3, 4, 5))
def math_reducemean_alternating(b, x):
    """axes 2 and 4 of a 5-D tensor: four groups, kept and reduced in turn"""
    return b.op("ReduceMean", [x[0], axes(b, [2, 4])])


@case((1, 3, 4, 5))
def math_reducemean_spatial(b, x):
    """the spatial mean: GlobalAveragePool"""
    return b.op("ReduceMean", [x[0], axes(b, [2, 3])], keepdims=0)


@case((1, 3, 4, 5))
def math_reducemax_last(b, x):
    return b.op("ReduceMax", [x[0], axes(b, [-1])])


@case((1, 3, 4, 5))
def math_reducemin_all(b, x):
    return b.op("ReduceMin", [x[0]], keepdims=0)


@case((1, 3, 4, 5))
def math_reducel1(b, x):
    return b.op("ReduceL1", [x[0], axes(b, [1, 3])])


@case((1, 3, 4, 5))
def math_reducel2(b, x):
    return b.op("ReduceL2", [x[0], axes(b, [3])], keepdims=0)


@case((1, 3, 4, 5))
def math_reducesumsquare(b, x):
    return b.op("ReduceSumSquare", [x[0], axes(b, [2])])


# --- normalization ---------------------------------------------------------------------------
@case((1, 3, 16), ranges=((-3.0, 2.0),))
def math_layernorm(b, x):
    return b.op("LayerNormalization", [x[0], b.const(b.randn((16,)) + 1.0), b.const(b.randn((16,), 0.3))])


@case((1, 3, 4, 6), ranges=((-3.0, 2.0),))
def math_layernorm_axis1(b, x):
    return b.op("LayerNormalization", [x[0], b.const(b.randn((3, 1, 6)) + 1.0)], axis=1, epsilon=1e-3)


@case((1, 4, 5, 6))
def math_instancenorm(b, x):
    return b.op("InstanceNormalization", [x[0], b.const(b.randn((4,)) + 1.0), b.const(b.randn((4,), 0.3))])


# --- float only (no int8 rule) -----------------------------------------------------------------
@case((1, 3, 4, 5), ranges=((0.5, 1.5),))
def math_reduceprod(b, x):
    return b.op("ReduceProd", [x[0], axes(b, [1, 3])])


@case((1, 3, 4, 5), ranges=(POSITIVE,))
def math_reducelogsum(b, x):
    return b.op("ReduceLogSum", [x[0], axes(b, [2])], keepdims=0)


@case((1, 3, 4, 5), ranges=((-20.0, 20.0),))
def math_reducelogsumexp(b, x):
    return b.op("ReduceLogSumExp", [x[0], axes(b, [1])])


@case((1, 3, 8), ranges=((-3.0, 2.0),))
def math_layernorm_stats(b, x):
    """the optional Mean and InvStdDev outputs"""
    outs = [b.fresh("y"), b.fresh("mean"), b.fresh("inv_std")]
    b.nodes.append(helper.make_node("LayerNormalization", [x[0], b.const(b.randn((8,)) + 1.0)], outs,
                                    name=b.fresh("LayerNormalization"), axis=1))
    return outs


# --- a small model of several of these ops (host and cortex-m7) -------------------------------
@case((1, 8, 16))
def math_encoder_block(b, x):
    """a transformer-like block: LayerNorm -> MatMul -> Gelu -> MatMul, residual Sub, then
    a softmax over the channels, a spatial mean and a ReduceMax"""
    norm = b.op("LayerNormalization", [x[0], b.const(b.randn((16,)) + 1.0), b.const(b.randn((16,), 0.2))])
    hidden = b.op("Gelu", [b.matmul(norm, 16, 24)])
    out = b.op("Sub", [x[0], b.matmul(hidden, 24, 16)])
    probs = b.op("Softmax", [out], axis=1)
    pooled = b.op("ReduceMean", [probs, axes(b, [1])], keepdims=0)
    return [pooled, b.op("ReduceMax", [b.op("Exp", [out]), axes(b, [2])], keepdims=0)]


FP32_ONLY = ["math_reduceprod", "math_reducelogsum", "math_reducelogsumexp", "math_layernorm_stats"]
MATH_CASES = [c for c in kc.CASES if c.startswith("math_") and c not in FP32_ONLY]
# the int8 kernels these cases reach (test_jetson.py's grid leaves them to test_math_kernels.py)
MATH_INT8_KERNELS = ["minmax_s8", "div_s8", "lut2_s8", "prelu_s8", "reduce_s8", "norm_s8", "logsoftmax_s8"]
M7_CASES = ["math_encoder_block", "math_sub_bcast", "math_div_two", "math_min3", "math_prelu_channel",
            "math_logsoftmax_inner", "math_reducel2", "math_layernorm_axis1"]

# GroupNormalization-21: onnx's shape inference gives its output no type, so make_net (strict
# inference) cannot take it as a case; make_math_net appends it with its shape declared.
GROUPNORM = "math_groupnorm"
GROUPNORM_SHAPE = (1, 6, 3, 5)


def make_math_net(name: str, case_ids: list[str]) -> kc.Net:
    """kc.make_net of the cases at opset 21, plus the GroupNormalization case."""
    net = kc.make_net(name, case_ids, OPSET)
    b = kc.Builder(GROUPNORM)
    x = f"{GROUPNORM}_x0"
    y = b.op("GroupNormalization", [x, b.const(b.randn((6,)) + 1.0), b.const(b.randn((6,), 0.3))], num_groups=3)
    graph = net.model.graph
    graph.node.extend(b.nodes)
    graph.initializer.extend(b.inits)
    graph.input.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, list(GROUPNORM_SHAPE)))
    graph.output.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, list(GROUPNORM_SHAPE)))
    onnx.checker.check_model(net.model, full_check=True)
    net.inputs[x] = (GROUPNORM_SHAPE, kc.DEFAULT_RANGE)
    net.outputs[GROUPNORM] = [y]
    return net
