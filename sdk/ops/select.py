"""Where at run time: out = cond ? a : b, with a bool condition (a run-time mask or a constant)
and float or integer operands (run-time or constant), numpy broadcasting up to 4-D. With every
input constant the frontend folds it instead.

int8 rule: the output is calibrated; each float operand is requantized to the output's scale
(Concat's rule: zy + requant(x - zx)), so the selected value is the operand's value at the
output's scale; integer operands are selected as they are. The kernel walks the 4-D broadcast
with element strides for a, b and cond.
"""
from __future__ import annotations

import numpy as np

from ..kernels.contract import call
from ..kernels.dtypes import CTYPES, VARIANTS
from ..kernels.requant import clamp_int8, quantize_multiplier, requant
from .common import Buf, Weight, broadcast_shape, qparams_of, require
from .elementwise import MAX_RANK, broadcast_strides, const_qparams
from .registry import OpDef, register


@register
class Where(OpDef):
    op_type = "Where"
    summary = "cond ? a : b with a bool condition (a run-time mask or a constant) and float or integer operands (up to 4-D)"
    integer_inputs = True

    def check(self, node, g) -> None:
        require(len(node.inputs) == 3, node, "needs three inputs")
        cond = g.tensors[node.inputs[0]]
        require(cond.dtype == "bool" or cond.is_const, node, f"the condition is {cond.dtype}, not bool")
        for name in node.inputs:
            require(len(g.tensors[name].shape) <= MAX_RANK, node, f"rank above {MAX_RANK} is not supported")

    def infer(self, node, g) -> list[tuple[int, ...]]:
        return [broadcast_shape(node, [g.tensors[i].shape for i in node.inputs])]

    def dtypes(self, node, g) -> list[str]:
        a, b = (g.tensors[i] for i in node.inputs[1:])
        runtime = [t for t in (a, b) if not t.is_const]
        return [(runtime[0] if runtime else a).dtype if (runtime[0] if runtime else a).is_integer else "float32"]

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
        t, out = g.tensors[name], g.tensors[node.outputs[0]]
        if not t.is_const:
            return Buf(name, const=True)
        if out.is_integer:
            return Weight(f"in{index}", t.data.astype(out.dtype), CTYPES[out.dtype])
        if precision == "int8":
            return Weight(f"in{index}", node.q["parts"][index - 1]["codes"], "int8_t")
        return Weight(f"in{index}", t.data.astype(np.float32), "float")

    def lower(self, node, g, precision: str):
        out_t = g.tensors[node.outputs[0]]
        out = out_t.shape
        geometry = {f"d{i}": d for i, d in enumerate((1,) * (MAX_RANK - len(out)) + tuple(out))}
        for key, name in zip(("sc", "sa", "sb"), node.inputs):
            geometry.update({f"{key}{i}": s for i, s in enumerate(broadcast_strides(g.tensors[name].shape, out))})
        cond_t = g.tensors[node.inputs[0]]
        cond = (Weight("cond", cond_t.data.astype(bool), "bool") if cond_t.is_const
                else Buf(cond_t.name, const=True))
        io = dict(a=self.operand(node, g, 1, precision), b=self.operand(node, g, 2, precision),
                  out=Buf(node.outputs[0]), cond=cond, **geometry)
        if out_t.dtype == "int8" and out_t.is_integer:  # int8 integers: the requantizing kernel, identity rule
            mult, shift = quantize_multiplier(1.0)
            return call("where_s8", **io, za=0, ma=mult, sha=shift, zb=0, mb=mult, shb=shift, zy=0)
        if out_t.is_integer:
            return call(f"where_{VARIANTS[out_t.dtype]}", **io)
        if precision == "int8":
            (pa, pb), zy = node.q["parts"], node.q["zy"]
            return call("where_s8", **io, za=pa["zx"], ma=pa["mult"], sha=pa["shift"], zb=pb["zx"], mb=pb["mult"],
                        shb=pb["shift"], zy=zy)
        return call("where_f32", **io)
