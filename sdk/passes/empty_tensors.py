"""Empty tensors as compile-time constants: a Split part of length 0 and a Concat input of
length 0 (RotaryEmbedding's function body splits off a "not rotated" part that is empty when
the whole head rotates, then concatenates it back).

An empty tensor has no values, so it is known at compile time: the Split loses that output
(its other parts keep their sizes) and the output becomes an empty constant; a Concat drops
its empty constant inputs. No kernel ever sees a zero-length buffer. Called by the frontend's
shape inference (`loader.infer_shapes`) on each Split / Concat, once its split sizes are
constants and its input's shape is known.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Tensor
from ..ops import REGISTRY
from ..ops.movement import normalized_axis


def drop_empty_split_parts(node: Node, g: Graph) -> None:
    split = REGISTRY["Split"]
    sizes = split.sizes(node, g)
    kept = [k for k, s in enumerate(sizes) if s > 0]
    empty = [node.outputs[k] for k, s in enumerate(sizes) if s == 0 and node.outputs[k]]
    if not kept or len(kept) == len(sizes) or any(name in g.outputs for name in empty):
        return  # nothing to drop, or nothing left (refused by Split's check as before)
    shape = list(g.tensors[node.inputs[0]].shape)
    shape[normalized_axis(node, split.attr(node, "axis"), len(shape))] = 0
    for name in empty:
        g.tensors[name] = Tensor(name, tuple(shape), "float32", np.zeros(shape, np.float32))
    sizes_name = g.add_const(f"{node.name}_sizes", np.array([sizes[k] for k in kept], np.int64))
    node.inputs = [node.inputs[0], sizes_name]
    node.outputs = [node.outputs[k] for k in kept]
    node.attrs = {k: v for k, v in node.attrs.items() if k not in ("split", "num_outputs")}


def is_empty_constant(g: Graph, name: str) -> bool:
    """An input that is a constant with no values (unknown names are left to the op's check)."""
    t = g.tensors.get(name)
    return t is not None and t.is_const and t.size == 0


def drop_empty_concat_inputs(node: Node, g: Graph) -> None:
    filled = [name for name in node.inputs if not is_empty_constant(g, name)]
    if filled:
        node.inputs = filled


def drop_empty_tensors(node: Node, g: Graph) -> None:
    if node.op == "Split" and node.inputs and node.inputs[0] in g.tensors and not g.tensors[node.inputs[0]].is_const:
        drop_empty_split_parts(node, g)
    elif node.op == "Concat":
        drop_empty_concat_inputs(node, g)
