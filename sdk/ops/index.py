"""Ops whose result is an index: ArgMax, ArgMin (int64 indices, keepdims, select_last_index) and
TopK (a constant k: the k largest or smallest values along an axis, sorted, with their int64
indices), on float and integer tensors.

Ties follow ONNX exactly: ArgMax/ArgMin give the first of equal values (the last with
select_last_index = 1); TopK lists equal values in index order. The index is counted in int32 in
the kernels (a static shape's axis is below 2^31) and stored as int64.

int8 rule: on the int8 codes. The dequantization s * (q - z) with s > 0 keeps the codes' order,
so the index of the largest code is the index of the largest dequantized value, with the same
ties (values that quantize to one code are ties: the first one wins, as it would in the int8
values); TopK's values keep their input's scale and zero point. A segmentation head's ArgMax over
channels runs on the fast kernel sets per pixel (kernels/*/rules.py).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import Buf, call
from ..kernels.dtypes import VARIANTS
from .common import require
from .registry import OpDef, register


def normalized_axis(node: Node, axis: int, rank: int) -> int:
    require(-rank <= axis < rank, node, f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def split_at(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    """(outer, n, inner): the shape seen as [outer][n][inner] around `axis`."""
    return (int(np.prod(shape[:axis], dtype=np.int64)), int(shape[axis]),
            int(np.prod(shape[axis + 1:], dtype=np.int64)))


def descending_key(x: np.ndarray) -> np.ndarray:
    """A key whose ascending order is x's descending order, without overflow (~x for integers)."""
    return -x if x.dtype.kind == "f" else ~x


def arg_values(x: np.ndarray, axis: int, minimum: bool, last: bool) -> np.ndarray:
    """The index of the largest (smallest) value along `axis`, the first (last) of equal ones."""
    if last:  # the last of equal values: search the reversed axis
        flipped = np.flip(x, axis)
        picked = np.argmin(flipped, axis=axis) if minimum else np.argmax(flipped, axis=axis)
        return (x.shape[axis] - 1 - picked).astype(np.int64)
    return (np.argmin(x, axis=axis) if minimum else np.argmax(x, axis=axis)).astype(np.int64)


def kernel_variant(g: Graph, name: str) -> str:
    """The kernels' variant of a tensor's values: int8 codes are s8, float32 f32, integers theirs."""
    return VARIANTS[g.tensors[name].dtype]


class ArgBase(OpDef):
    defaults = {"axis": 0, "keepdims": 1, "select_last_index": 0}
    int8_rule = "on the int8 codes (the dequantization keeps their order and ties)"
    integer_inputs = True
    minimum = False

    def axis(self, node: Node, g: Graph) -> int:
        return normalized_axis(node, int(self.attr(node, "axis")), len(g.tensors[node.inputs[0]].shape))

    def check(self, node: Node, g: Graph) -> None:
        x = g.tensors[node.inputs[0]]
        require(len(x.shape) > 0, node, "the input must have at least one dimension")
        require(x.dtype != "bool", node, "the input is bool (a number type is needed)")
        self.axis(node, g)

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        shape, axis = list(g.tensors[node.inputs[0]].shape), self.axis(node, g)
        if self.attr(node, "keepdims"):
            shape[axis] = 1
        else:
            del shape[axis]
        return [tuple(shape)]

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return ["int64"]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        axis = normalized_axis(node, int(self.attr(node, "axis")), xs[0].ndim)
        idx = arg_values(xs[0], axis, self.minimum, bool(self.attr(node, "select_last_index")))
        return [np.expand_dims(idx, axis) if self.attr(node, "keepdims") else idx]

    run_int = run_float  # on the int8 codes

    def lower(self, node: Node, g: Graph, precision: str):
        outer, n, inner = split_at(g.tensors[node.inputs[0]].shape, self.axis(node, g))
        code = int(self.minimum) | 2 * int(bool(self.attr(node, "select_last_index")))
        return call(f"argmax_{kernel_variant(g, node.inputs[0])}", in_=Buf(node.inputs[0], const=True),
                    out=Buf(node.outputs[0]), outer=outer, n=n, inner=inner, code=code)


@register
class ArgMax(ArgBase):
    op_type = "ArgMax"
    summary = "int64 index of the largest value along an axis (keepdims, select_last_index)"


@register
class ArgMin(ArgBase):
    op_type = "ArgMin"
    summary = "int64 index of the smallest value along an axis (keepdims, select_last_index)"
    minimum = True


@register
class TopK(OpDef):
    op_type = "TopK"
    summary = "the k largest or smallest values along an axis (constant k), sorted, with their int64 indices"
    int8_rule = "on the int8 codes; the values keep the input's scale"
    output_qparams = "same"
    defaults = {"axis": -1, "largest": 1, "sorted": 1}
    integer_inputs = True

    def axis(self, node: Node, g: Graph) -> int:
        return normalized_axis(node, int(self.attr(node, "axis")), len(g.tensors[node.inputs[0]].shape))

    def k(self, node: Node, g: Graph) -> int:
        value = g.const(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
        require(value is not None, node, "k must be a constant (a run-time k would make the output shape dynamic)")
        require(value.size == 1, node, "k must hold one value")
        return int(value.reshape(-1)[0])

    def check(self, node: Node, g: Graph) -> None:
        x = g.tensors[node.inputs[0]]
        require(x.dtype != "bool", node, "the input is bool (a number type is needed)")
        n = x.shape[self.axis(node, g)]
        require(1 <= self.k(node, g) <= n, node, f"k = {self.k(node, g)} is not within 1..{n}, the axis' length")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        shape = list(g.tensors[node.inputs[0]].shape)
        shape[self.axis(node, g)] = self.k(node, g)
        return [tuple(shape), tuple(shape)]

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return [g.tensors[node.inputs[0]].dtype, "int64"]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        x = xs[0]
        axis = normalized_axis(node, int(self.attr(node, "axis")), x.ndim)
        key = descending_key(x) if self.attr(node, "largest") else x
        order = np.argsort(key, axis=axis, kind="stable")  # equal values in index order
        order = np.take(order, np.arange(self.k(node, g)), axis=axis)
        return [np.take_along_axis(x, order, axis=axis), order.astype(np.int64)]

    run_int = run_float  # on the int8 codes

    def lower(self, node: Node, g: Graph, precision: str):
        outer, n, inner = split_at(g.tensors[node.inputs[0]].shape, self.axis(node, g))
        values, indices = (Buf(o) for o in node.outputs[:2])
        return call(f"topk_{kernel_variant(g, node.inputs[0])}", in_=Buf(node.inputs[0], const=True), values=values,
                    indices=indices, outer=outer, n=n, inner=inner, k=self.k(node, g),
                    largest=int(bool(self.attr(node, "largest"))))
