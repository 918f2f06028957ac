"""Binary element-wise math with numpy broadcasting (up to 4-D): Sub, Div, Pow, Min, Max,
PRelu, and the n-ary Sum, Min and Max (passes/variadic.py splits more than two inputs into
a chain of two-input nodes, one input into an Identity).

Float: one kernel, binary_f32, by code. int8 rules (every one bit-exact on every target):
- an operand that is a constant scalar makes the op a unary function of the other one:
  the 256-entry lookup table of activation.py (lut_s8), exact by construction;
- Sub, Sum: the Add rule (kernels.requant.add_rule, int32 throughout), Sub with the second
  multiplier negated;
- Min, Max: each operand requantized to the output's scale by the one rounding rule, then
  compared (requantization is monotonic, so this is the min/max of the requantized values);
- Div by a constant tensor: Mul's rule with the constant's reciprocal; Div of activations:
  y = quantize((float)(a - za) / (float)(b - zb), sy * sb / sa), one correctly rounded
  float32 division and the boundary's quantization (a / 0 saturates, 0 / 0 gives -128);
- Pow of two operands: a 256 x 256 table (64 KiB) of the float function of both codes;
- PRelu: x >= 0 requantized by sa/sy, x < 0 the integer product x * slope by sa*sb/sy.
A constant operand is quantized per tensor at compile time (elementwise.const_qparams).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import call
from ..kernels.requant import clamp_int8, dequantize, quantize_float, quantize_multiplier, requant
from .activation import lookup_table
from .common import (Buf, Weight, apply_fused_float, broadcast_shape, float_bounds, fused_int_range, qparams_of,
                     require)
from .elementwise import Add, Binary, Mul, const_qparams, integer_result
from .integer import binary_call, check_integer_operands, is_integer_op
from .registry import register

FLOAT_CODES = {"Sub": 0, "Div": 1, "Pow": 2, "Min": 3, "Max": 4, "PRelu": 5, "Mod": 6, "ModFloor": 7}
MIN_MAX_CODES = {"Min": 0, "Max": 1}


def prelu(x: np.ndarray, slope: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, x, x * slope)


FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Sub": np.subtract, "Div": np.divide, "Pow": np.power, "Min": np.minimum, "Max": np.maximum, "PRelu": prelu,
    "Sum": np.add, "Mod": np.fmod, "ModFloor": lambda x, y: floor_mod(x, y)}


def floor_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The remainder with the divisor's sign (Mod with fmod = 0), as binary_f32 computes it."""
    r = np.fmod(x, y)
    return np.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)


def float_code(node: Node) -> str:
    """The FLOAT_CODES key of a float node: Mod with fmod = 0 takes the divisor's sign."""
    return "ModFloor" if node.op == "Mod" and not int(node.attrs.get("fmod", 0)) else node.op


def scalar_operand(node: Node, g: Graph) -> int | None:
    """The index of a constant operand with one value when the other is an activation."""
    consts = [i for i, name in enumerate(node.inputs) if g.tensors[name].is_const and g.tensors[name].size == 1]
    if len(consts) == 1 and not g.tensors[node.inputs[1 - consts[0]]].is_const:
        return consts[0]
    return None


class MathBinary(Binary):
    """The float side shared by every op of this module, and the scalar-constant table."""
    summary = "element-wise, numpy broadcasting (up to 4-D)"

    def function(self, node: Node) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        return FUNCTIONS[float_code(node)]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        integer = integer_result(node, xs)
        if integer is not None:
            return [integer]
        with np.errstate(all="ignore"):  # x / 0, pow of a negative base: inf and NaN as ORT
            y = self.function(node)(xs[0].astype(np.float64), xs[1].astype(np.float64))
        return [apply_fused_float(node, y.astype(np.float32))]

    def lower_float(self, node: Node, g: Graph):
        if node.op == "Sum":  # two inputs (passes/variadic.py): Add's kernel
            return Add.lower(self, node, g, "fp32")
        return call("binary_f32", **self.lower_io(node, g, "fp32"), code=FLOAT_CODES[float_code(node)],
                    **float_bounds(node))

    def int_params(self, node: Node, g: Graph) -> tuple[dict, tuple[float, float, float]]:
        """The shared part of node.q (quantized constants, zero points, the fused clamp) and
        the scales (sa, sb, sy) that each rule's multipliers come from."""
        (sa, za, ca), (sb, zb, cb) = self.operand_qparams(node, g)
        sy, zy = qparams_of(g, node.outputs[0])
        lo, hi = fused_int_range(node, sy, zy)
        return {"const": [ca, cb], "za": za, "zb": zb, "zy": zy, "act_min": lo, "act_max": hi}, (sa, sb, sy)

    # int8: a constant scalar operand makes a table of the other operand
    def quantize_table(self, node: Node, g: Graph, k: int) -> None:
        value = np.float64(g.const(node.inputs[k]).reshape(()))
        f = self.function(node)
        unary = (lambda x: f(value, x)) if k == 0 else (lambda x: f(x, value))
        with np.errstate(all="ignore"):
            node.q = {"table": lookup_table(unary, g, node, node.inputs[1 - k]), "act": 1 - k}

    def run_table(self, node: Node, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [node.q["table"][xs[node.q["act"]].astype(np.int32) + 128]]

    def lower_table(self, node: Node, g: Graph):
        act = node.inputs[node.q["act"]]
        return call("lut_s8", in_=Buf(act, const=True), out=Buf(node.outputs[0]), count=g.tensors[act].size,
                    table=Weight("table", node.q["table"], "int8_t"))


def make_table_first(base: type[Binary]) -> type[MathBinary]:
    """An op whose int8 rule is `base`'s (Add's or Mul's) except for a constant scalar operand."""
    class TableFirst(MathBinary, base):
        def quantize(self, node: Node, g: Graph) -> None:
            k = scalar_operand(node, g)
            if k is not None:
                return self.quantize_table(node, g, k)
            self.quantize_general(node, g)

        def quantize_general(self, node: Node, g: Graph) -> None:
            base.quantize(self, node, g)

        def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
            return self.run_table(node, xs) if "table" in node.q else self.run_general(node, g, xs)

        def run_general(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
            return base.run_int(self, node, g, xs)

        def lower(self, node: Node, g: Graph, precision: str):
            if is_integer_op(node, g):
                return binary_call(node, g)
            if precision != "int8":
                return self.lower_float(node, g)
            return self.lower_table(node, g) if "table" in node.q else self.lower_general(node, g)

        def lower_general(self, node: Node, g: Graph):
            return base.lower(self, node, g, "int8")

    return TableFirst


@register
class Sub(make_table_first(Add)):
    op_type = "Sub"
    int8_rule = "Add's int32 rule, second multiplier negated (constant scalar: lookup table)"

    def quantize_general(self, node: Node, g: Graph) -> None:
        Add.quantize(self, node, g)
        node.q["mb"] = -node.q["mb"]


@register
class Sum(make_table_first(Add)):
    op_type = "Sum"
    int8_rule = "Add's int32 rule, pairwise (constant scalar: lookup table)"

    def check(self, node: Node, g: Graph) -> None:
        require(len(node.inputs) >= 1, node, "needs at least one input")
        for name in node.inputs:
            require(len(g.tensors[name].shape) <= 4, node, "rank above 4 is not supported")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [broadcast_shape(node, [g.tensors[i].shape for i in node.inputs])]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        integer = integer_result(node, xs)
        if integer is not None:
            return [integer]
        y = xs[0].astype(np.float64)
        for x in xs[1:]:
            y = self.function(node)(y, x.astype(np.float64))
        return [apply_fused_float(node, np.asarray(y).astype(np.float32))]


@register
class Min(Sum):
    op_type = "Min"
    int8_rule = "both operands requantized to the output scale, then compared"

    def quantize_general(self, node: Node, g: Graph) -> None:
        q, (sa, sb, sy) = self.int_params(node, g)
        (ma, shifta), (mb, shiftb) = quantize_multiplier(sa / sy), quantize_multiplier(sb / sy)
        node.q = dict(q, ma=ma, shifta=shifta, mb=mb, shiftb=shiftb)

    def run_general(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        q = node.q
        a, b = self.int_inputs(node, xs)
        qa = clamp_int8(requant(a.astype(np.int64) - q["za"], q["ma"], q["shifta"]) + q["zy"])
        qb = clamp_int8(requant(b.astype(np.int64) - q["zb"], q["mb"], q["shiftb"]) + q["zy"])
        picked = np.minimum(qa, qb) if node.op == "Min" else np.maximum(qa, qb)
        return [clamp_int8(picked, q["act_min"], q["act_max"])]

    def lower_general(self, node: Node, g: Graph):
        q = node.q
        return call("minmax_s8", **self.lower_io(node, g, "int8"), za=q["za"], zb=q["zb"], ma=q["ma"],
                    shifta=q["shifta"], mb=q["mb"], shiftb=q["shiftb"], zy=q["zy"], code=MIN_MAX_CODES[node.op],
                    lo=q["act_min"], hi=q["act_max"])


@register
class Max(Min):
    op_type = "Max"


@register
class Div(make_table_first(Mul)):
    op_type = "Div"
    int8_rule = ("activations: float32 a / b (correctly rounded) then the boundary's quantization; constant "
                 "divisor: Mul's rule by its reciprocal; constant scalar: lookup table")

    def divisor_is_const(self, node: Node, g: Graph) -> bool:
        return g.tensors[node.inputs[1]].is_const

    def operand_qparams(self, node: Node, g: Graph) -> list[tuple[float, int, np.ndarray | None]]:
        out = super().operand_qparams(node, g)
        if self.divisor_is_const(node, g):  # multiply by the reciprocal, quantized per tensor
            with np.errstate(divide="ignore"):
                inverse = (1.0 / g.const(node.inputs[1]).astype(np.float64)).astype(np.float32)
            require(bool(np.isfinite(inverse).all()), node, "the constant divisor contains 0")
            s, z = const_qparams(inverse)
            data = np.clip(np.floor(inverse.astype(np.float64) / s + 0.5) + z, -128, 127).astype(np.int8)
            out[1] = (s, z, data)
        return out

    def quantize_general(self, node: Node, g: Graph) -> None:
        if self.divisor_is_const(node, g):
            return Mul.quantize(self, node, g)
        q, (sa, sb, sy) = self.int_params(node, g)
        node.q = dict(q, scale=float(np.float32(sy * sb / sa)))

    def run_general(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        if self.divisor_is_const(node, g):
            return Mul.run_int(self, node, g, xs)
        q = node.q
        a, b = self.int_inputs(node, xs)
        num = (a.astype(np.int32) - q["za"]).astype(np.float32)
        den = (b.astype(np.int32) - q["zb"]).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = quantize_float(num / den, q["scale"], q["zy"])
        return [clamp_int8(y, q["act_min"], q["act_max"])]

    def lower_general(self, node: Node, g: Graph):
        if self.divisor_is_const(node, g):
            return Mul.lower(self, node, g, "int8")
        q = node.q
        return call("div_s8", **self.lower_io(node, g, "int8"), za=q["za"], zb=q["zb"], scale=q["scale"], zy=q["zy"],
                    lo=q["act_min"], hi=q["act_max"])


@register
class Pow(make_table_first(Binary)):
    op_type = "Pow"
    int8_rule = "constant scalar operand: lookup table; else a 256 x 256 table of both codes"

    def check_integers(self, node: Node, g: Graph) -> None:
        """An integer base: its exponent an integer tensor, or a constant of whole numbers (ONNX
        allows another type there), read as the base's type."""
        base, exponent = (g.tensors[i] for i in node.inputs)
        require(base.is_integer and not base.is_const, node, "an integer exponent needs an integer base")
        if exponent.is_const and exponent.data.dtype != np.dtype(base.dtype):
            values = np.asarray(exponent.data)
            require(bool(np.all(np.isfinite(values) & (values == np.trunc(values)))), node,
                    "an integer base needs whole-number exponents")
            node.inputs[1] = g.add_const(f"{node.name}_exponent", values.astype(base.dtype))
        check_integer_operands(node, g)

    def quantize_general(self, node: Node, g: Graph) -> None:
        q, (sa, sb, sy) = self.int_params(node, g)
        za, zb, zy = q["za"], q["zb"], q["zy"]
        codes = np.arange(-128, 128, dtype=np.int32).astype(np.int8)
        xa = dequantize(codes, sa, za).astype(np.float64)[:, None]
        xb = dequantize(codes, sb, zb).astype(np.float64)[None, :]
        with np.errstate(all="ignore"):
            table = quantize_float(np.power(xa, xb).astype(np.float32), sy, zy)
        node.q = {"const": q["const"], "table2": table.reshape(-1)}

    def run_general(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        a, b = self.int_inputs(node, xs)
        index = (a.astype(np.int32) + 128) * 256 + (b.astype(np.int32) + 128)
        return [node.q["table2"][index]]

    def lower_general(self, node: Node, g: Graph):
        return call("lut2_s8", **self.lower_io(node, g, "int8"), za=-128, zb=-128,
                    table=Weight("pow", node.q["table2"], "int8_t"))


@register
class PRelu(make_table_first(Binary)):
    op_type = "PRelu"
    summary = "x >= 0 ? x : slope * x, the slope broadcast to x (up to 4-D)"
    int8_rule = "x >= 0 requantized by sa/sy, x < 0 the product x * slope by sa*sb/sy (scalar slope: lookup table)"

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        x, slope = (g.tensors[i].shape for i in node.inputs)
        require(tuple(np.broadcast_shapes(x, slope)) == tuple(x), node,
                f"slope of shape {slope} does not broadcast to the input's {x}")
        return [tuple(x)]

    def quantize_general(self, node: Node, g: Graph) -> None:
        q, (sa, sb, sy) = self.int_params(node, g)
        (mpos, spos), (mneg, sneg) = quantize_multiplier(sa / sy), quantize_multiplier(sa * sb / sy)
        node.q = dict(q, mpos=mpos, spos=spos, mneg=mneg, sneg=sneg)

    def run_general(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        q = node.q
        a, b = self.int_inputs(node, xs)
        x = a.astype(np.int64) - q["za"]
        slope = b.astype(np.int64) - q["zb"]
        y = np.where(x >= 0, requant(x, q["mpos"], q["spos"]), requant(x * slope, q["mneg"], q["sneg"]))
        return [clamp_int8(y + q["zy"], q["act_min"], q["act_max"])]

    def lower_general(self, node: Node, g: Graph):
        q = node.q
        return call("prelu_s8", **self.lower_io(node, g, "int8"), za=q["za"], zb=q["zb"], mpos=q["mpos"],
                    spos=q["spos"], mneg=q["mneg"], sneg=q["sneg"], zy=q["zy"], lo=q["act_min"], hi=q["act_max"])


@register
class Mod(MathBinary):
    op_type = "Mod"
    summary = "remainder, numpy broadcasting (up to 4-D): with the divisor's sign (fmod = 0) or the dividend's (fmod = 1)"
    int8_rule = "none (float builds only)"
    defaults = {"fmod": 0}

    def quantize(self, node: Node, g: Graph) -> None:
        require(False, node, "has no int8 rule: build it with --precision fp32")

    def lower(self, node: Node, g: Graph, precision: str):
        if is_integer_op(node, g):
            return binary_call(node, g)
        return self.lower_float(node, g)
