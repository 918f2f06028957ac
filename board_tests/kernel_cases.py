"""Shared one-op kernel cases for the bit-exactness board tests (test_kernels_host.py,
test_kernels_m7.py): "int8 C output equals the numpy integer reference bit for bit, per op
and per model".

A case is one small ONNX subgraph (one op, sometimes with the op it fuses into or a
Reshape that gives it a batch of 2) with its own inputs and one output (the `network`
case has several). Many cases are put side by side into ONE multi-input, multi-output
ONNX model, so that one build (and one QEMU run) checks them all; each case's weights
come from a generator seeded by the case's name, so a case has the same weights whatever
model it is put in. The `qdq_` cases impose power-of-two scales through QuantizeLinear /
DequantizeLinear, so that requantization often lands exactly on a tie (x.5): only they
check that kernels round ties as the reference does.

The reference side runs the same pipeline as `compile` in Python, stage by stage
(frontend -> passes -> calibrate when needed -> quantize_graph) on the same calibration
file and method, and the
test compares the built artifact with `cuvil_sdk.reference` on that graph.
"""
from __future__ import annotations

import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
try:  # the installed package (pip install [-e] .)
    import cuvil_sdk  # noqa: F401
except ModuleNotFoundError:  # a plain checkout: the package is the sdk/ folder
    sys.path.insert(0, str(ROOT))
    import sdk

    sys.modules["cuvil_sdk"] = sdk

from cuvil_sdk.boards import get_board  # noqa: E402
from cuvil_sdk.commands import do_build  # noqa: E402
from cuvil_sdk.data import load_samples  # noqa: E402
from cuvil_sdk.frontend import load_model  # noqa: E402
from cuvil_sdk.ir import Graph  # noqa: E402
from cuvil_sdk.passes import optimize  # noqa: E402
from cuvil_sdk.request import CompileRequest  # noqa: E402
from cuvil_sdk.profiles import get_profile  # noqa: E402
from cuvil_sdk.quant.calibrate import calibrate  # noqa: E402
from cuvil_sdk.quant.sensitivity import choose_int4_scales  # noqa: E402
from cuvil_sdk.quant.quantize import needs_calibration, quantize_graph  # noqa: E402
from cuvil_sdk.kernels.requant import dequantize  # noqa: E402

OPSET = 14  # HardSwish needs 14; the frontend upgrades anything below 13
CALIB_SAMPLES = 16
DEFAULT_RANGE = (-1.0, 2.0)  # asymmetric: non-zero zero points everywhere
W4_MARK = "w4_"  # the Conv/Gemm layers of a case whose id has it get int4 weights in grids built with int4=True


# --- building one case --------------------------------------------------------------------
class Builder:
    """Collects the nodes and initializers of one case; names are prefixed by the case id."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.rng = np.random.default_rng(zlib.crc32(prefix.encode()))
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._count = 0

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{self.prefix}_{hint}{self._count}"

    def const(self, value, hint: str = "c", dtype=np.float32) -> str:
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def randn(self, shape: Sequence[int], std: float = 1.0) -> np.ndarray:
        return (self.rng.standard_normal(tuple(shape)) * std).astype(np.float32)

    def op(self, op_type: str, inputs: Sequence[str], **attrs) -> str:
        out = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=self.fresh(op_type), **attrs))
        return out

    # composite helpers
    def conv(self, x: str, cin: int, cout: int, kernel: Sequence[int], group: int = 1, bias: bool = True,
             **attrs) -> str:
        kh, kw = kernel
        fan_in = cin // group * kh * kw
        w = self.const(self.randn((cout, cin // group, kh, kw), 1.0 / np.sqrt(fan_in)), "w")
        inputs = [x, w]
        if bias:
            inputs.append(self.const(self.randn((cout,), 0.3), "b"))
        return self.op("Conv", inputs, group=group, kernel_shape=[kh, kw], **attrs)

    def gemm(self, x: str, k: int, n: int, trans_b: int = 1, bias: str | None = "vector") -> str:
        w = self.randn((n, k) if trans_b else (k, n), 1.0 / np.sqrt(k))
        inputs = [x, self.const(w, "w")]
        if bias == "vector":
            inputs.append(self.const(self.randn((n,), 0.3), "b"))
        elif bias == "scalar":
            inputs.append(self.const(self.randn((1,), 0.3), "b"))
        return self.op("Gemm", inputs, transB=trans_b)

    def matmul(self, x: str, k: int, n: int) -> str:
        return self.op("MatMul", [x, self.const(self.randn((k, n), 1.0 / np.sqrt(k)), "w")])

    def reshape(self, x: str, shape: Sequence[int]) -> str:
        return self.op("Reshape", [x, self.const(np.array(shape), "shape", np.int64)])

    def clip(self, x: str, lo: float, hi: float) -> str:
        return self.op("Clip", [x, self.const(lo, "lo"), self.const(hi, "hi")])

    # QDQ: imposed scales (the `qdq_` cases use powers of two, so requantization ties are common)
    def qdq(self, x: str, scale: float, zero_point: int = 0) -> str:
        """QuantizeLinear -> DequantizeLinear: the tensor x gets this int8 scale and zero point."""
        s, z = self.const(scale, "s"), self.const(zero_point, "zp", np.int8)
        return self.op("DequantizeLinear", [self.op("QuantizeLinear", [x, s, z]), s, z])

    def qconst(self, codes: np.ndarray, scale: float) -> str:
        """A constant given as int8 codes (zero point 0) and a DequantizeLinear."""
        raw = self.const(codes, "q", np.int8)
        return self.op("DequantizeLinear", [raw, self.const(scale, "s"), self.const(0, "zp", np.int8)])


@dataclass(frozen=True)
class Case:
    id: str
    inputs: tuple[tuple[int, ...], ...]
    make: Callable[[Builder, list[str]], str | list[str]]
    ranges: tuple[tuple[float, float], ...] = ()  # calibration range per input (default DEFAULT_RANGE)
    doc: str = ""
    opset: int = OPSET  # the net of a case is built at the highest opset of its cases

    def input_range(self, i: int) -> tuple[float, float]:
        return self.ranges[i] if i < len(self.ranges) else DEFAULT_RANGE


CASES: dict[str, Case] = {}


def case(*inputs: tuple[int, ...], ranges: tuple[tuple[float, float], ...] = (), opset: int = OPSET):
    """Register the decorated function as the case named after it."""
    def register(fn):
        assert fn.__name__ not in CASES, fn.__name__
        CASES[fn.__name__] = Case(fn.__name__, tuple(inputs), fn, ranges, (fn.__doc__ or "").strip(), opset)
        return fn
    return register


# --- Conv ---------------------------------------------------------------------------------
@case((1, 5, 7, 9))
def conv_1x1(b, x):
    return b.conv(x[0], 5, 7, (1, 1))


@case((1, 3, 7, 9))
def conv_3x3_pad1(b, x):
    return b.conv(x[0], 3, 13, (3, 3), pads=[1, 1, 1, 1])


@case((1, 5, 9, 7))
def conv_3x3_stride2(b, x):
    return b.conv(x[0], 5, 7, (3, 3), strides=[2, 2])


@case((1, 7, 7, 9))
def conv_1x3_pad(b, x):
    return b.conv(x[0], 7, 5, (1, 3), pads=[0, 1, 0, 1])


@case((1, 5, 9, 7))
def conv_3x1_stride21(b, x):
    return b.conv(x[0], 5, 3, (3, 1), strides=[2, 1], pads=[1, 0, 1, 0])


@case((1, 3, 11, 9))
def conv_5x2_asym_pads(b, x):
    """pads (top, left, bottom, right) all different, strides (1, 2)"""
    return b.conv(x[0], 3, 7, (5, 2), strides=[1, 2], pads=[2, 0, 1, 1])


@case((1, 5, 9, 11))
def conv_3x3_dilation2(b, x):
    return b.conv(x[0], 5, 7, (3, 3), dilations=[2, 2], pads=[2, 1, 0, 2])


@case((1, 4, 9, 8))
def conv_dilation_stride(b, x):
    return b.conv(x[0], 4, 5, (2, 3), dilations=[2, 1], strides=[2, 2], pads=[1, 1, 1, 0])


@case((1, 9, 7, 9))
def conv_grouped3(b, x):
    """9 -> 15 channels in 3 groups"""
    return b.conv(x[0], 9, 15, (3, 3), group=3, pads=[1, 1, 1, 1])


@case((1, 6, 7, 7))
def conv_grouped2_1x1(b, x):
    return b.conv(x[0], 6, 4, (1, 1), group=2)


@case((1, 7, 9, 7))
def conv_depthwise_s2(b, x):
    return b.conv(x[0], 7, 7, (3, 3), group=7, strides=[2, 2], pads=[1, 1, 1, 1])


@case((1, 5, 7, 9))
def conv_depthwise_mult2(b, x):
    """depthwise with channel multiplier 2, asymmetric pads"""
    return b.conv(x[0], 5, 10, (3, 3), group=5, pads=[0, 1, 2, 1])


@case((1, 13, 7, 9))
def conv_depthwise_5x5_relu(b, x):
    return b.op("Relu", [b.conv(x[0], 13, 13, (5, 5), group=13, pads=[2, 2, 2, 2])])


@case((1, 3, 7, 9))
def conv_relu_fused(b, x):
    return b.op("Relu", [b.conv(x[0], 3, 5, (3, 3), pads=[1, 1, 1, 1])])


@case((1, 5, 7, 9))
def conv_clip6_fused(b, x):
    return b.clip(b.conv(x[0], 5, 7, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1]), 0.0, 6.0)


@case((1, 5, 7, 9))
def conv_clip_narrow_fused(b, x):
    """a fused clamp that cuts both sides of the calibrated range"""
    return b.clip(b.conv(x[0], 5, 3, (1, 1)), -0.3, 0.4)


@case((1, 5, 7, 9))
def conv_no_bias(b, x):
    return b.conv(x[0], 5, 6, (2, 2), bias=False, strides=[2, 2])


@case((1, 3, 7, 9))
def conv_same_upper_s2(b, x):
    return b.conv(x[0], 3, 5, (3, 4), strides=[2, 2], auto_pad="SAME_UPPER")


@case((1, 3, 7, 9))
def conv_same_lower(b, x):
    return b.conv(x[0], 3, 4, (2, 2), auto_pad="SAME_LOWER")


@case((1, 5, 5, 5))
def conv_full_window(b, x):
    """the kernel covers the whole input: 1x1 output (its Transposes become Reshapes)"""
    return b.conv(x[0], 5, 7, (5, 5))


@case((1, 32, 5, 6))
def conv_deep_3x3(b, x):
    return b.conv(x[0], 32, 9, (3, 3), pads=[1, 1, 1, 1])


@case((1, 2, 3, 7, 9))
def conv_batch2(b, x):
    """a batch of 2 (the kernels' batch loop), through a Reshape of the input"""
    return b.conv(b.reshape(x[0], [2, 3, 7, 9]), 3, 5, (3, 3), strides=[2, 1], pads=[1, 0, 1, 2])


@case((1, 3, 5, 6))
def conv_pad_ge_kernel(b, x):
    """pads as large as the kernel: some windows are all padding (output = bias)"""
    return b.conv(x[0], 3, 4, (2, 2), strides=[2, 2], pads=[3, 2, 2, 3])


# --- Gemm / MatMul --------------------------------------------------------------------------
@case((1, 37))
def gemm_transb(b, x):
    return b.gemm(x[0], 37, 13, trans_b=1)


@case((1, 17))
def gemm_kn_scalar_bias(b, x):
    return b.gemm(x[0], 17, 11, trans_b=0, bias="scalar")


@case((1, 23))
def gemm_no_bias(b, x):
    return b.gemm(x[0], 23, 7, bias=None)


@case((1, 29))
def gemm_relu_fused(b, x):
    return b.op("Relu", [b.gemm(x[0], 29, 9)])


@case((1, 3, 19))
def gemm_rows3(b, x):
    return b.gemm(b.reshape(x[0], [3, 19]), 19, 5)


@case((1, 3, 21))
def matmul_3d(b, x):
    return b.matmul(x[0], 21, 9)


@case((1, 15))
def matmul_2d(b, x):
    return b.matmul(x[0], 15, 4)


# --- Add / Mul --------------------------------------------------------------------------------
@case((1, 5, 7, 9), (1, 5, 7, 9), ranges=((-1.0, 2.0), (-3.0, 0.5)))
def add_same_shape(b, x):
    return b.op("Add", x)


@case((1, 5, 7, 9), (1, 5, 1, 1), ranges=((-1.0, 1.0), (-0.2, 0.7)))
def add_bcast_channel(b, x):
    return b.op("Add", x)


@case((1, 1, 7, 9), (1, 5, 7, 1))
def add_bcast_both(b, x):
    """both operands broadcast"""
    return b.op("Add", x)


@case((1, 5, 7, 9), (1, 9), ranges=((-1.0, 2.0), (-2.0, 0.0)))
def add_rank_mismatch(b, x):
    """a 2-D operand broadcast against a 4-D one"""
    return b.op("Add", x)


@case((1, 5, 7, 9))
def add_const_per_channel(b, x):
    return b.op("Add", [x[0], b.const(b.randn((5, 1, 1)))])


@case((1, 13))
def add_const_vector(b, x):
    return b.op("Add", [b.const(b.randn((13,))), x[0]])


@case((1, 5, 7, 9), (1, 5, 7, 9))
def add_relu_fused(b, x):
    return b.op("Relu", [b.op("Add", x)])


@case((1, 3, 7, 9))
def add_const_after_conv(b, x):
    """per-channel constant on a channels-last tensor (the layout pass permutes it)"""
    return b.op("Add", [b.conv(x[0], 3, 5, (3, 3), pads=[1, 1, 1, 1]), b.const(b.randn((1, 5, 1, 1)))])


@case((1, 3, 7, 9))
def add_residual(b, x):
    y = b.conv(x[0], 3, 3, (3, 3), pads=[1, 1, 1, 1])
    return b.op("Add", [y, b.conv(x[0], 3, 3, (1, 1))])


@case((1, 5, 7, 9), (1, 5, 7, 9), ranges=((-1.0, 2.0), (-0.5, 0.5)))
def mul_same_shape(b, x):
    return b.op("Mul", x)


@case((1, 5, 7, 9), (1, 1, 1, 9))
def mul_bcast_last(b, x):
    return b.op("Mul", x)


@case((1, 5, 7, 9))
def mul_square(b, x):
    """both operands are the same tensor"""
    return b.op("Mul", [x[0], x[0]])


@case((1, 5, 7, 9))
def mul_const_per_channel(b, x):
    return b.op("Mul", [x[0], b.const(b.randn((1, 5, 1, 1)))])


@case((1, 7, 5))
def mul_const_scalar(b, x):
    return b.op("Mul", [x[0], b.const(-1.7)])


@case((1, 3, 7, 9))
def mul_const_after_conv(b, x):
    return b.op("Mul", [b.conv(x[0], 3, 5, (1, 1)), b.const(b.randn((5, 1, 1)))])


# --- pooling ----------------------------------------------------------------------------------
@case((1, 5, 7, 9))
def maxpool_2x2_s2(b, x):
    return b.op("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2])


@case((1, 7, 9, 7))
def maxpool_3x3_s2_pad1(b, x):
    return b.op("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


@case((1, 3, 8, 9))
def maxpool_ceil(b, x):
    return b.op("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)


@case((1, 5, 7, 9))
def maxpool_2x3_asym(b, x):
    return b.op("MaxPool", x, kernel_shape=[2, 3], strides=[1, 2], pads=[0, 1, 1, 0])


@case((1, 5, 7, 9))
def maxpool_relu(b, x):
    """Relu after MaxPool: not fused, a standalone lookup table"""
    return b.op("Relu", [b.op("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2])])


@case((1, 5, 7, 9), ranges=((-3.0, 2.0),))
def maxpool_clip(b, x):
    return b.clip(b.op("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), -1.0, 1.5)


@case((1, 2, 3, 7, 9))
def maxpool_batch2(b, x):
    return b.op("MaxPool", [b.reshape(x[0], [2, 3, 7, 9])], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 0, 1])


@case((1, 3, 5, 6))
def maxpool_pad_ge_kernel(b, x):
    """windows that are all padding give -128"""
    return b.op("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2], pads=[2, 2, 2, 2])


@case((1, 5, 7, 9))
def avgpool_3x3_pad1(b, x):
    return b.op("AveragePool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1])


@case((1, 5, 7, 9))
def avgpool_include_pad(b, x):
    return b.op("AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)


@case((1, 3, 7, 9))
def avgpool_ceil(b, x):
    return b.op("AveragePool", x, kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)


@case((1, 3, 8, 7))
def avgpool_ceil_include_pad(b, x):
    return b.op("AveragePool", x, kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1,
                count_include_pad=1)


@case((1, 3, 8, 6))
def avgpool_ceil_include_pad_all_sides(b, x):
    """ceil_mode windows that run past a non-zero end pad: the count stops at the pad"""
    return b.op("AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
                count_include_pad=1)


@case((1, 5, 7, 9))
def avgpool_same_upper(b, x):
    return b.op("AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")


@case((1, 3, 2, 2))
def avgpool_kernel_over_input(b, x):
    """a 3x3 window on a 2x2 input, ceil_mode"""
    return b.op("AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)


@case((1, 3, 5, 6))
def avgpool_pad_ge_kernel_include_pad(b, x):
    return b.op("AveragePool", x, kernel_shape=[2, 2], strides=[2, 2], pads=[2, 2, 2, 2], count_include_pad=1)


@case((1, 13, 7, 9))
def global_avgpool(b, x):
    return b.op("GlobalAveragePool", x)


@case((1, 3, 16, 16))
def global_avgpool_256(b, x):
    return b.op("GlobalAveragePool", x)


# --- data movement ------------------------------------------------------------------------------
@case((1, 3, 5, 7), (1, 5, 5, 7), ranges=((-1.0, 1.0), (-4.0, 0.5)))
def concat_channels(b, x):
    """two inputs with different scales, requantized to the output's"""
    return b.op("Concat", x, axis=1)


@case((1, 3, 5, 7), (1, 3, 5, 4), ranges=((-0.1, 0.3), (-2.0, 2.0)))
def concat_last_axis(b, x):
    return b.op("Concat", x, axis=-1)


@case((1, 7), (1, 13), ranges=((0.0, 1.0), (-8.0, -1.0)))
def concat_2d(b, x):
    return b.op("Concat", x, axis=1)


@case((1, 3), (1, 3), ranges=((-1.0, 1.0), (0.0, 3.0)))
def concat_batch_axis(b, x):
    return b.op("Concat", x, axis=0)


@case((1, 5, 7))
def concat_same_input_twice(b, x):
    return b.op("Concat", [x[0], x[0]], axis=1)


@case((1, 3, 7, 9))
def concat_convs(b, x):
    return b.op("Concat", [b.conv(x[0], 3, 4, (3, 3), pads=[1, 1, 1, 1]), b.conv(x[0], 3, 5, (1, 1))], axis=1)


@case((1, 5, 7, 9))
def pad_asym(b, x):
    return b.op("Pad", [x[0], b.const(np.array([0, 1, 2, 0, 0, 2, 1, 3]), "pads", np.int64)])


@case((1, 3, 6, 5))
def pad_reflect(b, x):
    return b.op("Pad", [x[0], b.const(np.array([0, 1, 3, 2, 0, 2, 5, 4]), "pads", np.int64)], mode="reflect")


@case((1, 3, 4, 5))
def pad_edge(b, x):
    return b.op("Pad", [x[0], b.const(np.array([0, 0, 2, 1, 0, 1, 3, 2]), "pads", np.int64)], mode="edge")


@case((1, 3, 4, 5), opset=19)
def pad_wrap(b, x):
    return b.op("Pad", [x[0], b.const(np.array([0, 0, 3, 2, 0, 0, 1, 6]), "pads", np.int64)], mode="wrap")


@case((1, 5, 7, 9))
def pad_value(b, x):
    return b.op("Pad", [x[0], b.const(np.array([0, 0, 1, 1, 0, 0, 2, 0]), "pads", np.int64), b.const(0.5)])


@case((1, 9))
def pad_2d(b, x):
    return b.op("Pad", [x[0], b.const(np.array([0, 2, 0, 3]), "pads", np.int64), b.const(-0.25)])


@case((1, 5, 7))
def pad_3d_batch_axis(b, x):
    return b.op("Pad", [x[0], b.const(np.array([1, 0, 2, 0, 3, 0]), "pads", np.int64)])


@case((1, 5, 7, 9))
def transpose_nhwc(b, x):
    return b.op("Transpose", x, perm=[0, 2, 3, 1])


@case((1, 5, 7, 9))
def transpose_0213(b, x):
    return b.op("Transpose", x, perm=[0, 2, 1, 3])


@case((1, 5, 7, 9))
def transpose_0321(b, x):
    return b.op("Transpose", x, perm=[0, 3, 2, 1])


@case((1, 5, 7))
def transpose_3d(b, x):
    return b.op("Transpose", x, perm=[0, 2, 1])


# --- activations and softmax -------------------------------------------------------------------
@case((1, 5, 7, 9))
def relu(b, x):
    return b.op("Relu", x)


@case((1, 5, 7, 9))
def clip_standalone(b, x):
    return b.clip(x[0], -0.5, 1.0)


@case((1, 5, 7, 9), ranges=((-3.0, 1.0),))
def leaky_relu(b, x):
    return b.op("LeakyRelu", x, alpha=0.1)


@case((1, 5, 7, 9), ranges=((-6.0, 6.0),))
def sigmoid(b, x):
    return b.op("Sigmoid", x)


@case((1, 5, 7, 9), ranges=((-5.0, 5.0),))
def hardswish(b, x):
    return b.op("HardSwish", x)


@case((1, 5, 7, 9), ranges=((-3.0, 2.0),))
def tanh(b, x):
    return b.op("Tanh", x)


@case((1, 10), ranges=((-4.0, 4.0),))
def softmax_2d(b, x):
    return b.op("Softmax", x, axis=-1)


@case((1, 3, 7), ranges=((-8.0, 3.0),))
def softmax_rows(b, x):
    return b.op("Softmax", x, axis=2)


@case((1, 5, 7, 9))
def softmax_4d(b, x):
    return b.op("Softmax", x)


@case((1, 19))
def softmax_after_gemm(b, x):
    return b.op("Softmax", [b.gemm(x[0], 19, 10)])


# --- QDQ models with power-of-two scales: many exact requantization ties ------------------
# With every ratio of scales a power of two, the requantization multiplier is 2^30 and
# (acc * M + 2^(S-1)) >> S lands exactly on .5 for a good share of the outputs: these cases
# check that every kernel rounds ties as the reference does (half toward +inf).
def p2(k: int) -> float:
    return 2.0 ** -k


@case((1, 2, 7, 9), ranges=((-4.0, 4.0),))
def qdq_conv_ties(b, x):
    """requant ratio 2^-11 / 2^-6 = 2^-5: ties when acc % 32 == 16"""
    w = b.qconst(b.rng.integers(-3, 4, (4, 2, 3, 3)), p2(6))
    y = b.op("Conv", [b.qdq(x[0], p2(5)), w, b.const(b.randn((4,), 0.1), "b")], kernel_shape=[3, 3],
             pads=[1, 1, 1, 1])
    return b.qdq(y, p2(6))


@case((1, 5, 7, 9), ranges=((-4.0, 4.0),))
def qdq_depthwise_ties(b, x):
    w = b.qconst(b.rng.integers(-5, 6, (5, 1, 3, 3)), p2(6))
    y = b.op("Conv", [b.qdq(x[0], p2(5)), w], kernel_shape=[3, 3], group=5, strides=[2, 2], pads=[1, 1, 1, 1])
    return b.qdq(y, p2(7))


@case((1, 16), ranges=((-4.0, 4.0),))
def qdq_gemm_ties(b, x):
    w = b.qconst(b.rng.integers(-3, 4, (6, 16)), p2(6))
    return b.qdq(b.op("Gemm", [b.qdq(x[0], p2(5)), w], transB=1), p2(6))


@case((1, 5, 7, 9), (1, 5, 7, 9), ranges=((-4.0, 4.0), (-4.0, 4.0)))
def qdq_add_ties(b, x):
    """both ratios 1/2: ties when (a - za) + (b - zb) is odd"""
    return b.qdq(b.op("Add", [b.qdq(x[0], p2(5)), b.qdq(x[1], p2(5), 3)]), p2(4), -2)


@case((1, 5, 7, 9), (1, 5, 1, 9), ranges=((-8.0, 8.0), (-8.0, 8.0)))
def qdq_mul_ties(b, x):
    return b.qdq(b.op("Mul", [b.qdq(x[0], p2(4)), b.qdq(x[1], p2(4), -1)]), p2(2))


@case((1, 5, 7, 9), ranges=((-4.0, 4.0),))
def qdq_avgpool_ties(b, x):
    """window counts 1, 2 and 4: ratios 1, 1/2, 1/4"""
    y = b.op("AveragePool", [b.qdq(x[0], p2(5))], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1])
    return b.qdq(y, p2(5), 1)


@case((1, 3, 4, 4), ranges=((-4.0, 4.0),))
def qdq_global_avgpool_ties(b, x):
    return b.qdq(b.op("GlobalAveragePool", [b.qdq(x[0], p2(5))]), p2(5))


@case((1, 3, 5, 7), (1, 4, 5, 7), ranges=((-8.0, 8.0), (-2.0, 2.0)))
def qdq_concat_ties(b, x):
    """ratios 2 and 1/2"""
    return b.qdq(b.op("Concat", [b.qdq(x[0], p2(4)), b.qdq(x[1], p2(6))], axis=1), p2(5))


# --- a small multi-branch network (per model) ------------------------------------------------
@case((1, 3, 12, 11))
def network(b, x):
    """stem conv+relu6 -> depthwise s2 -> pointwise + residual add -> two heads:
    maxpool -> GAP -> gemm -> softmax, and avgpool -> concat with a 1x1 branch"""
    stem = b.clip(b.conv(x[0], 3, 8, (3, 3), pads=[1, 1, 1, 1]), 0.0, 6.0)
    dw = b.op("Relu", [b.conv(stem, 8, 8, (3, 3), group=8, strides=[2, 2], pads=[1, 1, 1, 1])])
    pw = b.conv(dw, 8, 8, (1, 1))
    res = b.op("Relu", [b.op("Add", [pw, dw])])
    pooled = b.op("MaxPool", [res], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    gap = b.op("GlobalAveragePool", [pooled])
    flat = b.op("Flatten", [gap], axis=1)
    probs = b.op("Softmax", [b.gemm(flat, 8, 5)])
    avg = b.op("AveragePool", [res], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    side = b.op("Sigmoid", [b.conv(avg, 8, 3, (1, 1))])
    cat = b.op("Concat", [avg, side], axis=1)
    return [probs, cat]


# --- shapes that reach every path of the Cortex-M DSP kernels (sdk/templates/cortex_m_dsp) -------
# im2col fast path (c % 4 == 0: LDM/STM words; c % 4 != 0: LDR words + tail), border rows and
# taps (c % 4 == 0: one run; otherwise per value), a single last pixel, odd channel counts;
# depthwise 3x3 stride 1 (4-output blocks + tail outputs, channel chunks of the row ring) and
# the general depthwise kernel; fully connected with partial quads; long pooling windows.
@case((1, 8, 9, 11))
def dsp_conv_c8_pad1(b, x):
    """c % 4 == 0: whole-word im2col runs, border taps as one run, 9 x 11 = 99 pixels (odd)"""
    return b.op("Relu", [b.conv(x[0], 8, 11, (3, 3), pads=[1, 1, 1, 1])])


@case((1, 16, 7, 8))
def dsp_conv_c16_s2_asym(b, x):
    """16-byte LDM/STM runs, stride 2, asymmetric pads"""
    return b.conv(x[0], 16, 6, (3, 3), strides=[2, 2], pads=[0, 1, 2, 0])


@case((1, 1, 19, 10))
def dsp_conv_c1_10x4_s2(b, x):
    """one input channel, a 10 x 4 kernel with SAME padding (the DS-CNN stem)"""
    return b.conv(x[0], 1, 9, (10, 4), strides=[2, 2], auto_pad="SAME_UPPER")


@case((1, 6, 8, 7))
def dsp_conv_c6_5x5(b, x):
    """kernel rows of 30 bytes (7 words + 2), pads on every side"""
    return b.conv(x[0], 6, 5, (5, 5), pads=[2, 1, 2, 3])


@case((1, 32, 5, 5))
def dsp_conv1x1_c32_odd_oc(b, x):
    """a 1 x 1 GEMM over 25 pixels (a single last pixel), 15 output channels"""
    return b.op("Relu", [b.conv(x[0], 32, 15, (1, 1))])


@case((1, 12, 9, 11))
def dsp_dw3x3_s1_pad1(b, x):
    """depthwise 3 x 3 stride 1: 2 blocks of 4 outputs and 3 tail outputs per row"""
    return b.op("Relu", [b.conv(x[0], 12, 12, (3, 3), group=12, pads=[1, 1, 1, 1])])


@case((1, 7, 8, 6))
def dsp_dw3x3_s1_c7(b, x):
    """depthwise 3 x 3 stride 1, 7 channels (3 converted one by one), no padding, 1 block"""
    return b.conv(x[0], 7, 7, (3, 3), group=7)


@case((1, 40, 5, 30))
def dsp_dw3x3_s1_chunks(b, x):
    """rows of 40 channels x 32 columns do not fit the ring at once: channel chunks 16, 16, 8"""
    return b.clip(b.conv(x[0], 40, 40, (3, 3), group=40, pads=[1, 1, 1, 1]), 0.0, 6.0)


@case((1, 6, 9, 9))
def dsp_dw3x3_s1_asym(b, x):
    """depthwise 3 x 3 stride 1 with asymmetric pads (a zero plane for padded rows)"""
    return b.conv(x[0], 6, 6, (3, 3), group=6, pads=[2, 0, 0, 2])


@case((1, 2, 4, 11, 5))
def dsp_dw3x3_s1_narrow_batch2(b, x):
    """a narrow image (11 x 5, asymmetric pads) walked by its columns, batch of 2"""
    return b.conv(b.reshape(x[0], [2, 4, 11, 5]), 4, 4, (3, 3), group=4, pads=[1, 0, 2, 1])


@case((1, 5, 13, 6))
def dsp_dw3x3_s2_narrow(b, x):
    """stride 2 on a narrow image: walked by its columns, 5 channels"""
    return b.op("Relu", [b.conv(x[0], 5, 5, (3, 3), group=5, strides=[2, 2], pads=[1, 1, 1, 1])])


@case((1, 40, 6, 6))
def dsp_dw3x3_image_c40(b, x):
    """depthwise 3 x 3 stride 1 on a 6 x 6 image, 40 channels: the whole-image mode (chunks of
    24 and 16 channels, every output row per channel in one assembly loop), 4 + 2 outputs a row"""
    return b.op("Relu", [b.conv(x[0], 40, 40, (3, 3), group=40, pads=[1, 1, 1, 1])])


@case((1, 20, 3, 3))
def dsp_dw3x3_image_3x3_clamp(b, x):
    """a 3 x 3 image of 20 channels with a narrow clip: whole-image mode, the clamping store"""
    return b.clip(b.conv(x[0], 20, 20, (3, 3), group=20, pads=[1, 1, 1, 1]), 0.0, 0.3)


@case((1, 12, 7, 7))
def dsp_dw3x3_image_s2(b, x):
    """stride 2 on a 7 x 7 image (4 x 4 outputs, a bottom row of padding), whole-image mode"""
    return b.op("Relu", [b.conv(x[0], 12, 12, (3, 3), group=12, strides=[2, 2], pads=[1, 1, 1, 1])])


@case((1, 4, 30, 29))
def dsp_dw3x3_ring_s2(b, x):
    """stride 2 on 30 x 29 (rows of 15 outputs: 3 blocks and a tail of 3), the row ring, a clip"""
    return b.clip(b.conv(x[0], 4, 4, (3, 3), group=4, strides=[2, 2], pads=[1, 1, 1, 1]), -0.2, 0.4)


@case((1, 20, 18, 26))
def dsp_dw3x3_ring_s1_chunks(b, x):
    """stride 1 on 18 x 26, 20 channels: the row ring in chunks of 16 and 4 channels (a full zero
    slot for the padded rows), rows of 26 outputs (6 blocks and a tail of 2)"""
    return b.op("Relu", [b.conv(x[0], 20, 20, (3, 3), group=20, pads=[1, 1, 1, 1])])


@case((1, 6, 10, 10))
def dsp_dw3x3_t2_image_s2_clamp(b, x):
    """stride 2 on 10 x 10 (pads 0011, rows of 5 outputs: a 4-output and a 2-output block),
    whole-image mode, a narrow clip: the clamping 2-output store"""
    return b.clip(b.conv(x[0], 6, 6, (3, 3), group=6, strides=[2, 2], pads=[0, 0, 1, 1]), 0.0, 0.3)


@case((1, 8, 5, 13))
def dsp_dw3x3_t2_s1_clamp(b, x):
    """stride 1 on 5 x 13: rows of 13 outputs (3 blocks and a 2-output block storing 1), a clip"""
    return b.clip(b.conv(x[0], 8, 8, (3, 3), group=8, pads=[1, 1, 1, 1]), -0.1, 0.3)


@case((1, 8, 6, 6))
def dsp_dw3x3_o3_s2(b, x):
    """stride 2 on 6 x 6 (pads 0011): rows of 3 outputs, the 3-output block, the fast store"""
    return b.op("Relu", [b.conv(x[0], 8, 8, (3, 3), group=8, strides=[2, 2], pads=[0, 0, 1, 1])])


@case((1, 8, 9, 8))
def dsp_dw_3x2_s21(b, x):
    """the general depthwise kernel: 3 x 2 kernel, strides (2, 1)"""
    return b.conv(x[0], 8, 8, (3, 2), group=8, strides=[2, 1], pads=[1, 0, 1, 1])


@case((1, 300))
def dsp_fc_k300(b, x):
    """K' = 304: 38 SMLAD iterations, 8 outputs (two full quads)"""
    return b.op("Relu", [b.gemm(x[0], 300, 8)])


@case((1, 2, 33))
def dsp_matmul_rows2_n6(b, x):
    """two rows, 6 outputs (a full quad and a partial one)"""
    return b.matmul(x[0], 33, 6)


@case((1, 8, 20, 20))
def dsp_global_avgpool_400(b, x):
    """400 taps: the int16 lane sums are flushed into int32 on the way"""
    return b.op("GlobalAveragePool", x)


@case((1, 8, 9, 9))
def dsp_maxpool_c8(b, x):
    """4 channels per word, no tail"""
    return b.op("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


@case((1, 8, 5, 7), (1, 8, 5, 7), ranges=((-2.0, 1.0), (-1.0, 3.0)))
def dsp_add_words(b, x):
    """280 elements: whole words only"""
    return b.op("Relu", [b.op("Add", x)])


# --- issue 14: 1-D layers, transposed convolution, global max pooling, Gemm forms ---------------
@case((1, 6, 21))
def conv_1d_stride2_pad(b, x):
    """a 1-D Conv (N, C, L): on the 2-D kernels with H = 1 (passes/layers_1d.py)"""
    w = b.const(b.randn((5, 6, 3), 0.4), "w")
    return b.op("Conv", [x[0], w, b.const(b.randn((5,), 0.3), "b")], kernel_shape=[3], strides=[2], pads=[1, 2])


@case((1, 4, 17))
def conv_1d_depthwise_dilated(b, x):
    w = b.const(b.randn((4, 1, 3), 0.5), "w")
    return b.op("Relu", [b.op("Conv", [x[0], w], group=4, dilations=[2], pads=[2, 2])])


@case((1, 5, 19))
def maxpool_1d_ceil(b, x):
    return b.op("MaxPool", x, kernel_shape=[3], strides=[2], pads=[1, 0], ceil_mode=1)


@case((1, 5, 19))
def avgpool_1d_include_pad(b, x):
    return b.op("AveragePool", x, kernel_shape=[4], strides=[3], pads=[1, 2], count_include_pad=1)


@case((1, 4, 11, 10))
def maxpool_dilated_ceil(b, x):
    return b.op("MaxPool", x, kernel_shape=[3, 2], strides=[2, 2], dilations=[2, 3], pads=[1, 1, 0, 2], ceil_mode=1)


@case((1, 4, 11, 10), opset=19)
def avgpool_dilated_include_pad(b, x):
    return b.op("AveragePool", x, kernel_shape=[3, 3], strides=[2, 1], dilations=[2, 2], pads=[2, 1, 1, 1],
                count_include_pad=1, ceil_mode=1)


@case((1, 3, 6, 7, 5))
def maxpool_3d(b, x):
    """3-D pooling: two 2-D poolings between reshapes (passes/pool_nd.py)"""
    return b.op("MaxPool", x, kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[1, 1, 0, 0, 1, 1])


@case((1, 2, 7, 6, 6), opset=19)
def avgpool_3d_dilated(b, x):
    return b.op("AveragePool", x, kernel_shape=[3, 2, 2], strides=[2, 2, 1], dilations=[2, 1, 2], ceil_mode=1)


@case((1, 5, 7, 9))
def global_maxpool(b, x):
    return b.op("GlobalMaxPool", x)


@case((1, 6, 13))
def global_avgpool_1d(b, x):
    """global pooling of any rank: over (N, C, 1, S) (passes/pool_nd.py)"""
    return b.op("GlobalAveragePool", x)


@case((1, 3, 4, 3, 5))
def global_maxpool_3d(b, x):
    return b.op("GlobalMaxPool", x)


@case((1, 6, 5, 7))
def convt_s2_pads_outpad(b, x):
    """ConvTranspose: stride 2, pads, output_padding; weight [in][out/group][kh][kw]"""
    w = b.const(b.randn((6, 4, 3, 3), 0.3), "w")
    return b.op("ConvTranspose", [x[0], w, b.const(b.randn((4,), 0.3), "b")], strides=[2, 2], pads=[1, 0, 1, 1],
                output_padding=[1, 1])


@case((1, 4, 6, 5))
def convt_group2_dilated(b, x):
    w = b.const(b.randn((4, 3, 2, 3), 0.4), "w")
    return b.op("ConvTranspose", [x[0], w], group=2, dilations=[2, 1], strides=[1, 3])


@case((1, 3, 5, 5))
def convt_same_upper_relu(b, x):
    w = b.const(b.randn((3, 5, 4, 4), 0.3), "w")
    return b.op("Relu", [b.op("ConvTranspose", [x[0], w], strides=[2, 2], auto_pad="SAME_UPPER")])


@case((1, 6, 11))
def convt_1d(b, x):
    w = b.const(b.randn((6, 3, 4), 0.4), "w")
    return b.op("ConvTranspose", [x[0], w, b.const(b.randn((3,), 0.3), "b")], strides=[2], pads=[1, 1])


@case((1, 7, 5))
def gemm_transa_matrix_bias(b, x):
    """Gemm with transA (a Transpose before it) and an (M, N) C (an Add after it)"""
    a = b.reshape(x[0], [7, 5])
    w = b.const(b.randn((7, 6), 0.4), "w")
    return b.op("Gemm", [a, w, b.const(b.randn((5, 6), 0.5), "c")], transA=1, alpha=0.5, beta=2.0)


@case((1, 2, 3, 9))
def matmul_batched_b(b, x):
    """a constant B per batch: one block-diagonal weight (passes/matmul.py)"""
    return b.op("MatMul", [x[0], b.const(b.randn((2, 9, 5), 0.4), "w")])


@case((1, 3, 2, 7))
def matmul_broadcast_b(b, x):
    """batch dimensions (1, 3) of A and (3, 1) of B broadcast to (3, 3)"""
    return b.op("MatMul", [x[0], b.const(b.randn((3, 1, 7, 4), 0.4), "w")])


@case((1, 3, 5, 7))
def concat_const_input(b, x):
    """a constant operand, quantized at the output's scale"""
    return b.op("Concat", [x[0], b.const(b.randn((1, 2, 5, 7)))], axis=1)


# --- MatMul of two activations, LSTM, GRU (ops/matmul.py, ops/recurrent.py) -------------------
@case((1, 2, 5, 7), (1, 2, 7, 6), ranges=((-2.0, 2.0), (-1.0, 3.0)))
def seq_matmul_batched(b, x):
    """[1, 2, 5, 7] @ [1, 2, 7, 6]: two activations, batch of 2"""
    return b.op("MatMul", x)


@case((1, 3, 4, 8), (1, 1, 8, 5), ranges=((-3.0, 1.0), (-2.0, 2.0)))
def seq_matmul_bcast_relu(b, x):
    """B's batch of 1 broadcast over A's 3 heads, a fused Relu"""
    return b.op("Relu", [b.op("MatMul", x)])


@case((1, 6, 8), (1, 6, 8), ranges=((-2.0, 2.0), (-2.0, 2.0)))
def seq_matmul_attention(b, x):
    """Q @ K^T (a Transpose of an activation), softmax, @ V"""
    scores = b.op("MatMul", [x[0], b.op("Transpose", [x[1]], perm=[0, 2, 1])])
    return b.op("MatMul", [b.op("Softmax", [scores], axis=-1), x[1]])


def rnn(b: "Builder", op: str, x: str, input_size: int, hidden: int, direction: str = "forward",
        outputs: Sequence[str] = ("Y", "Y_h", "Y_c"), initial: bool = False, **attrs) -> list[str]:
    """An LSTM/GRU node with random weights; returns the named outputs that the case keeps."""
    gates, dirs = (4 if op == "LSTM" else 3), (2 if direction == "bidirectional" else 1)
    scale = 1.0 / np.sqrt(hidden)
    inputs = [x, b.const(b.randn((dirs, gates * hidden, input_size), scale), "w"),
              b.const(b.randn((dirs, gates * hidden, hidden), scale), "r"),
              b.const(b.randn((dirs, 2 * gates * hidden), 0.2), "b")]
    if initial:
        batch_first = attrs.get("layout", 0)
        state = b.randn((1, dirs, hidden) if batch_first else (dirs, 1, hidden), 0.5)
        inputs += ["", b.const(state, "h0")] + ([b.const(state * 2, "c0")] if op == "LSTM" else [])
    names = ["Y", "Y_h", "Y_c"][:3 if op == "LSTM" else 2]
    outs = [b.fresh(n.lower()) if n in outputs else "" for n in names]
    b.nodes.append(helper.make_node(op, inputs, outs, name=b.fresh(op), hidden_size=hidden, direction=direction,
                                    **attrs))
    return [o for o in outs if o]


def time_major(b: "Builder", x: str) -> str:
    """[1, seq, input] (how the cases feed a sequence) -> [seq, 1, input] (layout 0)"""
    return b.op("Transpose", [x], perm=[1, 0, 2])


@case((1, 7, 5), ranges=((-2.0, 2.0),))
def seq_lstm_forward(b, x):
    return rnn(b, "LSTM", time_major(b, x[0]), 5, 6)


@case((1, 9, 4), ranges=((-1.0, 3.0),))
def seq_lstm_bidirectional_batch_first(b, x):
    """layout 1 ([batch, seq, input]), both directions, initial states"""
    return rnn(b, "LSTM", x[0], 4, 5, "bidirectional", initial=True, layout=1)


@case((1, 6, 3), ranges=((-2.0, 2.0),))
def seq_lstm_reverse_yh_only(b, x):
    """reverse, only Y_h kept (Y and Y_c left out of the node)"""
    return rnn(b, "LSTM", time_major(b, x[0]), 3, 7, "reverse", outputs=("Y_h",))


@case((1, 6, 4), (1, 1, 5), (1, 1, 5), ranges=((-2.0, 2.0), (-0.8, 0.8), (-3.0, 3.0)))
def seq_lstm_runtime_state(b, x):
    """initial_h and initial_c computed by the model (streaming: the state of the last call)"""
    scale = 1.0 / np.sqrt(5)
    inputs = [time_major(b, x[0]), b.const(b.randn((1, 20, 4), scale), "w"), b.const(b.randn((1, 20, 5), scale), "r"),
              b.const(b.randn((1, 40), 0.2), "b"), "", x[1], x[2]]
    outs = [b.fresh("y"), b.fresh("y_h"), b.fresh("y_c")]
    b.nodes.append(helper.make_node("LSTM", inputs, outs, name=b.fresh("LSTM"), hidden_size=5))
    return outs


@case((1, 7, 3), (1, 2, 4), ranges=((-2.0, 2.0), (-0.9, 0.9)))
def seq_gru_runtime_state_batch_first(b, x):
    """a computed initial_h [batch, dirs, hidden] (layout 1), both directions"""
    scale = 0.5
    inputs = [x[0], b.const(b.randn((2, 12, 3), scale), "w"), b.const(b.randn((2, 12, 4), scale), "r"),
              b.const(b.randn((2, 24), 0.2), "b"), "", x[1]]
    outs = [b.fresh("y"), b.fresh("y_h")]
    b.nodes.append(helper.make_node("GRU", inputs, outs, name=b.fresh("GRU"), hidden_size=4, layout=1,
                                    direction="bidirectional"))
    return outs


@case((1, 8, 4), ranges=((-2.0, 2.0),))
def seq_gru_forward(b, x):
    return rnn(b, "GRU", time_major(b, x[0]), 4, 6)


@case((1, 5, 6), ranges=((-2.0, 2.0),))
def seq_gru_bidirectional_lbr(b, x):
    """linear_before_reset = 1 (PyTorch's GRU), both directions, initial state"""
    return rnn(b, "GRU", time_major(b, x[0]), 6, 4, "bidirectional", initial=True, linear_before_reset=1)


# --- groups ------------------------------------------------------------------------------------
# --- what trained models produce (issue 12): per-channel weight scales over many decades (shifts
# from below 16 to 62, the shrunk multipliers of S = 62), biases that dwarf tiny weights (the
# worst-case bound |bias| + K * 255 * 128 past int32), multipliers near 2^31, wide rows, 1280
# channels, depthwise multiplier 2, grouped, dilated, broadcast add, long FC rows.
def decades(b: Builder, cout: int, fan: int, lo: float, hi: float) -> np.ndarray:
    """Weights [cout, fan] whose channel c has scale 10^(lo + (hi - lo) * c / (cout - 1))."""
    scale = np.logspace(lo, hi, cout).reshape(-1, 1)
    return (b.randn((cout, fan)) * scale).astype(np.float32)


def trained_conv(b: Builder, x: str, cin: int, cout: int, kernel: tuple[int, int], lo: float, hi: float,
                 group: int = 1, **attrs) -> str:
    """A conv whose channel scales span 10^lo..10^hi, with biases of 0.05 that the tiny channels'
    bias scale turns into int32 values near the clip (so the output is mostly the bias there)."""
    kh, kw = kernel
    w = decades(b, cout, cin // group * kh * kw, lo, hi).reshape(cout, cin // group, kh, kw)
    bias = np.where(np.arange(cout) % 2 == 0, 0.05, -0.05).astype(np.float32)
    return b.op("Conv", [x, b.const(w, "w"), b.const(bias, "b")], group=group, kernel_shape=[kh, kw], **attrs)


@case((1, 32, 5, 6))
def dsp_trained_pw_shifts(b, x):
    """1 x 1, 32 -> 45 channels with scales 1e-11..1e6 and a narrow fused clip: shifts from
    about 13 to 62 in one layer (the 64-bit requant path for S <= 32, fastq = 0)"""
    return b.clip(trained_conv(b, x[0], 32, 45, (1, 1), -11.0, 6.0), -0.2, 0.2)


@case((1, 24, 7, 7))
def dsp_trained_3x3_big_bias(b, x):
    """3 x 3, scales 1e-10..1e-1: shifts 36..62 (the assembly GEMM with zy added after the
    shift), biases near the int32 clip on the tiny channels"""
    return b.op("Relu", [trained_conv(b, x[0], 24, 16, (3, 3), -10.0, -1.0, pads=[1, 1, 1, 1])])


@case((1, 20, 9, 9))
def dsp_trained_dw3x3(b, x):
    """depthwise 3 x 3 with channel scales 1e-10..1: the dw3x3 assembly with every shift >= 33"""
    return trained_conv(b, x[0], 20, 20, (3, 3), -10.0, 0.0, group=20, pads=[1, 1, 1, 1])


@case((1, 64, 5, 5))
def dsp_trained_dw3x3_image_s2(b, x):
    """depthwise 3 x 3 stride 2 on a small image, channel scales 1e-9..1e1 (shifts past the
    zy fold and biases near the int32 clip): whole-image mode, the general store"""
    return trained_conv(b, x[0], 64, 64, (3, 3), -9.0, 1.0, group=64, strides=[2, 2], pads=[1, 1, 1, 1])


@case((1, 4, 12, 12))
def dsp_trained_dw3x3_t2_s2(b, x):
    """depthwise 3 x 3 stride 2 on 12 x 12 (VWW's shape: rows of 6 outputs, the 2-output tail
    block), channel scales 1e-9..1e1: shifts past the zy fold, biases near the int32 clip"""
    return trained_conv(b, x[0], 4, 4, (3, 3), -9.0, 1.0, group=4, strides=[2, 2], pads=[0, 0, 1, 1])


@case((1, 16, 6, 6))
def dsp_trained_dw3x3_t2_fold(b, x):
    """depthwise 3 x 3 stride 1 on 6 x 6 with ReLU, channel scales 1e-3..1 (the zy fold, the
    fast 2-output store), weights of every magnitude"""
    return b.op("Relu", [trained_conv(b, x[0], 16, 16, (3, 3), -3.0, 0.0, group=16, pads=[1, 1, 1, 1])])


@case((1, 16, 3, 3))
def dsp_trained_dw3x3_o3(b, x):
    """depthwise 3 x 3 stride 1 on 3 x 3, channel scales 1e-10..1 (shifts past the zy fold):
    the 3-output block with the general store, weights of every magnitude"""
    return trained_conv(b, x[0], 16, 16, (3, 3), -10.0, 0.0, group=16, pads=[1, 1, 1, 1])


@case((1, 16, 12, 12))
def dsp_trained_dw3x3_fold(b, x):
    """depthwise 3 x 3 stride 1 with channel scales 1e-3..1 and ReLU: every shift within the zy
    fold, the fast store, weights of every magnitude"""
    return b.op("Relu", [trained_conv(b, x[0], 16, 16, (3, 3), -3.0, 0.0, group=16, pads=[1, 1, 1, 1])])


@case((1, 300))
def dsp_trained_fc(b, x):
    """FC 300 -> 10 with scales 1e-11..1e4 and a narrow fused clip (both requant forms in one
    layer, fastq = 0)"""
    w = decades(b, 10, 300, -11.0, 4.0)
    return b.clip(b.op("Gemm", [x[0], b.const(w, "w"), b.const(np.full(10, 0.05, np.float32), "b")], transB=1),
                  -0.5, 0.5)


@case((1, 16, 6, 6), ranges=((-100.0, 100.0),))
def dsp_qdq_mult_near_2p31(b, x):
    """sx = 1, sw = 1 - 2^-24, sy = 2^11: M = 2^31 - 2^7, S = 42"""
    w = b.qconst(b.rng.integers(-127, 128, (12, 16, 1, 1)), float(np.float32(1 - 2**-24)))
    return b.qdq(b.op("Conv", [b.qdq(x[0], 1.0), w], kernel_shape=[1, 1]), 2.0**11)


@case((1, 1280, 1, 1))
def dsp_fc_1280_channels(b, x):
    """a 1 x 1 conv over 1280 channels (MobileNetV2's head): K' past the column, widened on the fly
    by the FC kernel when lowered as a GEMM, here a conv of 1280 -> 6"""
    return b.conv(x[0], 1280, 6, (1, 1))


@case((1, 130, 6, 5))
def dsp_conv_tiled_3x3_c130(b, x):
    """3 x 3 over 130 channels: a column of 1170 values, the K-tiled path (taps of 132 values,
    17 per tile), pads and stride 2, 5 output channels (an odd last one)"""
    return b.conv(x[0], 130, 5, (3, 3), strides=[2, 1], pads=[1, 1, 0, 1])


@case((1, 96, 5, 5))
def dsp_conv_tiled_grouped_dilated(b, x):
    """groups 2 of 48 channels, 5 x 5 dilated 2: 25 taps of 48 (1200 values), tiled"""
    return b.conv(x[0], 96, 4, (5, 5), group=2, dilations=[2, 2], pads=[2, 2, 2, 2])


@case((1, 2100))
def dsp_fc_k2100(b, x):
    """FC with K' = 2104 > 2048: the row is widened on the fly (no column buffer)"""
    return b.gemm(x[0], 2100, 7)


@case((1, 8))
def dsp_fc_k8_n130(b, x):
    """FC 8 -> 130 (the autoencoder's bottleneck widened): K'/8 = 1 (the K16 loop entered half
    way and left at once), 32 quads in assembly and a partial quad of 2 through the same block"""
    return b.op("Relu", [b.gemm(x[0], 8, 130)])


@case((1, 21))
def dsp_fc_k21_n6(b, x):
    """K = 21 (a tail of 1, K' = 24: K'/8 = 3, odd), a full quad and a partial one of 2"""
    return b.gemm(x[0], 21, 6)


@case((1, 256))
def dsp_fc_k256_n2(b, x):
    """the VWW head (256 -> 2): no full quad, the partial quad alone through the assembly"""
    return b.gemm(x[0], 256, 2)


@case((1, 64))
def dsp_fc_k64_n10(b, x):
    """the ResNet-8 head (64 -> 10): two quads and a partial one of 2"""
    return b.gemm(x[0], 64, 10)


@case((1, 1000), ranges=((0.0, 2.55),))
def dsp_fc_wide_acc(b, x):
    """FC 1000 -> 7 at the accumulator's edge: x - zx up to 255 (zero point -128), weights of
    +/-100..127 mostly of one sign: the sums reach 3e7, the int8 pairs' T = 256 A + B wraps
    int32 many times (recovered modulo 2^32); K'/8 = 125 (odd), a quad and a partial one of 3"""
    codes = b.rng.integers(100, 128, (7, 1000)) * np.where(b.rng.random((7, 1000)) < 0.9, 1, -1)
    codes[1] *= -1  # one output of the other sign (the B of the first pair)
    w = b.qconst(codes.astype(np.int8), 0.001)
    bias = b.const(np.linspace(-3.0, 3.0, 7).astype(np.float32), "b")
    return b.op("Gemm", [b.qdq(x[0], 0.01, -128), w, bias], transB=1)


@case((1, 8, 5, 112))
def dsp_wide_rows_dw_mult2(b, x):
    """rows 112 wide, depthwise with channel multiplier 2 (the grouped GEMM, 1 input channel
    per group)"""
    return b.conv(x[0], 8, 16, (3, 3), group=8, pads=[1, 1, 1, 1], strides=[1, 2])


@case((1, 12, 8, 9))
def dsp_grouped3_dilated(b, x):
    """groups 3 (4 -> 2 channels each), dilation 2 x 3, pads"""
    return b.conv(x[0], 12, 6, (3, 2), group=3, dilations=[2, 3], pads=[2, 1, 1, 2])


# --- conv2d_s8_dsp's register tiles (issue 27): tile widths 4, 3, 2 and 1 (the last tile of a
# layer), the "run" layout of 3-channel stems, pointwise layers as one row of pixels, zy added
# by the block where it cannot be folded into rnd, the clamp pass after the tiles.
@case((1, 3, 13, 14))
def dsp_tile_stem_s2(b, x):
    """a 3-channel stem, 3 x 3 stride 2, pads 0 0 1 1 (VWW's): the "run" layout (27 values, one
    pad at the end), 7 x 7 outputs (4-pixel tiles across rows, a 1-pixel tile last)"""
    return b.op("Relu", [b.conv(x[0], 3, 8, (3, 3), strides=[2, 2], pads=[0, 0, 1, 1])])


@case((1, 3, 9, 10))
def dsp_tile_stem_s1_pad1(b, x):
    """a 3-channel stem, 3 x 3 stride 1, pad 1 (ResNet-8's), 16 channels: the "run" layout with
    padded taps, 90 pixels (a 2-pixel tile last)"""
    return b.conv(x[0], 3, 16, (3, 3), pads=[1, 1, 1, 1])


@case((1, 16, 7, 5))
def dsp_tile_pw_rows(b, x):
    """pointwise 16 -> 12 on 7 x 5 pixels: tiles across image rows, a 3-pixel tile last"""
    return b.conv(x[0], 16, 12, (1, 1))


@case((1, 256, 3, 3))
def dsp_trained_tile_pw_3x3_256(b, x):
    """pointwise 256 -> 27 on 3 x 3 pixels (VWW's last layers) with trained-like scales
    1e-9..1e-1 (wide accumulators, K' = 256): few pixels, an odd last channel"""
    return trained_conv(b, x[0], 256, 27, (1, 1), -9.0, -1.0)


@case((1, 64, 5, 6))
def dsp_trained_tile_3x3_k576(b, x):
    """3 x 3 over 64 channels (ResNet-8's last convs: K' = 576, the largest 4-pixel tile) with
    scales 1e-10..1e-1: shifts to 62, zy added by the block (too large to fold into rnd)"""
    return trained_conv(b, x[0], 64, 10, (3, 3), -10.0, -1.0, pads=[1, 1, 1, 1])


@case((1, 80, 5, 5))
def dsp_tile_3x3_k720(b, x):
    """3 x 3 over 80 channels: K' = 720, 3-pixel tiles (4 do not fit the column buffer), 25
    pixels (a 1-pixel tile last)"""
    return b.conv(x[0], 80, 6, (3, 3), pads=[1, 1, 1, 1])


@case((1, 16, 6, 7))
def dsp_tile_clip_narrow(b, x):
    """3 x 3, 16 -> 6 with a narrow fused clip: the clamp pass over the tiles' outputs"""
    return b.clip(b.conv(x[0], 16, 6, (3, 3), pads=[1, 0, 1, 1]), -0.2, 0.3)


@case((1, 8, 9, 10))
def dsp_dw_dilated(b, x):
    """depthwise 3 x 3 with dilation 2 (the grouped GEMM, not the row kernels)"""
    return b.conv(x[0], 8, 8, (3, 3), group=8, dilations=[2, 2], pads=[2, 2, 2, 2])


@case((1, 6, 5, 7), (1, 6, 1, 1), ranges=((-1.0, 2.0), (-3.0, 0.5)))
def dsp_add_bcast_channel(b, x):
    """per-channel broadcast add (NHWC: each row of channels against one vector)"""
    return b.op("Add", x)


@case((1, 1, 5, 7), (1, 6, 5, 1), ranges=((-1.0, 2.0), (-20.0, 30.0)))
def dsp_add_bcast_both(b, x):
    """both operands broadcast, very different scales (a folded constant past int32)"""
    return b.op("Add", x)


@case((1, 3, 5, 7), (1, 3, 5, 7), ranges=((-0.02, 0.05), (-40.0, 25.0)))
def dsp_add_scales_tail(b, x):
    """same-shape add of 105 elements (26 words through the SMLAW loop, a tail of 1) whose input
    scales differ by 1000x, clipped to [-1, 6] (both clamp bounds inside int8)"""
    return b.clip(b.op("Add", x), -1.0, 6.0)


@case((1, 8, 6, 6))
def dsp_add_residual_in_place(b, x):
    """a residual block (ResNet-8's): r = relu(conv(x)), y = relu(conv(r) + r): the Add's conv
    operand dies there and is written over (in place); r stays live for a second Add (y + r),
    which then writes over one of its operands"""
    r = b.op("Relu", [b.conv(x[0], 8, 8, (3, 3), pads=[1, 1, 1, 1])])
    y = b.op("Relu", [b.op("Add", [b.conv(r, 8, 8, (3, 3), pads=[1, 1, 1, 1]), r])])
    return b.op("Add", [y, r])


@case((1, 4, 1, 300))
def dsp_avgpool_row_300(b, x):
    """one window row of 300 taps: the int16 lanes are flushed inside the row"""
    return b.op("AveragePool", x, kernel_shape=[1, 300])


@case((1, 1, 33000), ranges=((-6.0, 6.0),))
def dsp_softmax_wide_rows(b, x):
    """a row of 33000 values: the 64-bit sums of softmax_s8_dsp (2^15 values or more); scaled by
    100 so that the few values in the top int8 bin hold most of the sum (not all -128)"""
    return b.op("Softmax", [b.op("Mul", [x[0], b.const(np.float32(100.0), "k")])], axis=-1)


@case((1, 3, 5, 9))
def dsp_transpose_nchw_rgb(b, x):
    """NCHW -> NHWC of 3 channels (a camera frame): words of 4 pixels, a tail of 1"""
    return b.op("Transpose", x, perm=[0, 2, 3, 1])


@case((1, 4, 3, 10))
def dsp_transpose_nchw_rgba(b, x):
    """NCHW -> NHWC of 4 channels: the 4 x 4 byte transpose, a tail of 2 per row"""
    return b.op("Transpose", x, perm=[0, 2, 3, 1])


@case((1, 3, 7, 13), ranges=((-6.0, 6.0),))
def dsp_softmax_rows(b, x):
    """rows of 13: 32-bit sums and UDIV"""
    return b.op("Softmax", x, axis=-1)
# --- the Helium kernels' own paths (sdk/kernels/helium/rules.py, issue 31): run on cortex-m55 with
# the dsp_ cases (board_tests/test_kernels_m55_helium.py), on the host with them.
@case((1, 16, 9, 8))
def mve_conv_3x3_shifts_s2(b, x):
    """3 x 3 stride 2, 16 -> 13 channels (an odd last pair), asymmetric pads, scales 1e-11..1e6 and a
    narrow clip: shifts from about 13 to 62 on the aligned im2col tile (the 64-bit requantization)"""
    return b.clip(trained_conv(b, x[0], 16, 13, (3, 3), -11.0, 6.0, strides=[2, 2], pads=[1, 0, 2, 1]), -0.3, 0.3)


@case((1, 7, 9, 8))
def mve_dw_shifts_c7(b, x):
    """depthwise 3 x 3 stride 2 over 7 channels (a predicated last quad), shifts 13..62 (the 64-bit
    requantization of the depthwise kernel), pads on every side"""
    return b.clip(trained_conv(b, x[0], 7, 7, (3, 3), -11.0, 6.0, group=7, strides=[2, 2], pads=[1, 1, 1, 1]),
                  -0.3, 0.3)


@case((1, 12, 11, 10))
def mve_dw_5x5_s2(b, x):
    """depthwise 5 x 5 stride 2 over 12 channels: the depthwise kernel's general (C) tile, rows of 4,
    2 and 1 pixels"""
    return b.conv(x[0], 12, 12, (5, 5), group=12, strides=[2, 2], pads=[2, 1, 2, 2])


@case((1, 6, 9, 8))
def mve_dw_2x2_dilated2(b, x):
    """depthwise 2 x 2 with dilation 2: the 2 rows an output row reads are 2 apart, so they do not
    fall in distinct slots iy mod 2 (the row slots per kernel row, refilled for each output row)"""
    return b.conv(x[0], 6, 6, (2, 2), group=6, dilations=[2, 2], pads=[1, 1, 1, 0])


@case((1, 32, 5, 6))
def mve_conv_grouped_c16(b, x):
    """3 x 3 in 2 groups of 16 channels (aligned columns, one run per tap), 7 outputs per group"""
    return b.conv(x[0], 32, 14, (3, 3), group=2, pads=[1, 1, 1, 1])


@case((1, 15, 4, 5))
def mve_conv_grouped_1x1_c5(b, x):
    """1 x 1 in 3 groups of 5 channels (one tap: written straight into the tile, a partial chunk)"""
    return b.conv(x[0], 15, 9, (1, 1), group=3)


@case((1, 2, 5, 3, 3))
def mve_conv_batch2(b, x):
    """a batch of 2 images of 3 x 3 pixels: 4-pixel tiles that cross from one image to the next"""
    return b.conv(b.reshape(x[0], [2, 5, 3, 3]), 5, 6, (3, 3), pads=[1, 1, 1, 1])


@case((1, 16, 1, 172))
def mve_dw_row_past_buffer(b, x):
    """depthwise 3 x 3 whose padded rows pass the kernel's row buffer (3 x 16 x 174 bytes): the
    grouped GEMM (one input channel per group, staged columns)"""
    return b.conv(x[0], 16, 16, (3, 3), group=16, pads=[1, 1, 1, 1])


@case((1, 32, 6, 7))
def mve_conv_1x1_s2_c32(b, x):
    """1 x 1 stride 2 over 32 channels (ResNet-8's shortcut): columns copied straight into the tile"""
    return b.conv(x[0], 32, 20, (1, 1), strides=[2, 2])


@case((1, 2100, 1, 2))
def mve_conv_1x1_k2100(b, x):
    """1 x 1 over 2100 channels (a column past the 4-pixel tile): the FC kernel over the 2 pixels"""
    return b.conv(x[0], 2100, 5, (1, 1))


@case((1, 256, 2, 3))
def mve_conv_3x3_c256_declined(b, x):
    """3 x 3 over 256 channels: a column of 2304 values, past the Helium tile and not 1 x 1, so the
    set declines it (named in fallbacks) and the DSP kernels' K-tiled path runs it"""
    return b.conv(x[0], 256, 6, (3, 3), pads=[1, 1, 1, 1])


@case((1, 20, 7, 9))
def mve_pool_channel_tails(b, x):
    """max pooling over 20 channels (16 + a predicated 4), then average pooling with padding counted
    (4 + 4 + ... per int32 vector)"""
    m = b.op("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    return b.op("AveragePool", [m], kernel_shape=[2, 3], pads=[1, 1, 0, 1], count_include_pad=1)




# --- int4 weights (grids built with int4=True: the w4_ cases' Conv/Gemm layers, kernels/int4.py) --
@case((1, 18, 7, 6))
def dsp_w4_conv5x3_k270_oc9(b, x):
    """int4 5 x 3 conv, 18 -> 9 channels: K' = 270, not a multiple of 4 (the nibble stream ends on
    a pair of zero weights), an odd channel count (the last pair in C), 42 pixels (a tile of 2 or 3)"""
    return b.conv(x[0], 18, 9, (5, 3), pads=[2, 1, 2, 1])


@case((1, 3, 15, 13))
def dsp_w4_stem_s2(b, x):
    """int4 3-channel stem, 3 x 3 stride 2 (the "run" layout), 8 x 7 outputs"""
    return b.conv(x[0], 3, 8, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1])


@case((1, 24, 5, 7))
def dsp_w4_pw_oc13(b, x):
    """int4 1 x 1, 24 -> 13 (the pointwise GEMM across rows: 35 pixels, a last tile of 3)"""
    return b.op("Relu", [b.conv(x[0], 24, 13, (1, 1))])


@case((1, 7, 5, 5))
def dsp_w4_conv3x3_tail1(b, x):
    """int4 3 x 3, 7 -> 6 on 5 x 5: 9 output pixels (a last tile of 1), K' = 3 x 22 = 66"""
    return b.conv(x[0], 7, 6, (3, 3))


@case((1, 37))
def dsp_w4_fc_k37_n10(b, x):
    """int4 FC 37 -> 10: K' = 40 (K'/8 odd: the K16 loop entered half way), a partial quad of 2"""
    return b.gemm(x[0], 37, 10)


@case((1, 2100))
def dsp_w4_fc_k2100(b, x):
    """int4 FC 2100 -> 5: K' past the column buffer, the row widened on the fly (C)"""
    return b.gemm(x[0], 2100, 5)


@case((1, 12, 8, 9))
def dsp_w4_dw3x3(b, x):
    """int4 depthwise 3 x 3: the dw3x3 kernel on 16 x the values as int8 bytes, shifts 4 more"""
    return b.conv(x[0], 12, 12, (3, 3), group=12, pads=[1, 1, 1, 1])


@case((1, 300))
def dsp_w4_trained_fc(b, x):
    """int4 FC 300 -> 10 with scales 1e-4..1e3 and a narrow fused clip: shifts from below 29 (the
    64-bit requantization in C, fastq = 0, on 16 x the sums) to the assembly's"""
    w = decades(b, 10, 300, -4.0, 3.0)
    return b.clip(b.op("Gemm", [x[0], b.const(w, "w"), b.const(np.full(10, 0.05, np.float32), "b")], transB=1),
                  -0.5, 0.5)


@case((1, 24, 7, 7))
def dsp_w4_trained_3x3_big_bias(b, x):
    """int4 3 x 3 with scales 1e-10..1e-1 (dsp_trained_3x3_big_bias): biases past 2^27 on the tiny
    channels, so 16 x the sums could leave int32: the int4 values stay int8 bytes (listed)"""
    return b.op("Relu", [trained_conv(b, x[0], 24, 16, (3, 3), -10.0, -1.0, pads=[1, 1, 1, 1])])
# --- shape and data movement (ops/movement.py, ops/resize.py) ------------------------------------
def i64(b: Builder, values) -> str:
    return b.const(np.array(values), "i", np.int64)


@case((1, 6, 7, 8))
def shape_slice_neg_step(b, x):
    """negative and positive steps, a clamped end"""
    return b.op("Slice", [x[0], i64(b, [5, 0, 1]), i64(b, [0, 100, -1]), i64(b, [1, 3, 2]), i64(b, [-2, 3, 1])])


@case((1, 7, 5))
def shape_split_3(b, x):
    outs = [b.fresh("split") for _ in range(3)]
    b.nodes.append(helper.make_node("Split", [x[0], i64(b, [2, 4, 1])], outs, name=b.fresh("Split"), axis=1))
    return outs


@case((1, 14, 4, 4))
def shape_split_5d(b, x):
    """YOLO-style: a 5-D view (1, 2, 7, 4, 4) split along its 7 (xy, wh, classes)"""
    outs = [b.fresh("split") for _ in range(3)]
    b.nodes.append(helper.make_node("Split", [b.reshape(x[0], [1, 2, 7, 4, 4]), i64(b, [2, 2, 3])], outs,
                                    name=b.fresh("Split"), axis=2))
    return outs


@case((1, 14, 3, 4))
def shape_transpose_5d(b, x):
    """YOLO-style (1, 2, 7, 3, 4) -> (1, 2, 3, 4, 7): a 5-D Transpose runs as an index remap"""
    return b.op("Transpose", [b.reshape(x[0], [1, 2, 7, 3, 4])], perm=[0, 1, 3, 4, 2])


@case((1, 3, 5, 4))
def shape_gather_axis2(b, x):
    return b.op("Gather", [x[0], i64(b, [[4, 0], [-1, 2]])], axis=2)


@case((1, 1, 5, 6))
def shape_expand_tile(b, x):
    """Expand over channels, then Tile"""
    return b.op("Tile", [b.op("Expand", [x[0], i64(b, [1, 3, 5, 6])]), i64(b, [1, 2, 1, 2])])


@case((1, 8, 3, 5))
def shape_depthtospace_dcr(b, x):
    return b.op("DepthToSpace", x, blocksize=2)


@case((1, 18, 2, 3))
def shape_depthtospace_crd(b, x):
    return b.op("DepthToSpace", x, blocksize=3, mode="CRD")


@case((1, 2, 3, 4, 6))
def shape_spacetodepth(b, x):
    """a batch of 2, through a Reshape of the input"""
    return b.op("SpaceToDepth", [b.reshape(x[0], [2, 3, 4, 6])], blocksize=2)


@case((1, 3, 4, 5))
def shape_resize_nearest(b, x):
    return b.op("Resize", [x[0], "", "", i64(b, [1, 3, 9, 7])], mode="nearest")


@case((1, 3, 4, 5))
def shape_resize_linear_halfpixel(b, x):
    return b.op("Resize", [x[0], "", b.const([1, 1, 2, 2], "scales")], mode="linear")


@case((1, 3, 5, 7))
def shape_resize_linear_align(b, x):
    """align_corners on a conv's output: the blend of non-trivial codes, downscaled in width"""
    y = b.conv(x[0], 3, 4, (3, 3), pads=[1, 1, 1, 1])
    return b.op("Resize", [y, "", "", i64(b, [1, 4, 9, 4])], mode="linear", coordinate_transformation_mode="align_corners")


@case((1, 3, 4, 5))
def shape_resize_cubic_halfpixel(b, x):
    """cubic upscale: the negative end taps overshoot, the int8 kernel saturates"""
    return b.op("Resize", [x[0], "", "", i64(b, [1, 3, 7, 9])], mode="cubic")


@case((1, 3, 6, 7))
def shape_resize_cubic_align_exclude(b, x):
    """cubic downscale of a conv's output: A = -0.5, exclude_outside, align_corners, scales"""
    y = b.conv(x[0], 3, 4, (3, 3), pads=[1, 1, 1, 1])
    return b.op("Resize", [y, "", b.const([1, 1, 0.6, 0.8], "scales")], mode="cubic", cubic_coeff_a=-0.5,
                exclude_outside=1, coordinate_transformation_mode="align_corners")


@case((1, 2, 5, 3), opset=19)
def shape_resize_axes_policy(b, x):
    """sizes on axes (3, 2) with keep_aspect_ratio_policy not_smaller, linear, half_pixel_symmetric"""
    return b.op("Resize", [x[0], "", "", i64(b, [5, 7])], mode="linear", axes=[3, 2],
                keep_aspect_ratio_policy="not_smaller", coordinate_transformation_mode="half_pixel_symmetric")


@case((1, 2, 5, 6), opset=18)
def shape_resize_tf_crop(b, x):
    """tf_crop_and_resize on axes (2, 3), the crop partly outside: those outputs get extrapolation_value"""
    roi = b.const([0.2, -0.3, 1.4, 0.9], "roi")
    return b.op("Resize", [x[0], roi, "", i64(b, [4, 5])], mode="linear", axes=[2, 3],
                coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=0.75)


@case((1, 2, 9, 11), opset=18)
def shape_resize_antialias(b, x):
    """antialiased downscale (cubic, 0.4 x 0.3): the stretched kernel has 10 and 14 taps"""
    return b.op("Resize", [x[0], "", b.const([1, 1, 0.4, 0.3], "scales")], mode="cubic", antialias=1)


@case((1, 3, 4, 5), (1, 3, 1, 5), ranges=((-1.0, 2.0), (-3.0, 0.5)))
def shape_where_two_inputs(b, x):
    """a constant mask broadcast over channels, both operands run-time (different scales)"""
    mask = b.const(b.rng.random((1, 1, 4, 5)) > 0.5, "mask", np.bool_)
    return b.op("Where", [mask, x[0], x[1]])


@case((1, 2, 4, 4))
def shape_where_const_fill(b, x):
    """attention-style masking: Where(mask, x, constant)"""
    return b.op("Where", [b.const(np.tril(np.ones((4, 4))), "mask", np.bool_), x[0], b.const(-0.75, "fill")])


@case((1, 3, 4, 4))
def shape_flatten_exported(b, x):
    """torch's x.view(x.size(0), -1) -> Gemm: the shape subgraph is folded at compile time"""
    s = b.op("Shape", x)
    n = b.op("Unsqueeze", [b.op("Gather", [s, b.const(0, "zero", np.int64)], axis=0), i64(b, [0])])
    flat = b.op("Reshape", [x[0], b.op("Concat", [n, i64(b, [-1])], axis=0)])
    return b.gemm(flat, 48, 5)


def ids_with(prefix: str) -> list[str]:
    return [c for c in CASES if c.startswith(prefix)]


HOST_GROUPS: dict[str, list[str]] = {
    "conv": ids_with("conv_") + ids_with("convt_"),
    "fc_eltwise": ids_with("gemm_") + ids_with("matmul_") + ids_with("add_") + ids_with("mul_"),
    "pool": ids_with("maxpool_") + ids_with("avgpool_") + ids_with("global_avgpool") + ids_with("global_maxpool"),
    "move_act": (ids_with("concat_") + ids_with("pad_") + ids_with("transpose_") +
                 ["relu", "clip_standalone", "leaky_relu", "sigmoid", "hardswish", "tanh"] + ids_with("softmax_")),
    "qdq_ties": ids_with("qdq_"),
    "network": ["network"],
    # the int4 cases run in int4 grids only
    "dsp_paths": [c for c in ids_with("dsp_") if W4_MARK not in c] + ids_with("mve_"),
    "shape_ops": ids_with("shape_"),
    "seq": ids_with("seq_"),
}
assert sorted(c for g in HOST_GROUPS.values() for c in g) == sorted(c for c in CASES if W4_MARK not in c), \
    "every case but the int4 ones is in one host group"

# fp32 builds (profile standard) of a few ops, compared with run_float
FP32_CASES = ["conv_5x2_asym_pads", "conv_depthwise_mult2", "conv_clip6_fused", "gemm_transb", "matmul_3d",
              "add_bcast_both", "mul_const_per_channel", "maxpool_ceil", "avgpool_ceil_include_pad", "global_avgpool",
              "concat_channels", "pad_value", "transpose_0321", "leaky_relu", "sigmoid", "hardswish", "tanh",
              "softmax_rows", "network", "seq_matmul_bcast_relu", "seq_matmul_attention",
              "seq_lstm_bidirectional_batch_first", "seq_lstm_reverse_yh_only", "seq_gru_forward",
              "seq_gru_bidirectional_lbr", "seq_lstm_runtime_state", "seq_gru_runtime_state_batch_first",
              "shape_slice_neg_step", "shape_split_3", "shape_depthtospace_crd",
              "shape_resize_nearest", "shape_resize_linear_halfpixel", "shape_resize_linear_align",
              "shape_resize_cubic_halfpixel", "shape_resize_cubic_align_exclude", "shape_resize_axes_policy",
              "shape_resize_tf_crop", "shape_resize_antialias",
              "shape_where_two_inputs", "shape_where_const_fill",
              "conv_1d_stride2_pad", "maxpool_1d_ceil", "avgpool_1d_include_pad", "global_maxpool",
              "global_avgpool_1d", "global_maxpool_3d", "maxpool_dilated_ceil", "avgpool_dilated_include_pad",
              "maxpool_3d", "avgpool_3d_dilated", "matmul_batched_b", "pad_reflect", "pad_edge", "pad_wrap",
              "convt_s2_pads_outpad", "convt_group2_dilated", "convt_1d", "gemm_transa_matrix_bias",
              "concat_const_input"]

# cortex-m7 (profile lite): one firmware per group (the op grid, the QDQ ties, the network)
M7_GROUPS: dict[str, list[str]] = {
    "ops": ["conv_1x1", "conv_3x3_pad1", "conv_3x3_stride2", "conv_3x1_stride21", "conv_5x2_asym_pads",
            "conv_3x3_dilation2", "conv_grouped3", "conv_depthwise_s2", "conv_depthwise_mult2",
            "conv_depthwise_5x5_relu", "conv_clip6_fused", "conv_same_upper_s2", "conv_deep_3x3", "conv_batch2",
            "conv_pad_ge_kernel", "gemm_transb", "gemm_kn_scalar_bias", "gemm_rows3", "matmul_3d",
            "add_same_shape", "add_bcast_both", "add_const_after_conv", "add_relu_fused", "mul_bcast_last",
            "mul_const_per_channel", "maxpool_3x3_s2_pad1", "maxpool_ceil", "maxpool_relu", "maxpool_pad_ge_kernel",
            "avgpool_include_pad", "avgpool_ceil_include_pad", "avgpool_ceil_include_pad_all_sides", "global_avgpool",
            "global_avgpool_256",
            "concat_channels", "concat_2d", "pad_asym", "transpose_0321", "sigmoid", "hardswish", "tanh",
            "softmax_2d", "softmax_rows", "softmax_after_gemm", "seq_matmul_attention",
            "seq_lstm_bidirectional_batch_first", "seq_gru_bidirectional_lbr", "seq_lstm_runtime_state"],
    "qdq_ties": ids_with("qdq_"),
    "network": ["network"],
}


# --- one model from many cases ----------------------------------------------------------------
@dataclass
class Net:
    name: str
    model: onnx.ModelProto
    inputs: dict[str, tuple[tuple[int, ...], tuple[float, float]]]  # name -> (shape, calibration range)
    outputs: dict[str, list[str]]  # case id -> its output tensors
    path: Path | None = None
    calib: Path | None = None


def make_net(name: str, case_ids: Sequence[str], opset: int = OPSET) -> Net:
    nodes, inits, graph_inputs, graph_outputs = [], [], [], []
    inputs, outputs = {}, {}
    for cid in case_ids:
        c = CASES[cid]
        b = Builder(cid)
        xs = [f"{cid}_x{i}" for i in range(len(c.inputs))]
        for i, (x, shape) in enumerate(zip(xs, c.inputs)):
            graph_inputs.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, list(shape)))
            inputs[x] = (tuple(shape), c.input_range(i))
        ys = c.make(b, xs)
        ys = [ys] if isinstance(ys, str) else list(ys)
        graph_outputs += [helper.make_tensor_value_info(y, TensorProto.FLOAT, None) for y in ys]
        outputs[cid] = ys
        nodes += b.nodes
        inits += b.inits
    graph = helper.make_graph(nodes, name, graph_inputs, graph_outputs, inits)
    opset = max([opset] + [CASES[cid].opset for cid in case_ids])  # the caller's, or a case's newer one
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="kernel_cases")
    model.ir_version = 8
    done = onnx.shape_inference.infer_shapes(model, strict_mode=True).graph
    inferred = {v.name: v for v in list(done.value_info) + list(done.output)}
    for out in model.graph.output:  # declare every output's inferred shape
        out.type.CopyFrom(inferred[out.name].type)
    onnx.checker.check_model(model, full_check=True)
    return Net(name, model, inputs, outputs)


def save_net(net: Net, folder: Path, seed: int = 1) -> Net:
    """Write NAME.onnx and NAME_calib.npz (CALIB_SAMPLES random samples per input, uniform
    over the case's range, fixed seed) into folder."""
    folder.mkdir(parents=True, exist_ok=True)
    net.path = folder / f"{net.name}.onnx"
    onnx.save(net.model, net.path)
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, (shape, (lo, hi)) in net.inputs.items():
        arrays[name] = rng.uniform(lo, hi, (CALIB_SAMPLES, *shape[1:])).astype(np.float32)
    net.calib = folder / f"{net.name}_calib.npz"
    np.savez(net.calib, **arrays)
    return net


def float_samples(net: Net, count: int, seed: int, widen: float = 1.25) -> list[dict[str, np.ndarray]]:
    """Random float inputs over a range a bit wider than calibration (so inputs saturate too)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        sample = {}
        for name, (shape, (lo, hi)) in net.inputs.items():
            mid, half = (lo + hi) / 2, (hi - lo) / 2 * widen
            sample[name] = rng.uniform(mid - half, mid + half, shape).astype(np.float32)
        out.append(sample)
    return out


def int8_samples(g: Graph, count: int, seed: int, extremes: bool = True) -> list[dict[str, np.ndarray]]:
    """Random int8 codes over the whole range [-128, 127], one per graph input; with
    `extremes`, first two samples with every input at -128, then at 127."""
    rng = np.random.default_rng(seed)
    shapes = {name: g.tensors[name].shape for name in g.inputs}
    out = [{n: np.full(s, v, np.int8) for n, s in shapes.items()} for v in ((-128, 127) if extremes else ())]
    return out + [{n: rng.integers(-128, 128, s, dtype=np.int8) for n, s in shapes.items()} for _ in range(count)]


def dequantized(g: Graph, q_samples: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """Float inputs that quantize back to exactly these int8 codes (for float-only harnesses)."""
    return [{n: dequantize(q, *g.tensors[n].q.scalar()) for n, q in s.items()} for s in q_samples]


# --- the pipeline, in Python and built ------------------------------------------------------


def int4_layers(net: Net) -> list[str]:
    """The int4 layers of a net (--int4-layers): the Conv and Gemm nodes of its w4_ cases."""
    return [n.name for n in net.model.graph.node if n.op_type in ("Conv", "Gemm") and W4_MARK in n.name]


def reference_graph(net: Net, board: str, profile: str, precision: str, method: str = "minmax",
                    int4: bool = False) -> Graph:
    """The graph the compiler generates code from, by the same stages in Python (int4: with the
    w4_ cases' layers int4, as build(..., int4=True) makes them)."""
    g = load_model(net.path, get_profile(profile), get_board(board), {})
    optimize(g)
    if precision == "int8":
        observer, samples = None, None
        if needs_calibration(g):
            samples = load_samples(net.calib, g, "calibration data")
            observer = calibrate(g, samples, len(samples), method)
        if int4:  # the int4 layers' scale rules, measured as the compiler does
            choose_int4_scales(g, observer, samples, int4_layers(net))
        quantize_graph(g, observer, int4=set(int4_layers(net)) if int4 else set())
    return g


def build(net: Net, out_dir: Path, board: str, profile: str, precision: str = "int8", method: str = "minmax",
          jobs: int = 2, weight_layout: str | None = None, arena_region: str | None = None,
          int4: bool = False) -> dict:
    req = CompileRequest(model=net.path, board=get_board(board), profile=get_profile(profile), precision=precision,
                         calib=str(net.calib) if precision == "int8" else None, calib_method=method, name=net.name,
                         weight_layout=weight_layout, arena_region=arena_region,
                         int4_layers=int4_layers(net) if int4 else [])
    return do_build(req, out_dir, jobs)


def check_io_contract(info: dict, g: Graph, int8: bool) -> None:
    """The manifest's inputs/outputs are the graph's, with the same scales and zero points."""
    for entries, names in ((info["inputs"], g.inputs), (info["outputs"], g.outputs)):
        assert [t["name"] for t in entries] == list(names)
        for t in entries:
            assert tuple(t["shape"]) == g.tensors[t["name"]].shape, t["name"]
            if int8:
                scale, zp = g.tensors[t["name"]].q.scalar()
                assert (t["scale"], t["zero_point"]) == (scale, zp), t["name"]


def mismatch(got: np.ndarray, want: np.ndarray) -> str:
    """A short description of where two integer arrays differ."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != reference {want.shape}"
    diff = np.argwhere(got != want)
    first = tuple(int(i) for i in diff[0])
    delta = np.abs(got.astype(np.int64) - want.astype(np.int64)).max() if got.dtype.kind in "iu" else "-"
    return (f"{len(diff)}/{got.size} values differ (max |diff| {delta}); first at {first}: "
            f"got {got[first]}, reference {want[first]}")


class Lazy:
    """Build each group once on first use (module-scoped in the tests); a failed build
    is remembered and raised again for every test of the group instead of rebuilt."""

    def __init__(self, make: Callable[[str], object]) -> None:
        self.make = make
        self.done: dict[str, object] = {}

    def __call__(self, key: str):
        if key not in self.done:
            try:
                self.done[key] = self.make(key)
            except Exception as exc:  # re-raised below, for every test of the group
                self.done[key] = Failed(exc, exc.__traceback__)
        value = self.done[key]
        if isinstance(value, Failed):
            # the original traceback each time (a plain re-raise would make it grow per test)
            raise value.exc.with_traceback(value.tb)
        return value


@dataclass
class Failed:
    exc: Exception
    tb: object
