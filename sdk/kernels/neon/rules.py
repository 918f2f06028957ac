"""The `neon` kernel set: aarch64 NEON kernels, sdk/templates/neon/, for any aarch64 board
(rpi5, and the jetson board's CPU path). int8 dot products use the dot-product extension
(SDOT, vdotq_laneq_s32) when the board's -mcpu has it (__ARM_FEATURE_DOTPROD) and plain
widening multiplies otherwise; the weight layouts are the same either way.

As for the avx2 set (sdk/kernels/avx2/rules.py), each rule re-lays the weights out at compile time and
takes every int8 convolution (depthwise with any depth multiplier, stride and dilation in
output-channel tiles; grouped and dilated ones as dense convolutions with zero weights), any
fully connected layer whose sums fit 32-bit lanes, and any shift. int8 results are
bit-identical to the numpy reference: SDOT sums of raw int8 inputs are exact, the input panel
is padded with the zero point and the bias carries -zx * sum(w) modulo 2^32, and the
requantization is the reference's rule in 64-bit lanes, from the true accumulator
bias + (acc - bias) when a layer's worst case passes int32 (board_tests/test_simd_rpi5.py
holds that on the kernel grid under qemu-aarch64).
"""
from __future__ import annotations

import numpy as np

from ..contract import Declined, KernelCall, Weight, kernel
from ..kernel_sets import Answer, KernelSet, register_kernel_set
from ..simd_layout import (INT32_LIMIT, PANEL_MAX_BYTES, acc_bounds, band_rows, channel_blocks,
                           channel_tile, conv_panels, conv_tap_rows, dense_conv_weights, fc_panels, int8_constants, padded, panel_band, pick,
                           requant_table_neon, threads_for, zero_point_bias)
from ..requant import add_offset
from ..simd_rules import (CONV_GEOMETRY, PANEL_TOO_WIDE, broadcast_loop, int4_rules, half_rules, panel_elements,
                          shared_rules)

FC_K_MAX = PANEL_MAX_BYTES  # fc: the most inputs copied to the stack
SET = "neon"


def wrap32(values: np.ndarray) -> np.ndarray:
    """int64 values modulo 2^32 as int32 (the kernels' lanes add modulo 2^32)."""
    return ((np.asarray(values, dtype=np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def requant_args(w: np.ndarray, bias: np.ndarray, mult: np.ndarray, shift: np.ndarray, count: int) -> dict:
    """mult, rq (cuvil_neon_requant4's table, with each channel's bias for the wide rule) and
    wide (1 when a channel's worst-case accumulator passes int32), padded to `count` lanes."""
    wide = bool(np.any(acc_bounds(w, bias)[1] > INT32_LIMIT))
    return dict(mult=Weight("mult", padded(mult.astype(np.int32), count), "int32_t"),
                rq=Weight("rq", requant_table_neon(shift, count, bias), "int64_t"), wide=int(wide))


def rq32_args(mult: np.ndarray, shift: np.ndarray, count: int, wide: int) -> dict:
    """rq32 (1 when every channel's shift is at least 32, or its multiplier 0, and the
    accumulators are exact in int32: cuvil_neon_rq16_32 requantizes in 32-bit lanes, SQDMULH then
    SRSHL) and rs, 31 - shift per channel (0 for a multiplier 0), padded to `count` lanes."""
    m = np.asarray(mult, dtype=np.int64).reshape(-1)
    s = np.asarray(shift, dtype=np.int64).reshape(-1)
    ok = not wide and bool(np.all((s >= 32) | (m == 0)))
    rs = np.where(m == 0, 0, 31 - s) if ok else np.zeros_like(s)
    return dict(rs=Weight("rs", padded(rs.astype(np.int32), count), "int32_t"), rq32=int(ok))


def requant_variant_args(w: np.ndarray, bias: np.ndarray, mult: np.ndarray, shift: np.ndarray,
                         count: int) -> tuple[dict, str]:
    """A convolution's requantization arguments (requant_args and rq32_args) and the variant
    they make: rq32, wide (64-bit accumulators) or rq64."""
    rq = requant_args(w, bias, mult, shift, count)
    rq32 = rq32_args(mult, shift, count, rq["wide"])
    return {**rq, **rq32}, "rq32" if rq32["rq32"] else ("wide" if rq["wide"] else "rq64")


def conv_s8(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    constants = int8_constants(a)
    if isinstance(constants, Declined):
        return constants
    w, bias, mult, shift = constants  # w: [oc][kh][kw][c / groups]
    if a["groups"] == a["c"] > 1:  # depthwise, any depth multiplier
        return depthwise_s8(a, w, bias, mult, shift, options)
    w = dense_conv_weights(w, a["groups"], a["c"], a["dh"], a["dw"])
    oc, kh, kw, ch = a["oc"], w.shape[1], w.shape[2], a["c"]
    # the sums of raw int8 inputs (the panel pads with zx) plus bias - zx * sum(w), modulo 2^32
    bias_zx = wrap32(zero_point_bias(bias, w, a["zx"]))
    rows, kr = conv_tap_rows(w, 4)  # [oc][kh][kr], kr a multiple of 4
    blocks = channel_blocks(oc, 16, 8)
    packed = conv_panels(rows, blocks, 4)  # [ky][quad][ch][4]
    ocp = sum(width for _, width in blocks)
    cols = (a["ow"] - 1) * a["sw"] + kw
    rowlen = (cols * ch + 16 + 15) // 16 * 16
    band = panel_band(a["oh"], a["sh"], kh, rowlen)
    if band == 0:
        return Declined(PANEL_TOO_WIDE)
    macs = a["n"] * a["oh"] * a["ow"] * oc * kh * kw * ch
    rq, variant = requant_variant_args(w, bias, mult, shift, ocp)
    direct = direct_reason({**a, "kh": kh, "kw": kw})
    call = kernel(SET, "conv2d_s8_neon")(
        **{**pick(a, "in out oc zx zy lo hi " + CONV_GEOMETRY), "kh": kh, "kw": kw},
        w=Weight("w8", packed.astype(np.int8), "int8_t"),
        bias=Weight("bias_zx", padded(bias_zx, ocp), "int32_t"), **rq,
        kq=kr // 4, band=band, direct=int(direct == ""), threads=threads_for(options, macs)).with_stack(
        panel=panel_elements(band, a["sh"], kh, rowlen))  # the int4 twin reads a panel whatever `direct` says
    call.variant = variant if direct is None else (f"{variant} direct" if direct == "" else f"{variant} panel: {direct}")
    return call


def direct_reason(a: dict) -> str | None:
    """Whether conv2d_s8_neon reads a 1x1 layer's input in place (`direct`, no panel): "" when it does,
    else why not; None for layers with a larger kernel (always a panel). In place, the pixels a
    tile reads must be the input's own, c bytes apart (no stride, no padding) and the last quads
    of a pixel must be read without passing the input's end: 4 quads (16 bytes) at a time, then 2 (8
    bytes), which needs c % 8 == 0. Per 4 x 16 tile this saves the panel copy and the pixel
    pointer walk (MobileNetV2's 1x1 layers with 16 to 64 inputs: 11% to 25% of their instructions)."""
    if a["kh"] != 1 or a["kw"] != 1:
        return None
    if a["sh"] != 1 or a["sw"] != 1:
        return "strided 1x1"
    if a["pt"] or a["pl"] or a["oh"] != a["h"] or a["ow"] != a["wd"]:
        return "padded 1x1"
    if a["c"] % 8:
        return "1x1 with c % 8 != 0 (its last quads would read past the input)"
    return ""


# dwconv2d_s8_neon's int16 panel budget (per thread): larger than the convolutions' PANEL_BYTES because a
# depthwise layer's panel is wide (2 bytes per channel) and refilled often: with 48 KB, MobileNetV2's
# stride-2 layers (96 and 144 channels, rows 113 and 57 wide) took tiles of 32 or 72 channels and bands of
# 2 output rows, refilling 5 input rows per 2 output rows pixel by pixel: 1.08 to 1.23 instructions per
# MAC. With this budget a tile holds every channel (the contiguous fill) and bands are longer:
# 0.81/MAC (bench_aarch64, per layer). Linux aarch64 boards (the set's: rpi5, jetson) give the calling
# thread megabytes of stack and cuvil_parallel's threads 1 MB; 128 KB is twice a Cortex-A76's L1 and a
# quarter of its L2.
DW_PANEL_BYTES = 128 * 1024
# dwconv2d_s8_neon's panel fill, in instructions per panel column and row (measured on its loops):
# the contiguous path (dm == 1, one tile of all channels) 5 per 32 channels, the per-pixel path
# 6 plus 5 per 16 channels; and per band and block of 8 channels the 3x3 path's set-up
DW_FILL_RUN, DW_FILL_PIXEL, DW_FILL_LANES, DW_BLOCK_SETUP = 5 / 32, 6, 5 / 16, 40
DW_DOT_BAND = 4  # the dot path: output rows per band its channel tile is sized for (3 + 3 * sh panel rows)


def depthwise_tile(oc: int, c: int, oh: int, sh: int, span: int, cols: int) -> tuple[int, int]:
    """(ct, band) of dwconv2d_s8_neon: the channel tile (a multiple of 8) and the output rows per
    band with the fewest estimated instructions for filling the int16 panel (each band fills
    its (band - 1) * sh + span input rows again, a narrower tile leaves room for more rows)
    and setting up blocks, among tiles whose band fits DW_PANEL_BYTES; channel_tile's when none does."""
    cp = -(-oc // 8) * 8
    best = None
    for ct in range(8, cp + 1, 8):
        band = band_rows(oh, sh, span, cols * ct * 2, DW_PANEL_BYTES)
        if band == 0:
            continue
        bands = -(-oh // band)
        fill_rows = bands * ((band - 1) * sh + span)
        per_column = ct * DW_FILL_RUN if ct == cp == oc == c else DW_FILL_PIXEL + ct * DW_FILL_LANES
        cost = -(-cp // ct) * fill_rows * cols * per_column + cp // 8 * bands * DW_BLOCK_SETUP
        if best is None or cost < best[0]:
            best = (cost, ct, band)
    if best is not None:
        return best[1], best[2]
    ct = channel_tile(oc, span, cols * 2)
    return ct, panel_band(oh, sh, span, cols * ct * 2)


def dot_reason(a: dict, variant: str) -> str:
    """Why a depthwise layer does not take dwconv2d_s8_neon's `dot` path ("" when it does): 3x3
    taps at dilation 1, depth multiplier 1, whole blocks of 16 channels and the rq32
    requantization (the path's only one)."""
    if (a["kh"], a["kw"], a["dh"], a["dw"]) != (3, 3, 1, 1):
        return "no dot: not a 3x3 kernel at dilation 1"
    if a["oc"] != a["c"]:
        return "no dot: depth multiplier above 1"
    if a["oc"] % 16:
        # a partial block went through the edge loads for every column: MobileNetV1-0.25's 8-channel
        # layer took 3.3 instructions per MAC on the dot path, 0.6 on the int16 one
        return f"no dot: {a['oc']} channels (not a multiple of 16)"
    if variant != "rq32":
        return f"no dot: {variant} requantization"
    return ""


def dot_tile(a: dict, ocp: int) -> tuple[int, int]:
    """(ct, band) of the dot path: the channel tile (a multiple of 16) whose byte-quad panel holds a
    band of DW_DOT_BAND output rows within DW_PANEL_BYTES where the width allows, and that band."""
    row = a["ow"] * 4  # bytes per channel of a panel row: one quad per output column
    rows = (min(DW_DOT_BAND, a["oh"]) - 1) * a["sh"] + 3
    ct = max(16, min(ocp, DW_PANEL_BYTES // (rows * row) // 16 * 16))
    return ct, band_rows(a["oh"], a["sh"], 3, row * ct, DW_PANEL_BYTES) or panel_band(a["oh"], a["sh"], 3, row * ct)


def depthwise_dot(a: dict, w, bias, options, rq: dict) -> Answer:
    """The `dot` path of dwconv2d_s8_neon (3x3, dilation 1, depth multiplier 1, rq32): per band
    and tile of ct channels, a byte panel of tap quads, per panel row and output column x and
    channel (x(j), x(j + 1), x(j + 2), 0) at j = x * sw - pl (zx outside the input), so that
    SDOT sums one kernel row of 4 channels per instruction against the weights' quads (w0, w1,
    w2, 0): [block of 16 channels][ky][16 channels][4], as bytes in the int16 weight stream. A
    third of the instructions of the int16 multiply-accumulates per MAC, and the panel holds
    one column per output pixel (half the columns at stride 2)."""
    oc = a["oc"]
    ocp = -(-oc // 16) * 16
    wt = np.zeros((ocp, 3, 4), dtype=np.int64)
    wt[:oc, :, :3] = w.reshape(oc, 3, 3)
    packed = wt.reshape(ocp // 16, 16, 3, 4).transpose(0, 2, 1, 3).reshape(-1).astype(np.int8)
    ct, band = dot_tile(a, ocp)
    if band == 0:
        return Declined(PANEL_TOO_WIDE)
    call = kernel(SET, "dwconv2d_s8_neon")(
        **pick(a, "in out oc zx zy lo hi dh dw " + CONV_GEOMETRY), dm=1, ct=ct,
        w=Weight("w16", packed.view(np.int16), "int16_t"),
        bias=Weight("bias_zx", padded(wrap32(zero_point_bias(bias, w, a["zx"])), ocp), "int32_t"),
        **rq, band=band, dot=1,
        threads=threads_for(options, a["n"] * a["oh"] * a["ow"] * oc * 9, depthwise=True)).with_stack(
        panel=((band - 1) * a["sh"] + 3) * a["ow"] * ct * 2, taps=9)  # int16 elements: 4 bytes per channel
    call.variant = "rq32 dot"
    return call


def depthwise_s8(a: dict, w, bias, mult, shift, options) -> Answer:
    """Depthwise (groups == c, oc = dm * c), any stride and dilation: output channels in blocks
    of 8, int16 weights [block][tap][8], bias - zx * sum(w) modulo 2^32 (the panel holds raw
    inputs, padded with zx); the panel takes `ct` output channels at a time (depthwise_tile), so
    any row width fits."""
    oc, kh, kw = a["oc"], a["kh"], a["kw"]
    taps = kh * kw
    ocp = -(-oc // 8) * 8
    wt = np.zeros((ocp, taps), dtype=np.int64)
    wt[:oc] = w.reshape(oc, taps)
    packed = wt.reshape(ocp // 8, 8, taps).transpose(0, 2, 1)
    cols = (a["ow"] - 1) * a["sw"] + (kw - 1) * a["dw"] + 1
    span = (kh - 1) * a["dh"] + 1
    ct, band = depthwise_tile(oc, a["c"], a["oh"], a["sh"], span, cols)
    if band == 0:
        return Declined(PANEL_TOO_WIDE)
    rq, variant = requant_variant_args(w, bias, mult, shift, -(-oc // 16) * 16)
    no_dot = dot_reason(a, variant)
    if not no_dot:
        return depthwise_dot(a, w, bias, options, rq)
    call = kernel(SET, "dwconv2d_s8_neon")(
        **pick(a, "in out oc zx zy lo hi dh dw " + CONV_GEOMETRY), dm=oc // a["c"], ct=ct,
        w=Weight("w16", packed.reshape(-1).astype(np.int16), "int16_t"),
        bias=Weight("bias_zx", padded(wrap32(zero_point_bias(bias, w, a["zx"])), ocp), "int32_t"),
        **rq, band=band, dot=0,
        threads=threads_for(options, a["n"] * a["oh"] * a["ow"] * oc * taps, depthwise=True)).with_stack(
        panel=panel_elements(band, a["sh"], span, cols * ct), taps=taps)
    call.variant = f"{variant} ({no_dot})"
    return call


def fc_s8(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    constants = int8_constants(a, FC_K_MAX)
    if isinstance(constants, Declined):
        return constants
    w, bias, mult, shift = constants  # w: [n][k]
    n, k = a["n"], a["k"]
    bias_zx = wrap32(zero_point_bias(bias, w, a["zx"]))
    kp = -(-k // 16) * 16
    packed = fc_panels(w, kp, 4, 4)  # blocks of 4 outputs, [quad][output][4]
    np4 = -(-n // 4) * 4
    return kernel(SET, "fc_s8_neon")(
        **pick(a, "in out rows k n zy lo hi"), w=Weight("w8", packed.astype(np.int8), "int8_t"),
        bias=Weight("bias_zx", padded(bias_zx, np4), "int32_t"), **requant_args(w, bias, mult, shift, np4), kp=kp,
        threads=threads_for(options, a["rows"] * n * k)).with_stack(x=kp)  # one input row


ADD_SPLIT = 6  # add_s8_neon: each multiplier as 2^6 * mh + ml, ml an int8 factor, 64 * int8 an int16


def add_s8(c: KernelCall, node, g, options) -> Answer:
    """int8 Add with broadcasting, axes merged (merged_axes): c0 = 2^(shift-1) - za * ma - zb * mb
    modulo 2^32 (the reference's int32 sum is reached exactly in wrapping arithmetic from the raw
    operands), each multiplier split as 64 * mh + ml with 0 <= ml < 64 (a * ml + b * mbl in int16
    lanes) and mh < 2^15 (an int16 lane of SMLAL by element). Variant: "contiguous" when both
    operands' inner rows are contiguous, "broadcast" when one repeats a value along them."""
    a = c.args
    ma, mb, shift = int(a["ma"]), int(a["mb"]), int(a["shift"])
    if not (0 <= ma < 1 << (15 + ADD_SPLIT) and 0 <= mb < 1 << (15 + ADD_SPLIT)):
        return Declined(f"add multipliers outside [0, 2^{15 + ADD_SPLIT}) (int16 lanes of mult >> {ADD_SPLIT})")
    if not 1 <= shift <= 31:
        return Declined("an add shift outside [1, 31]")
    loop = broadcast_loop(a)
    c0 = add_offset(int(a["za"]), int(a["zb"]), ma, mb, shift)
    low = (1 << ADD_SPLIT) - 1
    call = kernel(SET, "add_s8_neon")(
        **pick(a, "a b out ma mb shift zy lo hi"), **loop, mah=ma >> ADD_SPLIT, mal=ma & low, mbh=mb >> ADD_SPLIT,
        mbl=mb & low, c0=int(wrap32(np.array([c0]))[0]))  # as the int32_t it is in C
    call.variant = "contiguous" if loop["sa3"] == loop["sb3"] == 1 else "broadcast"
    return call


@register_kernel_set
class Neon(KernelSet):
    name = SET
    rules = {
        **shared_rules(SET, 4),
        **half_rules(SET),
        "add_s8": add_s8,
        "conv2d_s8": conv_s8,
        "fc_s8": fc_s8,
        **int4_rules(SET, conv_s8, fc_s8),
    }
