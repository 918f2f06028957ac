"""The `avx2` kernel set: x86-64 kernels with AVX2 (+FMA for float), sdk/templates/avx2/.

For each call the portable lowering produced, a rule here decides whether an AVX2 kernel
takes it and re-lays the weights out for that kernel at compile time (every shape is
known): int8 weights become int16 tap pairs in the order the kernel reads them, channel
counts are padded to whole vectors, and requantization multipliers and shifts become the
per-lane table of cuvil_avx2_requant8. Every int8 convolution is taken: depthwise ones (any
depth multiplier, stride, dilation) by the depthwise kernel, whose panel holds a tile of
output channels so that any row width fits; grouped and dilated ones as a dense convolution
with zero weights (simd_layout.dense_conv_weights: the same sums, more multiply-adds). Any
shift and multiplier is requantized exactly (cuvil_avx2_requant8: the fast rule for shifts
32..54, the general 64-bit one otherwise, and the wide one when a layer's worst-case
accumulator passes int32). A rule declines only what 32-bit lanes cannot hold (a channel
with more than 66,000 full-range inputs) or a stack panel beyond PANEL_MAX_BYTES. Large
layers get the build's --threads (simd_layout.threads_for). Layers large enough for AMX-INT8
tiles get the twins conv2d_s8amx_avx2 / fc_s8amx_avx2 (amx_layout, fc_amx_layout: the same
arguments, an amx variant besides the others); every other int8 conv and fc call's variant
says why not ("no amx: ..."), which the build's layer rows show.

int8 results are bit-identical to the portable kernels: the integer sums are exact and
the requantization is the same rule (board_tests/test_kernels_host.py and
test_simd_host.py hold that on the kernel grid).
"""
from __future__ import annotations

import numpy as np

from ..contract import Declined, KernelCall, Weight, kernel
from ..kernel_sets import Answer, KernelSet, register_kernel_set
from ..simd_layout import (PANEL_MAX_BYTES, channel_blocks, channel_tile, conv_panels, conv_tap_rows,
                           dense_conv_weights, fc_panels, int8_constants, padded, panel_band, pick, requant_mode,
                           requant_table_avx2, threads_for)
from ..simd_rules import CONV_GEOMETRY, PANEL_TOO_WIDE, int4_rules, panel_elements, shared_rules

X16_MAX = PANEL_MAX_BYTES // 2  # fc: the most inputs converted to int16 on the stack
SET = "avx2"
DW_BAND = 4  # depthwise: output rows per panel band the channel tile is sized for
# fc_s8_avx2's input row on the stack holds at least one 32-byte vector: the row conversions
# (cuvil_avx2_widen_s8, cuvil_avx2_flip_s8) have vector loops GCC cannot prove unentered for a
# shorter array (-Warray-bounds at -O2), though k <= kp never enters them
FC_ROW_MIN = 32


def conv_s8(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    constants = int8_constants(a)
    if isinstance(constants, Declined):
        return constants
    w, bias, mult, shift = constants  # w: [oc][kh][kw][c / groups]
    mode = requant_mode(w, bias, shift)
    if a["groups"] == a["c"] > 1:  # depthwise, any depth multiplier
        return depthwise_s8(a, w, bias, mult, shift, mode, options)
    w = dense_conv_weights(w, a["groups"], a["c"], a["dh"], a["dw"])
    oc, kh, kw = a["oc"], w.shape[1], w.shape[2]
    rows, kr = conv_tap_rows(w, 4)  # [oc][kh][kr]: whole quads of taps for vpdpbusd
    blocks = channel_blocks(oc, 16, 8)
    packed = conv_panels(rows, blocks, 2)  # [ky][pair][channel][2]
    ocp = sum(width for _, width in blocks)
    cols = (a["ow"] - 1) * a["sw"] + kw
    rowlen = (cols * a["c"] + 3 + 15) // 16 * 16  # a pixel's last quad may read 3 taps past the row
    band = panel_band(a["oh"], a["sh"], kh, rowlen * 2)
    if band == 0:
        return Declined(PANEL_TOO_WIDE)
    macs = a["n"] * a["oh"] * a["ow"] * oc * kh * kw * a["c"]
    amx = amx_layout(a, oc, kh, kr, band, rowlen, options)
    call = kernel(SET, "conv2d_s8amx_avx2" if isinstance(amx, dict) else "conv2d_s8_avx2")(
        **{**pick(a, "in out oc zx lo hi " + CONV_GEOMETRY), "kh": kh, "kw": kw},
        w=Weight("w", packed.astype(np.int8), "int8_t"),
        bias=Weight("bias", padded(bias.astype(np.int32), ocp), "int32_t"),
        bias_vnni=Weight("bias_vnni", padded(vnni_bias(bias, rows.reshape(oc, -1), a["zx"]), ocp), "int32_t"),
        rq=Weight("rq", requant_table_avx2(mult, shift, a["zy"], lanes_for(oc, ocp), mode == 1), "int64_t"),
        kr=kr, band=band, fast=mode, threads=threads_for(options, macs)).with_stack(
        panel=panel_elements(band, a["sh"], kh, rowlen),  # int16 (avx2) or uint8 (VNNI) elements
        **(amx if isinstance(amx, dict) else {}))
    call.variant = "amx" if isinstance(amx, dict) else f"no amx: {amx}"
    return call


# The AMX-INT8 tile variant (conv2d_s8amx_avx2: conv2d_s8_avx2.h.j2 with amx): where a layer is
# large enough that 16-pixel x 16-channel tiles of 64-byte quads are mostly full. Every layer it
# declines is named (the call's variant, in the build's layer rows) with the reason.
AMX_MIN_CHANNELS = 32  # two 16-channel B tiles
AMX_MIN_ROW_PIXELS = 8  # an A tile holds pixels of one output row: under 8, more than half empty
AMX_MIN_FILL = 0.5  # the share of a kernel row's 64-byte tile slabs that are taps, not padding
AMX_BTILE_MAX = 64 * 1024  # one block's repacked B tiles on the stack
# tdpbuud sums x' * u, each at most 255 * 255 (x' = x + 128, u = w + 128: the template says why
# unsigned): over at most this many taps per pixel every partial sum stays below 2^31. AMX_BTILE_MAX
# keeps kh * kr <= 4096 today; this bound holds the int32 argument should that budget grow.
AMX_MAX_TAPS = (2**31 - 1) // (255 * 255)


def amx_layout(a: dict, oc: int, kh: int, kr: int, band: int, rowlen: int, options) -> dict[str, int] | str:
    """The amx variant's stack arrays (its panel with the slack a segment's 16 rows read past the
    band, a block's B tiles, the band's per-pixel sums of x + 128), or why the layer stays on
    avx512vnni at the amx level."""
    slabs = -(-kr // 64)
    if oc < AMX_MIN_CHANNELS:
        return f"{oc} output channels (fewer than {AMX_MIN_CHANNELS})"
    if a["ow"] < AMX_MIN_ROW_PIXELS:
        return f"output rows of {a['ow']} pixels (fewer than {AMX_MIN_ROW_PIXELS})"
    if kr < AMX_MIN_FILL * slabs * 64:
        return f"{kr} taps per kernel row fill under {AMX_MIN_FILL:.0%} of {slabs} x 64-byte tile rows"
    if kh * kr > AMX_MAX_TAPS:
        return f"{kh * kr} taps per pixel (more than {AMX_MAX_TAPS}: tdpbuud's int32 sums)"
    btiles = kh * slabs * 16 * 64
    if btiles > AMX_BTILE_MAX:
        return f"B tiles of {btiles} bytes per block (more than {AMX_BTILE_MAX})"
    panel = panel_elements(band, a["sh"], kh, rowlen) + 15 * a["sw"] * a["c"] + slabs * 64
    rsum = band * a["ow"]  # int32 each
    if panel + 4 * rsum > PANEL_MAX_BYTES:
        return f"a panel and input sums of {panel + 4 * rsum} bytes (more than {PANEL_MAX_BYTES})"
    return {"panel_amx": panel, "btiles_amx": btiles, "rsum_amx": rsum}


def vnni_bias(bias: np.ndarray, w: np.ndarray, zx: int) -> np.ndarray:
    """The VNNI variants' starting accumulators: vpdpbusd multiplies unsigned bytes, so they
    read x + 128 (padding taps: zx + 128, which adds 0) and start from
    bias - (128 + zx) * sum(w) per output channel (w: [channel][taps]), mod 2^32 as int32
    arithmetic wraps: the accumulator then equals bias + sum((x - zx) * w) mod 2^32."""
    corrected = bias.astype(np.int64) - (128 + int(zx)) * w.astype(np.int64).sum(axis=1)
    return ((corrected + 2**31) % 2**32 - 2**31).astype(np.int32)


def lanes_for(channels: int, padded_to: int) -> np.ndarray:
    lanes = np.arange(-(-padded_to // 8) * 8)
    lanes[channels:] = -1
    return lanes


def depthwise_s8(a: dict, w, bias, mult, shift, mode: int, options) -> Answer:
    """Depthwise (groups == c, oc = dm * c), any stride and dilation: output channels in blocks of
    8; per block, per kernel row, per pair of kernel columns (kx, kx + 1): the block's channels x
    the two taps' weights (0 for the tap past an odd kw), as the kernel's column-pair panel holds
    the inputs (3x3, stride 1, dilation 1, fast requantization: then per block the odd pixels'
    pairs (0, w0), (w1, w2) per row, after every block's); the panel takes `ct` output channels at a time (channel_tile), so any row width fits."""
    oc, kh, kw = a["oc"], a["kh"], a["kw"]
    ocp = -(-oc // 8) * 8
    kwp = (kw + 1) // 2
    wt = np.zeros((ocp, kh, 2 * kwp), dtype=np.int64)
    wt[:oc, :, :kw] = w.reshape(oc, kh, kw)
    # [block][ky][column pair][8 channels][2 taps]
    packed = wt.reshape(ocp // 8, 8, kh, kwp, 2).transpose(0, 2, 3, 1, 4).reshape(-1)
    odd = (kh, kw, a["sw"], a["dw"], mode) == (3, 3, 1, 1, 1)  # the kernel's 3x3 stride-1 path takes it
    if odd:
        # the kernel's 3x3 stride-1 path: the odd pixels' set after the blocks, pairs (0, w0), (w1, w2)
        odd_set = np.zeros((ocp, kh, 4), dtype=np.int64)
        odd_set[:oc, :, 1:] = w.reshape(oc, kh, kw)
        packed = np.concatenate([packed, odd_set.reshape(ocp // 8, 8, kh, 2, 2).transpose(0, 2, 3, 1, 4).reshape(-1)])
    cols = (a["ow"] - 1) * a["sw"] + (kw - 1) * a["dw"] + 1
    span = (kh - 1) * a["dh"] + 1
    ct = depthwise_tile(a, cols, span)
    band = panel_band(a["oh"], a["sh"], span, cols * ct * 4)
    if band == 0:
        return Declined(PANEL_TOO_WIDE)
    macs = a["n"] * a["oh"] * a["ow"] * oc * kh * kw
    return kernel(SET, "dwconv2d_s8_avx2")(
        **pick(a, "in out oc zx lo hi dh dw " + CONV_GEOMETRY), dm=oc // a["c"], ct=ct,
        w=Weight("w", packed.astype(np.int8), "int8_t"),
        bias=Weight("bias", padded(bias.astype(np.int32), ocp), "int32_t"),
        rq=Weight("rq", requant_table_avx2(mult, shift, a["zy"], lanes_for(oc, ocp), mode == 1), "int64_t"),
        band=band, fast=mode, odd=int(odd), threads=threads_for(options, macs, depthwise=True)).with_stack(
        **depthwise_stack(a, ct, band, span))


def depthwise_tile(a: dict, cols: int, span: int) -> int:
    """The depthwise channel tile: narrow enough for a band of DW_BAND output rows where the
    width allows (a band of one row rebuilt the kh panel rows of every output row: three times
    the panel work at 3x3). The avx512vnni variant takes 16 channels a zmm and the avx2 code a
    tile's 8 left over, so the band is halved (down to one row) until 16 channels fit, and a
    tile of more is a multiple of 16: MobileNetV2's 112-wide stride-2 layer got 8 channels at
    DW_BAND and ran 3.4 multiply-adds per cycle on a Zen 4, against 4.4 for its 16-channel peers."""
    oc = a["oc"]
    for rows in (DW_BAND, DW_BAND // 2, 1):
        ct = channel_tile(oc, span + (min(rows, a["oh"]) - 1) * a["sh"], cols * 4)
        if ct >= min(16, oc):
            break
    return ct if ct < 16 or ct >= oc else ct // 16 * 16


def depthwise_stack(a: dict, ct: int, band: int, span: int) -> dict[str, int]:
    """dwconv2d_s8_avx2's stack arrays: the int16 column-pair panel, its input row, and the taps'
    weights and offsets (kh * kwp column pairs)."""
    kw, dw = a["kw"], a["dw"]
    kwp = (kw + 1) // 2
    cols = (a["ow"] - 1) * a["sw"] + (kw - 1) * dw + 1
    return {"panel": panel_elements(band, a["sh"], span, cols * ct * 2), "row": (cols + dw) * ct,
            "taps": a["kh"] * kwp}


def fc_s8(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    constants = int8_constants(a, X16_MAX)
    if isinstance(constants, Declined):
        return constants
    w, bias, mult, shift = constants  # w: [n][k]
    n, k = a["n"], a["k"]
    mode = requant_mode(w, bias, shift)
    kp = -(-k // 4) * 4  # whole quads of inputs for vpdpbusd (pairs for vpmaddwd)
    packed = fc_panels(w, kp, 8, 2)  # blocks of 8 outputs, [pair][output][2]
    np8 = -(-n // 8) * 8
    amx = fc_amx_layout(a["rows"], n, kp)
    call = kernel(SET, "fc_s8amx_avx2" if isinstance(amx, dict) else "fc_s8_avx2")(
        **pick(a, "in out rows k n zx lo hi"), w=Weight("w", packed.astype(np.int8), "int8_t"),
        bias=Weight("bias", padded(bias.astype(np.int32), np8), "int32_t"),
        bias_vnni=Weight("bias_vnni", padded(vnni_bias(bias, w, a["zx"]), np8), "int32_t"),
        rq=Weight("rq", requant_table_avx2(mult, shift, a["zy"], None, mode == 1), "int64_t"),
        kp=kp, fast=mode, threads=threads_for(options, a["rows"] * n * k)).with_stack(
        x=max(kp, FC_ROW_MIN), **(amx if isinstance(amx, dict) else {}))
    call.variant = "amx" if isinstance(amx, dict) else f"no amx: {amx}"
    return call


# fc's amx variant (fc_s8amx_avx2): an A tile holds 16 rows of inputs, so it serves batched
# layers (a MatMul over a sequence, a Gemm of several rows); one row fills 1/16 of it.
AMX_FC_MIN_ROWS = 8
AMX_FC_ROWS_MAX = 64 * 1024  # 16 rows of inputs (x + 128) on the stack


def fc_amx_layout(rows: int, n: int, kp: int) -> dict[str, int] | str:
    """fc's amx stack arrays (16 input rows of whole 64-byte slabs, a 16-output block's B
    tiles), or why the layer stays on avx512vnni at the amx level."""
    slabs = -(-kp // 64)
    if rows < AMX_FC_MIN_ROWS:
        return f"{rows} row{'s' if rows > 1 else ''} of inputs (fewer than {AMX_FC_MIN_ROWS})"
    if n < 16:
        return f"{n} outputs (fewer than 16)"
    if kp < AMX_MIN_FILL * slabs * 64:
        return f"{kp} inputs fill under {AMX_MIN_FILL:.0%} of {slabs} x 64-byte tile rows"
    if kp > AMX_MAX_TAPS:
        return f"{kp} inputs (more than {AMX_MAX_TAPS}: tdpbuud's int32 sums)"
    if 16 * slabs * 64 > AMX_FC_ROWS_MAX or slabs * 1024 > AMX_BTILE_MAX:
        return f"{kp} inputs (16 rows of them more than {AMX_FC_ROWS_MAX} bytes)"
    return {"xa_amx": 16 * slabs * 64, "btiles_amx": slabs * 1024}



@register_kernel_set
class Avx2(KernelSet):
    name = SET
    rules = {
        **shared_rules(SET, 8),
        "conv2d_s8": conv_s8,
        "fc_s8": fc_s8,
        **int4_rules(SET, conv_s8, fc_s8),
    }
