"""The `neon` kernel set: aarch64 NEON kernels, sdk/templates/neon/, for any aarch64 board
(rpi5, and the jetson board's CPU path). int8 dot products use the dot-product extension
(SDOT, vdotq_laneq_s32) when the board's -mcpu has it (__ARM_FEATURE_DOTPROD) and plain
widening multiplies otherwise; the weight layouts are the same either way.

As for the avx2 set (kset_avx2.py), each rule re-lays the weights out at compile time and
declines, with its reason, what its kernel does not cover (grouped or dilated convolutions,
broadcasting adds, layers too wide for the stack panel, a zero-point-corrected bias that
leaves int32). int8 results are bit-identical to the portable kernels: SDOT sums of raw
int8 inputs are exact, the input panel is padded with the zero point and the bias carries
-zx * sum(w), and the requantization is cuvil_requant's rule in 64-bit lanes
(board_tests/test_simd_rpi5.py holds that on the kernel grid under qemu-aarch64).
"""
from __future__ import annotations

import numpy as np

from .kernel_api import Declined, KernelCall, Weight, kernel
from .kernel_sets import Answer, KernelSet, register_kernel_set
from .simd_layout import (undilated_pool, band_rows, channel_blocks, conv_tap_rows, data, padded, pick, requant_table_neon,
                          threads_for, zero_point_bias)
from .simd_rules import CONV_GEOMETRY, PANEL_BYTES, shared_rules

FC_K_MAX = 64 * 1024  # fc: the most inputs copied to the stack
SET = "neon"
BIAS_RANGE = "the zero-point-corrected bias leaves int32"


def conv_s8(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    if a["dh"] != 1 or a["dw"] != 1:
        return Declined("dilated convolution")
    w = data(a["w"]).astype(np.int64)  # [oc][kh][kw][c / groups]
    bias, mult, shift = data(a["bias"]), data(a["mult"]), data(a["shift"])
    if a["groups"] != 1:
        if a["groups"] == a["c"] == a["oc"]:
            return depthwise_s8(a, w, bias, mult, shift, options)
        return Declined("grouped convolution that is not depthwise")
    oc, kh, ch = a["oc"], a["kh"], a["c"]
    bias_zx = zero_point_bias(bias, w, a["zx"])
    if bias_zx is None:
        return Declined(BIAS_RANGE)
    rows, kr = conv_tap_rows(w, 4)  # [oc][kh][kr], kr a multiple of 4
    blocks = channel_blocks(oc, 16, 8)
    packed = []
    for o, width in blocks:
        block = np.zeros((width, kh, kr), dtype=np.int64)
        block[:min(width, oc - o)] = rows[o:o + width]
        packed.append(block.reshape(width, kh, kr // 4, 4).transpose(1, 2, 0, 3).reshape(-1))  # [ky][quad][ch][4]
    ocp = sum(width for _, width in blocks)
    cols = (a["ow"] - 1) * a["sw"] + a["kw"]
    rowlen = (cols * ch + 16 + 15) // 16 * 16
    band = band_rows(a["oh"], a["sh"], kh, rowlen, PANEL_BYTES)
    if band == 0:
        return Declined("input rows too wide for the stack panel")
    macs = a["n"] * a["oh"] * a["ow"] * oc * kh * a["kw"] * ch
    return kernel(SET, "conv2d_s8_neon")(
        **pick(a, "in out oc zx zy lo hi " + CONV_GEOMETRY),
        w=Weight("w8", np.concatenate(packed).astype(np.int8), "int8_t"),
        bias=Weight("bias_zx", padded(bias_zx.astype(np.int32), ocp), "int32_t"),
        mult=Weight("mult", padded(mult.astype(np.int32), ocp), "int32_t"),
        rq=Weight("rq", requant_table_neon(shift, ocp), "int64_t"), kq=kr // 4, band=band,
        threads=threads_for(options, macs))


def depthwise_s8(a: dict, w, bias, mult, shift, options) -> Answer:
    """Depthwise (groups == c == oc): channels in blocks of 8, int16 weights [block][tap][8]."""
    c, kh, kw = a["c"], a["kh"], a["kw"]
    taps = kh * kw
    cp = -(-c // 8) * 8
    wt = np.zeros((cp, taps), dtype=np.int64)
    wt[:c] = w.reshape(c, taps)
    packed = wt.reshape(cp // 8, 8, taps).transpose(0, 2, 1)
    rowlen = ((a["ow"] - 1) * a["sw"] + kw) * cp
    band = band_rows(a["oh"], a["sh"], kh, rowlen * 2, PANEL_BYTES)
    if band == 0:
        return Declined("input rows too wide for the stack panel")
    return kernel(SET, "dwconv2d_s8_neon")(
        **pick(a, "in out zx zy lo hi " + CONV_GEOMETRY),
        w=Weight("w16", packed.reshape(-1).astype(np.int16), "int16_t"),
        bias=Weight("bias", padded(bias.astype(np.int32), cp), "int32_t"),
        mult=Weight("mult", padded(mult.astype(np.int32), cp), "int32_t"),
        rq=Weight("rq", requant_table_neon(shift, cp), "int64_t"), band=band,
        threads=threads_for(options, a["n"] * a["oh"] * a["ow"] * c * taps))


def fc_s8(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    w = data(a["w"]).astype(np.int64)  # [n][k]
    bias, mult, shift = data(a["bias"]), data(a["mult"]), data(a["shift"])
    n, k = a["n"], a["k"]
    if k > FC_K_MAX:
        return Declined(f"more than {FC_K_MAX} inputs")
    bias_zx = zero_point_bias(bias, w, a["zx"])
    if bias_zx is None:
        return Declined(BIAS_RANGE)
    kp = -(-k // 16) * 16
    packed = []
    for j in range(0, n, 32):
        width = min(32, -(-(n - j) // 4) * 4)  # whole blocks of 4
        block = np.zeros((width, kp), dtype=np.int64)
        block[:min(width, n - j), :k] = w[j:j + width]
        packed.append(block.reshape(width, kp // 4, 4).transpose(1, 0, 2).reshape(-1))  # [quad][output][4]
    np4 = -(-n // 4) * 4
    return kernel(SET, "fc_s8_neon")(
        **pick(a, "in out rows k n zy lo hi"), w=Weight("w8", np.concatenate(packed).astype(np.int8), "int8_t"),
        bias=Weight("bias_zx", padded(bias_zx.astype(np.int32), np4), "int32_t"),
        mult=Weight("mult", padded(mult.astype(np.int32), np4), "int32_t"),
        rq=Weight("rq", requant_table_neon(shift, np4), "int64_t"), kp=kp,
        threads=threads_for(options, a["rows"] * n * k))


def maxpool_s8(c: KernelCall, node, g, options) -> Answer:
    a = undilated_pool(c.args)
    return a if isinstance(a, Declined) else kernel(SET, "maxpool_s8_neon")(**a)


def avgpool_s8(c: KernelCall, node, g, options) -> Answer:
    a = undilated_pool(c.args)  # (its requantization saturates: no bound needed)
    return a if isinstance(a, Declined) else kernel(SET, "avgpool_s8_neon")(**a)


@register_kernel_set
class Neon(KernelSet):
    name = SET
    rules = {
        **shared_rules(SET, 4),
        "conv2d_s8": conv_s8,
        "fc_s8": fc_s8,
        "maxpool_s8": maxpool_s8,
        "avgpool_s8": avgpool_s8,
    }
