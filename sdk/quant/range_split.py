"""The range-split rule: a model output joined by a Concat from inputs whose ranges differ by more
than a factor keeps each input's own int8 scale.

One per-tensor scale for `Concat(boxes in 0..320, scores in 0..1)` is 320 / 255 = 1.25: every
score rounds to 0 or 1.25, and cosine over the whole tensor (dominated by the boxes) does not see
it. The C API dequantizes outputs anyway, so nothing downstream needs one scale: the Concat copies
each input's codes unchanged and the output is segmented along the Concat's axis
(kernels/segments.py), followed through the Reshape/Transpose chain that exporters put between
the Concat and the output. The rule is general: any output, any axis, any number of inputs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Node
from ..kernels.segments import Segment, Segments
from ..ops import get_op

DEFAULT_FACTOR = 8.0  # ranges this many times apart lose 3 bits of the narrow one's 8: split
# ops between the Concat and the output that only move or reshape values
MOVEMENT = ("Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")


@dataclass
class Split:
    """One output kept in per-input scales: what the build output and report.json say."""
    output: str
    concat: str
    axis: int
    ratio: float
    segments: Segments

    def as_report(self) -> dict:
        return {"rule": "range-split", "output": self.output, "concat": self.concat, "ratio": round(self.ratio, 2),
                **self.segments.as_manifest()}

    def message(self, factor: float) -> str:
        parts = ", ".join(f"'{s.source}' step {s.scale:.4g} ({s.stop - s.start} along axis {self.axis})"
                          for s in self.segments.parts)
        return (f"range split: output '{self.output}' keeps one int8 scale per input of Concat '{self.concat}' "
                f"(ranges {self.ratio:.0f}x apart, more than {factor:g}x): {parts}; --no-range-split turns it off")


def chain_to_concat(g: Graph, output: str) -> tuple[Node, list[Node]] | None:
    """(the Concat, the movement ops after it in order) when `output` is a Concat's result, directly
    or through movement ops whose results nothing else reads; else None."""
    chain: list[Node] = []
    name = output
    while True:
        node = g.producer(name)
        if node is None:
            return None
        if node.op == "Concat":
            return (node, chain[::-1]) if len(g.consumers(name)) <= (0 if name == output else 1) else None
        if node.op not in MOVEMENT or len(g.consumers(name)) > (0 if name == output else 1):
            return None
        chain.append(node)
        name = node.inputs[0]


def follow_axis(g: Graph, node: Node, axis: int) -> int | None:
    """The axis of `node`'s result that holds its input's `axis` whole and in order; None when a
    reshape merges or splits it."""
    if node.op == "Transpose":
        return get_op("Transpose").perm(node, g).index(axis)  # the default perm (reversed) included
    shape_in, shape_out = g.tensors[node.inputs[0]].shape, g.tensors[node.outputs[0]].shape
    inner = int(np.prod(shape_in[axis + 1:], dtype=np.int64))
    for j, dim in enumerate(shape_out):
        if dim == shape_in[axis] and int(np.prod(shape_out[j + 1:], dtype=np.int64)) == inner:
            return j
    return None


def width(q) -> float:
    """The range an input's int8 codes cover."""
    return float(q.scale) * 255.0


def eligible(g: Graph, concat: Node) -> bool:
    """Every input a quantized int8 activation (no constants, no float or 16x8 layers nearby)."""
    if concat.precision in ("fp32", "int16"):
        return False
    tensors = [g.tensors[name] for name in concat.inputs]
    return all(not t.is_const and t.q is not None and not t.q.per_channel and t.dtype == "float32" for t in tensors)


@dataclass
class Layout:
    """Where an output's Concat inputs lie in the output: the slices [start, stop) along `axis`."""
    concat: Node
    concat_axis: int  # the axis in the Concat's own result
    axis: int  # the same axis in the output
    bounds: list[tuple[int, int, str]]  # (start, stop, the Concat input's name)
    moved: list[tuple[str, int]]  # the tensors between the Concat and the output, each with the axis in it

    def source(self, g: Graph, name: str) -> str:
        """An input's ONNX name (the layout pass's channels-last tensors keep it as their origin)."""
        origin = g.tensors[name].origin
        return origin[0] if origin else name


def concat_layout(g: Graph, output: str) -> Layout | None:
    """The Concat segments of `output` (float or quantized graph alike), or None: no Concat, one read
    inside the model, or a reshape between that merges its axis."""
    found = chain_to_concat(g, output)
    if found is None:
        return None
    concat, chain = found
    concat_axis = concat.attrs["axis"] % len(g.tensors[concat.outputs[0]].shape)
    bounds, start = [], 0
    for name in concat.inputs:
        size = g.tensors[name].shape[concat_axis]
        bounds.append((start, start + size, name))
        start += size
    axis: int | None = concat_axis
    moved = []
    for node in chain:
        axis = follow_axis(g, node, axis)
        if axis is None:
            return None
        moved.append((node.outputs[0], axis))
    return Layout(concat, concat_axis, axis, bounds, moved)


def find_split(g: Graph, output: str, factor: float) -> Split | None:
    layout = concat_layout(g, output)
    if layout is None or not eligible(g, layout.concat):
        return None
    widths = [width(g.tensors[name].q) for name in layout.concat.inputs]
    ratio = max(widths) / max(min(widths), 1e-30)
    if ratio <= factor:
        return None
    parts = [Segment(start, stop, *g.tensors[name].q.scalar(), source=layout.source(g, name))
             for start, stop, name in layout.bounds]
    # the Concat copies each input's codes (ops/shape.py); the output's segments are what the C API,
    # the manifest and the reference dequantize by; the movement ops between only move codes (their
    # segments: for validate --per-layer)
    g.tensors[layout.concat.outputs[0]].segments = Segments(layout.concat_axis, parts)
    for name, axis in layout.moved:  # the last is the output: the C API and the reference read its segments
        g.tensors[name].segments = Segments(axis, parts)
    return Split(output, layout.concat.name, layout.axis, ratio, Segments(layout.axis, parts))


def split_outputs(g: Graph, factor: float | None) -> list[Split]:
    """Apply the rule to every output (after quantization parameters are assigned, before the ops
    compute their constants); factor None or <= 1: the rule is off."""
    if factor is None or factor <= 1.0:
        return []
    splits = [find_split(g, name, factor) for name in g.outputs]
    return [s for s in splits if s is not None]
