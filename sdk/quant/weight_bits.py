"""int4 weights: which layers may have them, marking them, and `--weight-bits auto`'s choice.

A layer with int4 weights keeps the int8 rule (int8 activations, int32 bias at input scale x
weight scale, the same requantization) with weights symmetric per output channel in [-7, 7]
(ops/conv.py, WEIGHT_QMAX); the IR keeps the values as int8 data and the node's weight_bits = 4.

`--weight-bits 4` gives int4 weights to every layer that can have them (int4_candidates);
`auto` (sensitivity.choose_int4) to those that keep the model's cosine similarity to the float model (on the calibration
data, as --accuracy-target measures it, sensitivity.py) at or above the target: --accuracy-target,
else the all-int8 model's cosine less AUTO_COSINE_DROP. Layers are tried in the order of their
own measured cost in cosine per weight byte saved, and each is kept int4 only if the model with
it still meets the target.
"""
from __future__ import annotations

import sys

import numpy as np

from ..errors import UsageError
from ..ir import Graph, Node

WEIGHT_BITS = ("8", "4", "auto")
# auto without --accuracy-target: int4 where the cosine stays within this of the all-int8 model's
AUTO_COSINE_DROP = 0.01


def int4_capable(node: Node, g: Graph) -> str:
    """Why the layer cannot have int4 weights, or "" when it can: an int8 Conv, Gemm or MatMul
    with a constant weight (the conv2d and fc kernels have int4 variants)."""
    if node.op not in ("Conv", "Gemm", "MatMul"):
        return f"{node.op} has no int4 kernel"
    if node.op == "MatMul" and (len(node.inputs) < 2 or g.const(node.inputs[1]) is None):
        return "a MatMul of two activations has no weights"
    if node.precision == "fp32":
        return "the layer is kept in float"
    if node.precision == "int16":
        return "the layer is 16x8 (int16 activations)"
    if "weight" in node.imported_q and node.weight_bits == 8:
        return "its QDQ weights are int8 (imported with their own scales)"
    return ""


WEIGHTED_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul")


def weighted(node: Node, g: Graph) -> bool:
    """A layer with a constant weight tensor (int4 or not)."""
    return node.op in WEIGHTED_OPS and len(node.inputs) > 1 and g.const(node.inputs[1]) is not None


def int4_candidates(g: Graph) -> list[str]:
    return [n.name for n in g.nodes if weighted(n, g) and not int4_capable(n, g)]


def staying_int8(g: Graph) -> list[dict[str, str]]:
    """The weighted layers that keep int8 weights under --weight-bits 4, and why (the build says so)."""
    return [{"layer": n.name, "op": n.op, "reason": int4_capable(n, g)} for n in g.nodes
            if weighted(n, g) and n.weight_bits != 4 and int4_capable(n, g)]


def mark_int4(g: Graph, names: set[str]) -> None:
    """Give the named layers int4 weights (before their ops compute the integer constants)."""
    nodes = {n.name: n for n in g.nodes}
    unknown = sorted(names - set(nodes))
    if unknown:
        raise UsageError(f"--int4-layers names no layer: {', '.join(unknown)} "
                         f"(layers that can be int4: {', '.join(int4_candidates(g)) or 'none'})")
    for name in sorted(names):
        reason = int4_capable(nodes[name], g) if weighted(nodes[name], g) else f"{nodes[name].op} has no weights"
        if reason:
            raise UsageError(f"layer '{name}' ({nodes[name].op}) cannot have int4 weights: {reason}")
        nodes[name].weight_bits = 4


def weight_count(g: Graph, name: str) -> int:
    node = next(n for n in g.nodes if n.name == name)
    return int(np.prod(g.const(node.inputs[1]).shape))


def report_auto(int4: list[str], candidates: int, reached: float, base: float, goal: float) -> None:
    print(f"cuvil-sdk: weight bits auto: int8 weights reach cosine {base:.5f}; int4 weights in {len(int4)} of "
          f"{candidates} layer(s) reach {reached:.5f} (target {goal:.5f})" + (f": {', '.join(int4)}" if int4 else ""),
          file=sys.stderr)
