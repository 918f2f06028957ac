"""Helpers shared by op families: quantization parameters, fused activations, C args."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelError
from ..ir import Graph, Node, QParams
from ..kernels.contract import Buf, Weight  # noqa: F401  (the kernel interface's argument types)
from ..kernels.requant import INT8_MAX, INT8_MIN


def qparams_of(g: Graph, name: str) -> tuple[float, int]:
    q = g.tensors[name].q
    if q is None:
        raise ModelError(f"tensor '{name}' has no quantization parameters")
    return q.scalar()


def per_tensor(scale: float, zero_point: int) -> QParams:
    return QParams(np.array(scale, dtype=np.float32), np.array(zero_point, dtype=np.int32))


def fused_range(node: Node) -> tuple[float, float]:
    """The float clamp of an activation fused into this node, (-inf, inf) when none."""
    act = node.activation
    return (-np.inf, np.inf) if act is None else (float(act[0]), float(act[1]))


def apply_fused_float(node: Node, y: np.ndarray) -> np.ndarray:
    """y clipped to the fused activation's range, in place: y is the layer's own new result."""
    lo, hi = fused_range(node)
    if np.isfinite(lo) or np.isfinite(hi):
        np.clip(y, lo, hi, out=y)
    return y


def fused_int_range(node: Node, scale: float, zero_point: int, lo: int = INT8_MIN,
                    hi: int = INT8_MAX) -> tuple[int, int]:
    """The integer clamp (int8 by default) that implements the fused activation at the output's scale."""
    lo_f, hi_f = fused_range(node)
    top, bottom = hi, lo
    if np.isfinite(lo_f):
        lo = max(lo, min(top, zero_point + int(np.round(lo_f / scale))))
    if np.isfinite(hi_f):
        hi = min(hi, max(bottom, zero_point + int(np.round(hi_f / scale))))
    return lo, hi


BROADCAST_RANK = 4  # the element-wise kernels walk a 4-D broadcast


def broadcast_strides(shape: tuple[int, ...], out: tuple[int, ...]) -> list[int]:
    """Element strides of `shape` read as the 4-D broadcast `out` (0 where broadcast)."""
    shape = (1,) * (BROADCAST_RANK - len(shape)) + tuple(shape)
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(0 if d == 1 else step)
        step *= d
    strides.reverse()
    out4 = (1,) * (BROADCAST_RANK - len(out)) + tuple(out)
    return [0 if o == 1 else s for s, o in zip(strides, out4)]


def runtime_integers(node: Node, g: Graph) -> list[str]:
    """The node's inputs that are integer or bool tensors computed at run time."""
    return [i for i in node.inputs if i and not g.tensors[i].is_const and g.tensors[i].is_integer]


def integer_node(node: Node, g: Graph) -> bool:
    """Every output and every run-time input is an integer or bool tensor: the node computes
    exact integers in every build (no quantization rule: its int8 reference is its float one)."""
    outputs = [g.tensors[o] for o in node.outputs if o and o in g.tensors]
    inputs = [g.tensors[i] for i in node.inputs if i and not g.tensors[i].is_const]
    return bool(outputs) and all(t.is_integer for t in outputs + inputs)


def dtype_of(g: Graph, name: str) -> str:
    return g.tensors[name].dtype


def stacked_samples(x: np.ndarray, shape: tuple[int, ...]) -> int:
    """How many samples x holds stacked on axis 0 when the graph's shape is one sample's
    (leading axis 1; the batched reference, reference/batched.py), else 0."""
    size = int(np.prod(shape, dtype=np.int64))
    if shape and shape[0] == 1 and x.ndim and x.shape[0] > 1 and x.size == x.shape[0] * size:
        return int(x.shape[0])
    return 0


def is_wide(node: Node) -> bool:
    """A 16x8 layer: int16 activations in and out, int8 weights."""
    return node.precision == "int16"


def float_bounds(node: Node) -> dict[str, float]:
    """The lo/hi arguments of float kernels for a fused activation (+/-inf = none: a -inf mask
    value stays -inf, as ONNX Runtime keeps it)."""
    lo, hi = fused_range(node)
    return {"lo": lo, "hi": hi}


def io_args(node: Node, index: int = 0) -> dict[str, Buf]:
    """The in/out arguments of a kernel that reads input `index` and writes output 0."""
    return {"in": Buf(node.inputs[index], const=True), "out": Buf(node.outputs[0])}


def require(cond: bool, node: Node, message: str) -> None:
    if not cond:
        raise ModelError(f"node '{node.name}' ({node.op}): {message}")


def broadcast_shape(node: Node, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The numpy broadcast of the inputs' shapes, or ModelError naming the node."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ModelError(f"node '{node.name}' ({node.op}): shapes {', '.join(map(str, shapes))} do not broadcast") \
            from None


def const_input(g: Graph, node: Node, index: int, what: str) -> np.ndarray:
    data = g.const(node.inputs[index]) if index < len(node.inputs) and node.inputs[index] else None
    require(data is not None, node, f"{what} must be a constant initializer")
    return data


def optional_input(node: Node, index: int) -> str:
    return node.inputs[index] if index < len(node.inputs) else ""


Arg = Any  # int | float | Buf | Weight
