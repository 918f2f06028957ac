"""Softmax along the last axis.

int8 rule: the output is fixed at scale 1/256, zero point -128 (as TFLite). With
d = max(x) - x in [0, 255], e = EXP[d] = round(2^16 * exp(-d * input_scale)) from a
table computed here, and the row sum S of e, the output is
floor((512 * e + S) / (2 * S)) - 128, clamped: integer division of positive numbers,
identical on every target.
"""
from __future__ import annotations

import numpy as np

from ..ir import QParams
from ..quant.requant import clamp_int8
from ..codegen.kernel_api import call
from .common import Weight, io_args, per_tensor, qparams_of, require
from .registry import OpDef, register

EXP_ONE = 1 << 16


@register
class Softmax(OpDef):
    op_type = "Softmax"
    summary = "softmax over the last axis (int8 output at scale 1/256)"
    defaults = {"axis": -1}

    def check(self, node, g):
        shape = g.tensors[node.inputs[0]].shape
        require(self.attr(node, "axis") % len(shape) == len(shape) - 1, node, "only the last axis is supported")

    def infer(self, node, g):
        return [g.tensors[node.inputs[0]].shape]

    def run_float(self, node, g, xs):
        x = xs[0].astype(np.float64)
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return [(e / e.sum(axis=-1, keepdims=True)).astype(np.float32)]

    def fixed_qparams(self, node, g) -> QParams:
        return per_tensor(1.0 / 256.0, -128)

    def quantize(self, node, g):
        sx, _ = qparams_of(g, node.inputs[0])
        table = np.round(EXP_ONE * np.exp(-np.arange(256) * float(sx))).astype(np.int32)
        node.q = {"table": table}

    def run_int(self, node, g, xs):
        x = xs[0].astype(np.int32)
        e = node.q["table"][x.max(axis=-1, keepdims=True) - x].astype(np.int64)
        s = e.sum(axis=-1, keepdims=True)
        return [clamp_int8((512 * e + s) // (2 * s) - 128)]

    def lower(self, node, g, precision):
        shape = g.tensors[node.inputs[0]].shape
        cols = shape[-1]
        io = dict(io_args(node), rows=int(np.prod(shape)) // cols, cols=cols)
        if precision == "int8":
            return call("softmax_s8", **io, exp_table=Weight("exp", node.q["table"], "int32_t"))
        return call("softmax_f32", **io)
