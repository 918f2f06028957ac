"""Fully connected ops: Gemm and MatMul with a constant weight (MatMul of two activations: ops/matmul.py).

Both compute Y[r, n] = sum_k A[r, k] * W[n, k] + bias[n] over the rows r of A (every
leading dimension of a MatMul input is a row). The int8 rule is the one of Conv
(see conv.quantize_weighted). In C, weights are stored [n][k] for contiguous dots.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels import int4
from ..kernels.contract import call
from ..kernels.requant import clamp_to, requant
from . import matmul
from .common import Weight, apply_fused_float, const_input, float_bounds, io_args, optional_input, require
from .conv import quantize_weighted
from .registry import OpDef, register


class FullyConnected(OpDef):
    """Shared behaviour; subclasses say where the weight's output axis is."""

    def out_axis(self, node: Node) -> int:
        raise NotImplementedError

    def weight_nk(self, node: Node, w: np.ndarray) -> np.ndarray:
        return w if self.out_axis(node) == 0 else w.T

    def rows_k(self, node: Node, g: Graph) -> tuple[int, int]:
        shape = g.tensors[node.inputs[0]].shape
        return int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]

    def float_weight_bias(self, node: Node, g: Graph) -> tuple[np.ndarray, np.ndarray]:
        # Gemm's alpha and beta (1 once constant folding has folded them into B and C)
        alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
        w = self.weight_nk(node, g.const(node.inputs[1]).astype(np.float64)) * alpha
        b = g.const(node.inputs[2]).astype(np.float64) * beta if optional_input(node, 2) else np.zeros(w.shape[0])
        return w, np.broadcast_to(b.reshape(-1), (w.shape[0],))

    def macs(self, node: Node, g: Graph) -> int:
        rows, k = self.rows_k(node, g)
        return rows * k * g.tensors[node.outputs[0]].shape[-1]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        w, b = self.float_weight_bias(node, g)
        y = xs[0].astype(np.float64) @ w.T + b
        return [apply_fused_float(node, y.astype(np.float32))]

    def quantize(self, node: Node, g: Graph) -> None:
        require(float(node.attrs.get("alpha", 1.0)) == 1.0 and float(node.attrs.get("beta", 1.0)) == 1.0, node,
                "alpha and beta must be folded into B and C (by constant folding) before quantization")
        quantize_weighted(node, g, axis=self.out_axis(node))

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        q = node.q
        w = self.weight_nk(node, q["w"]).astype(np.int64)
        acc = (xs[0].astype(np.int64) - q["zx"]) @ w.T + q["bias"]
        y = requant(acc, q["mult"], q["shift"]) + q["zy"]
        return [clamp_to(y, q["act_min"], q["act_max"], q["dtype"])]

    def lower(self, node: Node, g: Graph, precision: str):
        rows, k = self.rows_k(node, g)
        if precision in ("int8", "int16"):
            q = node.q
            wide = precision == "int16"
            w = np.ascontiguousarray(self.weight_nk(node, q["w"]))
            four = node.weight_bits == 4  # int4 values, packed two per byte (kernels/int4.py)
            return call("fc_s8w4" if four else "fc_s16" if wide else "fc_s8", **io_args(node),
                        w=Weight("w", int4.pack(w), "uint8_t") if four else Weight("w", w, "int8_t"),
                        bias=Weight("bias", q["bias"], "int64_t" if wide else "int32_t"),
                        mult=Weight("mult", q["mult"], "int32_t"), shift=Weight("shift", q["shift"], "int32_t"),
                        rows=rows, k=k, n=w.shape[0], zx=q["zx"], zy=q["zy"], lo=q["act_min"], hi=q["act_max"])
        w, b = self.float_weight_bias(node, g)
        return call("fc_f32", **io_args(node), w=Weight("w", w.astype(np.float32), "float"),
                    bias=Weight("bias", b.astype(np.float32), "float"), rows=rows, k=k, n=w.shape[0],
                    **float_bounds(node))


@register
class Gemm(FullyConnected):
    op_type = "Gemm"
    summary = ("Y = alpha*A'*B' + beta*C with constant B and C: transA (a Transpose before it), transB, "
               "C of any broadcastable shape (a matrix C becomes an Add after it)")
    defaults = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0}

    def check(self, node: Node, g: Graph) -> None:
        b = const_input(g, node, 1, "B")
        require(len(g.tensors[node.inputs[0]].shape) == 2 and b.ndim == 2, node, "A and B must be 2-D")
        if optional_input(node, 2):
            c = const_input(g, node, 2, "C")
            m, n = self.infer(node, g)[0]
            require(c.ndim <= 2 and all(d in (1, full) for d, full in zip(c.shape[::-1], (n, m))), node,
                    f"C of shape {c.shape} does not broadcast to the output {(m, n)}")

    def out_axis(self, node: Node) -> int:
        return 0 if self.attr(node, "transB") else 1

    def a_shape(self, node: Node, g: Graph) -> tuple[int, int]:
        m, k = g.tensors[node.inputs[0]].shape
        return (k, m) if self.attr(node, "transA") else (m, k)

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        m, k_a = self.a_shape(node, g)
        b = g.const(node.inputs[1])
        n = b.shape[self.out_axis(node)]
        k_b = b.shape[1 - self.out_axis(node)]
        require(k_a == k_b, node, f"inner dimensions differ: {k_a} vs {k_b}")
        return [(m, n)]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        # the ONNX definition; after passes.gemm the node has transA=0 and a C over N only
        a = xs[0].astype(np.float64)
        a = a.T if self.attr(node, "transA") else a
        w = self.weight_nk(node, g.const(node.inputs[1]).astype(np.float64)) * float(self.attr(node, "alpha"))
        y = a @ w.T
        if optional_input(node, 2):
            y = y + g.const(node.inputs[2]).astype(np.float64) * float(self.attr(node, "beta"))
        return [apply_fused_float(node, y.astype(np.float32))]

    def lower(self, node: Node, g: Graph, precision: str):
        require(not self.attr(node, "transA"), node, "transA must be lowered to a Transpose (passes.gemm)")
        return super().lower(node, g, precision)


@register
class MatMul(FullyConnected):
    """A constant B is a fully connected layer (the rule above); a B computed by the model
    is the MatMul of two activations of ops/matmul.py."""
    op_type = "MatMul"
    summary = ("A @ B of any rank (numpy.matmul broadcasting); a constant 2-D B is a fully connected layer, a "
               "constant B of another rank is made one by passes/matmul.py")
    int8_rule = ("requantized; constant B: per-channel int8 weights, int32 bias; two activations: int32 sum of "
                 "(a - za)(b - zb), one requantization")

    @staticmethod
    def weighted(node: Node, g: Graph) -> bool:
        return g.const(node.inputs[1]) is not None

    @staticmethod
    def fully_connected(node: Node, g: Graph) -> bool:
        """A constant 2-D B: the fully connected rule (passes/matmul.py makes every constant B 2-D)."""
        b = g.const(node.inputs[1])
        return b is not None and b.ndim == 2

    def check(self, node: Node, g: Graph) -> None:
        require(len(node.inputs) == 2, node, "needs two inputs")
        if not self.fully_connected(node, g):
            require(g.const(node.inputs[0]) is None, node, "a constant A with a computed B is not supported")
            matmul.matmul_geometry(node, g)
            return
        b = g.const(node.inputs[1])
        require(g.tensors[node.inputs[0]].shape[-1] == b.shape[0], node, "inner dimensions differ")

    def out_axis(self, node: Node) -> int:
        return 1

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        if not self.fully_connected(node, g):
            return [matmul.infer(node, g)]
        return [tuple(g.tensors[node.inputs[0]].shape[:-1]) + (g.const(node.inputs[1]).shape[1],)]

    def macs(self, node: Node, g: Graph) -> int:
        return super().macs(node, g) if self.fully_connected(node, g) else matmul.macs(node, g)

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        if self.fully_connected(node, g):
            return super().run_float(node, g, xs)
        b = g.const(node.inputs[1])  # a constant B of another rank, before passes/matmul.py
        return [matmul.run_float(node, [xs[0], xs[1] if b is None else b])]

    def quantize(self, node: Node, g: Graph) -> None:
        return super().quantize(node, g) if self.weighted(node, g) else matmul.quantize(node, g)

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return super().run_int(node, g, xs) if self.weighted(node, g) else [matmul.run_int(node, xs)]

    def lower(self, node: Node, g: Graph, precision: str):
        return super().lower(node, g, precision) if self.weighted(node, g) else matmul.lower(node, g, precision)
