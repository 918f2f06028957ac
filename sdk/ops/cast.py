"""Cast and CastLike: float32, integer and bool tensors to each other (CastLike: to its second
input's type), ONNX's rules:

- float to an integer type: truncation toward zero, saturated to the type's range (ONNX leaves an
  out-of-range value undefined; the SDK saturates, in the reference and in C), NaN gives 0;
- to bool: x != 0 (NaN is true); bool to a number: 0 or 1;
- integer to float: the nearest float32; integer to integer: the value modulo 2^bits (two's
  complement), as numpy and C on every target the SDK builds for.

A Cast to the type its input has is removed (passes/cleanup.py). Constants are cast when the
frontend folds them; a run-time tensor may be cast to float32 or an integer or bool type (other
types, float16 or double, are refused naming the node).

int8 rules: a quantized tensor cast to an integer type is a 256-entry table of the cast of each
code's dequantized value (lut_<type>, exact); an integer tensor cast to float is quantized at its
(calibrated) output scale, q = cuvil_quantize((float)x, scale, zp), the boundary's rule in float32
steps; between integer types nothing is quantized.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from ..ir import INTEGER_DTYPES, Graph, Node
from ..kernels.contract import Buf, Weight, call
from ..kernels.dtypes import CTYPES, VARIANTS
from ..kernels.requant import dequantize, quantize_float
from .common import io_args, qparams_of, require
from .registry import OpDef, register

RUNTIME_TARGETS = ("float32", *INTEGER_DTYPES)


def cast_values(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """x as `target` by ONNX's rules (the module's docstring), exactly as the cast kernels."""
    x, target = np.asarray(x), np.dtype(target)
    if target == np.bool_:
        return x != 0
    if x.dtype.kind == "f" and target.kind in "iu":
        info = np.iinfo(target)
        x64 = x.astype(np.float64)
        # the bounds as float32, as C compares them (int32's max rounds up to 2^31)
        lo, hi = float(np.float32(info.min)), float(np.float32(info.max))
        out = np.zeros(x.shape, target)
        inside = (x64 > lo) & (x64 < hi)  # NaN: neither, 0
        out[inside] = np.trunc(x64[inside]).astype(target)
        out[x64 <= lo], out[x64 >= hi] = info.min, info.max
        return out
    with np.errstate(over="ignore"):
        return x.astype(target)


@register
class Cast(OpDef):
    op_type = "Cast"
    summary = ("float32, integer and bool tensors to each other (float to integer: toward zero, saturated; "
               "to bool: x != 0); constants to any numeric type (folded)")
    int8_rule = "to an integer type: a 256-entry table; from one: quantized at the output's scale"
    integer_inputs = True

    def target(self, node: Node, g: Graph) -> np.dtype:
        to = node.attrs.get("to")
        require(to in TensorProto.DataType.values() and to not in (TensorProto.UNDEFINED, TensorProto.STRING),
                node, f"cast to type {to} is not supported")
        return np.dtype(helper.tensor_dtype_to_np_dtype(to))

    def check(self, node: Node, g: Graph) -> None:
        target = self.target(node, g)
        require(target.name in RUNTIME_TARGETS, node,
                f"a tensor computed at run time can be cast to float32, an integer or bool type, not {target.name}")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return [self.target(node, g).name]

    def qparams_rule(self, node: Node, g: Graph) -> str:
        """A cast between floats keeps its input's quantization; one from integers is calibrated."""
        same = not g.tensors[node.inputs[0]].is_integer and not g.tensors[node.outputs[0]].is_integer
        return "same" if same else "calibrated"

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [cast_values(xs[0], self.target(node, g))]

    def quantize(self, node: Node, g: Graph) -> None:
        x, y = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
        if y.is_integer:  # codes to integers: a table of every code's cast
            codes = np.arange(-128, 128, dtype=np.int32).astype(np.int8)
            node.q = {"table": cast_values(dequantize(codes, *qparams_of(g, x.name)), np.dtype(y.dtype))}
        elif x.is_integer:
            node.q = {"scale_zp": qparams_of(g, y.name)}

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        if "table" in node.q:
            return [node.q["table"][xs[0].astype(np.int32) + 128]]
        if "scale_zp" in node.q:
            return [quantize_float(xs[0].astype(np.float32), *node.q["scale_zp"])]
        return [xs[0]]

    def lower(self, node: Node, g: Graph, precision: str):
        x, y = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
        if "table" in node.q:
            kernel = "lut_s8" if y.dtype == "int8" else f"lut_{VARIANTS[y.dtype]}"
            return call(kernel, **io_args(node), count=y.size, table=Weight("table", node.q["table"], CTYPES[y.dtype]))
        if "scale_zp" in node.q:
            scale, zp = node.q["scale_zp"]
            return call(f"quantize_{VARIANTS[x.dtype]}_s8", **io_args(node), count=y.size, scale=scale, zp=zp)
        if x.dtype == y.dtype or not (x.is_integer or y.is_integer):  # int8 to int8 codes, float to float
            return call("copy", **io_args(node), nbytes=y.nbytes)
        return call(f"cast_{VARIANTS[x.dtype]}_{VARIANTS[y.dtype]}", in_=Buf(x.name, const=True), out=Buf(y.name),
                    count=y.size)


@register
class CastLike(Cast):
    op_type = "CastLike"
    summary = "Cast to the type of the second input (only its type is read)"
    type_only_inputs = (1,)

    def target(self, node: Node, g: Graph) -> np.dtype:
        require(len(node.inputs) == 2, node, "needs two inputs")
        return np.dtype(g.tensors[node.inputs[1]].dtype)
