"""1-D layers on the 2-D kernels: a Conv, ConvTranspose, MaxPool or AveragePool over (N, C, L) becomes
Unsqueeze to (N, C, 1, L), the same layer in 2-D (H = 1: kernel 1 x k, pads (0, b, 0, e)),
and Squeeze back. Unsqueeze and Squeeze are aliases (no code), so the 2-D kernels and int8
rules serve 1-D models (keyword spotting) unchanged.

It runs in the frontend before shape inference (`loader.load_model`): it needs only the
attributes and the constant weight, not the shapes, and the ops then see 2-D layers only.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node

LAYERS = {"Conv", "ConvTranspose", "MaxPool", "AveragePool"}
WEIGHTED = {"Conv", "ConvTranspose"}
PER_AXIS = {"kernel_shape": 1, "strides": 1, "dilations": 1, "output_padding": 0, "output_shape": 1}


def is_1d(g: Graph, node: Node) -> bool:
    if node.op not in LAYERS:
        return False
    if node.op in WEIGHTED:
        w = g.const(node.inputs[1]) if len(node.inputs) > 1 else None
        return w is not None and w.ndim == 3
    return len(node.attrs.get("kernel_shape", [])) == 1


def attrs_2d(attrs: dict) -> dict:
    """The attributes of the 1-D layer as those of the 2-D layer on (N, C, 1, L)."""
    out = dict(attrs)
    for key, unit in PER_AXIS.items():  # the value of H's own entry: a size of 1, or no padding
        if key in out:
            out[key] = [unit, *out[key]]
    if "pads" in out:
        out["pads"] = [0, out["pads"][0], 0, out["pads"][1]]
    return out


def layers_1d_to_2d(g: Graph) -> None:
    for node in [n for n in g.nodes if is_1d(g, n)]:
        axis = g.add_const(f"{node.name}_h_axis", np.array([2], np.int64))
        # shapes are set by shape inference, which runs next
        x4, y4 = g.add_tensor(f"{node.name}_in_2d", ()), g.add_tensor(f"{node.name}_out_2d", ())
        if node.op in WEIGHTED:
            w = g.const(node.inputs[1])
            node.inputs[1] = g.add_const(node.inputs[1], w.reshape(w.shape[0], w.shape[1], 1, w.shape[2]))
        at = g.nodes.index(node)
        before = Node("Unsqueeze", f"{node.name}_to_2d", [node.inputs[0], axis], [x4])
        after = Node("Squeeze", f"{node.name}_to_1d", [y4, axis], [node.outputs[0]])
        node.inputs[0], node.outputs[0], node.attrs = x4, y4, attrs_2d(node.attrs)
        g.nodes[at:at + 1] = [before, node, after]

