"""Inputs copied into the arena in the layout their first layer wants (firmware boards).

The layout pass puts a Transpose (NCHW -> NHWC) between a model's image input and its first
convolution. The C API copies every input into the arena anyway; on a microcontroller that
copy can write the Transpose's output directly, so the Transpose runs no kernel and the input
needs no buffer of its own (MobileNetV1-0.25 VWW: 27,648 B of arena and about 88 k guest
instructions). The planner gives the input the Transpose output's buffer (Sharing.copied_in),
the reference still runs the Transpose, and the copy loops read the user's layout.
"""
from __future__ import annotations

from ..boards import Board
from ..ir import Graph


def input_copies(g: Graph, board: Board) -> dict[str, str]:
    """Graph input -> the output of the Transpose that is its only reader, on firmware boards;
    integer and bool inputs are copied as they are (the copy loops convert float or int8 data)."""
    if board.kind != "firmware":
        return {}
    copies = {}
    for name in g.inputs:
        readers = [n for n in g.nodes if name in n.inputs]
        if name in g.outputs or g.tensors[name].is_integer or len(readers) != 1 or readers[0].op != "Transpose":
            continue
        node = readers[0]
        if node.inputs != [name] or node.outputs[0] in g.outputs:
            continue
        copies[name] = node.outputs[0]
    return copies


def copy_loops(shape: list[int], perm: list[int]) -> tuple[list[int], list[int]]:
    """The loop nest that writes the transposed tensor in order: (counts, source strides in
    elements) per loop, outermost first; loops that walk the source contiguously are merged
    (NCHW -> NHWC of 1 x 3 x 96 x 96: 9216 pixels x 3 channels, strides 1 and 9216)."""
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    loops = [(shape[a], strides[a]) for a in perm if shape[a] != 1]
    merged: list[tuple[int, int]] = []
    for count, stride in loops:
        if merged and merged[-1][1] == stride * count:
            merged[-1] = (merged[-1][0] * count, stride)
        else:
            merged.append((count, stride))
    merged = merged or [(1, 1)]
    return [c for c, _ in merged], [s for _, s in merged]


def copy_entry(g: Graph, name: str, target: str) -> dict:
    """What the templates need to copy input `name` into `target`'s layout."""
    node = next(n for n in g.nodes if n.outputs and n.outputs[0] == target)
    counts, strides = copy_loops(list(g.tensors[name].shape), list(node.attrs["perm"]))
    return {"counts": counts, "strides": strides}
