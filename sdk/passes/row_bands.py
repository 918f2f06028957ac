"""Patch-based execution: a chain of layers run band of output rows after band (MCUNetV2).

A region is a run of consecutive nodes, each row-local in NHWC (a convolution or an
element-wise Add of same-shape tensors), whose tensors are read by nothing outside the region
but its last node's output. Split into `bands` bands of that output's rows, the region
becomes, band after band, one copy of each of its nodes computing just the rows that band
needs (the rows a later layer's window reaches into the next band are computed again by the
next band: the recompute cost). Only a band's rows of each inner tensor are then live, so
the arena can fall below the largest layer's whole input plus output.

Nothing about the arithmetic changes: a band node is the same layer on fewer rows, with the
padding only where the band meets the image's border, so every output byte is the one the
whole layer computes (the same kernels, on every board, bit for bit).

The graph this returns keeps the region's inputs and output whole; band tensors are new,
and tensors that are rows of another are views (Tensor.view: the planner places them inside
their base): a band node reads its input rows as a view of the whole input or of the
producing band's tensor, and writes the output's band as a view of the whole output.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from ..ir import Graph, Node, Tensor
from ..ops import get_op

Rows = tuple[int, int]  # [first, end) rows of a tensor


@dataclass
class Region:
    start: int  # index of the first node in g.nodes
    end: int    # index after the last

    def nodes(self, g: Graph) -> list[Node]:
        return g.nodes[self.start:self.end]


def row_local(node: Node, g: Graph) -> bool:
    """Layers whose output rows depend on a window of input rows only: NHWC convolutions and
    the Add of two same-shape 4-D tensors (a residual)."""
    if node.op == "Conv":
        return node.channels_last and len(g.tensors[node.inputs[0]].shape) == 4
    if node.op == "Add":
        shapes = {g.tensors[t].shape for t in node.inputs + node.outputs}
        return len(shapes) == 1 and len(next(iter(shapes))) == 4 and not any(g.tensors[t].is_const for t in node.inputs)
    return False


def conv_rows(node: Node, g: Graph, rows: Rows) -> tuple[Rows, int, int]:
    """The input rows output rows [a, b) of a convolution read, and the band's top and bottom
    padding (the layer's own where the band meets the image border, else none)."""
    geo = get_op("Conv").geometry(node, g)
    h = g.tensors[node.inputs[0]].shape[1]
    kh = g.const(node.inputs[1]).shape[2]
    sh, dh, pt = geo["strides"][0], geo["dilations"][0], geo["pads"][0]
    first, last = rows[0] * sh - pt, (rows[1] - 1) * sh - pt + (kh - 1) * dh  # inclusive
    lo, hi = max(0, first), min(h, last + 1)
    return (lo, hi), lo - first, last + 1 - hi


def input_rows(node: Node, g: Graph, rows: Rows) -> Rows:
    return conv_rows(node, g, rows)[0] if node.op == "Conv" else rows


def closed_regions(g: Graph) -> list[Region]:
    """Every run of row-local nodes [s, e) whose tensors are read outside it only through its
    last node's output (which feeds one row-local consumer or more, or anything: it stays whole)."""
    regions = []
    for s, first in enumerate(g.nodes):
        if not row_local(first, g):
            continue
        for e in range(s + 1, len(g.nodes) + 1):
            if not row_local(g.nodes[e - 1], g):
                break
            inner = {t for n in g.nodes[s:e - 1] for t in n.outputs}
            outside = [n for n in g.nodes[:s] + g.nodes[e:] if inner & set(n.inputs)]
            touched = {t for n in g.nodes[s:e] for t in n.inputs + n.outputs if not g.tensors[t].is_const}
            if not outside and not inner & set(g.outputs) and e - s >= 2 and all(map(aligned_rows(g), touched)):
                regions.append(Region(s, e))
    return regions


def aligned_rows(g: Graph):
    """Rows of whole 16-byte units: a band's rows then start where the planner's alignment
    would put a buffer (kernels may load words and double words from the start)."""
    return lambda t: g.tensors[t].shape[0] == 1 and (g.tensors[t].nbytes // g.tensors[t].shape[1]) % 16 == 0


def band_rows(g: Graph, region: Region, out_rows: Rows) -> dict[str, Rows]:
    """The rows of every tensor the band needs: backwards from the region's output rows, the
    union of what each consumer's window reads."""
    nodes = region.nodes(g)
    need: dict[str, Rows] = {nodes[-1].outputs[0]: out_rows}
    for node in reversed(nodes):
        rows = need[node.outputs[0]]
        for t in node.inputs:
            if g.tensors[t].is_const:
                continue
            a, b = input_rows(node, g, rows)
            if t in need:
                a, b = min(a, need[t][0]), max(b, need[t][1])
            need[t] = (a, b)
    return need


def band_limits(height: int, bands: int) -> list[Rows]:
    """`bands` bands of about equal rows (the first ones one row more)."""
    base, extra = divmod(height, bands)
    limits, at = [], 0
    for b in range(bands):
        size = base + (1 if b < extra else 0)
        limits.append((at, at + size))
        at += size
    return limits


def region_macs(g: Graph, region: Region, bands: int) -> tuple[int, int]:
    """(MACs of the region run in bands, MACs of it whole): the difference is the recompute."""
    whole = sum(get_op(n.op).macs(n, g) for n in region.nodes(g))
    out = g.tensors[region.nodes(g)[-1].outputs[0]]
    banded = 0
    for rows in band_limits(out.shape[1], bands):
        need = band_rows(g, region, rows)
        for n in region.nodes(g):
            full = g.tensors[n.outputs[0]].shape[1]
            banded += get_op(n.op).macs(n, g) * (need[n.outputs[0]][1] - need[n.outputs[0]][0]) // full
    return banded, whole


def split_rows(g: Graph, region: Region, bands: int) -> Graph:
    """A copy of g whose region runs in `bands` bands of its output's rows (see the module)."""
    out = copy.deepcopy(g)
    nodes = region.nodes(out)
    last = nodes[-1].outputs[0]
    inner = {t for n in nodes for t in n.outputs} - {last}
    new_nodes: list[Node] = []
    for b, rows in enumerate(band_limits(out.tensors[last].shape[1], bands)):
        need = band_rows(out, region, rows)
        held = {t: f"{t}@b{b}" for t in inner}  # each inner tensor's band buffer
        for t in inner:
            add_rows(out, held[t], t, need[t])
        add_view(out, f"{last}@b{b}", last, need[last], 0)  # the band's rows of the whole output
        for node in nodes:
            new_nodes.append(band_node(out, node, b, need, held, last))
    out.nodes = out.nodes[:region.start] + new_nodes + out.nodes[region.end:]
    return out


def add_rows(g: Graph, name: str, base: str, rows: Rows) -> None:
    """A band buffer holding rows [a, b) of tensor `base`."""
    t = g.tensors[base]
    g.tensors[name] = Tensor(name, (t.shape[0], rows[1] - rows[0], *t.shape[2:]), t.dtype, q=t.q, origin=None)


def add_view(g: Graph, name: str, base: str, rows: Rows, base_first: int) -> None:
    """Rows [a, b) of `base` (whose first held row is base_first) as a view into its buffer."""
    t = g.tensors[base]
    row_bytes = t.nbytes // t.shape[1]
    g.tensors[name] = Tensor(name, (t.shape[0], rows[1] - rows[0], *t.shape[2:]), t.dtype, q=t.q,
                             view=(base, (rows[0] - base_first) * row_bytes))


def band_node(g: Graph, node: Node, b: int, need: dict[str, Rows], held: dict[str, str], last: str) -> Node:
    """The node computing its output's band rows: inputs as views of the rows it reads, the
    band's own padding."""
    rows = need[node.outputs[0]]
    band = copy.copy(node)
    band.name = f"{node.name}@b{b}"
    band.attrs = dict(node.attrs)
    band.inputs = []
    (lo, hi), top, bottom = conv_rows(node, g, rows) if node.op == "Conv" else (rows, 0, 0)
    for t in node.inputs:
        if g.tensors[t].is_const:
            band.inputs.append(t)
            continue
        base, first = (held[t], need[t][0]) if t in held else (t, 0)
        if t in held and (lo, hi) == need[t]:
            band.inputs.append(base)
            continue
        view = f"{t}@b{b}:{band.name}"
        add_view(g, view, base, (lo, hi), first)
        band.inputs.append(view)
    if node.op == "Conv":
        pads = get_op("Conv").geometry(node, g)["pads"]
        band.attrs["pads"] = [top, pads[1], bottom, pads[3]]
        band.attrs.pop("auto_pad", None)
    out = node.outputs[0]
    band.outputs = [f"{last}@b{b}" if out == last else held[out]]
    return band
