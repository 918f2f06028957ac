"""Index remapping: Slice, Split, Gather (constant indices, gather.py), Expand, Tile, DepthToSpace,
SpaceToDepth, and nearest Resize / Upsample.

Each of these ops writes every output value from exactly one input value, and for all of
them the input position is a SUM of one term per output axis: out[a, b, c, d] =
in[t0[a] + t1[b] + t2[c] + t3[d]], with t_k an int32 table of input element offsets as
long as output axis k (Slice: (start + j*step)*stride, Expand: 0 on a broadcast axis, Tile:
(j % dim)*stride, DepthToSpace: an output row h*b+i reads row h of channel block i, ...).
Python computes the tables once; one portable kernel family (`remap`, templates
portable/remap.h.j2 and cuda/remap.cuh.j2) walks them, and the numpy reference applies the
very same tables, so the C kernel is bit-exact by construction and the tables themselves
are what the ONNX Runtime comparisons test. The tables cost sum(output dims) int32 values,
not one per output value.

int8 rule: no value changes, so the output keeps the input's scale and zero point
(`output_qparams = "same"`) and the integer reference is the float one on int8 codes.
Rank: any; above 4 the kernel's tables merge the leading axes (kernel_tables).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import call
from ..kernels.dtypes import VARIANTS
from .common import Buf, Weight, const_input, optional_input, require, stacked_samples
from .registry import OpDef, register

MAX_RANK = 4


def strides_of(shape: tuple[int, ...]) -> list[int]:
    return [int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))]


def apply_tables(x: np.ndarray, tables: list[np.ndarray], out_shape: tuple[int, ...]) -> np.ndarray:
    """out[i0, i1, ...] = x.flat[tables[0][i0] + tables[1][i1] + ...] (the kernel's loop)."""
    index = np.zeros([len(t) for t in tables], dtype=np.int64)
    for k, t in enumerate(tables):
        index = index + np.asarray(t, np.int64).reshape([-1 if j == k else 1 for j in range(len(tables))])
    return x.reshape(-1)[index].reshape(out_shape)  # fancy indexing copies: C order


def keeps_sample_axis(tables: list[np.ndarray], out_shape: tuple[int, ...]) -> bool:
    """Tables of a one-sample input whose output is that sample's alone (axis 0: index 0)."""
    return bool(tables) and out_shape[0] == 1 and len(tables[0]) == 1 and int(tables[0][0]) == 0


def apply_tables_per_sample(x: np.ndarray, tables: list[np.ndarray], out_shape: tuple[int, ...],
                            samples: int) -> np.ndarray:
    """apply_tables on each of the samples stacked on x's axis 0 (the batched reference)."""
    one = apply_tables(np.arange(x.size // samples), tables, out_shape).reshape(-1)  # offsets in a sample
    return x.reshape(samples, -1)[:, one].reshape((samples,) + tuple(out_shape[1:]))


def kernel_tables(tables: list[np.ndarray]) -> list[np.ndarray]:
    """The four tables of the kernel: leading axes of size 1 (offset 0) below rank 4; above it
    the leading axes merged, two tables a and b becoming one of all sums a[i] + b[j] (the
    output's memory order is unchanged), so any rank runs."""
    tables = [np.asarray(t, np.int64) for t in tables]
    while len(tables) > MAX_RANK:
        tables = [(tables[0][:, None] + tables[1][None, :]).reshape(-1)] + tables[2:]
    return [np.zeros(1, np.int32)] * (MAX_RANK - len(tables)) + [t.astype(np.int32) for t in tables]


def remap_call(node: Node, g: Graph, index: int, tables: list[np.ndarray]):
    t4 = kernel_tables(tables)
    out = node.outputs[index]
    return call(f"remap_{VARIANTS[g.tensors[out].dtype]}", in_=Buf(node.inputs[0], const=True), out=Buf(out),
                **{f"o{k}": len(t) for k, t in enumerate(t4)},
                **{f"t{k}": Weight(f"t{k}", t, "int32_t") for k, t in enumerate(t4)})


class Remap(OpDef):
    """An op given by its tables: subclasses define `tables` (one list per output). Integer and
    bool tensors move like any other (the kernel's variant is their C type)."""

    output_qparams = "same"
    integer_inputs = True

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return [g.tensors[node.inputs[0]].dtype] * len(node.outputs)

    def tables(self, node: Node, g: Graph) -> list[list[np.ndarray]]:
        raise NotImplementedError

    def table_dims(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        """The tables' lengths, without making them. Ops whose output can be larger than their
        input (Expand, Tile, Resize) compute them from their arguments, so that the frontend
        refuses a huge output before any table is built."""
        return [tuple(len(t) for t in tabs) for tabs in self.tables(node, g)]

    def check(self, node: Node, g: Graph) -> None:
        for dims in self.table_dims(node, g):
            require(min(dims, default=1) > 0, node, "empty outputs are not supported")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return self.table_dims(node, g)

    def out_shapes(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return self.infer(node, g)

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        samples = stacked_samples(xs[0], g.tensors[node.inputs[0]].shape)
        return [apply_tables_per_sample(xs[0], tabs, shape, samples) if samples and keeps_sample_axis(tabs, shape)
                else apply_tables(xs[0], tabs, shape)
                for tabs, shape in zip(self.tables(node, g), self.out_shapes(node, g))]

    run_int = run_float

    def lower(self, node: Node, g: Graph, precision: str):
        return [remap_call(node, g, k, tabs) for k, tabs in enumerate(self.tables(node, g)) if node.outputs[k]]


def axis_slice(dim: int, start: int, end: int, step: int) -> np.ndarray:
    """The input indices a Slice keeps on one axis. Python's slice clamps start and end as ONNX
    does (for both signs of step), including INT64_MIN/MAX ends."""
    return np.arange(dim)[slice(start, end, step)]


def slice_tables(shape: tuple[int, ...], picks: dict[int, np.ndarray]) -> list[np.ndarray]:
    """Tables that keep `picks[axis]` (input indices) on the given axes and everything elsewhere."""
    strides = strides_of(shape)
    return [np.asarray(picks.get(k, np.arange(d)), np.int64) * strides[k] for k, d in enumerate(shape)]


def normalized_axis(node: Node, axis: int, rank: int) -> int:
    require(-rank <= axis < rank, node, f"axis {axis} is out of range for rank {rank}")
    return axis % rank


@register
class Slice(Remap):
    op_type = "Slice"
    summary = "constant starts/ends/axes/steps (negative steps, clamped ends)"

    def tables(self, node: Node, g: Graph) -> list[list[np.ndarray]]:
        shape = g.tensors[node.inputs[0]].shape
        starts = const_input(g, node, 1, "starts").reshape(-1)
        ends = const_input(g, node, 2, "ends").reshape(-1)
        axes = (const_input(g, node, 3, "axes").reshape(-1) if optional_input(node, 3)
                else np.arange(len(starts)))
        steps = (const_input(g, node, 4, "steps").reshape(-1) if optional_input(node, 4)
                 else np.ones(len(starts), np.int64))
        require(len(starts) == len(ends) == len(axes) == len(steps), node,
                "starts, ends, axes and steps differ in length")
        picks = {}
        for start, end, axis, step in zip(starts, ends, axes, steps):
            axis = normalized_axis(node, int(axis), len(shape))
            require(axis not in picks, node, f"axis {axis} is repeated")
            require(int(step) != 0, node, "a step of 0 is invalid")
            picks[axis] = axis_slice(shape[axis], int(start), int(end), int(step))
        return [slice_tables(shape, picks)]


@register
class Split(Remap):
    op_type = "Split"
    summary = "split along an axis: sizes from the `split` input or attribute, or num_outputs (opset 18)"
    defaults = {"axis": 0}

    def sizes(self, node: Node, g: Graph) -> list[int]:
        shape = g.tensors[node.inputs[0]].shape
        dim = shape[normalized_axis(node, self.attr(node, "axis"), len(shape))]
        count = len(node.outputs)
        if optional_input(node, 1):
            sizes = [int(s) for s in const_input(g, node, 1, "split").reshape(-1)]
        elif "split" in node.attrs:
            sizes = [int(s) for s in node.attrs["split"]]
        else:
            count = int(node.attrs.get("num_outputs", count))
            require(count > 0, node, "num_outputs must be positive")
            part = -(-dim // count)  # ceil: the last part takes what is left (opset 18)
            sizes = [min(part, max(0, dim - k * part)) for k in range(count)]
        require(len(sizes) == len(node.outputs) and min(sizes) >= 0 and sum(sizes) == dim, node,
                f"split sizes {sizes} do not cut dimension {dim} into {len(node.outputs)} outputs")
        return sizes

    def tables(self, node: Node, g: Graph) -> list[list[np.ndarray]]:
        shape = g.tensors[node.inputs[0]].shape
        axis = normalized_axis(node, self.attr(node, "axis"), len(shape))
        starts = np.cumsum([0] + self.sizes(node, g))
        return [slice_tables(shape, {axis: np.arange(starts[k], starts[k + 1])}) for k in range(len(starts) - 1)]


@register
class Expand(Remap):
    op_type = "Expand"
    summary = "broadcast to a constant shape (numpy rules)"

    def table_dims(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        src = g.tensors[node.inputs[0]].shape
        target = tuple(int(d) for d in const_input(g, node, 1, "shape").reshape(-1))
        require(min(target, default=1) >= 0, node, f"shape {list(target)} has a negative dimension")
        try:
            return [tuple(np.broadcast_shapes(src, target))]
        except ValueError:
            require(False, node, f"shape {src} does not broadcast to {list(target)}")

    def tables(self, node: Node, g: Graph) -> list[list[np.ndarray]]:
        src = g.tensors[node.inputs[0]].shape
        (out,) = self.table_dims(node, g)
        lead = len(out) - len(src)
        strides = [0] * lead + strides_of(src)
        dims = (1,) * lead + tuple(src)
        return [[np.arange(d) * (0 if dims[k] == 1 else strides[k]) for k, d in enumerate(out)]]


@register
class Tile(Remap):
    op_type = "Tile"
    summary = "repeat by constant counts"

    def repeats(self, node: Node, g: Graph) -> list[int]:
        src = g.tensors[node.inputs[0]].shape
        repeats = [int(r) for r in const_input(g, node, 1, "repeats").reshape(-1)]
        require(len(repeats) == len(src) and min(repeats, default=0) >= 0, node,
                f"repeats {repeats} must be non-negative, one per dimension of {src}")
        return repeats

    def table_dims(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [tuple(d * r for d, r in zip(g.tensors[node.inputs[0]].shape, self.repeats(node, g)))]

    def tables(self, node: Node, g: Graph) -> list[list[np.ndarray]]:
        src = g.tensors[node.inputs[0]].shape
        repeats = self.repeats(node, g)
        strides = strides_of(src)
        return [[np.arange(d * r) % d * s for d, r, s in zip(src, repeats, strides)]]


class BlockOp(Remap):
    """DepthToSpace / SpaceToDepth on NCHW (4-D) with a blocksize."""

    def check(self, node: Node, g: Graph) -> None:
        shape = g.tensors[node.inputs[0]].shape
        require(len(shape) == 4, node, "the input must be 4-D (NCHW)")
        require(int(node.attrs.get("blocksize", 0)) > 0, node, "blocksize must be positive")
        super().check(node, g)


@register
class DepthToSpace(BlockOp):
    op_type = "DepthToSpace"
    summary = "NCHW, modes DCR (default) and CRD"
    defaults = {"mode": "DCR"}

    def tables(self, node: Node, g: Graph) -> list[list[np.ndarray]]:
        n, c, h, w = g.tensors[node.inputs[0]].shape
        b = int(node.attrs["blocksize"])
        mode = self.attr(node, "mode")
        require(mode in ("DCR", "CRD"), node, f"mode '{mode}' is not supported")
        require(c % (b * b) == 0, node, f"{c} channels are not a multiple of blocksize^2 = {b * b}")
        oc, plane = c // (b * b), h * w
        # input channel of (block row i, block column j, output channel k):
        # DCR (i*b + j)*oc + k, CRD k*b*b + i*b + j
        block_i, block_j, chan = (b * oc, oc, 1) if mode == "DCR" else (b, 1, b * b)
        rows, cols = np.arange(h * b), np.arange(w * b)
        return [[np.arange(n) * c * plane, np.arange(oc) * chan * plane,
                 rows // b * w + rows % b * block_i * plane, cols // b + cols % b * block_j * plane]]


@register
class SpaceToDepth(BlockOp):
    op_type = "SpaceToDepth"
    summary = ("NCHW, modes DCR (default: output channel (i*b + j)*C + c reads pixel (h*b + i, w*b + j) "
               "of channel c) and CRD (output channel c*b*b + i*b + j)")
    defaults = {"mode": "DCR"}

    def tables(self, node: Node, g: Graph) -> list[list[np.ndarray]]:
        n, c, h, w = g.tensors[node.inputs[0]].shape
        b = int(node.attrs["blocksize"])
        mode = self.attr(node, "mode")
        require(mode in ("DCR", "CRD"), node, f"mode '{mode}' is not supported (DCR and CRD are)")
        require(h % b == 0 and w % b == 0, node, f"height {h} and width {w} are not multiples of blocksize {b}")
        k = np.arange(c * b * b)
        # (channel, block row i, block column j) of output channel k
        chan, i, j = (k % c, k // (b * c), k // c % b) if mode == "DCR" else (k // (b * b), k // b % b, k % b)
        return [[np.arange(n) * c * h * w, chan * h * w + i * w + j,
                 np.arange(h // b) * b * w, np.arange(w // b) * b]]
