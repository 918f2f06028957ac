"""Conv: 2-D convolution (grouped, depthwise, strided, dilated, padded, auto_pad).

Float reference, int8 rule (per-channel symmetric weights, int32 bias at
input_scale x weight_scale, requantization per output channel), and lowering to the
`conv2d_s8` / `conv2d_f32` kernels. In C, activations are channels-last (NHWC) and
weights are laid out [out_channel][kh][kw][in_channel/group]; the layout pass sets
`channels_last` on every Conv before code generation.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels import int4
from ..kernels.contract import call
from ..kernels.requant import INT16_MAX, INT16_MIN, clamp_to, quantize_multipliers, requant
from .common import (Weight, apply_fused_float, const_input, float_bounds, fused_int_range, io_args, is_wide,
                     optional_input, qparams_of, require)
from .registry import OpDef, register


def conv_geometry(node: Node, in_hw: tuple[int, int], k_hw: tuple[int, int]) -> dict:
    """Strides, dilations and explicit pads (top, left, bottom, right) and output size."""
    a = node.attrs
    strides = list(a.get("strides", [1, 1]))
    dil = list(a.get("dilations", [1, 1]))
    auto_pad = a.get("auto_pad", "NOTSET")
    eff = [(k - 1) * d + 1 for k, d in zip(k_hw, dil)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-i // s) for i, s in zip(in_hw, strides)]
        total = [max(0, (o - 1) * s + e - i) for o, s, e, i in zip(out, strides, eff, in_hw)]
        small = [t // 2 for t in total]
        big = [t - t // 2 for t in total]
        begin, end = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
        pads = [begin[0], begin[1], end[0], end[1]]
    elif auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    else:
        pads = list(a.get("pads", [0, 0, 0, 0]))
    out_hw = [(i + pads[d] + pads[d + 2] - e) // s + 1 for d, (i, e, s) in enumerate(zip(in_hw, eff, strides))]
    return {"strides": strides, "dilations": dil, "pads": pads, "out": out_hw}


def spatial_dims(shape: tuple[int, ...], channels_last: bool) -> tuple[int, int, int, int]:
    """(N, C, H, W) of a 4-D activation in either layout."""
    if channels_last:
        n, h, w, c = shape
    else:
        n, c, h, w = shape
    return n, c, h, w


def patches(x: np.ndarray, k_hw, strides, dil, pads, out_hw, pad_value) -> np.ndarray:
    """(N, C, KH, KW, OH, OW) view of an NCHW tensor padded with pad_value."""
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=pad_value)
    n, c, _, _ = xp.shape
    s = xp.strides
    shape = (n, c, k_hw[0], k_hw[1], out_hw[0], out_hw[1])
    view_strides = (s[0], s[1], s[2] * dil[0], s[3] * dil[1], s[2] * strides[0], s[3] * strides[1])
    return np.lib.stride_tricks.as_strided(xp, shape, view_strides, writeable=False)


# Bytes of im2col columns built at a time: bounds the copy of the patches whatever the batch.
IM2COL_BLOCK_BYTES = 1 << 23


def conv_nchw(x: np.ndarray, w: np.ndarray, geo: dict, group: int, pad_value=0) -> np.ndarray:
    """Grouped convolution of NCHW x with OIHW w (no bias), NCHW: float64 for float x, x's
    dtype for integer x.

    Computed channels-last (the layout of the graph's activations, so NCHW here is a view):
    im2col and a BLAS matmul over the whole batch in float64. Integer x stays exact: every
    partial sum is an integer below 2^53 (checked), which float64 holds exactly in any order;
    past that bound the sums are taken in int64."""
    exact = x.dtype.kind in "iu"
    compute = np.float64 if not exact or sums_fit_float64(x, w) else np.int64
    p = patches_nhwc(x.transpose(0, 2, 3, 1), w.shape[2:], geo, pad_value)
    if w.shape[1] == 1 and group > 1:
        y = depthwise_sums(p, w, compute)
    else:
        y = grouped_matmul_sums(p, w, group, compute)
    return (y if x.dtype.kind == "f" else y.astype(x.dtype, copy=False)).transpose(0, 3, 1, 2)


def patches_nhwc(x: np.ndarray, k_hw, geo: dict, pad_value) -> np.ndarray:
    """(N, OH, OW, KH, KW, C) view of an NHWC tensor padded with pad_value."""
    pads, strides, dil, out_hw = geo["pads"], geo["strides"], geo["dilations"], geo["out"]
    if any(pads):
        x = np.pad(x, ((0, 0), (pads[0], pads[2]), (pads[1], pads[3]), (0, 0)), constant_values=pad_value)
    s = x.strides
    shape = (x.shape[0], out_hw[0], out_hw[1], k_hw[0], k_hw[1], x.shape[3])
    view_strides = (s[0], s[1] * strides[0], s[2] * strides[1], s[1] * dil[0], s[2] * dil[1], s[3])
    return np.lib.stride_tricks.as_strided(x, shape, view_strides, writeable=False)


def sums_fit_float64(x: np.ndarray, w: np.ndarray) -> bool:
    """Whether every partial sum of products of x and w is an integer float64 holds exactly."""
    terms = int(np.prod(w.shape[1:]))
    x_max = int(np.abs(x).max(initial=0))
    w_max = int(np.abs(w).max(initial=0))
    return terms * x_max * w_max < 2**53


def depthwise_sums(p: np.ndarray, w: np.ndarray, compute) -> np.ndarray:
    """One input channel per group (depthwise, with a channel multiplier): a multiply-add per
    kernel tap over the whole tensor, (N, OH, OW, OC)."""
    n, oh, ow, kh, kw, c = p.shape
    multiplier = w.shape[0] // c
    y = np.zeros((n, oh, ow, w.shape[0]), dtype=compute)
    wc = w.astype(compute)
    for k in range(kh):
        for l in range(kw):
            taps = p[:, :, :, k, l]
            if multiplier > 1:
                taps = np.repeat(taps, multiplier, axis=3)
            y += taps * wc[:, 0, k, l]
    return y


def grouped_matmul_sums(p: np.ndarray, w: np.ndarray, group: int, compute) -> np.ndarray:
    """im2col per group and a matmul, a block of output rows at a time, (N, OH, OW, OC)."""
    n, oh, ow, kh, kw, c = p.shape
    oc, icg = w.shape[0], w.shape[1]
    ocg, depth = oc // group, icg * kh * kw
    y = np.empty((n, oh, ow, oc), dtype=compute)
    rows = max(1, IM2COL_BLOCK_BYTES // (n * ow * depth * 8))
    for gi in range(group):
        # columns ordered (kh, kw, c) as the patches are: the weights follow
        weights = w[gi * ocg:(gi + 1) * ocg].transpose(0, 2, 3, 1).reshape(ocg, depth).astype(compute).T
        for top in range(0, oh, rows):
            cols = np.ascontiguousarray(p[:, top:top + rows, :, :, :, gi * icg:(gi + 1) * icg], dtype=compute)
            block = cols.reshape(-1, depth) @ weights
            y[:, top:top + rows, :, gi * ocg:(gi + 1) * ocg] = block.reshape(n, -1, ow, ocg)
    return y


def to_nchw(x: np.ndarray, channels_last: bool) -> np.ndarray:
    return x.transpose(0, 3, 1, 2) if channels_last else x


def from_nchw(x: np.ndarray, channels_last: bool) -> np.ndarray:
    return x.transpose(0, 2, 3, 1) if channels_last else x


@register
class Conv(OpDef):
    op_type = "Conv"
    summary = "1-D and 2-D convolution: groups (depthwise), strides, dilations, asymmetric pads, auto_pad"
    defaults = {"group": 1, "auto_pad": "NOTSET"}

    def check(self, node: Node, g: Graph) -> None:
        w = const_input(g, node, 1, "the weight")
        require(w.ndim == 4, node, f"only 1-D and 2-D {self.op_type} is supported (weight rank {w.ndim})")
        require(len(g.tensors[node.inputs[0]].shape) == 4, node, "the input must be 4-D (NCHW)")
        if optional_input(node, 2):
            bias = const_input(g, node, 2, "the bias")
            oc = self.output_channels(node, w)
            require(bias.size == oc, node, f"the bias has {bias.size} values for {oc} output channels")
        _, c, _, _ = spatial_dims(g.tensors[node.inputs[0]].shape, node.channels_last)
        self.check_channels(node, c, w, self.attr(node, "group"))

    def output_channels(self, node: Node, w: np.ndarray) -> int:
        return int(w.shape[0])

    def check_channels(self, node: Node, c: int, w: np.ndarray, group: int) -> None:
        require(c == w.shape[1] * group, node, f"input channels {c} != weight {w.shape[1]} x group {group}")
        require(w.shape[0] % group == 0, node, "output channels must divide by group")

    def geometry(self, node: Node, g: Graph) -> dict:
        last = node.channels_last
        _, _, h, w = spatial_dims(g.tensors[node.inputs[0]].shape, last)
        return conv_geometry(node, (h, w), g.const(node.inputs[1]).shape[2:])

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        last = node.channels_last
        n = g.tensors[node.inputs[0]].shape[0]
        oc = g.const(node.inputs[1]).shape[0]
        oh, ow = self.geometry(node, g)["out"]
        require(oh > 0 and ow > 0, node, f"output size {oh}x{ow} is empty")
        return [(n, oh, ow, oc) if last else (n, oc, oh, ow)]

    # what ConvTranspose (a subclass) changes: the weight's layout, the sums, the kernels
    kernel_family = "conv2d"

    def weight_oihw(self, node: Node, g: Graph) -> np.ndarray:
        """The weight as [out_channel][in_channel/group][kh][kw]."""
        return g.const(node.inputs[1])

    def sums(self, x: np.ndarray, w: np.ndarray, geo: dict, group: int) -> np.ndarray:
        """The layer's products summed (no bias), NCHW: float64 for float x, else x's dtype."""
        return conv_nchw(x, w, geo, group)

    def macs(self, node: Node, g: Graph) -> int:
        w = g.const(node.inputs[1])
        return g.tensors[node.outputs[0]].size * int(np.prod(w.shape[1:]))

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        last = node.channels_last
        w = self.weight_oihw(node, g).astype(np.float64)
        y = self.sums(to_nchw(xs[0], last), w, self.geometry(node, g), self.attr(node, "group"))
        if optional_input(node, 2):
            y += g.const(node.inputs[2]).reshape(1, -1, 1, 1)  # y is the sums' own float64 array
        return [apply_fused_float(node, from_nchw(y, last).astype(np.float32))]

    def quantize(self, node: Node, g: Graph) -> None:
        quantize_weighted(node, g, axis=0, weight=self.weight_oihw(node, g))

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        last = node.channels_last
        q = node.q
        x = to_nchw(xs[0], last).astype(np.int64) - q["zx"]
        acc = self.sums(x, q["w"].astype(np.int64), self.geometry(node, g), self.attr(node, "group"))
        acc = acc + q["bias"].reshape(1, -1, 1, 1)
        y = requant(acc, q["mult"].reshape(1, -1, 1, 1), q["shift"].reshape(1, -1, 1, 1)) + q["zy"]
        return [from_nchw(clamp_to(y, q["act_min"], q["act_max"], q["dtype"]), last)]

    def lower(self, node: Node, g: Graph, precision: str):
        require(node.channels_last, node, "code generation needs the channels-last layout")
        n, h, w, c = g.tensors[node.inputs[0]].shape
        _, oh, ow, oc = g.tensors[node.outputs[0]].shape
        geo = self.geometry(node, g)
        kh, kw = g.const(node.inputs[1]).shape[2:]
        (sh, sw), (dh, dw), pads = geo["strides"], geo["dilations"], geo["pads"]
        dims = dict(n=n, h=h, wd=w, c=c, oh=oh, ow=ow, oc=oc, kh=kh, kw=kw, sh=sh, sw=sw, pt=pads[0], pl=pads[1],
                    dh=dh, dw=dw, groups=self.attr(node, "group"))
        if precision in ("int8", "int16"):
            q = node.q
            wide = precision == "int16"
            w = q["w"].transpose(0, 2, 3, 1)
            if node.weight_bits == 4:  # int4 values, packed two per byte (kernels/int4.py)
                return call(f"{self.kernel_family}_s8w4", **io_args(node), **dims,
                            w=Weight("w", int4.pack(w), "uint8_t"), bias=Weight("bias", q["bias"], "int32_t"),
                            mult=Weight("mult", q["mult"], "int32_t"), shift=Weight("shift", q["shift"], "int32_t"),
                            zx=q["zx"], zy=q["zy"], lo=q["act_min"], hi=q["act_max"])
            return call(f"{self.kernel_family}_{'s16' if wide else 's8'}", **io_args(node), **dims,
                        w=Weight("w", w, "int8_t"),
                        bias=Weight("bias", q["bias"], "int64_t" if wide else "int32_t"),
                        mult=Weight("mult", q["mult"], "int32_t"), shift=Weight("shift", q["shift"], "int32_t"),
                        zx=q["zx"], zy=q["zy"], lo=q["act_min"], hi=q["act_max"])
        wf = self.weight_oihw(node, g).astype(np.float32).transpose(0, 2, 3, 1)
        bias = g.const(node.inputs[2]) if optional_input(node, 2) else np.zeros(oc)
        return call(f"{self.kernel_family}_f32", **io_args(node), **dims, **float_bounds(node), w=Weight("w", wf, "float"),
                    bias=Weight("bias", bias.astype(np.float32), "float"))


# the symmetric ranges of the weight rule: [-127, 127] for int8, [-7, 7] for int4 (not -8: the
# range stays symmetric, as int8's leaves -128 out, so that +w and -w round to opposite codes and a
# channel's largest weights of either sign use the whole range)
WEIGHT_QMAX = {8: 127, 4: 7}


def symmetric_per_channel(w: np.ndarray, axis: int, bits: int = 8,
                          scale: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Integer weights in [-qmax, qmax] (WEIGHT_QMAX: int8 127, int4 7) as int8 data and float
    scales, one per slice along `axis`: max|w| / qmax, or the given ones (int4 layers whose
    clipped scales measured better, quant/sensitivity.py, choose_int4_scales)."""
    qmax = WEIGHT_QMAX[bits]
    w = w if w.dtype.kind == "f" else w.astype(np.float64)
    if scale is None:
        rows = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
        # max |w| without a float64 copy of the weights: the float64 of the extremes is the same
        amax = np.maximum(rows.max(axis=1), -rows.min(axis=1)).astype(np.float64)
        scale = np.where(amax > 0, amax / float(qmax), 1.0).astype(np.float32)
    scale = np.asarray(scale, dtype=np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = w / scale.astype(np.float64).reshape(shape)  # float64, the one temporary: rounded and clipped in place
    np.round(q, out=q)
    np.clip(q, -qmax, qmax, out=q)
    return q.astype(np.int8), scale


# int4 clipping (quant/sensitivity.py, choose_int4_scales, keeps it per layer where the model measures
# better with it): each channel's scale c max|w| / 7, c of this grid, of least squared weight error
INT4_CLIP_RATIOS = np.linspace(1.0, 0.5, 26)


def int4_clip_scales(w: np.ndarray, axis: int) -> np.ndarray:
    """Per channel along `axis`, the float32 scale c max|w| / 7 over INT4_CLIP_RATIOS whose
    symmetric int4 rounding (clipped to [-7, 7]) leaves the least squared error (the largest c
    on a tie); 1.0 for an all-zero channel. With 15 levels, clipping a channel's few largest
    weights buys a finer step for all the others."""
    rows = np.moveaxis(np.asarray(w, dtype=np.float64), axis, 0).reshape(w.shape[axis], -1)
    amax = np.abs(rows).max(axis=1)
    best_scale = np.where(amax > 0, amax / 7.0, 1.0).astype(np.float32)
    best_error = np.full(len(amax), np.inf)
    for ratio in INT4_CLIP_RATIOS:
        scale = np.where(amax > 0, amax * ratio / 7.0, 1.0).astype(np.float32)
        s = scale.astype(np.float64).reshape(-1, 1)
        error = ((np.clip(np.round(rows / s), -7, 7) * s - rows) ** 2).sum(axis=1)
        better = error < best_error
        best_error[better], best_scale[better] = error[better], scale[better]
    return best_scale


def quantize_weighted(node: Node, g: Graph, axis: int, weight: np.ndarray | None = None) -> None:
    """The int8 rule of Conv, ConvTranspose, Gemm and MatMul: per-channel weights, int32 bias, requant.

    `axis` is the output-channel axis of the weight as stored in the graph (or of `weight`, the
    weight re-laid out by the op, when given). A QDQ model brings its own int8 (or int4) weights
    and scales in node.imported_q["weight"]; otherwise they are computed here, in node.weight_bits
    (int4 layers: values in [-7, 7], the rest of the rule as for int8).
    """
    sx, zx = qparams_of(g, node.inputs[0])
    sy, zy = qparams_of(g, node.outputs[0])
    correction = 0.0
    if "weight" in node.imported_q:
        wq, sw = node.imported_q["weight"]
    else:
        w = g.const(node.inputs[1]) if weight is None else weight
        wq, sw = symmetric_per_channel(w, axis, node.weight_bits, node.int4_scale if node.weight_bits == 4 else None)
        correction = bias_correction(node, g, w, wq, sw, axis)
    channels = wq.shape[axis]
    sw = np.broadcast_to(np.asarray(sw, dtype=np.float32), (channels,))
    bias_scale = np.float64(sx) * sw.astype(np.float64)
    imported = node.imported_q.get("bias")
    if imported is not None and np.allclose(imported[1], bias_scale, rtol=1e-5):
        bias = imported[0]
    else:
        float_bias = g.const(node.inputs[2]).astype(np.float64) if optional_input(node, 2) else np.zeros(channels)
        bias = np.round((float_bias.reshape(-1) + correction) / bias_scale)
    if is_wide(node):  # 16x8: int64 bias and accumulator, 15-bit multipliers keep acc * M in int64
        mult, shift = quantize_multipliers(bias_scale / sy, bits=15)
        lo, hi = fused_int_range(node, sy, zy, INT16_MIN, INT16_MAX)
        bias = np.clip(bias, -2**47, 2**47).astype(np.int64)
    else:
        mult, shift = quantize_multipliers(bias_scale / sy)
        lo, hi = fused_int_range(node, sy, zy)
        limit = int32_bias_limit(wq, axis)
        bias = np.clip(bias, -limit, limit).astype(np.int32)
    node.q = {"w": wq, "bias": bias, "mult": mult, "shift": shift, "zx": zx, "zy": zy, "act_min": lo, "act_max": hi,
              "dtype": "int16" if is_wide(node) else "int8"}


def int32_bias_limit(wq: np.ndarray, axis: int) -> np.ndarray:
    """Per output channel, the largest |bias| that keeps bias + sum((x - zx) * w) in int32 for
    every int8 input and zero point (|x - zx| <= 255): 2^31 - 1 - 255 * sum|w|. Clipping the
    bias there (it only binds where the bias already dwarfs the weights, e.g. a channel whose
    weights are nearly zero) makes the int32 accumulators of every C kernel exact against the
    int64 numpy reference, whatever the order of accumulation."""
    moved = np.moveaxis(np.asarray(wq, dtype=np.int64), axis, 0)
    return np.maximum((2**31 - 1) - 255 * np.abs(moved.reshape(moved.shape[0], -1)).sum(axis=1), 0)


def bias_correction(node: Node, g: Graph, w: np.ndarray, wq: np.ndarray, sw: np.ndarray,
                    axis: int) -> np.ndarray | float:
    """Empirical bias correction (Nagel et al., 2019): rounding weights shifts each output's
    mean by (W - Wq) . E[x]; calibration measured E[x] per input channel, so add it back."""
    mean = g.tensors[node.inputs[0]].channel_mean
    if mean is None:
        return 0.0
    shape = [1] * w.ndim
    shape[axis] = -1
    err = np.moveaxis(w.astype(np.float64) - wq.astype(np.float64) * sw.astype(np.float64).reshape(shape), axis, 0)
    if err.ndim == 2:  # Gemm, MatMul
        return err @ mean  # (N, K) . (K,)
    group = int(node.attrs.get("group", 1))
    out_per_group, in_per_group = err.shape[0] // group, err.shape[1]
    grouped_mean = mean.reshape(group, in_per_group)[np.arange(err.shape[0]) // out_per_group]
    return np.einsum("oikl,oi->o", err, grouped_mean)
