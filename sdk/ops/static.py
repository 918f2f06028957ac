"""Ops evaluated at compile time: Shape, Size, Range, ConstantOfShape, the comparisons (Equal,
Greater, Less, GreaterOrEqual, LessOrEqual), the logic ops (Not, And, Or), ArgMax / ArgMin,
and Cast of a constant (Where of constants too: select.py).

Non-float tensors (int64 indices and shapes, bool masks) exist in this compiler only as
compile-time constants: the frontend evaluates every node whose inputs are all constants
(and Shape / Size, whose result a static-shape model knows) as soon as its shape is known
(frontend/loader.py `infer_shapes`), so shape-computing subgraphs as exporters write them
(Shape -> Gather -> Unsqueeze -> Concat -> Reshape) become constants before the op that
needs one checks it. Every activation at run time is float (int8 once quantized). A node of
this module whose inputs are not all constant is refused with one line naming it. Cast of a
run-time float tensor to float is an alias; to any other type it is refused.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from ..ir import Graph, Node
from .common import broadcast_shape, require
from .registry import OpDef, register
from .shape import Alias

FOLDED = "folded at compile time"


def compile_time_inputs(node: Node, g: Graph) -> list[np.ndarray]:
    """The inputs of a node evaluated at compile time: constants, and for Shape / Size (which
    read only a shape) a zero-strided stand-in of a run-time input, which costs no memory."""
    return [t.data if t.is_const else np.broadcast_to(np.zeros((), np.float32), t.shape)
            for t in (g.tensors[i] for i in node.inputs if i)]


class Static(OpDef):
    """An op that only exists at compile time: it is folded, never lowered."""

    int8_rule = FOLDED
    # Shape and Size read only their input's (static) shape, not its values
    reads_shape_only = False

    def check(self, node: Node, g: Graph) -> None:
        runtime = [i for i in node.inputs if i and not g.tensors[i].is_const]
        require(not runtime, node, f"input '{runtime[0] if runtime else ''}' is computed at run time; this op "
                                   f"is only supported on constants (folded at compile time: non-float tensors "
                                   f"exist only as constants)")

    def values(self, node: Node, g: Graph) -> list[np.ndarray]:
        return self.run_float(node, g, compile_time_inputs(node, g))

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [tuple(v.shape) for v in self.values(node, g)]


class Elementwise(Static):
    """An element-wise op of constants given by a numpy function (numpy broadcasting)."""

    function = staticmethod(np.equal)

    # from the shapes alone: two constants may broadcast to something huge
    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [broadcast_shape(node, [g.tensors[i].shape for i in node.inputs if i])]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(self.function(*xs))]


def numpy_function(op: str, fn, doc: str) -> None:
    register(type(op, (Elementwise,), {"op_type": op, "summary": doc, "function": staticmethod(fn)}))


for _op, _fn in {"Equal": np.equal, "Greater": np.greater, "Less": np.less, "GreaterOrEqual": np.greater_equal,
                 "LessOrEqual": np.less_equal, "And": np.logical_and, "Or": np.logical_or}.items():
    numpy_function(_op, _fn, f"element-wise {_op} of constants (bool result)")
numpy_function("Not", np.logical_not, "element-wise Not of a constant bool tensor")


class ShapeReader(Static):
    """Reads only its input's shape, which a static-shape model knows: any input will do."""

    reads_shape_only = True

    def check(self, node: Node, g: Graph) -> None:
        pass


@register
class Shape(ShapeReader):
    op_type = "Shape"
    summary = "the (static) shape of any tensor, as an int64 constant; start/end (opset 15)"

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        start, end = node.attrs.get("start", 0), node.attrs.get("end")
        return [np.array(xs[0].shape[slice(start, end)], dtype=np.int64)]


@register
class Size(ShapeReader):
    op_type = "Size"
    summary = "the (static) element count of any tensor, as an int64 constant"

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.array(xs[0].size, dtype=np.int64)]


def range_count(start: float, limit: float, delta: float) -> int:
    return max(int(np.ceil((limit - start) / delta)), 0)


@register
class Range(Static):
    op_type = "Range"
    summary = "start, limit, delta constants"

    def scalars(self, node: Node, g: Graph) -> tuple[np.ndarray, ...]:
        values = [g.tensors[i].data for i in node.inputs]
        require(len(values) == 3 and all(v.size == 1 for v in values), node, "start, limit and delta must be scalars")
        require(float(values[2].reshape(-1)[0]) != 0, node, "delta must not be 0")
        return tuple(v.reshape(()) for v in values)

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        start, limit, delta = (float(v) for v in self.scalars(node, g))
        return [(range_count(start, limit, delta),)]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        start, limit, delta = self.scalars(node, g)
        count = range_count(float(start), float(limit), float(delta))
        return [(start + np.arange(count) * delta).astype(start.dtype)]


@register
class ConstantOfShape(Static):
    op_type = "ConstantOfShape"
    summary = "a constant filled with `value` (float 0 by default)"

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        shape = [int(d) for d in g.tensors[node.inputs[0]].data.reshape(-1)]
        require(min(shape, default=0) >= 0, node, f"shape {shape} has a negative dimension")
        return [tuple(shape)]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        value = node.attrs.get("value", np.zeros(1, np.float32))
        value = np.asarray(value).reshape(-1)
        require(value.size == 1, node, "value must hold one element")
        return [np.full(self.infer(node, g)[0], value[0], dtype=value.dtype)]


class ArgBase(Static):
    defaults = {"axis": 0, "keepdims": 1, "select_last_index": 0}
    pick = staticmethod(np.argmax)

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        x = xs[0]
        require(x.ndim > 0, node, "the input must have at least one dimension")
        axis = int(self.attr(node, "axis"))
        require(-x.ndim <= axis < x.ndim, node, f"axis {axis} is out of range for rank {x.ndim}")
        axis %= x.ndim
        if self.attr(node, "select_last_index"):  # the last of equal values: search the reversed axis
            flipped = np.flip(x, axis)
            idx = x.shape[axis] - 1 - self.pick(flipped, axis=axis)
        else:
            idx = self.pick(x, axis=axis)
        idx = idx.astype(np.int64)
        return [np.expand_dims(idx, axis) if self.attr(node, "keepdims") else idx]


@register
class ArgMax(ArgBase):
    op_type = "ArgMax"
    summary = "index of the largest value of a constant (keepdims, select_last_index)"


@register
class ArgMin(ArgBase):
    op_type = "ArgMin"
    summary = "index of the smallest value of a constant (keepdims, select_last_index)"
    pick = staticmethod(np.argmin)


@register
class Cast(Alias):
    op_type = "Cast"
    summary = "a constant to any numeric type (folded); a run-time float tensor to float (no code)"
    int8_rule = "alias (no code); constants folded"

    def target(self, node: Node) -> np.dtype:
        to = node.attrs.get("to")
        require(to in TensorProto.DataType.values() and to not in (TensorProto.UNDEFINED, TensorProto.STRING),
                node, f"cast to type {to} is not supported")
        return np.dtype(helper.tensor_dtype_to_np_dtype(to))

    def check(self, node: Node, g: Graph) -> None:
        require(self.target(node) == np.float32, node, "a tensor computed at run time can only be cast to float "
                                                       "(non-float tensors exist only as constants)")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        target = self.target(node)
        if target == np.bool_ or xs[0].dtype.kind != "f" or target.kind == "f":
            return [xs[0].astype(target)]
        with np.errstate(invalid="ignore", over="ignore"):  # ONNX: float to int truncates towards zero
            return [np.trunc(xs[0]).astype(target)]

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [xs[0]]
