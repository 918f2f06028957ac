"""Binary element-wise ops with numpy broadcasting: Add and Mul (integer tensors: ops/integer.py).

int8 rules: Add rescales both inputs to a common 21-bit fixed point (kernels.requant.add_rule,
int32 throughout); Mul requantizes the product of the zero-point-corrected inputs.
A constant operand is quantized per tensor at compile time. In C the kernels walk a
4-D broadcast with per-input strides that Python computes.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import call
from ..kernels.requant import add_multipliers, add_rule, clamp_int8, quantize_multiplier, requant
from .common import (Buf, Weight, apply_fused_float, broadcast_strides, float_bounds, fused_int_range, qparams_of,
                     require)
from .integer import BINARY_CODES, binary_call, binary_values, check_integer_operands, code_of, is_integer_op
from .registry import OpDef, register

MAX_RANK = 4


def const_qparams(data: np.ndarray) -> tuple[float, int]:
    """Per-tensor asymmetric int8 parameters for a constant operand (range includes 0). +/-inf
    (a mask value) stays out of the range: it quantizes to the saturated code -128 / 127."""
    finite = data[np.isfinite(data)]
    lo, hi = min(0.0, float(finite.min(initial=0.0))), max(0.0, float(finite.max(initial=0.0)))
    scale = (hi - lo) / 255.0 or 1.0
    return scale, int(np.clip(np.round(-128 - lo / scale), -128, 127))


def truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounded toward zero (C's, ORT's and the onnx reference's), not numpy's floor."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def integer_result(node: Node, xs: list[np.ndarray]) -> np.ndarray | None:
    """The op on integer arrays (run-time integer tensors, and shape arithmetic as exporters and
    function bodies write it: Shape -> Sub -> Div -> Slice/Pad), exact and integer as ONNX defines it
    (ops/integer.py); None when an operand is not an integer tensor (then the float path applies)."""
    arrays = [np.asarray(x) for x in xs]
    if node.op not in BINARY_CODES or not all(np.issubdtype(a.dtype, np.integer) for a in arrays):
        return None
    y = arrays[0]
    for x in arrays[1:]:
        y = binary_values(code_of(node), y, x)
    return np.asarray(y).astype(np.result_type(*arrays))


def integer_operands(node: Node, g: Graph) -> bool:
    """A run-time operand is an integer tensor: the node computes integers (ops/integer.py)."""
    return any(g.tensors[i].is_integer for i in node.inputs if i and not g.tensors[i].is_const)


class Binary(OpDef):
    integer_inputs = True  # integer tensors: the rules of ops/integer.py
    # whether the op has an integer rule (PRelu has none)
    integers = True

    def check(self, node: Node, g: Graph) -> None:
        require(len(node.inputs) == 2, node, "needs two inputs")
        for name in node.inputs:
            require(len(g.tensors[name].shape) <= MAX_RANK, node, f"rank above {MAX_RANK} is not supported")
        if integer_operands(node, g):
            require(self.integers, node, "is supported on float tensors only")
            self.check_integers(node, g)

    def check_integers(self, node: Node, g: Graph) -> None:
        check_integer_operands(node, g)

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        runtime = [g.tensors[i] for i in node.inputs if i and not g.tensors[i].is_const]
        return [runtime[0].dtype if runtime and runtime[0].is_integer else "float32"]

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        a, b = (g.tensors[i].shape for i in node.inputs)
        try:
            return [tuple(np.broadcast_shapes(a, b))]
        except ValueError:
            require(False, node, f"shapes {a} and {b} do not broadcast")

    def operand_qparams(self, node: Node, g: Graph) -> list[tuple[float, int, np.ndarray | None]]:
        """(scale, zero point, quantized data or None) per input; constants quantized here."""
        out = []
        for name in node.inputs:
            t = g.tensors[name]
            if t.is_const:
                s, z = const_qparams(t.data)
                data = np.clip(np.floor(t.data.astype(np.float64) / s + 0.5) + z, -128, 127).astype(np.int8)
                out.append((s, z, data))
            else:
                out.append((*qparams_of(g, name), None))
        return out

    def int_inputs(self, node: Node, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [x if node.q["const"][i] is None else node.q["const"][i] for i, x in enumerate(xs)]

    def lower_io(self, node: Node, g: Graph, precision: str) -> dict:
        """a, b, out and the broadcast geometry: 4-D output dims d0..d3 and each operand's
        element strides sa0..sa3, sb0..sb3 (0 along a broadcast axis)."""
        args = []
        for i, name in enumerate(node.inputs):
            t = g.tensors[name]
            if not t.is_const:
                args.append(Buf(name, const=True))
            elif precision == "int8":
                args.append(Weight(f"in{i}", node.q["const"][i], "int8_t"))
            else:
                args.append(Weight(f"in{i}", t.data.astype(np.float32), "float"))
        out = g.tensors[node.outputs[0]].shape
        dims = list((1,) * (MAX_RANK - len(out)) + tuple(out))
        strides = [s for name in node.inputs for s in broadcast_strides(g.tensors[name].shape, out)]
        geometry = {f"d{i}": d for i, d in enumerate(dims)}
        geometry.update({f"s{ab}{i}": s for ab, chunk in zip("ab", (strides[:MAX_RANK], strides[MAX_RANK:]))
                         for i, s in enumerate(chunk)})
        return {"a": args[0], "b": args[1], "out": Buf(node.outputs[0]), **geometry}


@register
class Add(Binary):
    op_type = "Add"
    summary = "element-wise sum with broadcasting (up to 4-D)"
    int8_rule = "both operands rescaled by 21-bit multipliers, summed in int32, one rounding"

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        integer = integer_result(node, xs)
        if integer is not None:
            return [integer]
        return [apply_fused_float(node, (xs[0] + xs[1]).astype(np.float32))]

    def quantize(self, node: Node, g: Graph) -> None:
        (sa, za, ca), (sb, zb, cb) = self.operand_qparams(node, g)
        sy, zy = qparams_of(g, node.outputs[0])
        ma, mb, shift = add_multipliers(sa / sy, sb / sy)
        lo, hi = fused_int_range(node, sy, zy)
        node.q = {"const": [ca, cb], "za": za, "zb": zb, "ma": ma, "mb": mb, "shift": shift, "zy": zy,
                  "act_min": lo, "act_max": hi}

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        q = node.q
        a, b = self.int_inputs(node, xs)
        y = add_rule(a, b, q["za"], q["zb"], q["ma"], q["mb"], q["shift"]) + q["zy"]
        return [clamp_int8(y, q["act_min"], q["act_max"])]

    def lower(self, node: Node, g: Graph, precision: str):
        if is_integer_op(node, g):
            return binary_call(node, g)
        io = self.lower_io(node, g, precision)
        if precision == "int8":
            q = node.q
            return call("add_s8", **io, za=q["za"], zb=q["zb"], ma=q["ma"], mb=q["mb"], shift=q["shift"], zy=q["zy"],
                        lo=q["act_min"], hi=q["act_max"])
        return call("add_f32", **io, **float_bounds(node))


@register
class Mul(Binary):
    op_type = "Mul"
    summary = "element-wise product with broadcasting (up to 4-D)"
    int8_rule = "product of the zero-point-corrected operands, requantized"

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        integer = integer_result(node, xs)
        if integer is not None:
            return [integer]
        return [apply_fused_float(node, (xs[0] * xs[1]).astype(np.float32))]

    def quantize(self, node: Node, g: Graph) -> None:
        (sa, za, ca), (sb, zb, cb) = self.operand_qparams(node, g)
        sy, zy = qparams_of(g, node.outputs[0])
        mult, shift = quantize_multiplier(sa * sb / sy)
        lo, hi = fused_int_range(node, sy, zy)
        node.q = {"const": [ca, cb], "za": za, "zb": zb, "mult": mult, "shift": shift, "zy": zy,
                  "act_min": lo, "act_max": hi}

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        q = node.q
        a, b = self.int_inputs(node, xs)
        acc = (a.astype(np.int64) - q["za"]) * (b.astype(np.int64) - q["zb"])
        return [clamp_int8(requant(acc, q["mult"], q["shift"]) + q["zy"], q["act_min"], q["act_max"])]

    def lower(self, node: Node, g: Graph, precision: str):
        if is_integer_op(node, g):
            return binary_call(node, g)
        io = self.lower_io(node, g, precision)
        if precision == "int8":
            q = node.q
            return call("mul_s8", **io, za=q["za"], zb=q["zb"], mult=q["mult"], shift=q["shift"], zy=q["zy"],
                        lo=q["act_min"], hi=q["act_max"])
        return call("mul_f32", **io, **float_bounds(node))
