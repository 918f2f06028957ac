"""Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceSumSquare,
ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp over any axes: an attribute before opset
18 (13 for ReduceSum), a constant input after; keepdims; noop_with_empty_axes.

ReduceMean over the spatial axes (2, 3) of a 4-D tensor, PyTorch's global average pool, is
rewritten by passes/reduce_mean.py into GlobalAveragePool (plus a Flatten for keepdims=0):
the pooling kernels of every set and their int8 rule. Every other reduction runs on
reduce_f32 / reduce_s8: the input seen as at most 4 dimensions (adjacent axes of the same
kind merged, size-1 axes dropped), each either kept or reduced.

int8 rules (integer sums, the one rounding rule): with x - zx the zero-point-corrected input,
- Sum, Mean: acc = sum(x - zx) (int32), y = zy + requant(acc, sx/sy), Mean with sx/(sy*n);
- Max, Min: acc = max or min of (x - zx), requantized by sx/sy;
- L1: acc = sum |x - zx|, by sx/sy; SumSquare: acc = sum (x - zx)^2, by sx^2/sy;
- L2: acc = sum (x - zx)^2, y = quantize(sqrtf((float)acc), sy/sx, zy): one correctly rounded
  float32 square root and the boundary's quantization, identical on every IEEE target.
Accumulators stay in int32: at most 33025 reduced values for a squared sum, 8421504 for the
others. ReduceProd, ReduceLogSum
and ReduceLogSumExp have no int8 rule (float builds only).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import call
from ..kernels.dtypes import VARIANTS
from ..kernels.requant import clamp_int8, quantize_float, quantize_multiplier, requant
from .common import io_args, qparams_of, require
from .registry import OpDef, register

SPATIAL = (2, 3)
MAX_GROUPS = 4
CODES = {"ReduceSum": 0, "ReduceMean": 1, "ReduceMax": 2, "ReduceMin": 3, "ReduceProd": 4, "ReduceSumSquare": 5,
         "ReduceL1": 6, "ReduceL2": 7, "ReduceLogSum": 8, "ReduceLogSumExp": 9}
FLOAT_ONLY = {"ReduceProd", "ReduceLogSum", "ReduceLogSumExp"}
SQUARED = {"ReduceSumSquare", "ReduceL2"}
SQUARED_MAX_COUNT = (2**31 - 1) // (255 * 255)
SUM_MAX_COUNT = (2**31 - 1) // 255


def reduce_axes(node: Node, g: Graph, rank: int) -> tuple[int, ...] | None:
    """The reduced axes, normalised and sorted (attribute before opset 18, a constant input
    after; none given: every axis, or none with noop_with_empty_axes). None when the axes
    are a run-time input."""
    if len(node.inputs) > 1 and node.inputs[1]:
        axes = g.const(node.inputs[1])
        if axes is None:
            return None
        values = [int(a) for a in axes.reshape(-1)]
    else:
        values = [int(a) for a in node.attrs.get("axes", [])]
    if not values:
        return () if node.attrs.get("noop_with_empty_axes", 0) else tuple(range(rank))
    require(all(-rank <= a < rank for a in values), node, f"axes {values} are out of range for a {rank}-D input")
    return tuple(sorted({a + rank if a < 0 else a for a in values}))


def is_spatial_mean(node: Node, g: Graph) -> bool:
    """ReduceMean over H, W of a 4-D tensor: the global average pool of passes/reduce_mean.py."""
    if node.op != "ReduceMean":
        return False
    rank = len(g.tensors[node.inputs[0]].shape)
    return rank == 4 and reduce_axes(node, g, rank) == SPATIAL


def reduce_groups(shape: tuple[int, ...], axes: tuple[int, ...]) -> list[tuple[int, bool]] | None:
    """The input as (size, reduced) groups: size-1 axes dropped, neighbours of the same kind
    merged, padded in front to 4 groups; None when more than 4 groups remain."""
    groups: list[tuple[int, bool]] = []
    for i, d in enumerate(shape):
        if d == 1:
            continue
        reduced = i in axes
        if groups and groups[-1][1] == reduced:
            groups[-1] = (groups[-1][0] * d, reduced)
        else:
            groups.append((d, reduced))
    if len(groups) > MAX_GROUPS:
        return None
    return [(1, False)] * (MAX_GROUPS - len(groups)) + groups


# the value of each reduction over an empty set (the frontend folds one: ReduceSum's 0, ReduceMax's -inf)
EMPTY_SET = {"ReduceSum": 0.0, "ReduceMean": np.nan, "ReduceMax": -np.inf, "ReduceMin": np.inf, "ReduceProd": 1.0,
             "ReduceSumSquare": 0.0, "ReduceL1": 0.0, "ReduceL2": 0.0, "ReduceLogSum": -np.inf,
             "ReduceLogSumExp": -np.inf}
INTEGER_REDUCTIONS = ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd")


def empty_reduce(op: str, x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    """A reduction over an empty set: its identity (bool Max: False, Min: True; integers: the type's
    lowest or highest)."""
    shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keepdims else \
        [d for i, d in enumerate(x.shape) if i not in axes]
    if x.dtype == np.bool_:
        return np.full(shape, op == "ReduceMin", dtype=bool)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        value = {"ReduceMax": info.min, "ReduceMin": info.max, "ReduceProd": 1}.get(op, 0)
        return np.full(shape, value, dtype=x.dtype)
    return np.full(shape, EMPTY_SET[op], dtype=np.float32)


def integer_reduce(op: str, x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    """Sum, Max, Min, Prod of integers (wrapping, as the kernels) and Max / Min of bool (any / all)."""
    if x.size == 0:
        return empty_reduce(op, x, axes, keepdims)
    if op in ("ReduceMax", "ReduceMin"):
        return (x.max if op == "ReduceMax" else x.min)(axis=axes, keepdims=keepdims)
    wide = x.astype(np.int64).view(np.uint64)
    with np.errstate(over="ignore"):
        y = wide.sum(axis=axes, keepdims=keepdims) if op == "ReduceSum" else wide.prod(axis=axes, keepdims=keepdims)
    return np.asarray(y).view(np.int64).astype(x.dtype)


def float_reduce(op: str, x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    if x.size == 0:
        return empty_reduce(op, x, axes, keepdims)
    x = x.astype(np.float64)
    kw = {"axis": axes, "keepdims": keepdims}
    if op == "ReduceLogSumExp":
        if not axes:
            return x
        m = x.max(axis=axes, keepdims=True)
        y = m + np.log(np.exp(x - m).sum(**dict(kw, keepdims=True)))
        return y if keepdims else y.squeeze(axis=axes)
    functions = {
        "ReduceSum": lambda: x.sum(**kw), "ReduceMean": lambda: x.mean(**kw), "ReduceMax": lambda: x.max(**kw),
        "ReduceMin": lambda: x.min(**kw), "ReduceProd": lambda: x.prod(**kw),
        "ReduceSumSquare": lambda: (x * x).sum(**kw), "ReduceL1": lambda: np.abs(x).sum(**kw),
        "ReduceL2": lambda: np.sqrt((x * x).sum(**kw)), "ReduceLogSum": lambda: np.log(x.sum(**kw))}
    with np.errstate(divide="ignore", invalid="ignore"):
        return functions[op]()


def int_accumulate(op: str, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The integer accumulator of the int8 rule (x already zero-point corrected, int64)."""
    if op in ("ReduceSum", "ReduceMean"):
        return x.sum(axis=axes, keepdims=True)
    if op == "ReduceMax":
        return x.max(axis=axes, keepdims=True)
    if op == "ReduceMin":
        return x.min(axis=axes, keepdims=True)
    if op == "ReduceL1":
        return np.abs(x).sum(axis=axes, keepdims=True)
    return (x * x).sum(axis=axes, keepdims=True)  # SumSquare, L2


def make_reduce(op_type: str) -> type[OpDef]:
    class Reduce(OpDef):
        summary = "reduction over any constant axes, keepdims, noop_with_empty_axes"
        int8_rule = ("none (float builds only)" if op_type in FLOAT_ONLY else
                     "integer accumulation, then the requantization rule" + (
                         " (square root in float32)" if op_type == "ReduceL2" else ""))
        defaults = {"keepdims": 1, "noop_with_empty_axes": 0}
        integer_inputs = op_type in INTEGER_REDUCTIONS

        def axes(self, node: Node, g: Graph) -> tuple[int, ...]:
            return reduce_axes(node, g, len(g.tensors[node.inputs[0]].shape))

        def check(self, node: Node, g: Graph) -> None:
            shape = g.tensors[node.inputs[0]].shape
            axes = self.axes(node, g)
            require(axes is not None, node, "the axes must be a constant")
            x = g.tensors[node.inputs[0]]
            if x.is_integer:
                require(x.dtype != "bool" or op_type in ("ReduceMax", "ReduceMin"), node,
                        "of bool tensors only ReduceMax and ReduceMin are supported")
                require(reduce_groups(shape, axes) is not None, node,
                        f"reducing axes {list(axes)} of shape {list(shape)} alternates kept and reduced axes "
                        f"more than {MAX_GROUPS} times")
                return
            if not is_spatial_mean(node, g):
                require(reduce_groups(shape, axes) is not None, node,
                        f"reducing axes {list(axes)} of shape {list(shape)} alternates kept and reduced axes "
                        f"more than {MAX_GROUPS} times")

        def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
            shape = g.tensors[node.inputs[0]].shape
            axes = self.axes(node, g)
            if self.attr(node, "keepdims"):
                return [tuple(1 if i in axes else d for i, d in enumerate(shape))]
            return [tuple(d for i, d in enumerate(shape) if i not in axes)]

        def dtypes(self, node: Node, g: Graph) -> list[str]:
            x = g.tensors[node.inputs[0]]
            return [x.dtype if x.is_integer else "float32"]

        def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
            axes = self.axes(node, g)
            if xs[0].dtype.kind in "biu":
                return [np.asarray(integer_reduce(op_type, xs[0], axes, bool(self.attr(node, "keepdims"))))]
            y = float_reduce(op_type, xs[0], axes, bool(self.attr(node, "keepdims")))
            return [np.asarray(y).astype(np.float32)]

        def macs(self, node: Node, g: Graph) -> int:
            return g.tensors[node.inputs[0]].size

        def count(self, node: Node, g: Graph) -> int:
            shape = g.tensors[node.inputs[0]].shape
            return int(np.prod([shape[a] for a in self.axes(node, g)], dtype=np.int64))

        def quantize(self, node: Node, g: Graph) -> None:
            require(op_type not in FLOAT_ONLY, node, "has no int8 rule: build it with --precision fp32")
            n = self.count(node, g)
            limit, what = (SQUARED_MAX_COUNT, "squares") if op_type in SQUARED else (SUM_MAX_COUNT, "sums")
            require(n <= limit, node, f"int8 {what} of {n} values overflow int32 (at most {limit})")
            sx, zx = qparams_of(g, node.inputs[0])
            sy, zy = qparams_of(g, node.outputs[0])
            real = {"ReduceMean": sx / (sy * n), "ReduceSumSquare": sx * sx / sy}.get(op_type, sx / sy)
            mult, shift = quantize_multiplier(real)
            node.q = {"zx": zx, "zy": zy, "mult": mult, "shift": shift, "scale": float(np.float32(sy / sx))}

        def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
            q = node.q
            acc = int_accumulate(op_type, xs[0].astype(np.int64) - q["zx"], self.axes(node, g))
            if op_type == "ReduceL2":
                y = quantize_float(np.sqrt(acc.astype(np.int32).astype(np.float32)), q["scale"], q["zy"])
            else:
                y = clamp_int8(requant(acc, q["mult"], q["shift"]) + q["zy"])
            return [y.reshape(self.infer(node, g)[0])]

        def lower(self, node: Node, g: Graph, precision: str):
            groups = reduce_groups(g.tensors[node.inputs[0]].shape, self.axes(node, g))
            geometry = {f"d{i}": size for i, (size, _) in enumerate(groups)}
            geometry.update({f"r{i}": int(reduced) for i, (_, reduced) in enumerate(groups)})
            x = g.tensors[node.inputs[0]]
            if x.is_integer:
                return call(f"reduce_int_{VARIANTS[x.dtype]}", **io_args(node), **geometry, code=CODES[op_type])
            if precision == "int8":
                q = node.q
                return call("reduce_s8", **io_args(node), **geometry, code=CODES[op_type], zx=q["zx"],
                            mult=q["mult"], shift=q["shift"], zy=q["zy"], scale=q["scale"])
            return call("reduce_f32", **io_args(node), **geometry, code=CODES[op_type],
                        count=self.count(node, g))

    Reduce.op_type = op_type
    Reduce.__name__ = op_type
    return Reduce


for _op in CODES:
    register(make_reduce(_op))
