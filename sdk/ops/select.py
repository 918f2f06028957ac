"""Where at run time: out = cond ? a : b, with a constant condition (bool tensors exist only as
compile-time constants, see static.py) and run-time or constant float operands, numpy
broadcasting up to 4-D. With every input constant the frontend folds it instead.

int8 rule: the output is calibrated; each operand is requantized to the output's scale
(Concat's rule: zy + requant(x - zx)), so the selected value is the operand's value at the
output's scale. The kernel walks the 4-D broadcast with element strides for a, b and cond.
"""
from __future__ import annotations

import numpy as np

from ..kernels.contract import call
from ..kernels.requant import clamp_int8, quantize_multiplier, requant
from .common import Buf, Weight, broadcast_shape, qparams_of, require
from .elementwise import MAX_RANK, broadcast_strides, const_qparams
from .registry import OpDef, register


@register
class Where(OpDef):
    op_type = "Where"
    summary = "cond ? a : b with a constant bool condition (up to 4-D); all-constant: folded"

    def check(self, node, g) -> None:
        require(len(node.inputs) == 3, node, "needs three inputs")
        cond = g.const(node.inputs[0])
        require(cond is not None, node, "the condition must be a constant (bool tensors exist only as constants)")
        for name in node.inputs:
            require(len(g.tensors[name].shape) <= MAX_RANK, node, f"rank above {MAX_RANK} is not supported")

    def infer(self, node, g) -> list[tuple[int, ...]]:
        return [broadcast_shape(node, [g.tensors[i].shape for i in node.inputs])]

    def run_float(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.where(xs[0].astype(bool), xs[1], xs[2])]  # folded: int64 shapes stay int64

    def quantize(self, node, g) -> None:
        sy, zy = qparams_of(g, node.outputs[0])
        parts = []
        for name in node.inputs[1:]:
            t = g.tensors[name]
            sx, zx = const_qparams(t.data) if t.is_const else qparams_of(g, name)
            codes = None
            if t.is_const:
                codes = np.clip(np.floor(t.data.astype(np.float64) / sx + 0.5) + zx, -128, 127).astype(np.int8)
            mult, shift = quantize_multiplier(sx / sy)
            parts.append({"zx": zx, "mult": mult, "shift": shift, "codes": codes})
        node.q = {"zy": zy, "parts": parts}

    def run_int(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        q = node.q
        ys = [clamp_int8(requant((x if p["codes"] is None else p["codes"]).astype(np.int64) - p["zx"], p["mult"],
                                 p["shift"]) + q["zy"]) for x, p in zip(xs[1:], q["parts"])]
        return [np.where(xs[0].astype(bool), ys[0], ys[1]).astype(np.int8)]

    def operand(self, node, g, index: int, precision: str) -> Weight | Buf:
        name = node.inputs[index]
        t = g.tensors[name]
        if not t.is_const:
            return Buf(name, const=True)
        if precision == "int8":
            return Weight(f"in{index}", node.q["parts"][index - 1]["codes"], "int8_t")
        return Weight(f"in{index}", t.data.astype(np.float32), "float")

    def lower(self, node, g, precision: str):
        out = g.tensors[node.outputs[0]].shape
        geometry = {f"d{i}": d for i, d in enumerate((1,) * (MAX_RANK - len(out)) + tuple(out))}
        for key, name in zip(("sc", "sa", "sb"), node.inputs):
            geometry.update({f"{key}{i}": s for i, s in enumerate(broadcast_strides(g.tensors[name].shape, out))})
        cond = Weight("cond", g.const(node.inputs[0]).astype(bool).astype(np.int8), "int8_t")
        io = dict(a=self.operand(node, g, 1, precision), b=self.operand(node, g, 2, precision),
                  out=Buf(node.outputs[0]), cond=cond, **geometry)
        if precision == "int8":
            (pa, pb), zy = node.q["parts"], node.q["zy"]
            return call("where_s8", **io, za=pa["zx"], ma=pa["mult"], sha=pa["shift"], zb=pb["zx"], mb=pb["mult"],
                        shb=pb["shift"], zy=zy)
        return call("where_f32", **io)
