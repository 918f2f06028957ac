"""MatMul of two activations (attention: Q @ K^T, scores @ V), as ONNX defines it: like
numpy.matmul, any rank, a 1-D operand promoted to a matrix and its axis removed after, the
batch (leading) dimensions broadcast.

The C kernels multiply one [m, k] by [k, n] matrix pair per batch entry; Python lists the
element offset of each batch entry's A and B matrices (broadcast batch entries share one),
so the kernels never see a rank.

int8 rule: acc = sum_k (a - za)(b - zb) in int32 (|acc| < 2^31 for k < 33000), then
y = clamp(zy + requant(acc, M, S)) with M / 2^S ~= sa * sb / sy (sdk/kernels/requant.py, the one
rounding rule), the clamp carrying a fused Relu/Clip. Both operands are per-tensor.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import Buf, KernelCall, Weight, call
from ..kernels.requant import clamp_int8, quantize_multiplier, requant
from .common import apply_fused_float, float_bounds, fused_int_range, qparams_of, require

MAX_K = 33000  # 255 * 255 * k stays below 2^31


@dataclass(frozen=True)
class MatMulGeometry:
    out_shape: tuple[int, ...]
    m: int
    k: int
    n: int
    a_offsets: np.ndarray  # element offset of each batch entry's A matrix
    b_offsets: np.ndarray


def batch_offsets(batch: tuple[int, ...], out_batch: tuple[int, ...], matrix: int) -> np.ndarray:
    """Offsets of an operand's matrices, read as the broadcast batch `out_batch`."""
    count = int(np.prod(batch, dtype=np.int64))
    index = np.arange(count, dtype=np.int64).reshape(batch) if batch else np.zeros((), np.int64)
    padded = index.reshape((1,) * (len(out_batch) - len(batch)) + tuple(batch))
    return (np.broadcast_to(padded, out_batch).reshape(-1) * matrix).astype(np.int32)


def geometry(node: Node, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> MatMulGeometry:
    require(len(a_shape) >= 1 and len(b_shape) >= 1, node, "MatMul inputs must have rank 1 or more")
    a2 = (1,) + tuple(a_shape) if len(a_shape) == 1 else tuple(a_shape)
    b2 = tuple(b_shape) + (1,) if len(b_shape) == 1 else tuple(b_shape)
    m, k = a2[-2:]
    k_b, n = b2[-2:]
    require(k == k_b, node, f"inner dimensions differ: {k} vs {k_b}")
    try:
        out_batch = tuple(np.broadcast_shapes(a2[:-2], b2[:-2]))
    except ValueError:
        require(False, node, f"batch dimensions {a2[:-2]} and {b2[:-2]} do not broadcast")
    out = out_batch + (m, n)
    if len(a_shape) == 1:
        out = out[:-2] + (n,)
    if len(b_shape) == 1:
        out = out[:-1]
    return MatMulGeometry(out, m, k, n, batch_offsets(a2[:-2], out_batch, m * k), batch_offsets(b2[:-2], out_batch, k * n))


def matmul_geometry(node: Node, g: Graph) -> MatMulGeometry:
    return geometry(node, *(g.tensors[i].shape for i in node.inputs[:2]))


def infer(node: Node, g: Graph) -> tuple[int, ...]:
    return matmul_geometry(node, g).out_shape


def macs(node: Node, g: Graph) -> int:
    geo = matmul_geometry(node, g)
    return len(geo.a_offsets) * geo.m * geo.k * geo.n


def run_float(node: Node, xs: list[np.ndarray]) -> np.ndarray:
    y = np.matmul(xs[0].astype(np.float64), xs[1].astype(np.float64))
    return apply_fused_float(node, y.astype(np.float32))


def quantize(node: Node, g: Graph) -> None:
    require(node.precision != "int16", node, "16x8 is for MatMul with a constant B only")
    require(matmul_geometry(node, g).k <= MAX_K, node, f"an inner dimension above {MAX_K} overflows int32 in int8")
    (sa, za), (sb, zb) = (qparams_of(g, i) for i in node.inputs[:2])
    sy, zy = qparams_of(g, node.outputs[0])
    mult, shift = quantize_multiplier(sa * sb / sy)
    lo, hi = fused_int_range(node, sy, zy)
    node.q = {"za": za, "zb": zb, "mult": mult, "shift": shift, "zy": zy, "act_min": lo, "act_max": hi}


def run_int(node: Node, xs: list[np.ndarray]) -> np.ndarray:
    q = node.q
    acc = np.matmul(xs[0].astype(np.int64) - q["za"], xs[1].astype(np.int64) - q["zb"])
    return clamp_int8(requant(acc, q["mult"], q["shift"]) + q["zy"], q["act_min"], q["act_max"])


def lower(node: Node, g: Graph, precision: str) -> KernelCall:
    geo = matmul_geometry(node, g)
    args = dict(a=Buf(node.inputs[0], const=True), b=Buf(node.inputs[1], const=True), out=Buf(node.outputs[0]),
                a_off=Weight("a_off", geo.a_offsets, "int32_t"), b_off=Weight("b_off", geo.b_offsets, "int32_t"),
                batch=len(geo.a_offsets), m=geo.m, k=geo.k, n=geo.n)
    if precision == "int8":
        q = node.q
        return call("matmul_s8", **args, za=q["za"], zb=q["zb"], mult=q["mult"], shift=q["shift"], zy=q["zy"],
                    lo=q["act_min"], hi=q["act_max"])
    return call("matmul_f32", **args, **float_bounds(node))
