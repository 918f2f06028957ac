"""Evaluate nodes whose inputs are all constants, and fold Gemm's alpha/beta into B/C."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Tensor
from ..ops import get_op

NEVER_FOLD = {"DequantizeLinear", "QuantizeLinear", "_Fill"}  # their int8 values matter to QDQ import; _Fill writes an output


def fold_constants(g: Graph) -> None:
    for node in list(g.nodes):
        inputs = [i for i in node.inputs if i]
        if node.op in NEVER_FOLD or not all(g.tensors[i].is_const for i in inputs):
            continue
        values = get_op(node.op).run_float(node, g, [g.tensors[i].data for i in inputs])
        for name, value in zip(node.outputs, values):
            value = np.asarray(value)
            g.tensors[name] = Tensor(name, tuple(value.shape), str(value.dtype), value)
        g.nodes.remove(node)
    for node in g.nodes:
        if node.op == "Gemm":
            fold_gemm_scalars(g, node)
    g.remove_unused()


def fold_gemm_scalars(g: Graph, node) -> None:
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    if alpha != 1.0:
        node.inputs[1] = g.add_const(node.inputs[1], g.const(node.inputs[1]) * np.float32(alpha))
    if beta != 1.0 and len(node.inputs) > 2 and node.inputs[2]:
        node.inputs[2] = g.add_const(node.inputs[2], g.const(node.inputs[2]) * np.float32(beta))
    node.attrs["alpha"] = node.attrs["beta"] = 1.0
