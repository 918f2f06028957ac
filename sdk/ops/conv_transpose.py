"""ConvTranspose: 2-D transposed convolution (1-D through passes/layers_1d.py): groups, strides,
pads, output_padding, output_shape, dilations, auto_pad.

The weight, stored by ONNX as [in_channel][out_channel/group][kh][kw], is re-laid out once as
the [out_channel][in_channel/group][kh][kw] weight of a Conv, so the int8 rule is Conv's
(per-output-channel symmetric weights, int32 bias, requantization per channel). The float and
integer references scatter each tap's products; the C kernel (`convtranspose2d_s8/f32`) gathers
them per output value in the same order of sums as an int32 accumulation (exact).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from .common import require
from .conv import Conv, spatial_dims
from .registry import register


def transpose_geometry(attrs: dict, in_hw: tuple[int, int], k_hw: tuple[int, int]) -> dict:
    """Strides, dilations, pads (top, left, bottom, right) and output size, as the ONNX spec
    defines them (output_shape, when given, sets the pads; SAME_UPPER puts the odd one at the end)."""
    strides = list(attrs.get("strides", [1, 1]))
    dil = list(attrs.get("dilations", [1, 1]))
    extra = list(attrs.get("output_padding", [0, 0]))
    auto_pad = attrs.get("auto_pad", "NOTSET")
    full = [s * (i - 1) + e + (k - 1) * d + 1 for s, i, e, k, d in zip(strides, in_hw, extra, k_hw, dil)]
    target = list(attrs.get("output_shape", []))[-2:]
    if not target and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = [i * s for i, s in zip(in_hw, strides)]
    if target:
        total = [f - t for f, t in zip(full, target)]
        small, big = [t // 2 for t in total], [t - t // 2 for t in total]
        begin, end = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
        pads = [begin[0], begin[1], end[0], end[1]]
    else:
        pads = list(attrs.get("pads", [0, 0, 0, 0]))
    out = [f - pads[d] - pads[d + 2] for d, f in enumerate(full)]
    return {"strides": strides, "dilations": dil, "pads": pads, "out": out}


def conv_transpose_nchw(x: np.ndarray, w: np.ndarray, geo: dict, group: int) -> np.ndarray:
    """Transposed convolution of NCHW x with the Conv-layout weight w [oc][ic/group][kh][kw]
    (no bias), in x's dtype (int64 is exact): each tap adds its products at its output rows."""
    n, c, h, wd = x.shape
    oc, icg, kh, kw = w.shape
    ocg = oc // group
    (sh, sw), (dh, dw), (pt, pl) = geo["strides"], geo["dilations"], geo["pads"][:2]
    oh, ow = geo["out"]
    y = np.zeros((n, oc, oh, ow), dtype=x.dtype)
    xg = x.reshape(n, group, icg, h, wd)
    wg = w.reshape(group, ocg, icg, kh, kw).astype(x.dtype)
    for ky in range(kh):
        rows = np.arange(h) * sh + ky * dh - pt
        iy = np.nonzero((rows >= 0) & (rows < oh))[0]
        for kx in range(kw):
            cols = np.arange(wd) * sw + kx * dw - pl
            ix = np.nonzero((cols >= 0) & (cols < ow))[0]
            if not len(iy) or not len(ix):
                continue
            part = np.einsum("ngchw,goc->ngohw", xg[:, :, :, iy][:, :, :, :, ix], wg[:, :, :, ky, kx])
            y[:, :, rows[iy][:, None], cols[ix][None, :]] += part.reshape(n, oc, len(iy), len(ix))
    return y


@register
class ConvTranspose(Conv):
    op_type = "ConvTranspose"
    summary = ("1-D and 2-D transposed convolution: groups, strides, pads, output_padding, output_shape, "
               "dilations, auto_pad")
    kernel_family = "convtranspose2d"

    def output_channels(self, node: Node, w: np.ndarray) -> int:
        return int(w.shape[1]) * int(self.attr(node, "group"))

    def check_channels(self, node: Node, c: int, w: np.ndarray, group: int) -> None:
        require(c == w.shape[0] and c % group == 0, node, f"input channels {c} != weight {w.shape[0]} "
                                                           f"(divisible by group {group})")

    def weight_oihw(self, node: Node, g: Graph) -> np.ndarray:
        """ONNX's [ic][oc/group][kh][kw] as Conv's [oc][ic/group][kh][kw]."""
        w = g.const(node.inputs[1])
        group = self.attr(node, "group")
        ic, ocg, kh, kw = w.shape
        return w.reshape(group, ic // group, ocg, kh, kw).transpose(0, 2, 1, 3, 4).reshape(group * ocg, ic // group,
                                                                                           kh, kw)

    def sums(self, x: np.ndarray, w: np.ndarray, geo: dict, group: int) -> np.ndarray:
        return conv_transpose_nchw(x.astype(np.float64) if x.dtype.kind == "f" else x, w, geo, group)

    def geometry(self, node: Node, g: Graph) -> dict:
        _, _, h, w = spatial_dims(g.tensors[node.inputs[0]].shape, node.channels_last)
        return transpose_geometry(node.attrs, (h, w), g.const(node.inputs[1]).shape[2:])

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        n = g.tensors[node.inputs[0]].shape[0]
        oc = g.const(node.inputs[1]).shape[1] * self.attr(node, "group")
        oh, ow = self.geometry(node, g)["out"]
        require(oh > 0 and ow > 0, node, f"output size {oh}x{ow} is empty")
        return [(n, oh, ow, oc) if node.channels_last else (n, oc, oh, ow)]

    def macs(self, node: Node, g: Graph) -> int:
        w = g.const(node.inputs[1])
        return g.tensors[node.inputs[0]].size * int(np.prod(w.shape[1:]))

    def quantize(self, node: Node, g: Graph) -> None:
        require("weight" not in node.imported_q, node, "QDQ (pre-quantized) weights are not supported")
        super().quantize(node, g)

    def lower(self, node: Node, g: Graph, precision: str):
        require(precision in ("int8", "fp32"), node, f"no {precision} kernel (int8 and fp32 only)")
        return super().lower(node, g, precision)
