"""Channels-last layout for the kernels that want it.

Each spatial op (Conv, pooling) is switched to NHWC and wrapped in a pair of Transposes
(NCHW->NHWC before, NHWC->NCHW after). Transposes are then pushed down through
layout-agnostic ops (element-wise, Concat, Pad) and adjacent Transposes are composed;
pairs that compose to the identity vanish. What stays is a real data movement, unless
it only moves size-1 dimensions, in which case it becomes a Reshape (free: an alias).
Models converted from TensorFlow carry NHWC<->NCHW Transposes at their edges; the same
rules cancel those.
"""
from __future__ import annotations

import copy

import numpy as np

from ..ir import Graph, Node

TO_NHWC = [0, 2, 3, 1]
TO_NCHW = [0, 3, 1, 2]
SPATIAL = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}
UNARY = {"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSwish", "Tanh", "Sqrt", "Exp", "Log", "Erf", "Neg", "Abs",
         "Reciprocal", "HardSigmoid", "Elu", "Selu", "Softplus", "Gelu", "Mish"}
BINARY = {"Add", "Mul", "Sub", "Div", "Pow", "Min", "Max", "Sum", "PRelu"}


def to_channels_last(g: Graph) -> None:
    for node in [n for n in g.nodes if n.op in SPATIAL and not n.channels_last]:
        if len(g.tensors[node.inputs[0]].shape) == 4:
            wrap_in_transposes(g, node)
    while any(n.op == "Transpose" for n in g.nodes) and simplify_once(g):
        pass
    for node in g.nodes:
        if node.op == "Transpose" and moves_only_unit_dims(g.tensors[node.inputs[0]].shape, node.attrs["perm"]):
            node.op = "Reshape"
            node.inputs = [node.inputs[0], g.add_const("shape", np.array(g.tensors[node.outputs[0]].shape, np.int64))]
            node.attrs = {}
    g.remove_unused()


def inputs_channels_last(g: Graph) -> None:
    """--input-layout nhwc: the user's data is channels-last (a camera frame). Every 4-D graph
    input keeps its name but takes NHWC data; a Transpose back to the model's NCHW view feeds
    its consumers, and to_channels_last then cancels it against the NHWC conversion of the
    first spatial op, so no transpose runs on the device."""
    for name in g.inputs:
        t = g.tensors[name]
        if len(t.shape) != 4 or name in g.outputs:
            continue
        inner = g.add_tensor(name + "_nchw", t.shape, t.dtype)
        g.replace_uses(name, inner)
        g.tensors[inner].q = copy.deepcopy(t.q)
        t.shape = permuted(t.shape, TO_NHWC)
        t.origin = (name, list(TO_NHWC))
        g.nodes.insert(0, transpose_node(g, name, inner, TO_NCHW))


def permuted(shape: tuple[int, ...], perm: list[int]) -> tuple[int, ...]:
    return tuple(shape[p] for p in perm)


def inverse(perm: list[int]) -> list[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def moves_only_unit_dims(shape: tuple[int, ...], perm: list[int]) -> bool:
    """True when the transpose keeps the order of every dimension larger than 1."""
    order = [p for p in perm if shape[p] != 1]
    return order == sorted(order)


def twin(g: Graph, name: str, perm: list[int]) -> str:
    """A new tensor holding transpose(name, perm): same quantization, and a note of where
    its values come from (so per-layer comparisons can map it back to the ONNX tensor)."""
    src = g.tensors[name]
    new = g.add_tensor(name + "_nhwc", permuted(src.shape, perm), src.dtype)
    g.tensors[new].q = copy.deepcopy(src.q)
    origin, first = src.origin or (name, list(range(len(src.shape))))
    g.tensors[new].origin = (origin, [first[p] for p in perm])
    return new


def transpose_node(g: Graph, src: str, dst: str, perm: list[int]) -> Node:
    return Node("Transpose", g.fresh_name("transpose"), [src], [dst], {"perm": list(perm)})


def wrap_in_transposes(g: Graph, node: Node) -> None:
    x, y = node.inputs[0], node.outputs[0]
    x_nhwc = twin(g, x, TO_NHWC)
    y_nhwc = twin(g, y, TO_NHWC)
    at = g.nodes.index(node)
    g.nodes.insert(at, transpose_node(g, x, x_nhwc, TO_NHWC))
    g.nodes.insert(at + 2, transpose_node(g, y_nhwc, y, TO_NCHW))
    node.inputs[0], node.outputs[0] = x_nhwc, y_nhwc
    node.channels_last = True


def simplify_once(g: Graph) -> bool:
    """Apply the first simplification found, scanning the nodes in order; False when none applies.
    (Every rewrite needs a Transpose, so a graph without one is left at once.)"""
    return any(simplify(g, node) for node in list(g.nodes))


def simplify(g: Graph, node: Node) -> bool:
    if node.op == "Transpose":
        return compose(g, node)
    if node.op in UNARY | BINARY | {"Concat", "Pad"}:
        return push_down(g, node)
    if node.op in ARG_OPS:
        return push_through_arg(g, node)
    return False


ARG_OPS = {"ArgMax", "ArgMin"}


def push_through_arg(g: Graph, node: Node) -> bool:
    """ArgMax(T(x), axis) as T'(ArgMax(x, perm[axis])): a segmentation head's ArgMax over the
    channels of a channels-last tensor, per pixel, with no transpose before it. With keepdims the
    transpose after it moves a unit axis only (a Reshape); without, it keeps the other axes' order."""
    producer = g.producer(node.inputs[0])
    if producer is None or producer.op != "Transpose" or producer.inputs[0] in g.outputs:
        return False
    perm = producer.attrs["perm"]
    axis = int(node.attrs.get("axis", 0)) % len(perm)
    inner_axis = perm[axis]
    if int(node.attrs.get("keepdims", 1)):
        after = list(perm)
    else:  # the reduced axis leaves both: the others keep their order
        after = [p - (p > inner_axis) for p in perm if p != inner_axis]
    y = node.outputs[0]
    y_inner = twin(g, y, inverse(after))
    node.inputs[0] = producer.inputs[0]
    node.attrs["axis"] = inner_axis
    node.outputs[0] = y_inner
    g.nodes.insert(g.nodes.index(node) + 1, transpose_node(g, y_inner, y, after))
    g.remove_unused()
    return True


def compose(g: Graph, node: Node) -> bool:
    perm = node.attrs["perm"]
    if perm == sorted(perm):
        g.nodes.remove(node)
        g.replace_uses(node.outputs[0], node.inputs[0])
        return True
    first = g.producer(node.inputs[0])
    if first is None or first.op != "Transpose":
        return False
    node.attrs["perm"] = [first.attrs["perm"][p] for p in perm]
    node.inputs[0] = first.inputs[0]
    g.remove_unused()
    return True


def push_down(g: Graph, node: Node) -> bool:
    """Rewrite op(T(x)) as T(op(x)) when every activation input comes through the same T."""
    perm = shared_input_perm(g, node)
    if perm is None:
        return False
    inv = inverse(perm)
    rank = len(perm)
    new_inputs = []
    for name in node.inputs:
        t = g.tensors.get(name) if name else None
        if t is None:
            new_inputs.append(name)
        elif t.is_const:
            permutable = node.op in BINARY or node.op == "Pad"
            new_inputs.append(permute_const(g, node, name, inv, rank) if permutable else name)
        else:
            new_inputs.append(g.producer(name).inputs[0])
    y = node.outputs[0]
    y_inner = twin(g, y, inv)
    node.inputs, node.outputs[0] = new_inputs, y_inner
    if node.op == "Concat":
        node.attrs["axis"] = perm[node.attrs["axis"] % rank]
    g.nodes.insert(g.nodes.index(node) + 1, transpose_node(g, y_inner, y, perm))
    g.remove_unused()
    return True


def shared_input_perm(g: Graph, node: Node) -> list[int] | None:
    perms = []
    for name in node.inputs:
        if not name or g.tensors[name].is_const:
            continue
        producer = g.producer(name)
        if producer is None or producer.op != "Transpose":
            return None
        perms.append(producer.attrs["perm"])
    if not perms or any(p != perms[0] for p in perms):
        return None
    if node.op == "Pad" and len(node.inputs) > 3 and node.inputs[3]:
        return None
    return perms[0]


def permute_const(g: Graph, node: Node, name: str, inv: list[int], rank: int) -> str:
    data = g.const(name)
    if node.op == "Pad":
        if name != node.inputs[1]:
            return name  # the constant value input is a scalar
        begin, end = data[:rank], data[rank:]
        return g.add_const("pads", np.concatenate([begin[inv], end[inv]]).astype(data.dtype))
    full = data.reshape((1,) * (rank - data.ndim) + data.shape)
    return g.add_const(name, np.ascontiguousarray(full.transpose(inv)))

