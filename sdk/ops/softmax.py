"""Softmax and LogSoftmax along any axis (opset 13+; older models reach here through the
ONNX version converter, which writes their "coerce to 2-D" semantics as Flatten, Softmax on
the last axis and Reshape). The tensor is seen as [outer, n, inner] with n the axis.

int8 rules, integer only (every target agrees bit for bit). With d = max(x) - x in [0, 255]
along the axis and e = EXP[d] = round(2^16 * exp(-d * input_scale)) from a table computed
here, S the sum of e along the axis:
- Softmax: output fixed at scale 1/256, zero point -128 (as TFLite);
  y = floor((512 * e + S) / (2 * S)) - 128, clamped: integer division of positive numbers.
- LogSoftmax: output fixed at scale 16/256, zero point 127 (range [-16, 0]);
  y = 127 - D[d] - L(S), clamped, where D[d] = round(d * sx / sy) (a table) and L(S), the
  rounded ln(S / 2^16) / sy, is the count of thresholds T_j = ceil(2^16 * exp((j - 0.5) * sy)),
  j = 1..255, that S reaches (int64 comparisons). Two roundings: within one step of the
  exact result.
"""
from __future__ import annotations

import numpy as np

from ..ir import QParams
from ..kernels.contract import call
from ..kernels.requant import clamp_int8
from .common import Weight, io_args, per_tensor, qparams_of, require
from .registry import OpDef, register

EXP_ONE = 1 << 16
LOG_SCALE, LOG_ZERO = 16.0 / 256.0, 127
THRESHOLDS = 255
THRESHOLD_CAP = 1 << 62


def exp_table(sx: float) -> np.ndarray:
    return np.round(EXP_ONE * np.exp(-np.arange(256) * float(sx))).astype(np.int32)


def axis_geometry(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """(outer, n, inner): the tensor as [outer, n, inner] with n the softmax axis."""
    axis %= len(shape)
    return int(np.prod(shape[:axis])), int(shape[axis]), int(np.prod(shape[axis + 1:]))


class SoftmaxBase(OpDef):
    defaults = {"axis": -1}
    output_q: tuple[float, int] = (1.0 / 256.0, -128)  # the int8 output's fixed scale and zero point

    def fixed_qparams(self, node, g) -> QParams:
        return per_tensor(*self.output_q)

    def check(self, node, g) -> None:
        rank = len(g.tensors[node.inputs[0]].shape)
        axis = self.attr(node, "axis")
        require(-rank <= axis < max(rank, 1), node, f"axis {axis} is out of range for a {rank}-D input")

    def infer(self, node, g) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def geometry(self, node, g) -> tuple[int, int, int]:
        return axis_geometry(g.tensors[node.inputs[0]].shape, self.attr(node, "axis"))

    def float_steps(self, node, xs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x - max, exp(x - max), their sum) along the axis (float64, keepdims)."""
        axis = self.attr(node, "axis")
        x = xs[0].astype(np.float64)
        shifted = x - x.max(axis=axis, keepdims=True)
        e = np.exp(shifted)
        return shifted, e, e.sum(axis=axis, keepdims=True)

    def int_steps(self, node, xs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(d, S): d = max - x along the axis, S = sum of EXP[d] along it (keepdims)."""
        axis = self.attr(node, "axis")
        x = xs[0].astype(np.int32)
        d = x.max(axis=axis, keepdims=True) - x
        return d, node.q["exp"][d].astype(np.int64).sum(axis=axis, keepdims=True)

    def lower_io(self, node, g) -> dict:
        outer, n, inner = self.geometry(node, g)
        return dict(io_args(node), rows=outer, cols=n, inner=inner)


@register
class Softmax(SoftmaxBase):
    op_type = "Softmax"
    summary = "softmax along any axis"
    int8_rule = "integer exp table and division; output scale 1/256"

    def run_float(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        _, e, total = self.float_steps(node, xs)
        return [(e / total).astype(np.float32)]

    def quantize(self, node, g) -> None:
        node.q = {"exp": exp_table(qparams_of(g, node.inputs[0])[0])}

    def run_int(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        d, s = self.int_steps(node, xs)
        e = node.q["exp"][d].astype(np.int64)
        return [clamp_int8((512 * e + s) // (2 * s) - 128)]

    def lower(self, node, g, precision: str):
        io = self.lower_io(node, g)
        if precision == "int8":
            return call("softmax_s8", **io, exp_table=Weight("exp", node.q["exp"], "int32_t"))
        return call("softmax_f32", **io, as_log=0)


@register
class LogSoftmax(SoftmaxBase):
    op_type = "LogSoftmax"
    summary = "log of softmax along any axis"
    int8_rule = "integer exp table and log thresholds; output scale 16/256"
    output_q = (LOG_SCALE, LOG_ZERO)

    def run_float(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        shifted, _, total = self.float_steps(node, xs)
        return [(shifted - np.log(total)).astype(np.float32)]

    def quantize(self, node, g) -> None:
        sx = qparams_of(g, node.inputs[0])[0]
        steps = np.minimum(np.round(np.arange(256) * float(sx) / LOG_SCALE), 256).astype(np.int32)
        j = np.arange(1, THRESHOLDS + 1, dtype=np.float64)
        with np.errstate(over="ignore"):
            limits = np.ceil(EXP_ONE * np.exp((j - 0.5) * LOG_SCALE))
        node.q = {"exp": exp_table(sx), "steps": steps,
                  "thresholds": np.minimum(limits, THRESHOLD_CAP).astype(np.int64)}

    def run_int(self, node, g, xs: list[np.ndarray]) -> list[np.ndarray]:
        d, s = self.int_steps(node, xs)
        logs = (s[..., None] >= node.q["thresholds"]).sum(axis=-1)
        return [clamp_int8(LOG_ZERO - node.q["steps"][d] - logs)]

    def lower(self, node, g, precision: str):
        io = self.lower_io(node, g)
        if precision == "int8":
            q = node.q
            return call("logsoftmax_s8", **io, exp_table=Weight("exp", q["exp"], "int32_t"),
                        steps=Weight("steps", q["steps"], "int32_t"),
                        thresholds=Weight("thresholds", q["thresholds"], "int64_t"))
        return call("softmax_f32", **io, as_log=1)
