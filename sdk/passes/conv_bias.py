"""Add of a per-channel constant after a Conv -> the Conv's bias.

Exporters and quantizers that keep the bias apart write Conv (no bias) then Add(y, b) with b of
shape [M, 1, 1] or [1, M, 1, 1]: ONNX Runtime's quantize_dynamic does for every Conv (its
ConvInteger has no bias input, quant/dynamic_import.py turns it back into a Conv). As a separate
layer the Add costs a pass over the output and, in int8, a rounding; as the bias it is one int32
addition in the accumulator. A scalar constant folds the same way. Only where the Conv's output
has no other reader, is no model output, and carries no imported (QDQ) quantization: there the
Add's scale is the model's own.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node


def per_channel_constant(g: Graph, add: Node, conv_out: str, channels: int) -> np.ndarray | None:
    """The Add's other operand as M values when it is a constant that adds per channel."""
    other = [i for i in add.inputs if i != conv_out]
    data = g.const(other[0]) if len(other) == 1 else None
    if data is None or data.dtype.kind != "f" or data.ndim > 4:
        return None
    shape = (1,) * (4 - data.ndim) + tuple(data.shape)
    if data.size == 1:
        return np.full(channels, float(data.reshape(-1)[0]))
    if shape == (1, channels, 1, 1):
        return data.reshape(channels).astype(np.float64)
    return None


def fold_conv_bias(g: Graph) -> None:
    for add in [n for n in g.nodes if n.op == "Add" and len(n.inputs) == 2]:
        conv = next((g.producer(i) for i in add.inputs if g.producer(i) is not None), None)
        if conv is None or conv.op != "Conv" or conv.activation is not None:
            continue
        out = conv.outputs[0]
        t = g.tensors.get(out)
        if t is None or len(t.shape) != 4 or t.q is not None or out in g.outputs or len(g.consumers(out)) != 1:
            continue
        w = g.const(conv.inputs[1])
        extra = per_channel_constant(g, add, out, int(w.shape[0]))
        if extra is None:
            continue
        bias = g.const(conv.inputs[2]).astype(np.float64) if len(conv.inputs) > 2 and conv.inputs[2] else 0.0
        conv.inputs = [conv.inputs[0], conv.inputs[1], g.add_const(conv.name + "_b", (bias + extra).astype(np.float32))]
        g.nodes.remove(add)
        g.replace_uses(add.outputs[0], out)
    g.remove_unused()
