"""The Cortex-M DSP kernel set (Armv7E-M: SMLAD, SXTAB16, SMMLA, SSUB8/SEL), templates in
sdk/templates/cortex_m_dsp/.

Python decides, per call and from compile-time shapes, whether a DSP kernel takes it and
rewrites the portable arguments for it; the C headers only implement:

- weights are re-ordered in flash in the order the kernel reads them (`row_order`,
  `gemm_weights`, the per-channel streams): the GEMM and FC weights as int8 bytes widened in
  registers by SXTB16 (weight_layout "int8", the default) or pre-widened to int16 ("int16":
  LDM + SMLAD, twice the bytes); depthwise 3x3 weights likewise (int8 rows [w0 s w1 w2]
  widened per channel by SXTB16/PKHTB, or pre-widened pairs), the general depthwise kernel's as int16;
- int4 layers (conv2d_s8w4, fc_s8w4: kernels/int4.py): the GEMM and FC streams hold the weights
  as nibbles, two per byte, that the blocks unpack in registers as 16 x w (AND 0xF0F0F0F0, after
  LSL 4 for the low nibbles, then SXTB16), so the accumulators hold 16 x the sums and the
  requantization shifts 4 more (`x16_fits` checks both fit); a layer outside that, a depthwise
  layer (its weights are few) and the K-tiled path keep the int4 values as int8 bytes, which the
  build lists (`int4.unpacked`);
- requantization constants become {M, rnd, s} per channel (`fast_requant`): for a shift
  S >= 33 a three-instruction requant (SMMLA, ASR, then + zy) that is exact for the rounding
  rule of sdk/kernels/requant.py for every int32 accumulator; for S <= 32 the 64-bit form
  (then the layer's assembly blocks give way to their C loops, `fastq` = 0);
- accumulators are int32 like the portable kernels' (SMLAD wraps the same way), so a
  worst-case bound beyond int32 changes nothing: the sums are those of the portable kernel;
- zero points: the convolution column holds x - zx as int16 (padding = 0 = zx - zx), so the
  sum is the portable kernel's sum over valid taps, exactly.

A rule declines (Declined, with the reason the build reports) only when its kernel cannot
take the call (today: a convolution group of more than 2304 input channels); the call then
falls back to the portable kernel. Each rule's docstring says when it applies.
Every kernel here is bit-identical to its portable counterpart (board_tests/test_kernels_m7_dsp.py).
"""
from __future__ import annotations

import numpy as np

from ...ir import Graph, Node
from .. import int4
from ..contract import Declined, KernelCall, Weight, kernel
from ..int4 import unpacked
from ..kernel_sets import Answer, KernelSet, register_kernel_set
from ..requant import add_offset
from ..simd_layout import STRIDED_SOFTMAX, MAXPOOL_ARGS, pick, pool_call, row_softmax_args
from ..simd_rules import argmax_rule, broadcast_loop

COL_WORDS = 1152  # CUVIL_DSP_COL_WORDS (conv2d_s8_dsp.h.j2): the tile's columns, px * K' <= 2 * COL_WORDS values
FC_WORDS = 1024  # CUVIL_DSP_FC_WORDS (fc_s8_dsp.h.j2): the FC's input column, K' <= 2 * FC_WORDS values
RUN_BYTES = 256  # CUVIL_DSP_RUN: the longest window of the "run" layout (conv2d_s8_dsp.h.j2)
SET = "cortex_m_dsp"


# --- shared helpers -----------------------------------------------------------------------------
def round_up(x: int, to: int) -> int:
    return (x + to - 1) // to * to


def packed16(value: int) -> int:
    """The same int16 in both halves of a 32-bit word, as a C int32 value."""
    v = (value & 0xFFFF) | ((value & 0xFFFF) << 16)
    return v - (1 << 32) if v >= 1 << 31 else v


def bytes4(value: int) -> int:
    """An int8 in every byte of a 32-bit word, as a C int32 value."""
    v = (value & 0xFF) * 0x01010101
    return v - (1 << 32) if v >= 1 << 31 else v


def fast_requant(mult: np.ndarray, shift: np.ndarray) -> tuple[np.ndarray, int]:
    """({M, rnd, s} per channel, fastq) for cuvil_rq, y = zy + ((acc * M + 2^(S-1)) >> S):

    - S >= 33: s = S - 32, rnd = 2^(s-1); y = zy + ((hi32(acc * M) + rnd) >> s) (SMMLA, ASR,
      ADD), exact for every int32 acc: |hi32| <= 2^30 and rnd <= 2^29 cannot overflow, and the
      floor of hi32 does not change the floor at 2^s;
    - S <= 32: s = 0 and rnd = S: cuvil_rq's 64-bit form.

    fastq is 1 when every channel has the first form (the assembly blocks use only that)."""
    mult = np.asarray(mult, dtype=np.int64).reshape(-1)
    shift = np.asarray(shift, dtype=np.int64).reshape(-1)
    high = shift >= 33
    s = np.where(high, shift - 32, 0)
    rnd = np.where(high, np.int64(1) << np.maximum(s - 1, 0), shift)
    return np.stack([mult, rnd, s], axis=1).astype(np.int32), int(high.all())


def pad_rows(a: np.ndarray, count: int) -> np.ndarray:
    """a with zero rows appended along axis 0 up to `count` rows."""
    if a.shape[0] >= count:
        return a
    return np.concatenate([a, np.zeros((count - a.shape[0], *a.shape[1:]), dtype=a.dtype)])


def swap_pairs(q: np.ndarray) -> np.ndarray:
    """Within each group of 4 values, positions 1 and 2 swap: SXTAB16 of a word gives
    bytes [0, 2], and with ROR 8 bytes [1, 3]."""
    return (q & ~3) | ((q & 1) << 1) | ((q >> 1) & 1)


def row_order(length: int) -> np.ndarray:
    """Column position -> index in a run of `length` contiguous input bytes (-1: zero),
    for a run stored as the kernels store it: whole groups of 4 swapped, the 1-3 last bytes
    in order, padded to an even count."""
    seg = round_up(length, 2)
    q = np.arange(seg)
    whole = length // 4 * 4
    j = np.where(q < whole, swap_pairs(q), q)
    return np.where(j < length, j, -1)


def padded_order(length: int, seg: int) -> np.ndarray:
    """row_order(length) padded with -1 (zeros) to seg positions."""
    order = row_order(length)
    return np.concatenate([order, np.full(seg - len(order), -1)])


def arrange(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """values[..., order] with zeros where order is -1."""
    picked = values[..., np.maximum(order, 0)]
    return np.where(order >= 0, picked, 0)


def gemm_weights(wk: np.ndarray, group: int) -> np.ndarray:
    """int16 weights [oc][K'] -> the GEMM's flash order: output channels in groups of `group`
    (zero rows pad the last), and per group, for every 4 values of K', 4 values of each
    channel in turn."""
    oc, kp = wk.shape
    wk = pad_rows(wk.astype(np.int16), round_up(oc, group))
    return wk.reshape(-1, group, kp // 4, 4).transpose(0, 2, 1, 3).reshape(-1)


def packed_weights(flat: np.ndarray, w8: bool) -> np.ndarray:
    """Weights in gemm_weights order as the stream stores them: int16, or (w8) int8 with each
    4-group as bytes [s0 s2 s1 s3] of its int16 order s, so that SXTB16 of the word gives the
    pair [s0 s1] and SXTB16 ROR 8 the pair [s2 s3] (the column's pairs); as int16 slots."""
    if not w8:
        return flat.astype(np.int16)
    return np.ascontiguousarray(flat.reshape(-1, 4)[:, [0, 2, 1, 3]].astype(np.int8)).reshape(-1).view("<i2")


def as_int16(words: np.ndarray) -> np.ndarray:
    """int32 values as the int16 halves that hold them in memory (little-endian)."""
    return np.ascontiguousarray(words, dtype="<i4").view("<i2")


def pair_streams(wk: np.ndarray, bias: np.ndarray, q: np.ndarray, w8: bool) -> np.ndarray:
    """The conv GEMM's flash stream (cuvil_dsp_gemm), one block per pair of output channels:
    [b0 b0 b1 b1] (int32), the pair's weights (gemm_weights order, int16 or int8: packed_weights),
    [M rnd s] x 2 (int32). An odd channel count gets a last pair with a zero second channel."""
    oc, kp = wk.shape
    pairs = round_up(oc, 2) // 2
    w = packed_weights(gemm_weights(wk, 2), w8).reshape(pairs, -1)
    b = pad_rows(bias.astype(np.int64), 2 * pairs).reshape(pairs, 2)
    qq = pad_rows(q.astype(np.int64), 2 * pairs).reshape(pairs, 6)
    blocks = [np.concatenate([as_int16(np.repeat(b[j], 2)), w[j], as_int16(qq[j])]) for j in range(pairs)]
    return np.concatenate(blocks).astype(np.int16)


def quad_streams(wk: np.ndarray, bias: np.ndarray, q: np.ndarray, w8: bool, w4: bool = False) -> np.ndarray:
    """The fully connected kernel's flash stream (fc_s8_dsp.h), one block per 4 outputs:
    [b0 b1 b2 b3] (int32), the quad's weights, [M rnd s] x 4 (int32). The output count is padded
    to a multiple of 4 with zero rows. int16 weights: gemm_weights order. int8 weights (w8): two
    outputs per 16-bit lane (pair_lanes), the bias words [b0, b1 + 256 b0, b2, b3 + 256 b2]. int4
    weights (w4): pair_nibbles, the bias words 16 x the int8 ones (modulo 2^32)."""
    n, kp = wk.shape
    quads = round_up(n, 4) // 4
    b = pad_rows(bias.astype(np.int64), 4 * quads).reshape(quads, 4)
    if w8 or w4:
        rows = pad_rows(wk.astype(np.int64), 4 * quads)
        w = pair_nibbles(rows) if w4 else pair_lanes(rows)
        b = b.copy()
        b[:, 1] += b[:, 0] << 8
        b[:, 3] += b[:, 2] << 8
        b = wrap32s(b * 16 if w4 else b)  # modulo 2^32, as the kernel's int32 sums
    else:
        w = packed_weights(gemm_weights(wk, 4), False).reshape(quads, -1)
    qq = pad_rows(q.astype(np.int64), 4 * quads).reshape(quads, 12)
    blocks = [np.concatenate([as_int16(b[j]), w[j], as_int16(qq[j])]) for j in range(quads)]
    return np.concatenate(blocks).astype(np.int16)


def pair_lanes(wk: np.ndarray) -> np.ndarray:
    """int8 weights [4 * quads][K'] (column order) -> per quad, per group of 4 column slots, the
    lanes v = 256 wA + (wB + 128) of the output pairs (A, B) = (o0, o1) then (o2, o3), slot by
    slot: int16 [quads][K'] (one byte per weight). The high byte of a lane is wA, the low byte
    wB + 128 in 0..255 (weights are within [-127, 127]; any int8 fits)."""
    n4, kp = wk.shape
    w = wk.reshape(n4 // 4, 2, 2, kp // 4, 4)  # [quad][pair][A or B][group][slot]
    lanes = (w[:, :, 0] << 8) + w[:, :, 1] + 128  # [quad][pair][group][slot]
    return lanes.transpose(0, 2, 1, 3).reshape(n4 // 4, -1).astype(np.int16)


def pair_nibbles(wk: np.ndarray) -> np.ndarray:
    """int4 weights [4 * quads][K'] (column order) -> per quad, per group of 4 column slots, one
    word per output pair (A, B) = (o0, o1) then (o2, o3): the bytes [wB + 8, wA] of slot s0 then s1
    as high nibbles and those of s2, s3 as low nibbles, so that AND 0xF0F0F0F0 (after LSL 4 for the
    low ones) gives pair_lanes' words of 16 x the weights (lanes 16 (256 wA + wB + 8)); int16 slots
    [quads][K' / 2]."""
    n4, kp = wk.shape
    w = wk.reshape(n4 // 4, 2, 2, kp // 4, 4)  # [quad][pair][A or B][group][slot]
    # int8 bytes of the lanes before scaling: [wB + 8, wA] per slot, for slots (s0, s1) and (s2, s3)
    lanes = np.stack([w[:, :, 1] + 8, w[:, :, 0]], axis=-1)  # [quad][pair][group][slot][B, A]
    words = nibble_words(lanes[:, :, :, 0:2].reshape(*lanes.shape[:3], 4), lanes[:, :, :, 2:4].reshape(*lanes.shape[:3], 4))
    return np.ascontiguousarray(words.transpose(0, 2, 1, 3)).reshape(n4 // 4, -1).view("<i2")


# --- int4 weights (w4): nibbles unpacked as 16 x w ------------------------------------------------
X16_LIMIT = (2**31 - 1) // 16  # the largest |bias + sum| whose 16 x still fits an int32 accumulator
X16_SHIFT = 4  # 16 x the accumulator: the requantization shift grows by 4
MAX_SHIFT = 62  # the rounding rule's largest shift (kernels/requant.py)
DEPTHWISE_INT8 = "the depthwise kernels read int8 weights (a depthwise layer's weights are few)"
KTILED_INT8 = f"the K-tiled path (a column of more than {COL_WORDS} values) reads int8 weights"


def x16_fits(a: dict) -> str:
    """Why the int4 blocks cannot take a layer ("" when they can): they accumulate 16 x the sums,
    so every channel's |bias| + 255 sum|w| must stay within X16_LIMIT, and its requantization shift
    plus 4 within MAX_SHIFT."""
    w = np.asarray(a["w"].data).astype(np.int64)
    bound = np.abs(np.asarray(a["bias"].data).astype(np.int64)) + 255 * np.abs(w).reshape(w.shape[0], -1).sum(axis=1)
    if (bound > X16_LIMIT).any():
        return "a channel's |bias| + 255 sum|w| passes 2^27 (int4 unpacking accumulates 16 x the sums in int32)"
    if int(np.max(np.asarray(a["shift"].data), initial=0)) + X16_SHIFT > MAX_SHIFT:
        return f"a requantization shift above {MAX_SHIFT - X16_SHIFT} (int4 unpacking needs 4 more bits of shift)"
    return ""


def x16_call(c8: KernelCall) -> KernelCall:
    """The portable int8 call of an int4 layer (int4.as_int8) with 16 x its weights (16 w in
    [-128, 112] is an int8 byte), 16 x its bias and 4 more bits of shift: the same outputs for
    every input, (16 acc M + 2^(S+3)) >> (S+4) being (acc M + 2^(S-1)) >> S, where x16_fits holds.
    The depthwise kernels then keep their fast paths, which want shifts of 33 and more (an int4
    layer's are about 4 below the int8 layer's)."""
    a = dict(c8.args)
    a["w"] = Weight(a["w"].hint, np.asarray(a["w"].data).astype(np.int64) * 16, "int8_t")
    a["bias"] = Weight(a["bias"].hint, (np.asarray(a["bias"].data).astype(np.int64) * 16).astype(np.int32), "int32_t")
    a["shift"] = Weight(a["shift"].hint, np.asarray(a["shift"].data).astype(np.int32) + X16_SHIFT, "int32_t")
    return kernel("portable", c8.kernel)(**a)


def nibble_words(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Two int8 byte streams of equal shape as one nibble stream: each byte's high nibble from
    `first`, its low nibble from `second` (AND 0xF0F0F0F0 gives 16 x first, LSL 4 + AND 16 x second)."""
    return (((np.asarray(first, dtype=np.int64) & 15) << 4) | (np.asarray(second, dtype=np.int64) & 15)).astype(np.uint8)


def wrap32s(values: np.ndarray) -> np.ndarray:
    """int64 values modulo 2^32, as int64 in the int32 range."""
    return (np.asarray(values, dtype=np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)


# --- convolution --------------------------------------------------------------------------------
def dsp_tail(zx: int, zy: int, lo: int, hi: int) -> dict[str, int]:
    """The zero points and clamp as the DSP kernels take them (packed for SIMD instructions)."""
    return {"nzx2": packed16(-int(zx)), "zx": int(zx), "zy": int(zy), "lo4": bytes4(int(lo)), "hi4": bytes4(int(hi))}


def requant_args(a: dict, extra_shift: int = 0) -> tuple[np.ndarray, int]:
    """The call's {M, rnd, s} rows and fastq (fast_requant); extra_shift: of accumulators that
    hold 2^extra_shift x the sums (int4 blocks: 16 x)."""
    return fast_requant(np.asarray(a["mult"].data), np.asarray(a["shift"].data) + extra_shift)


def is_pointwise_gemm(a: dict) -> bool:
    """A 1 x 1 convolution, groups 1, stride 1, no padding: in NHWC a GEMM of pixels x channels."""
    return (a["kh"], a["kw"], a["sh"], a["sw"], a["groups"], a["pt"], a["pl"]) == (1, 1, 1, 1, 1, 0, 0) and \
        (a["oh"], a["ow"]) == (a["h"], a["wd"])


def tile_streams(wk: np.ndarray, bias: np.ndarray, q: np.ndarray, w8: bool, w4: bool = False) -> np.ndarray:
    """The register-tile GEMM's flash stream (conv2d_s8_dsp.h.j2), one block per pair of output
    channels (2j, 2j+1): [b0 b1] (int32); per value pair s of the column, int8: the bytes
    [w0[2s], w1[2s], w0[2s+1], w1[2s+1]] (SXTB16 gives channel 2j's pair, SXTB16 ROR 8 channel
    2j+1's), or int16: [w0[2s] w0[2s+1]] [w1[2s] w1[2s+1]]; [M rnd s] x 2 (int32). An odd channel
    count gets a last pair with a zero second channel. w4: [16 b0, 16 b1], per two value pairs one
    word of nibbles (nibble_words of pair s's int8 bytes and pair s + 1's; K' a multiple of 4)."""
    oc, kp = wk.shape
    pairs = round_up(oc, 2) // 2
    w = pad_rows(wk.astype(np.int64), 2 * pairs).reshape(pairs, 2, kp // 2, 2)  # [pair][channel][s][value]
    if w4:
        steps = w.transpose(0, 2, 3, 1).reshape(pairs, kp // 4, 2, 4)  # [pair][word][s, s + 1][int8 byte]
        body = nibble_words(steps[:, :, 0], steps[:, :, 1]).reshape(pairs, -1).view("<i2")
        bias = bias.astype(np.int64) * 16
    elif w8:
        body = np.ascontiguousarray(w.transpose(0, 2, 3, 1).astype(np.int8)).reshape(pairs, -1).view("<i2")
    else:
        body = w.transpose(0, 2, 1, 3).reshape(pairs, -1).astype(np.int16)
    b = pad_rows(bias.astype(np.int64), 2 * pairs).reshape(pairs, 2)
    qq = pad_rows(q.astype(np.int64), 2 * pairs).reshape(pairs, 6)
    return np.concatenate([as_int16(b), body, as_int16(qq)], axis=1).reshape(-1).astype(np.int16)


def fold_zy(q: np.ndarray, zy: int) -> np.ndarray | None:
    """{M, rnd, s} rows with zy folded into rnd (rnd + zy * 2^s: the same floor at 2^s, so the
    block skips the add), or None where a channel's sum could leave int32 (|hi32| <= 2^30)."""
    rnd = q[:, 1].astype(np.int64) + (int(zy) << q[:, 2].astype(np.int64))
    if (q[:, 2] <= 0).any() or (np.abs(rnd) >= 1 << 30).any():
        return None
    return np.stack([q[:, 0], rnd, q[:, 2]], axis=1).astype(np.int32)


# Instructions of the register-tile GEMM (conv2d_s8_dsp.h.j2), from its code: per step of one
# value pair over a tile of `width` pixels x 2 channels (LDR + 2 SXTB16, or LDRD, for the
# weights; LDRD/LDR of the pixels' pairs; 2 SMLAD per pixel); per channel pair of a tile 14 + 8
# per pixel (bias, entry, SMMLA + ASR + SSAT per output, BFI + STRH per pixel, loop); 3 per pass
# of the 8 unrolled steps; per tile the call and the C loop (TILE); im2col per column value and
# pixel (cuvil_im2col4 for 4 pixels, the strided C path otherwise) plus a pixel's fixed part.
# benchmarks/conv_tile_model.py lists it against the measured count of every conv layer of the
# MLPerf Tiny models; measured at this commit (modelled / measured): ResNet-8's 3x3 and 1x1
# convs 0.97-0.99, KWS's pointwise 1.00, VWW's pointwise 1.00-1.05; the windows gathered into
# runs (the stems, KWS's 10x4 first conv) are not modelled (0.82-0.84): their cost is the same
# for every px, so the choice does not depend on it.
# int4 ("w4"): one word per two steps, LDR + AND + 2 SXTB16 then LDR + LSL + AND + 2 SXTB16: 1.5 more per step.
STEP = {True: {1: 6, 2: 8, 3: 11, 4: 13}, False: {1: 4, 2: 6, 3: 9, 4: 11}, "w4": {1: 7.5, 2: 9.5, 3: 12.5, 4: 14.5}}
PAIR = {w: 14 + 8 * w for w in (1, 2, 3, 4)}
PASS = 3
TILE = 60
IM2COL = {"four": 15 / 16, "pixel": 2.0}
IM2COL_PIXEL = 40


def tile_cost(pixels: int, px: int, kp: int, pairs: int, w8: bool, four: bool, w4: bool = False) -> float:
    """Modelled instructions of a group's GEMM + im2col with tiles of px pixels (the last one
    narrower): what conv_im2col minimises over px."""
    n = kp // 2
    widths = [px] * (pixels // px) + ([pixels % px] if pixels % px else [])
    total = 0.0
    for w in widths:
        total += TILE + pairs * (PAIR[w] + STEP["w4" if w4 else w8][w] * n + PASS * -(-(n - 1) // 8))
        total += kp * w * IM2COL["four" if four and w == 4 else "pixel"] + IM2COL_PIXEL * (1 if four and w == 4 else w)
    return total


def conv_im2col(c: KernelCall, node: Node, g: Graph, w8: bool, w4: bool = False) -> Answer:
    """Convolution with any groups, strides, dilations and pads: per group, im2col of a tile of
    pixels + the register-tile GEMM over that group's channel-pair streams when the tile's
    columns (kh x kw x c/groups values each, each kernel row rounded up to even) fit the
    2 * COL_WORDS-value stack buffer: tiles of 4 pixels x 2 channels where they fit (K' <= 576),
    else 3 or 2, the width chosen by tile_cost; else a 1 x 1 GEMM goes to the FC kernel and
    anything else to the K-tiled path (tiles of whole taps; declined only past 2 * COL_WORDS
    input channels per group). A
    pointwise convolution (1 x 1, stride 1, no padding) is one row of pixels: its tiles run
    across image rows. w4: int4 values in nibble streams (tile_streams; K' rounded up to 4, the
    pad meeting zero weights), the K-tiled path keeping them as int8 bytes (KTILED_INT8)."""
    a = c.args
    oc, kh, kw, ch, groups = a["oc"], a["kh"], a["kw"], a["c"], a["groups"]
    icg, ocg = ch // groups, oc // groups
    seg = round_up(kw * icg, 2)
    kp = kh * seg
    tile = 0
    wq = np.asarray(a["w"].data).astype(np.int64)  # [oc][kh][kw][icg]
    b = np.asarray(a["bias"].data).astype(np.int64)
    q, fastq = requant_args(a, X16_SHIFT if w4 else 0)
    geo = pick(a, "n h wd oh ow")
    if kp > COL_WORDS:
        if is_pointwise_gemm(a):  # a GEMM over the pixels: the FC kernel takes any K
            return fc_call(a, a["n"] * a["oh"] * a["ow"], ch, oc, w8, w4)
        if w4:
            return unpacked(conv_im2col(c, node, g, w8), KTILED_INT8)
        seg = round_up(icg, 4)  # the K-tiled layout: one segment per tap
        if seg > 2 * COL_WORDS:
            return Declined(f"a group of {icg} input channels (the tiled column takes {2 * COL_WORDS})")
        tile, kp = 2 * COL_WORDS // seg, kh * kw * seg
        col = arrange(wq.reshape(oc, kh * kw, icg), padded_order(icg, seg)).reshape(oc, kp)
        streams = [pair_streams(col[i * ocg:(i + 1) * ocg], b[i * ocg:(i + 1) * ocg], q[i * ocg:(i + 1) * ocg], w8)
                   for i in range(groups)]
        px, concat, zyfold, variant, modelled = 0, 0, 0, f"k-tiled w{8 if w8 else 16}", None
    else:
        window = kh * kw * icg
        concat = int((kw * icg) % 4 != 0 and round_up(window, 4) <= RUN_BYTES)
        if concat:  # the "run" layout: the whole window as one run of bytes, 4-groups swapped
            kp = seg = round_up(window, 4)
            order = swap_pairs(np.arange(kp))
            col = arrange(wq.reshape(oc, window), np.where(order < window, order, -1))
        else:
            col = arrange(wq.reshape(oc, kh, kw * icg), row_order(kw * icg)).reshape(oc, kp)  # per kernel row
        if w4 and kp % 4:  # one word per two value pairs: a last pair of zero weights (its column values unread)
            kp = round_up(kp, 4)
            col = np.concatenate([col, np.zeros((oc, kp - col.shape[1]), dtype=col.dtype)], axis=1)
        if is_pointwise_gemm(a):  # NHWC: the pixels' channels follow each other, image rows included
            pixels = a["n"] * a["h"] * a["wd"]
            geo = {"n": 1, "h": 1, "wd": pixels, "oh": 1, "ow": pixels}
        pixels = geo["n"] * geo["oh"] * geo["ow"]
        four = bool(concat) or (groups == 1 and a["dw"] == 1 and (kw * icg) % 4 == 0)
        fits = [p for p in (4, 3, 2) if p * kp <= 2 * COL_WORDS]
        px = min(fits, key=lambda p: tile_cost(pixels, p, kp, round_up(ocg, 2) // 2, w8, four, w4))
        modelled = groups * tile_cost(pixels, px, kp, round_up(ocg, 2) // 2, w8, four, w4)
        folded = fold_zy(q, a["zy"]) if fastq else None
        zyfold = int(folded is not None)
        if folded is not None:
            q = folded
        streams = [tile_streams(col[i * ocg:(i + 1) * ocg], b[i * ocg:(i + 1) * ocg], q[i * ocg:(i + 1) * ocg], w8,
                                w4) for i in range(groups)]
        variant = f"{px}x2 w{4 if w4 else 8 if w8 else 16}" + (" run" if concat else "") + ("" if fastq else " c-requant")
    call = kernel(SET, "conv2d_s8_dsp")(
        **pick(a, "in out c oc kh kw sh sw pt pl dh dw groups"), **geo,
        w=Weight("w16", np.concatenate(streams), "int16_t"), seg=seg, kp=kp, fastq=fastq, tile=tile, px=px,
        concat=concat, zyfold=zyfold, w8=2 if w4 else int(w8), **dsp_tail(a["zx"], a["zy"], a["lo"], a["hi"]))
    call.variant = variant
    call.features = frozenset({"w4" if w4 else "int8"})  # the kernel's source carries the paths its calls use
    MODELLED[node.name] = modelled
    return call


MODELLED: dict[str, float | None] = {}  # node -> tile_cost of its chosen variant (benchmarks/conv_tile_model.py)


DW_VALUES = 2048  # CUVIL_DSP_DW_VALUES: the depthwise row ring, (kh * cc + 1) * wp int16 values


def dw_chunk(c: int, kh: int, wp: int, zero_slot: bool = False) -> int:
    """Channels per chunk of the depthwise row ring: (kh * cc + 1) * wp <= DW_VALUES, or with
    a full zero slot (zero_slot: a kernel that steps through the planes of a row channel by
    channel, padded rows included) (kh + 1) * cc * wp; a multiple of 4 when more than 4 fit
    (0: not even one channel fits)."""
    cc = min(c, DW_VALUES // wp // (kh + 1) if zero_slot else (DW_VALUES // wp - 1) // kh)
    return cc // 4 * 4 if cc >= 4 and cc < c else cc


FOLD_SHIFT = 23  # the largest s = S - 32 with 2^(s-1) + (zy << s) + hi32(acc * M) inside int32 for every zy


def dw3x3_stream(wq: np.ndarray, b: np.ndarray, q: np.ndarray, w8: bool) -> np.ndarray:
    """conv2d_s8_dsp_dw3x3's weight stream, per channel (the header says how it is read):
    w8: per kernel row the bytes [w0 s w1 w2] (s in row 0 only), then bias and M (5 words);
    int16: per kernel row the pairs [w0 w1] [w1 w2], then bias, M and s (9 words)."""
    ch = wq.shape[0]
    words = []
    if w8:
        rows = np.zeros((ch, 3, 4), dtype=np.int64)
        rows[:, :, 0], rows[:, :, 2], rows[:, :, 3] = wq[:, :, 0], wq[:, :, 1], wq[:, :, 2]
        rows[:, 0, 1] = q[:, 2]
        words.append(as_int16(rows.astype(np.int8).view("<i4").reshape(ch, 3)))
        words.append(as_int16(np.stack([b, q[:, 0]], axis=1)))
    else:
        pairs = np.stack([wq[:, :, 0], wq[:, :, 1], wq[:, :, 1], wq[:, :, 2]], axis=2)  # [c][3][4] int16
        words.append(pairs.reshape(ch, 12).astype(np.int16))
        words.append(as_int16(np.stack([b, q[:, 0], q[:, 2]], axis=1)))
    return np.concatenate([w.reshape(ch, -1) for w in words], axis=1).reshape(-1).astype(np.int16)


def conv_depthwise(c: KernelCall, node: Node, g: Graph, w8: bool = True) -> Answer:
    """Depthwise convolution (groups = in = out channels, dilation 1) where one input row of one
    channel (plus padding) fits the row ring: 3x3 stride 1 or 2 with every requantization shift
    >= 33 -> conv2d_s8_dsp_dw3x3 (transposed when that makes fewer 4-output blocks; int8
    weights widened per channel and row, or pre-widened with w8 off; `fast` when the output
    needs no clamp beyond int8 and every shift S <= 32 + FOLD_SHIFT, so that zy folds into the
    rounding constant), anything else -> conv2d_s8_dsp_dw. None when neither applies
    (conv_im2col takes it then)."""
    a = c.args
    n, h, wd, ch, oh, ow, oc = (a[k] for k in ("n", "h", "wd", "c", "oh", "ow", "oc"))
    kh, kw, sh, sw, pt, pl = (a[k] for k in ("kh", "kw", "sh", "sw", "pt", "pl"))
    if not (a["groups"] == ch == oc) or a["dh"] != 1 or a["dw"] != 1:
        return None
    wq = np.asarray(a["w"].data).astype(np.int64).reshape(ch, kh, kw)
    b = np.asarray(a["bias"].data).astype(np.int64)
    q, fastq = requant_args(a)
    tail = dsp_tail(a["zx"], a["zy"], a["lo"], a["hi"])
    io = pick(a, "in out n c")
    if kh == kw == 3 and sh == sw and sh in (1, 2) and fastq:
        # the kernel works along rows, 4 outputs per block: walk a narrow image by its columns
        transposed = ow * -(-oh // 4) < oh * -(-ow // 4)
        if transposed:
            h, wd, oh, ow, pt, pl = wd, h, ow, oh, pl, pt
            wq = wq.transpose(0, 2, 1)
        wp = round_up(max(pl + wd, 4 * sw * -(-ow // 4) + 2), 2)
        slots = (oh - 1) * sw + 3  # whole-image mode: every padded input row of a chunk at once
        full = min(ch, DW_VALUES // (slots * wp)) >= min(ch, 4)
        cc = min(ch, DW_VALUES // (slots * wp)) if full else dw_chunk(ch, 3, wp, zero_slot=True)
        cc = cc // 4 * 4 if 4 <= cc < ch else cc
        if cc >= 1:
            fast = (a["lo"], a["hi"]) == (-128, 127) and int(q[:, 2].max()) <= FOLD_SHIFT
            call = kernel(SET, "conv2d_s8_dsp_dw3x3")(
                **io, w=Weight("w16", dw3x3_stream(wq, b, q, w8), "int16_t"), h=h, wd=wd, oh=oh, ow=ow,
                s=sw, pt=pt, pl=pl, transposed=int(transposed), wp=wp, cc=cc, w8=int(w8), fast=int(fast), full=int(full), **tail)
            call.variant = (f"{3 if ow == 3 else 4}px s{sw} {'w8' if w8 else 'w16'} {'image' if full else 'ring'}" +
                            ("" if fast else " clamp") + (" T" if transposed else "") +
                            (" t2" if ow > 4 and 1 <= ow % 4 <= 2 else ""))  # the 2-output tail block
            return call
        if transposed:  # back to the real geometry for the general kernel
            h, wd, oh, ow, pt, pl = wd, h, ow, oh, pl, pt
            wq = wq.transpose(0, 2, 1)
    kwp = round_up(kw, 2)
    wp = round_up(max(pl + wd, (ow - 1) * sw + kwp), 2)
    cc = dw_chunk(ch, kh, wp)
    if cc < 1:
        return None
    taps = np.zeros((ch, kh, kwp), dtype=np.int64)
    taps[:, :, :kw] = wq
    stream = np.concatenate([as_int16(b.reshape(ch, 1)).reshape(ch, 2), taps.reshape(ch, -1).astype(np.int16),
                             as_int16(q).reshape(ch, 6)], axis=1)
    return kernel(SET, "conv2d_s8_dsp_dw")(
        **io, **pick(a, "h wd oh ow kh kw sh sw pt pl"), w=Weight("w16", stream.reshape(-1).astype(np.int16), "int16_t"),
        wp=wp, cc=cc, stream=stream.shape[1], **tail)


def conv_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Depthwise (conv_depthwise) where its row kernels take it, else the grouped im2col GEMM
    (conv_im2col: groups 1, grouped, depth multipliers > 1, dilations)."""
    w8 = int8_weights(options)
    return (conv_depthwise(c, node, g, w8) if c["groups"] > 1 else None) or conv_im2col(c, node, g, w8)


def conv_w4_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """An int4 convolution: the im2col GEMM on nibble streams (conv_im2col, w4), whatever
    --weight-layout says (it applies to int8 weights); the int4 values as int8 bytes on the
    depthwise kernels (DEPTHWISE_INT8) and where the 16 x sums do not fit (x16_fits)."""
    c8 = int4.as_int8(c)
    w8 = int8_weights(options)
    why = x16_fits(c8.args)
    if c["groups"] > 1:
        dw = conv_depthwise(c8 if why else x16_call(c8), node, g, w8)
        if dw is not None:
            return unpacked(dw, DEPTHWISE_INT8 + ("" if why else " (as 16 x w, its shifts 4 more)"))
    if why:
        return unpacked(conv_im2col(c8, node, g, w8), why)
    return conv_im2col(c8, node, g, True, w4=True)


# --- fully connected ------------------------------------------------------------------------------
def fc_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every int8 fully connected layer: the input row becomes int16 (x - zx) once (up to
    K' = 2048; longer rows are widened on the fly), then 1 row x 4 outputs per SMLAD loop."""
    return fc_call(c.args, c.args["rows"], c.args["k"], c.args["n"], int8_weights(options))


def fc_w4_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """An int4 fully connected layer: fc_s8_dsp on nibble streams (pair_nibbles), or its int4
    values as int8 bytes where the 16 x sums do not fit (x16_fits)."""
    a = int4.as_int8(c).args
    why = x16_fits(a)
    if why:
        return unpacked(fc_call(a, a["rows"], a["k"], a["n"], int8_weights(options)), why)
    return fc_call(a, a["rows"], a["k"], a["n"], True, w4=True)


def int8_weights(options) -> bool:
    """The build's weight layout (CodegenOptions.weight_layout: --weight-layout, else the board's
    `weight_layout`): int8 bytes in flash (the default), or int16 pre-widened."""
    return getattr(options, "weight_layout", "int8") != "int16"


def fc_call(a: dict, rows: int, k: int, n: int, w8: bool, w4: bool = False) -> KernelCall:
    """fc_s8_dsp for `rows` rows of k inputs and n outputs, weights a["w"] as [n][k] (w4: int4
    values, in nibble streams)."""
    kp = round_up(k, 8)
    wq = np.asarray(a["w"].data).astype(np.int64).reshape(n, k)
    b = np.asarray(a["bias"].data).astype(np.int64)
    q, fastq = requant_args(a, X16_SHIFT if w4 else 0)
    col = arrange(wq, row_order(k))
    col = np.concatenate([col, np.zeros((n, kp - col.shape[1]), dtype=col.dtype)], axis=1)
    call = kernel(SET, "fc_s8_dsp")(**pick(a, "in out"), rows=rows, k=k, n=n,
                                    w=Weight("w16", quad_streams(col, b, q, w8, w4), "int16_t"), kp=kp, fastq=fastq,
                                    w8=2 if w4 else int(w8), **dsp_tail(a["zx"], a["zy"], a["lo"], a["hi"]))
    call.variant = fc_variant(kp, fastq, w8, w4)
    call.features = frozenset({"w4" if w4 else "int8"})  # the kernel's source carries the paths its calls use
    return call


def fc_variant(kp: int, fastq: int, w8: bool, w4: bool = False) -> str:
    """The report's name of the FC path: 1 row x 4 outputs, int8 weights in output pairs ("w8
    pairs") or int16 ("w16"); "wide-k" when K' passes the column buffer (widened on the fly, in
    C), "rq64" when a shift below 33 keeps the whole layer in C."""
    name = "1x4 w4 pairs" if w4 else "1x4 w8 pairs" if w8 else "1x4 w16"
    if kp > 2 * FC_WORDS:
        name += " wide-k"
    return name if fastq else name + " rq64"


# --- pooling and element-wise ------------------------------------------------------------------
def maxpool_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every undilated int8 max pooling (the bottom and right pads are implied by the window bounds)."""
    return pool_call(c, kernel(SET, "maxpool_s8_dsp"), MAXPOOL_ARGS)


def avgpool_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every undilated int8 average pooling (int16 lane sums flushed into int32 every 256 taps)."""
    return pool_call(c, kernel(SET, "avgpool_s8_dsp"))


def add_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every int8 add, broadcasting included: c0 = 2^(shift-1) - za*ma - zb*mb folded modulo
    2^32 (add_s8's int32 sum is reached exactly in wrapping arithmetic), zy added after the shift."""
    a = c.args
    geometry = broadcast_loop(a)
    za, zb, ma, mb, shift = (int(a[k]) for k in ("za", "zb", "ma", "mb", "shift"))
    call = kernel(SET, "add_s8_dsp")(**pick(a, "a b out ma mb shift zy"), **geometry, c0=add_offset(za, zb, ma, mb, shift),
                                     lo4=bytes4(int(a["lo"])), hi4=bytes4(int(a["hi"])))
    # the word loop (SMLAW, 4 outputs per 35 instructions) takes runs where both operands are
    # contiguous; a broadcast operand in the innermost run leaves it to the C loop
    call.variant = "words" if geometry["sa3"] == geometry["sb3"] == 1 and geometry["d3"] >= 4 and shift >= 2 else "scalar"
    return call


def softmax_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every int8 softmax: 32-bit sums and UDIV where a row has fewer than 2^15 values (exact:
    the table's values are <= 2^16), the 64-bit form beyond. The kernel reads contiguous rows:
    a softmax over an axis that is not the innermost stays on the portable kernel."""
    args = row_softmax_args(c)
    if args is None:
        return Declined(STRIDED_SOFTMAX)
    return kernel(SET, "softmax_s8_dsp")(**args, wide=int(c["cols"] >= 1 << 15))


def transpose_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every int8 transpose (word-wise interleaving for the NCHW -> NHWC of 3 or 4 channels)."""
    return kernel(SET, "transpose_s8_dsp")(**c.args)


def argmax_rule_dsp(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """An int8 ArgMax / ArgMin head: 4 positions a word across channel planes (n <= 256), or each
    position's values in a row (simd_rules.argmax_rule)."""
    return argmax_rule(SET, c)


@register_kernel_set
class CortexMDsp(KernelSet):
    name = SET
    rules = {"conv2d_s8": conv_rule, "fc_s8": fc_rule, "conv2d_s8w4": conv_w4_rule, "fc_s8w4": fc_w4_rule,
             "maxpool_s8": maxpool_rule,
             "avgpool_s8": avgpool_rule, "add_s8": add_rule, "softmax_s8": softmax_rule,
             "transpose_s8": transpose_rule, "argmax_s8": argmax_rule_dsp}
