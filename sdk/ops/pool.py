"""Pooling: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool (1-D layers arrive as
2-D ones on H = 1: passes/layers_1d.py).

MaxPool keeps its input's quantization (an int8 max). Average pooling sums
zero-point-corrected inputs over the valid window and requantizes by a multiplier
chosen per window count (a table indexed by count, computed here), so borders with
fewer elements are exact too.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import Graph, Node, Tensor
from ..kernels.contract import call
from ..kernels.requant import clamp_int8, quantize_multipliers, requant
from .common import Weight, io_args, qparams_of, require
from .conv import from_nchw, patches, spatial_dims, to_nchw
from .registry import OpDef, register


def pool_geometry(node: Node, in_hw: tuple[int, int], kernel: tuple[int, int]) -> dict:
    """Pads (top, left, bottom, right), strides, dilations, output size, honouring auto_pad and
    ceil_mode; `extra`: the rows and columns past the end pad that ceil_mode windows reach."""
    a = node.attrs
    strides = list(a.get("strides", [1, 1]))
    dil = list(a.get("dilations", [1, 1]))
    kernel = tuple((k - 1) * d + 1 for k, d in zip(kernel, dil))  # the span of a dilated window
    auto_pad = a.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-i // s) for i, s in zip(in_hw, strides)]
        total = [max(0, (o - 1) * s + k - i) for o, s, k, i in zip(out, strides, kernel, in_hw)]
        small, big = [t // 2 for t in total], [t - t // 2 for t in total]
        begin, end = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
        pads = [begin[0], begin[1], end[0], end[1]]
    else:
        pads = [0, 0, 0, 0] if auto_pad == "VALID" else list(a.get("pads", [0, 0, 0, 0]))
    out = []
    for d in range(2):
        span = in_hw[d] + pads[d] + pads[d + 2] - kernel[d]
        size = (math.ceil(span / strides[d]) if a.get("ceil_mode", 0) else span // strides[d]) + 1
        if a.get("ceil_mode", 0) and (size - 1) * strides[d] >= in_hw[d] + pads[d]:
            size -= 1  # the last window must start inside the input or its leading pad
        out.append(size)
    extra = [max(0, (o - 1) * s + k - (i + pb + pe))
             for o, s, k, i, pb, pe in zip(out, strides, kernel, in_hw, pads[:2], pads[2:])]
    return {"strides": strides, "pads": pads, "out": out, "extra": extra, "dilations": dil}


def split_3d_attrs(attrs: dict) -> tuple[dict, dict]:
    """A 3-D pooling's attributes as those of a 2-D pooling over (H, W), then one over (D, 1):
    its windows are boxes, so their max, sum and element count are products over the axes."""
    k = list(attrs["kernel_shape"])
    s, d = list(attrs.get("strides", [1, 1, 1])), list(attrs.get("dilations", [1, 1, 1]))
    common = {key: attrs[key] for key in ("auto_pad", "ceil_mode", "count_include_pad") if key in attrs}
    hw = dict(common, kernel_shape=k[1:], strides=s[1:], dilations=d[1:])
    depth = dict(common, kernel_shape=[k[0], 1], strides=[s[0], 1], dilations=[d[0], 1])
    if "pads" in attrs:
        p = list(attrs["pads"])
        hw["pads"], depth["pads"] = [p[1], p[2], p[4], p[5]], [p[0], 0, p[3], 0]
    return hw, depth


Shape = tuple[int, ...]


def global_as_4d(shape: Shape) -> Shape:
    """(N, C, 1, S): a global pooling's input with its S spatial values on one axis."""
    return (shape[0], shape[1], 1, int(np.prod(shape[2:], dtype=np.int64)))


def global_shape(shape: Shape) -> Shape:
    return tuple(shape[:2]) + (1,) * (len(shape) - 2)


def stages_2d(node: Node, shape: Shape) -> list[tuple[dict, Shape, Shape]] | None:
    """The 2-D poolings (attributes, input shape, output shape) that compute a pooling the 2-D
    kernels do not take directly (3-D windows; global pooling of a rank other than 4), else None."""
    if node.op in ("GlobalAveragePool", "GlobalMaxPool"):
        return None if len(shape) == 4 else [({}, global_as_4d(shape), tuple(shape[:2]) + (1, 1))]
    return stages_3d(node, shape)[0] if len(shape) == 5 else None


def stages_3d(node: Node, shape: Shape) -> tuple[list[tuple[dict, Shape, Shape]], Shape]:
    """The two 2-D poolings of a 3-D one over NCDHW `shape`, as (attributes, input shape, output
    shape) each, and the 3-D output shape: stage 1 pools (N, C*D, H, W) over H and W, stage 2
    pools (N, C, D, OH*OW) over D."""
    n, c, d, h, w = shape
    hw, depth = split_3d_attrs(node.attrs)
    oh, ow = pool_geometry(Node(node.op, node.name, [], [], hw), (h, w), tuple(hw["kernel_shape"]))["out"]
    od, _ = pool_geometry(Node(node.op, node.name, [], [], depth), (d, oh * ow), (depth["kernel_shape"][0], 1))["out"]
    return [(hw, (n, c * d, h, w), (n, c * d, oh, ow)), (depth, (n, c, d, oh * ow), (n, c, od, oh * ow))], \
        (n, c, od, oh, ow)


class Pool(OpDef):
    defaults = {"auto_pad": "NOTSET", "ceil_mode": 0, "count_include_pad": 0}
    is_global = False

    def kernel(self, node: Node, g: Graph) -> tuple[int, int]:
        if self.is_global:
            _, _, h, w = self.dims(node, g)
            return h, w
        return tuple(node.attrs["kernel_shape"])

    def dims(self, node: Node, g: Graph) -> tuple[int, int, int, int]:
        return spatial_dims(g.tensors[node.inputs[0]].shape, node.channels_last)

    def geometry(self, node: Node, g: Graph) -> dict:
        _, _, h, w = self.dims(node, g)
        if self.is_global:
            return {"strides": [1, 1], "pads": [0, 0, 0, 0], "out": [1, 1], "extra": [0, 0], "dilations": [1, 1]}
        return pool_geometry(node, (h, w), self.kernel(node, g))

    def is_global_nd(self, node: Node, g: Graph) -> bool:
        """A global pooling over other than two spatial axes: the passes run it on (N, C, 1, S)
        (passes/pool_nd.py)."""
        return self.is_global and len(g.tensors[node.inputs[0]].shape) != 4

    def is_3d(self, node: Node, g: Graph) -> bool:
        """A 3-D pooling: the passes run it as two 2-D ones (passes/pool_nd.py)."""
        return not self.is_global and len(g.tensors[node.inputs[0]].shape) == 5

    def check(self, node: Node, g: Graph) -> None:
        rank = len(g.tensors[node.inputs[0]].shape)
        if self.is_global:
            require(rank >= 3, node, "the input needs at least one spatial axis (N, C, ...)")
            require(rank == 4 or not node.channels_last, node, "the passes run this on a 4-D tensor")
            return
        require(len(node.outputs) == 1 or not any(node.outputs[1:]), node,
                "the Indices output of MaxPool is not supported")
        require(rank in (4, 5), node, "only 2-D and 3-D pooling (of 4-D and 5-D tensors) is supported")
        require(len(node.attrs.get("kernel_shape", [])) == rank - 2, node, f"kernel_shape must have {rank - 2} entries")
        require(rank == 4 or not node.channels_last, node, "3-D pooling is run as two 2-D poolings by the passes")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        if self.is_global_nd(node, g):
            return [global_shape(g.tensors[node.inputs[0]].shape)]
        if self.is_3d(node, g):
            return [stages_3d(node, g.tensors[node.inputs[0]].shape)[1]]
        n, c, _, _ = self.dims(node, g)
        oh, ow = self.geometry(node, g)["out"]
        require(oh > 0 and ow > 0, node, "output is empty")
        return [(n, oh, ow, c) if node.channels_last else (n, c, oh, ow)]

    def run_nd_float(self, node: Node, x: np.ndarray) -> np.ndarray | None:
        """The float reference of the forms the passes rewrite (3-D, global of any rank), as
        they run them; None for a 2-D pooling."""
        if self.is_global and x.ndim != 4:
            stage_graph = Graph()
            stage_graph.tensors["x"] = Tensor("x", global_as_4d(x.shape))
            y = self.run_float(Node(node.op, node.name, ["x"], ["y"]), stage_graph, [x.reshape(global_as_4d(x.shape))])
            return y[0].reshape(global_shape(x.shape))
        return self.run_3d_float(node, x) if not self.is_global and x.ndim == 5 else None

    def run_3d_float(self, node: Node, x: np.ndarray) -> np.ndarray:
        """The float reference of a 3-D pooling: its two 2-D stages (as the passes run it)."""
        stages, out_shape = stages_3d(node, x.shape)
        for attrs, shape, _ in stages:
            stage_graph = Graph()
            stage_graph.tensors["x"] = Tensor("x", shape)
            x = self.run_float(Node(node.op, node.name, ["x"], ["y"], attrs), stage_graph, [x.reshape(shape)])[0]
        return x.reshape(out_shape)

    def windows(self, node: Node, g: Graph, x_nchw: np.ndarray, pad_value) -> np.ndarray:
        geo = self.geometry(node, g)
        pads = list(geo["pads"])
        pads[2] += geo["extra"][0]
        pads[3] += geo["extra"][1]
        return patches(x_nchw, self.kernel(node, g), geo["strides"], geo["dilations"], pads, geo["out"], pad_value)

    def counts(self, node: Node, g: Graph) -> np.ndarray:
        """Number of elements averaged at each output position, shape (OH, OW)."""
        _, _, h, w = self.dims(node, g)
        geo = self.geometry(node, g)
        inside = np.ones((1, 1, h, w))
        if self.attr(node, "count_include_pad"):
            p = geo["pads"]
            inside = np.pad(inside, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])), constant_values=1)
            geo = dict(geo, pads=[0, 0, 0, 0])
        pads = [geo["pads"][0], geo["pads"][1], geo["pads"][2] + geo["extra"][0], geo["pads"][3] + geo["extra"][1]]
        win = patches(inside, self.kernel(node, g), geo["strides"], geo["dilations"], pads, geo["out"], 0)
        return win.sum(axis=(2, 3))[0, 0].astype(np.int64)

    def lower_dims(self, node: Node, g: Graph) -> dict[str, int]:
        n, c, h, w = self.dims(node, g)
        geo = self.geometry(node, g)
        kh, kw = self.kernel(node, g)
        (oh, ow), (sh, sw), (pt, pl, pb, pr), (dh, dw) = geo["out"], geo["strides"], geo["pads"], geo["dilations"]
        return dict(n=n, h=h, w=w, c=c, oh=oh, ow=ow, kh=kh, kw=kw, sh=sh, sw=sw, pt=pt, pl=pl, pb=pb, pr=pr, dh=dh,
                    dw=dw)


@register
class MaxPool(Pool):
    op_type = "MaxPool"
    summary = "1-D and 2-D max pooling: strides, pads, dilations, auto_pad, ceil_mode"
    output_qparams = "same"

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        y = self.run_nd_float(node, xs[0]) if not node.channels_last else None
        if y is not None:
            return [y]
        last = node.channels_last
        y = self.windows(node, g, to_nchw(xs[0], last).astype(np.float32), -np.inf).max(axis=(2, 3))
        return [from_nchw(y, last)]

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        last = node.channels_last
        # pad with -128, as the C kernel starts its max: a window that is all padding
        # (pads >= kernel) gives -128 there, not -32768 wrapped to 0 by the int8 cast
        y = self.windows(node, g, to_nchw(xs[0], last).astype(np.int16), -128).max(axis=(2, 3))
        return [from_nchw(y.astype(np.int8), last)]

    def lower(self, node: Node, g: Graph, precision: str):
        return call("maxpool_s8" if precision == "int8" else "maxpool_f32", **io_args(node), **self.lower_dims(node, g))


class AveragePoolBase(Pool):
    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        y = self.run_nd_float(node, xs[0]) if not node.channels_last else None
        if y is not None:
            return [y]
        last = node.channels_last
        s = self.windows(node, g, to_nchw(xs[0], last).astype(np.float64), 0.0).sum(axis=(2, 3))
        return [from_nchw((s / self.counts(node, g)).astype(np.float32), last)]

    def quantize(self, node: Node, g: Graph) -> None:
        sx, zx = qparams_of(g, node.inputs[0])
        sy, zy = qparams_of(g, node.outputs[0])
        k = int(np.prod(self.kernel(node, g)))
        counts = np.arange(k + 1)
        mult, shift = quantize_multipliers(np.where(counts > 0, sx / (sy * np.maximum(counts, 1)), 0.0))
        node.q = {"zx": zx, "zy": zy, "mult": mult, "shift": shift}

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        last = node.channels_last
        q = node.q
        x = to_nchw(xs[0], last).astype(np.int64) - q["zx"]
        acc = self.windows(node, g, x, 0).sum(axis=(2, 3))
        n = self.counts(node, g)
        y = requant(acc, q["mult"][n], q["shift"][n]) + q["zy"]
        return [from_nchw(clamp_int8(y), last)]

    def lower(self, node: Node, g: Graph, precision: str):
        dims = dict(self.lower_dims(node, g), include_pad=int(self.attr(node, "count_include_pad")))
        if precision == "int8":
            q = node.q
            return call("avgpool_s8", **io_args(node), **dims, zx=q["zx"], zy=q["zy"],
                        mult=Weight("mult", q["mult"], "int32_t"), shift=Weight("shift", q["shift"], "int32_t"))
        return call("avgpool_f32", **io_args(node), **dims)


@register
class GlobalMaxPool(MaxPool):
    op_type = "GlobalMaxPool"
    summary = "max over the spatial dimensions (any rank)"
    is_global = True


@register
class AveragePool(AveragePoolBase):
    op_type = "AveragePool"
    summary = "1-D and 2-D average pooling: strides, pads, dilations, auto_pad, ceil_mode, count_include_pad"


@register
class GlobalAveragePool(AveragePoolBase):
    op_type = "GlobalAveragePool"
    summary = "mean over the spatial dimensions (any rank)"
    is_global = True
