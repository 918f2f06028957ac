"""Comparisons to bool (Equal, Greater, Less, GreaterOrEqual, LessOrEqual) and logic on bool
tensors (And, Or, Xor, Not), numpy broadcasting up to 4-D, at run time or folded when every input
is a constant. The masks they make feed Where, Not/And/Or and Cast.

Float and integer operands compare exactly (compare_<type>, the same C comparison as numpy's).
int8 rules, for quantized (float) operands:
- against a constant scalar: a 256-entry bool table of each code's dequantized value compared
  with the constant in float64 (lut_b8): exact;
- two activations (or a constant tensor, quantized at its own range): their dequantized values
  (float)(q - z) * s compared in float32 (compare_q8): correctly rounded, the same on every target.
Comparisons and logic of integer and bool tensors are the same in every build.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import Buf, Weight, call
from ..kernels.dtypes import VARIANTS
from ..kernels.requant import dequantize
from .common import broadcast_shape, qparams_of, require
from .elementwise import const_qparams
from .integer import MAX_RANK, broadcast_io
from .registry import OpDef, register

COMPARE_CODES = {"Equal": 0, "Greater": 1, "Less": 2, "GreaterOrEqual": 3, "LessOrEqual": 4}
COMPARE_FUNCTIONS = {"Equal": np.equal, "Greater": np.greater, "Less": np.less, "GreaterOrEqual": np.greater_equal,
                     "LessOrEqual": np.less_equal}
LOGIC_CODES = {"And": 0, "Or": 1, "Xor": 2}
LOGIC_FUNCTIONS = {"And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}


class ToBool(OpDef):
    """An element-wise op with a bool result, numpy broadcasting."""

    integer_inputs = True
    arity = 2

    def check(self, node: Node, g: Graph) -> None:
        require(len([i for i in node.inputs if i]) == self.arity, node, f"needs {self.arity} input(s)")
        for name in node.inputs:
            require(len(g.tensors[name].shape) <= MAX_RANK, node, f"rank above {MAX_RANK} is not supported")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [broadcast_shape(node, [g.tensors[i].shape for i in node.inputs if i])]

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return ["bool"]


def compare_values(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The comparison as the kernels make it: integers exactly, floats in float32."""
    return COMPARE_FUNCTIONS[op](np.asarray(a), np.asarray(b))


class Compare(ToBool):
    summary = "element-wise comparison to bool (float, integer and bool operands), broadcasting up to 4-D"
    int8_rule = "constant scalar: a 256-entry bool table; else the dequantized values compared in float32"

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [compare_values(node.op, xs[0], xs[1])]

    def operand_type(self, node: Node, g: Graph) -> str:
        runtime = [g.tensors[i] for i in node.inputs if not g.tensors[i].is_const]
        return runtime[0].dtype if runtime else g.tensors[node.inputs[0]].dtype

    def quantize(self, node: Node, g: Graph) -> None:
        a, b = (g.tensors[i] for i in node.inputs)
        scalar = [k for k, t in enumerate((a, b)) if t.is_const and t.size == 1]
        if len(scalar) == 1:  # x OP c: a table of every code
            k = scalar[0]
            act = node.inputs[1 - k]
            codes = np.arange(-128, 128, dtype=np.int32).astype(np.int8)
            x = dequantize(codes, *qparams_of(g, act)).astype(np.float64)
            c = np.float64(g.const(node.inputs[k]).reshape(()))
            table = compare_values(node.op, x, c) if k == 1 else compare_values(node.op, c, x)
            node.q = {"table": table, "act": 1 - k}
            return
        parts = []
        for t in (a, b):
            s, z = const_qparams(t.data) if t.is_const else qparams_of(g, t.name)
            codes = None if not t.is_const else np.clip(np.floor(t.data.astype(np.float64) / s + 0.5) + z, -128,
                                                         127).astype(np.int8)
            parts.append({"scale": float(np.float32(s)), "zp": int(z), "codes": codes})
        node.q = {"parts": parts}

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        q = node.q
        if "table" in q:
            return [q["table"][xs[q["act"]].astype(np.int32) + 128]]
        values = [((x if p["codes"] is None else p["codes"]).astype(np.int32) - p["zp"]).astype(np.float32)
                  * np.float32(p["scale"]) for x, p in zip(xs, q["parts"])]
        return [compare_values(node.op, *values)]

    def lower(self, node: Node, g: Graph, precision: str):
        code = COMPARE_CODES[node.op]
        if node.q and "table" in node.q:
            act = node.inputs[node.q["act"]]
            return call("lut_b8", in_=Buf(act, const=True), out=Buf(node.outputs[0]), count=g.tensors[act].size,
                        table=Weight("table", node.q["table"], "bool"))
        if node.q:
            pa, pb = node.q["parts"]
            io = broadcast_io(node, g, "int8")
            for key, p in zip("ab", (pa, pb)):
                if p["codes"] is not None:
                    io[key] = Weight(f"in{'ab'.index(key)}", p["codes"], "int8_t")
            return call("compare_q8", **io, za=pa["zp"], zb=pb["zp"], sa=pa["scale"], sb=pb["scale"], code=code)
        dtype = self.operand_type(node, g)
        return call(f"compare_{VARIANTS[dtype]}", **broadcast_io(node, g, dtype), code=code)


class Logic(ToBool):
    summary = "element-wise logic of bool tensors, broadcasting up to 4-D"
    int8_rule = "bool tensors (not quantized)"

    def check(self, node: Node, g: Graph) -> None:
        super().check(node, g)
        for name in node.inputs:
            require(g.tensors[name].dtype == "bool", node, f"input '{name}' is {g.tensors[name].dtype}, not bool")

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        if node.op == "Not":
            return [np.logical_not(xs[0])]
        return [LOGIC_FUNCTIONS[node.op](xs[0], xs[1])]

    def lower(self, node: Node, g: Graph, precision: str):
        if node.op == "Not":
            out = g.tensors[node.outputs[0]]
            return call("int_unary_b8", in_=Buf(node.inputs[0], const=True), out=Buf(out.name), count=out.size,
                        code=3, lo=0, hi=0)
        return call("logic_b8", **broadcast_io(node, g, "bool"), code=LOGIC_CODES[node.op])


for _op in COMPARE_CODES:
    register(type(_op, (Compare,), {"op_type": _op}))
for _op in LOGIC_CODES:
    register(type(_op, (Logic,), {"op_type": _op}))
register(type("Not", (Logic,), {"op_type": "Not", "arity": 1, "summary": "element-wise Not of a bool tensor"}))
