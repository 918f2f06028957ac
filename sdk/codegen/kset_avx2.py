"""The `avx2` kernel set: x86-64 kernels with AVX2 (+FMA for float), sdk/templates/avx2/.

For each call the portable lowering produced, a rule here decides whether an AVX2 kernel
takes it and re-lays the weights out for that kernel at compile time (every shape is
known): int8 weights become int16 tap pairs in the order the kernel reads them, channel
counts are padded to whole vectors, and requantization multipliers and shifts become the
per-lane table of cuvil_avx2_requant8. A rule declines (the portable kernel runs, and the
build reports the layer with the reason) what its kernel does not cover: grouped or dilated
convolutions, broadcasting element-wise ops, layers too wide for the stack panel, and layers
whose requantized values could leave int32 when their shifts are outside the fast rule's
range (cuvil_avx2_requant8 keeps 32-bit lanes after the 64-bit shift). Large
layers get the build's --threads (simd_layout.threads_for).

int8 results are bit-identical to the portable kernels: the integer sums are exact and
the requantization is the same rule (board_tests/test_kernels_host.py and
test_simd_host.py hold that on the kernel grid).
"""
from __future__ import annotations

import numpy as np

from .kernel_api import Declined, KernelCall, Weight, kernel
from .kernel_sets import Answer, KernelSet, register_kernel_set
from .simd_layout import (undilated_pool, band_rows, channel_blocks, conv_tap_rows, data, padded, pick, requant_bound_ok,
                          requant_fast, requant_table_avx2, threads_for)
from .simd_rules import CONV_GEOMETRY, PANEL_BYTES, shared_rules

X16_MAX = 32 * 1024  # fc: the most inputs converted to int16 on the stack
SET = "avx2"
REQUANT_RANGE = "requantized values could leave int32 (shifts outside the fast rule's range)"


def conv_acc_max(w: np.ndarray, bias: np.ndarray, x_range: int = 255) -> np.ndarray:
    """Per output channel, the largest |acc| = |bias + sum (x - zx) * w| can reach."""
    flat = np.abs(w.astype(np.int64)).reshape(w.shape[0], -1).sum(axis=1)
    return np.abs(bias.astype(np.int64)) + x_range * flat


def conv_s8(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    if a["dh"] != 1 or a["dw"] != 1:
        return Declined("dilated convolution")
    w = data(a["w"]).astype(np.int64)  # [oc][kh][kw][c / groups]
    bias, mult, shift = data(a["bias"]), data(a["mult"]), data(a["shift"])
    fast = requant_fast(shift)
    if not fast and not requant_bound_ok(conv_acc_max(w, bias), mult, shift, a["zy"]):
        return Declined(REQUANT_RANGE)
    if a["groups"] != 1:
        if a["groups"] == a["c"] == a["oc"]:
            return depthwise_s8(a, w, bias, mult, shift, fast, options)
        return Declined("grouped convolution that is not depthwise")
    oc, kh = a["oc"], a["kh"]
    rows, kr = conv_tap_rows(w, 2)  # [oc][kh][kr]
    blocks = channel_blocks(oc, 16, 8)
    packed = []
    for o, width in blocks:
        block = np.zeros((width, kh, kr), dtype=np.int64)
        block[:min(width, oc - o)] = rows[o:o + width]
        # [ky][pair][channel][2]
        packed.append(block.reshape(width, kh, kr // 2, 2).transpose(1, 2, 0, 3).reshape(-1))
    ocp = sum(width for _, width in blocks)
    cols = (a["ow"] - 1) * a["sw"] + a["kw"]
    rowlen = (cols * a["c"] + 2 + 15) // 16 * 16
    band = band_rows(a["oh"], a["sh"], kh, rowlen * 2, PANEL_BYTES)
    if band == 0:
        return Declined("input rows too wide for the stack panel")
    macs = a["n"] * a["oh"] * a["ow"] * oc * kh * a["kw"] * a["c"]
    return kernel(SET, "conv2d_s8_avx2")(
        **pick(a, "in out oc zx lo hi " + CONV_GEOMETRY),
        w=Weight("w16", np.concatenate(packed).astype(np.int16), "int16_t"),
        bias=Weight("bias", padded(bias.astype(np.int32), ocp), "int32_t"),
        rq=Weight("rq", requant_table_avx2(mult, shift, a["zy"], lanes_for(oc, ocp), fast), "int64_t"),
        kr=kr, band=band, fast=int(fast), threads=threads_for(options, macs))


def lanes_for(channels: int, padded_to: int) -> np.ndarray:
    lanes = np.arange(-(-padded_to // 8) * 8)
    lanes[channels:] = -1
    return lanes


def depthwise_s8(a: dict, w, bias, mult, shift, fast, options) -> Answer:
    """Depthwise (groups == c == oc): channels in blocks of 8; per block, per kernel row, per
    pair of kernel columns (kx, kx + 1): the block's channels x the two taps' weights (0 for
    the tap past an odd kw), as the kernel's column-pair panel holds the inputs."""
    c, kh, kw = a["c"], a["kh"], a["kw"]
    cp = -(-c // 8) * 8
    kwp = (kw + 1) // 2
    wt = np.zeros((cp, kh, 2 * kwp), dtype=np.int64)
    wt[:c, :, :kw] = w.reshape(c, kh, kw)
    # [block][ky][column pair][8 channels][2 taps]
    packed = wt.reshape(cp // 8, 8, kh, kwp, 2).transpose(0, 2, 3, 1, 4)
    cols = (a["ow"] - 1) * a["sw"] + kw
    row_bytes = cols * cp * 2 * 2
    band = band_rows(a["oh"], a["sh"], kh, row_bytes, PANEL_BYTES)
    if band == 0:
        return Declined("input rows too wide for the stack panel")
    macs = a["n"] * a["oh"] * a["ow"] * c * kh * kw
    return kernel(SET, "dwconv2d_s8_avx2")(
        **pick(a, "in out zx lo hi " + CONV_GEOMETRY),
        w=Weight("w16", packed.reshape(-1).astype(np.int16), "int16_t"),
        bias=Weight("bias", padded(bias.astype(np.int32), cp), "int32_t"),
        rq=Weight("rq", requant_table_avx2(mult, shift, a["zy"], lanes_for(c, cp), fast), "int64_t"),
        band=band, fast=int(fast), threads=threads_for(options, macs))


def fc_s8(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    w = data(a["w"]).astype(np.int64)  # [n][k]
    bias, mult, shift = data(a["bias"]), data(a["mult"]), data(a["shift"])
    n, k = a["n"], a["k"]
    fast = requant_fast(shift)
    if k > X16_MAX:
        return Declined(f"more than {X16_MAX} inputs")
    if not (fast or requant_bound_ok(conv_acc_max(w, bias), mult, shift, a["zy"])):
        return Declined(REQUANT_RANGE)
    kp = k + (k & 1)
    packed = []
    for j in range(0, n, 32):
        width = min(32, -(-(n - j) // 8) * 8)  # whole blocks of 8
        block = np.zeros((width, kp), dtype=np.int64)
        block[:min(width, n - j), :k] = w[j:j + width]
        packed.append(block.reshape(width, kp // 2, 2).transpose(1, 0, 2).reshape(-1))  # [pair][output][2]
    np8 = -(-n // 8) * 8
    return kernel(SET, "fc_s8_avx2")(
        **pick(a, "in out rows k n zx lo hi"), w=Weight("w", np.concatenate(packed).astype(np.int8), "int8_t"),
        bias=Weight("bias", padded(bias.astype(np.int32), np8), "int32_t"),
        rq=Weight("rq", requant_table_avx2(mult, shift, a["zy"], None, fast), "int64_t"),
        kp=kp, fast=int(fast), threads=threads_for(options, a["rows"] * n * k))


def transpose_s8(c: KernelCall, node, g, options) -> Answer:
    if c["s2"] != 1:
        return Declined("the third axis is not contiguous in the input")
    return kernel(SET, "transpose_s8_avx2")(**pick(c.args, "in out o0 o1 o2 o3 s0 s1 s3"))


def maxpool_s8(c: KernelCall, node, g, options) -> Answer:
    a = undilated_pool(c.args)
    return a if isinstance(a, Declined) else kernel(SET, "maxpool_s8_avx2")(**a)


def avgpool_s8(c: KernelCall, node, g, options) -> Answer:
    a = undilated_pool(c.args)
    if isinstance(a, Declined):
        return a
    mult, shift = data(a["mult"]), data(a["shift"])
    acc_max = 255 * a["kh"] * a["kw"]  # |sum of (x - zx)| over at most the whole window
    if not requant_bound_ok(np.full(len(mult), acc_max), mult, shift, a["zy"]):
        return Declined(REQUANT_RANGE)
    return kernel(SET, "avgpool_s8_avx2")(**a)


@register_kernel_set
class Avx2(KernelSet):
    name = SET
    rules = {
        **shared_rules(SET, 8),
        "conv2d_s8": conv_s8,
        "fc_s8": fc_s8,
        "maxpool_s8": maxpool_s8,
        "avgpool_s8": avgpool_s8,
        "transpose_s8": transpose_s8,
    }
