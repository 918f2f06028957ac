"""Arithmetic on integer tensors computed at run time (Add, Sub, Mul, Div, Mod, Min, Max, Sum, Pow,
Neg, Abs, Clip of int8, int16, int32, int64 and uint8 tensors): the numpy reference and the
calls of the int_binary / int_unary kernels, for the ops of elementwise.py, binary_math.py and
activation.py when their tensors are integers.

The results are exact and the same in every build (integer tensors are never quantized). Where C
would be undefined the rule is ONNX Runtime's or numpy's: sums, differences, products and powers
wrap modulo 2^bits; division truncates toward zero; Mod takes the divisor's sign (fmod = 1: the
dividend's); x / 0 and x mod 0 give 0, x / -1 is -x (wrapping), x mod -1 is 0; a negative exponent
gives 0 unless the base is 1 or -1; Neg and Abs of the lowest value give it back.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import Buf, KernelCall, Weight, call
from ..kernels.dtypes import CTYPES, VARIANTS
from .common import BROADCAST_RANK, broadcast_strides, require

BINARY_CODES = {"Add": 0, "Sum": 0, "Sub": 1, "Mul": 2, "Div": 3, "Mod": 4, "Fmod": 5, "Min": 6, "Max": 7, "Pow": 8}
UNARY_CODES = {"Neg": 0, "Abs": 1, "Clip": 2, "Not": 3}
MAX_RANK = BROADCAST_RANK


def is_integer_op(node: Node, g: Graph) -> bool:
    """The node's output is an integer tensor (its inputs are then integers too: ONNX's types)."""
    out = g.tensors.get(node.outputs[0]) if node.outputs and node.outputs[0] else None
    return out is not None and out.is_integer


def check_integer_operands(node: Node, g: Graph) -> None:
    """Integer operands of one type, run-time ones of at most MAX_RANK dimensions."""
    dtypes = {g.tensors[i].dtype for i in node.inputs if i}
    require(len(dtypes) == 1, node, f"operands of different types ({', '.join(sorted(dtypes))})")
    for name in node.inputs:
        require(len(g.tensors[name].shape) <= MAX_RANK, node, f"rank above {MAX_RANK} is not supported")


def code_of(node: Node) -> str:
    """The BINARY_CODES key of an integer binary node (Mod with fmod = 1 has its own)."""
    return "Fmod" if node.op == "Mod" and int(node.attrs.get("fmod", 0)) else node.op


def wrapping(a: np.ndarray) -> np.ndarray:
    """The values as uint64 two's complement (numpy's uint64 arithmetic wraps)."""
    return np.asarray(a).astype(np.int64).view(np.uint64)


def truncated_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b toward zero; / 0 gives 0, / -1 the wrapped negation (int64 arithmetic)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    safe = np.where((b == 0) | (b == -1), 1, b)
    q = a // safe
    q = np.where((a % safe != 0) & ((a < 0) != (safe < 0)), q + 1, q)
    q = np.where(b == -1, (0 - wrapping(a)).view(np.int64), q)
    return np.where(b == 0, 0, q)


def modulo(a: np.ndarray, b: np.ndarray, fmod: bool) -> np.ndarray:
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    safe = np.where((b == 0) | (b == -1), 1, b)
    r = np.fmod(a, safe) if fmod else np.mod(a, safe)
    return np.where((b == 0) | (b == -1), 0, r)


def power(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """a ** e wrapping (by squaring in uint64); a negative e gives 0 unless a is 1 or -1."""
    a, e = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(e, np.int64))
    result, base, n = np.ones(a.shape, np.uint64), wrapping(a).copy(), np.where(e < 0, 0, e).astype(np.uint64)
    while np.any(n):
        result = np.where(n & np.uint64(1), result * base, result)
        base, n = base * base, n >> np.uint64(1)
    negative = np.where(a == 1, 1, np.where(a == -1, np.where(e % 2 == 0, 1, -1), 0))
    return np.where(e < 0, negative, result.view(np.int64))


def binary_values(code: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The integer op on integer arrays, in their common type (the kernels' rule)."""
    dtype = np.result_type(a, b)
    with np.errstate(all="ignore"):
        if code in ("Add", "Sum", "Sub", "Mul"):
            ua, ub = wrapping(a), wrapping(b)
            y = ua + ub if code in ("Add", "Sum") else ua - ub if code == "Sub" else ua * ub
            return y.view(np.int64).astype(dtype)
        if code == "Div":
            return truncated_divide(a, b).astype(dtype)
        if code in ("Mod", "Fmod"):
            return modulo(a, b, code == "Fmod").astype(dtype)
        if code == "Min":
            return np.minimum(a, b).astype(dtype)
        if code == "Max":
            return np.maximum(a, b).astype(dtype)
        return power(a, b).astype(dtype)


def unary_values(code: str, x: np.ndarray, lo: int = 0, hi: int = 0) -> np.ndarray:
    if code == "Not":
        return np.logical_not(x)
    if code == "Clip":
        return np.clip(x.astype(np.int64), lo, hi).astype(x.dtype)
    negated = (0 - wrapping(x)).view(np.int64).astype(x.dtype)
    return negated if code == "Neg" else np.where(x < 0, negated, x)


def operand(g: Graph, name: str, index: int, dtype: str) -> Buf | Weight:
    """A kernel operand: the arena tensor, or the constant in the kernel's type."""
    t = g.tensors[name]
    if not t.is_const:
        return Buf(name, const=True)
    return Weight(f"in{index}", np.asarray(t.data).astype(dtype), CTYPES[dtype])


def broadcast_io(node: Node, g: Graph, dtype: str) -> dict:
    """a, b, out and the 4-D broadcast geometry (d0..d3, sa0..sa3, sb0..sb3) of a binary node
    whose operands are read as `dtype`."""
    out = g.tensors[node.outputs[0]].shape
    dims = (1,) * (MAX_RANK - len(out)) + tuple(out)
    args = {"a": operand(g, node.inputs[0], 0, dtype), "b": operand(g, node.inputs[1], 1, dtype),
            "out": Buf(node.outputs[0]), **{f"d{i}": d for i, d in enumerate(dims)}}
    for key, name in zip("ab", node.inputs):
        args.update({f"s{key}{i}": s for i, s in enumerate(broadcast_strides(g.tensors[name].shape, out))})
    return args


def binary_call(node: Node, g: Graph) -> KernelCall:
    dtype = g.tensors[node.outputs[0]].dtype
    return call(f"int_binary_{VARIANTS[dtype]}", **broadcast_io(node, g, dtype), code=BINARY_CODES[code_of(node)])


def unary_call(node: Node, g: Graph, code: str, lo: int = 0, hi: int = 0) -> KernelCall:
    t = g.tensors[node.outputs[0]]
    return call(f"int_unary_{VARIANTS[t.dtype]}", in_=Buf(node.inputs[0], const=True), out=Buf(node.outputs[0]),
                count=t.size, code=UNARY_CODES[code], lo=lo, hi=hi)
