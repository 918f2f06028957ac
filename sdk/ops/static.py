"""Ops whose value is known at compile time: Shape, Size, Range, ConstantOfShape; and `_Fill`, the
model output that is a constant.

Integer and bool tensors are computed at run time too (token ids, class indices, masks: the ops of
cast.py, compare.py, index.py, gather.py and integer.py), but shapes are static: the frontend
evaluates every node whose inputs are all constants (and Shape / Size, whose result a
static-shape model knows) as soon as its shape is known (frontend/loader.py `infer_shapes`), so
shape-computing subgraphs as exporters write them (Shape -> Gather -> Unsqueeze -> Concat ->
Reshape) become constants before the op that needs one checks it. Range and ConstantOfShape of
a run-time input would have an output shape that depends on values (a dynamic output shape):
they are refused with one line naming the node and why.

A model output whose value is known at compile time (Shape of an input, Dropout's mask, a
reduction over an empty set) is written by a `_Fill` node: a copy of the constant.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, QParams
from ..kernels.contract import Buf, Weight, call
from ..kernels.requant import quantize_float
from .common import per_tensor, require
from .elementwise import const_qparams
from .registry import OpDef, register

FOLDED = "folded at compile time"


def compile_time_inputs(node: Node, g: Graph) -> list[np.ndarray]:
    """The inputs of a node evaluated at compile time: constants, and for Shape / Size (which
    read only a shape) or an empty run-time input a zero-strided stand-in of its type, which costs
    no memory."""
    return [t.data if t.is_const else np.broadcast_to(np.zeros((), t.dtype), t.shape)
            for t in (g.tensors[i] for i in node.inputs if i)]


class Static(OpDef):
    """An op that only exists at compile time: it is folded, never lowered."""

    int8_rule = FOLDED
    integer_inputs = True  # its check says why a run-time input cannot be
    # Shape and Size read only their input's (static) shape, not its values
    reads_shape_only = False

    def check(self, node: Node, g: Graph) -> None:
        runtime = [i for i in node.inputs if i and not g.tensors[i].is_const]
        require(not runtime, node, f"input '{runtime[0] if runtime else ''}' is computed at run time, and the "
                                   f"output's shape would depend on its values (a dynamic output shape): static "
                                   f"shapes are required")

    def values(self, node: Node, g: Graph) -> list[np.ndarray]:
        return self.run_float(node, g, compile_time_inputs(node, g))

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [tuple(v.shape) for v in self.values(node, g)]


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


@register
class Fill(OpDef):
    """A model output known at compile time: a copy of the constant input (frontend fold_node)."""

    op_type = "_Fill"
    summary = "a model output known at compile time, copied from the constants"
    int8_rule = "the constant quantized at its own range"
    integer_inputs = True

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return [g.tensors[node.inputs[0]].dtype]

    def fixed_qparams(self, node: Node, g: Graph) -> QParams | None:
        data = g.tensors[node.inputs[0]].data
        return None if data.dtype.kind != "f" else per_tensor(*const_qparams(data))

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.array(xs[0])]

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [self.values(node, g)]

    def values(self, node: Node, g: Graph) -> np.ndarray:
        """The output's values as its tensor holds them (int8 codes, fp16, or the integers)."""
        data, out = g.tensors[node.inputs[0]].data, g.tensors[node.outputs[0]]
        if out.q is not None:
            return quantize_float(data.astype(np.float32), *out.q.scalar())
        return data.astype(out.dtype)

    def lower(self, node: Node, g: Graph, precision: str):
        out = g.tensors[node.outputs[0]]
        return call("copy", in_=Weight("value", self.values(node, g), "void"), out=Buf(node.outputs[0]),
                    nbytes=out.nbytes)
