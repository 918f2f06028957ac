"""The `avx2` kernel set: x86-64 kernels with AVX2 (+FMA for float), sdk/templates/avx2/.

For each call the portable lowering produced, a rule here decides whether an AVX2 kernel
takes it and re-lays the weights out for that kernel at compile time (every shape is
known): int8 weights become int16 tap pairs in the order the kernel reads them, channel
counts are padded to whole vectors, and requantization multipliers and shifts become the
per-lane table of cuvil_avx2_requant8. A rule returns None (the portable kernel runs) for
what its kernel does not cover: grouped or dilated convolutions, broadcasting element-wise
ops, layers too wide for the stack panel, calls whose argument list is not the one the
rule knows, and layers whose requantized values could leave int32 when their shifts are
outside the fast rule's range (cuvil_avx2_requant8 keeps 32-bit lanes after the 64-bit
shift). Large layers get the build's --threads (simd_layout.threads_for).

int8 results are bit-identical to the portable kernels: the integer sums are exact and
the requantization is the same rule (board_tests/test_kernels_host.py and
test_simd_host.py hold that on the kernel grid).
"""
from __future__ import annotations

import numpy as np

from ..ops.common import Weight
from .kernel_sets import KernelSet, by_table, register_kernel_set
from .simd_rules import AVGPOOL_ARGS, CONV_ARGS, FC_ARGS, MAXPOOL_ARGS, PANEL_BYTES, shared_rules
from .simd_layout import (band_rows, channel_blocks, conv_tap_rows, data, padded, requant_bound_ok, requant_fast,
                          requant_table_avx2, threads_for, unpack)

X16_MAX = 32 * 1024  # fc: the most inputs converted to int16 on the stack


def conv_acc_max(w: np.ndarray, bias: np.ndarray, x_range: int = 255) -> np.ndarray:
    """Per output channel, the largest |acc| = |bias + sum (x - zx) * w| can reach."""
    flat = np.abs(w.astype(np.int64)).reshape(w.shape[0], -1).sum(axis=1)
    return np.abs(bias.astype(np.int64)) + x_range * flat


def conv_s8(args, node, g):
    a = unpack(args, CONV_ARGS)
    if a is None:
        return None
    if a["dh"] != 1 or a["dw"] != 1:
        return None
    w = data(a["w"]).astype(np.int64)  # [oc][kh][kw][c / groups]
    bias, mult, shift = data(a["bias"]), data(a["mult"]), data(a["shift"])
    fast = requant_fast(shift)
    if not fast and not requant_bound_ok(conv_acc_max(w, bias), mult, shift, a["zy"]):
        return None
    if a["groups"] != 1:
        if a["groups"] == a["c"] == a["oc"]:
            return depthwise_s8(a, w, bias, mult, shift, fast, g)
        return None
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
        return None
    macs = a["n"] * a["oh"] * a["ow"] * oc * kh * a["kw"] * a["c"]
    return "conv2d_s8_avx2", [
        a["x"], a["y"], Weight("w16", np.concatenate(packed).astype(np.int16), "int16_t"),
        Weight("bias", padded(bias.astype(np.int32), ocp), "int32_t"),
        Weight("rq", requant_table_avx2(mult, shift, a["zy"], lanes_for(oc, ocp), fast), "int64_t"),
        a["n"], a["h"], a["wd"], a["c"], a["oh"], a["ow"], oc, kh, a["kw"], a["sh"], a["sw"], a["pt"], a["pl"], kr,
        band, int(fast), a["zx"], a["lo"], a["hi"], threads_for(g, macs)]


def lanes_for(channels: int, padded_to: int) -> np.ndarray:
    lanes = np.arange(-(-padded_to // 8) * 8)
    lanes[channels:] = -1
    return lanes


def depthwise_s8(a, w, bias, mult, shift, fast, g):
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
        return None
    macs = a["n"] * a["oh"] * a["ow"] * c * kh * kw
    return "dwconv2d_s8_avx2", [
        a["x"], a["y"], Weight("w16", packed.reshape(-1).astype(np.int16), "int16_t"),
        Weight("bias", padded(bias.astype(np.int32), cp), "int32_t"),
        Weight("rq", requant_table_avx2(mult, shift, a["zy"], lanes_for(c, cp), fast), "int64_t"),
        a["n"], a["h"], a["wd"], c, a["oh"], a["ow"], kh, kw, a["sh"], a["sw"], a["pt"], a["pl"], band, int(fast),
        a["zx"], a["lo"], a["hi"], threads_for(g, macs)]


def fc_s8(args, node, g):
    a = unpack(args, FC_ARGS)
    if a is None:
        return None
    w = data(a["w"]).astype(np.int64)  # [n][k]
    bias, mult, shift = data(a["bias"]), data(a["mult"]), data(a["shift"])
    n, k = a["n"], a["k"]
    fast = requant_fast(shift)
    if k > X16_MAX or not (fast or requant_bound_ok(conv_acc_max(w, bias), mult, shift, a["zy"])):
        return None
    kp = k + (k & 1)
    packed = []
    for j in range(0, n, 32):
        width = min(32, -(-(n - j) // 8) * 8)  # whole blocks of 8
        block = np.zeros((width, kp), dtype=np.int64)
        block[:min(width, n - j), :k] = w[j:j + width]
        packed.append(block.reshape(width, kp // 2, 2).transpose(1, 0, 2).reshape(-1))  # [pair][output][2]
    np8 = -(-n // 8) * 8
    return "fc_s8_avx2", [
        a["x"], a["y"], Weight("w", np.concatenate(packed).astype(np.int8), "int8_t"),
        Weight("bias", padded(bias.astype(np.int32), np8), "int32_t"),
        Weight("rq", requant_table_avx2(mult, shift, a["zy"], None, fast), "int64_t"),
        a["rows"], k, n, kp, int(fast), a["zx"], a["lo"], a["hi"], threads_for(g, a["rows"] * n * k)]


TRANSPOSE_ARGS = "x y o0 o1 o2 o3 s0 s1 s2 s3"


def transpose_s8(args, node, g):
    a = unpack(args, TRANSPOSE_ARGS)
    if a is None:
        return None
    if a["s2"] != 1:
        return None
    return "transpose_s8_avx2", [a["x"], a["y"], a["o0"], a["o1"], a["o2"], a["o3"], a["s0"], a["s1"], a["s3"]]


def maxpool_s8(args, node, g):
    if unpack(args, MAXPOOL_ARGS) is None:
        return None
    return "maxpool_s8_avx2", args


def avgpool_s8(args, node, g):
    a = unpack(args, AVGPOOL_ARGS)
    if a is None:
        return None
    mult, shift = data(a["mult"]), data(a["shift"])
    window = a["kh"] * a["kw"]
    acc_max = 255 * window  # |sum of (x - zx)| over at most the whole window
    if not requant_bound_ok(np.full(len(mult), acc_max), mult, shift, a["zy"]):
        return None
    return "avgpool_s8_avx2", args


@register_kernel_set
class Avx2(KernelSet):
    name = "avx2"
    specialise = by_table({
        **shared_rules("avx2", 8),
        "conv2d_s8": conv_s8,
        "fc_s8": fc_s8,
        "maxpool_s8": maxpool_s8,
        "avgpool_s8": avgpool_s8,
        "transpose_s8": transpose_s8,
    })
