"""The Cortex-M DSP kernel set (Armv7E-M: SMLAD, SXTAB16, SMMLA, SSUB8/SEL), templates in
sdk/templates/cortex_m_dsp/.

Python decides, per call and from compile-time shapes, whether a DSP kernel takes it and
rewrites the portable arguments for it; the C headers only implement:

- weights are re-ordered and pre-widened to int16 in flash, in the order the kernel reads
  them (`row_order`, `gemm_weights`, the per-channel streams), so the inner loops are
  LDM/LDRD + SMLAD;
- requantization constants become {M, rnd, s} per channel for a three-instruction requant
  (`fast_requant`) that is exact for the rounding rule of cuvil_sdk/quant/requant.py;
- zero points: the convolution column holds x - zx as int16 (padding = 0 = zx - zx), so the
  sum is the portable kernel's sum over valid taps, exactly.

A rule declines (Declined, with the reason the build reports) when its kernel cannot
reproduce the portable result for the call (for example a requantization shift below 33, or
a column longer than the kernel's stack buffer); the call then falls back to the portable
kernel. Each rule's docstring says when it applies.
Every kernel here is bit-identical to its portable counterpart (board_tests/test_kernels_m7_dsp.py).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from .kernel_api import Declined, KernelCall, Weight, kernel
from .kernel_sets import Answer, KernelSet, register_kernel_set
from .simd_layout import pick, undilated_pool

COL_WORDS = 1024  # CUVIL_DSP_COL_WORDS in the headers: K' <= 1024 int16 values per pixel
FC_COL_WORDS = 1024  # fully connected: K' / 2 words, K' <= 2048
AVG_LANE_TAPS = 256  # int16 lane sums of up to 256 int8 values cannot overflow
INT32_MAX = 2**31 - 1
SET = "cortex_m_dsp"
REQUANT_RULE = "a requantization shift below 33 or an accumulator bound past the fast requantization's range"
MAX_PRODUCT = 255 * 128  # |(x - zx) * w|: int8 activations and weights (imported ones may be -128)


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


def fast_requant(mult: np.ndarray, shift: np.ndarray, zy: int, acc_bound: int) -> np.ndarray | None:
    """{M, rnd, s} per channel for cuvil_rq: y = ssat8((hi32(acc * M) + rnd) >> s), equal to
    zy + ((acc * M + 2^(S-1)) >> S) with s = S - 32 and rnd = 2^(s-1) + (zy << s).

    Exact when S >= 33 (then the low 32 bits of the product cannot change the floor) and
    hi32 + rnd cannot overflow for any |acc| <= acc_bound; None otherwise."""
    mult = np.asarray(mult, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    if acc_bound > INT32_MAX or (shift < 33).any():
        return None
    s = shift - 32
    rnd = (np.int64(1) << (s - 1)) + (np.int64(zy) << s)
    hi = (acc_bound * mult) // 2**32 + 1
    if (hi + np.abs(rnd) > INT32_MAX).any():
        return None
    return np.stack([mult, rnd, s], axis=1).astype(np.int32)


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


def as_int16(words: np.ndarray) -> np.ndarray:
    """int32 values as the int16 halves that hold them in memory (little-endian)."""
    return np.ascontiguousarray(words, dtype="<i4").view("<i2")


def pair_streams(wk: np.ndarray, bias: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The conv GEMM's flash stream (cuvil_dsp_gemm), one block per pair of output channels:
    [b0 b0 b1 b1] (int32), the pair's int16 weights (gemm_weights order), [M rnd s] x 2 (int32).
    An odd channel count gets a last pair with a zero second channel."""
    oc, kp = wk.shape
    pairs = round_up(oc, 2) // 2
    w = gemm_weights(wk, 2).reshape(pairs, 2 * kp)
    b = pad_rows(bias.astype(np.int64), 2 * pairs).reshape(pairs, 2)
    qq = pad_rows(q.astype(np.int64), 2 * pairs).reshape(pairs, 6)
    blocks = [np.concatenate([as_int16(np.repeat(b[j], 2)), w[j], as_int16(qq[j])]) for j in range(pairs)]
    return np.concatenate(blocks).astype(np.int16)


def quad_streams(wk: np.ndarray, bias: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The fully connected kernel's flash stream (fc_s8_dsp.h), one block per 4 outputs:
    [b0 b1 b2 b3] (int32), the quad's int16 weights (gemm_weights order), [M rnd s] x 4 (int32).
    The output count is padded to a multiple of 4 with zero rows."""
    n, kp = wk.shape
    quads = round_up(n, 4) // 4
    w = gemm_weights(wk, 4).reshape(quads, 4 * kp)
    b = pad_rows(bias.astype(np.int64), 4 * quads).reshape(quads, 4)
    qq = pad_rows(q.astype(np.int64), 4 * quads).reshape(quads, 12)
    blocks = [np.concatenate([as_int16(b[j]), w[j], as_int16(qq[j])]) for j in range(quads)]
    return np.concatenate(blocks).astype(np.int16)


# --- convolution --------------------------------------------------------------------------------
def dsp_tail(zx: int, lo: int, hi: int) -> dict[str, int]:
    """The zero point and clamp as the DSP kernels take them (packed for SIMD instructions)."""
    return {"nzx2": packed16(-int(zx)), "zx": int(zx), "lo4": bytes4(int(lo)), "hi4": bytes4(int(hi))}


def conv_im2col(c: KernelCall, node: Node, g: Graph) -> Answer:
    """Convolution with groups 1 and dilation 1 whose column (kh x kw x c values, each kernel
    row rounded up to even, all to a multiple of 8) fits the 1024-value stack buffer, and
    whose requantization shifts are all >= 33."""
    a = c.args
    oc, kh, kw, ch = a["oc"], a["kh"], a["kw"], a["c"]
    if a["dh"] != 1 or a["dw"] != 1:
        return Declined("dilated convolution")
    seg = round_up(kw * ch, 2)
    kp = round_up(kh * seg, 8)
    if kp > COL_WORDS:
        return Declined(f"im2col column of {kp} values exceeds {COL_WORDS}")
    wq = np.asarray(a["w"].data).astype(np.int64)  # [oc][kh][kw][c]
    b = np.asarray(a["bias"].data).astype(np.int64)
    bound = int(np.abs(b).max()) + kh * kw * ch * MAX_PRODUCT
    q = fast_requant(np.asarray(a["mult"].data), np.asarray(a["shift"].data), int(a["zy"]), bound)
    if q is None:
        return Declined(REQUANT_RULE)
    order = row_order(kw * ch)  # one kernel row
    rows = wq.reshape(oc, kh, kw * ch)
    col = arrange(rows, order).reshape(oc, kh * seg)
    col = np.concatenate([col, np.zeros((oc, kp - kh * seg), dtype=col.dtype)], axis=1)
    return kernel(SET, "conv2d_s8_dsp")(
        **pick(a, "in out n h wd c oh ow oc kh kw sh sw pt pl"), w=Weight("w16", pair_streams(col, b, q), "int16_t"),
        seg=seg, kp=kp, **dsp_tail(a["zx"], a["lo"], a["hi"]))


DW_VALUES = 2048  # CUVIL_DSP_DW_VALUES: the depthwise row ring, (kh * cc + 1) * wp int16 values


def dw_chunk(c: int, kh: int, wp: int) -> int:
    """Channels per chunk of the depthwise row ring: (kh * cc + 1) * wp <= DW_VALUES; a
    multiple of 4 when more than 4 fit (0: not even one channel fits)."""
    cc = min(c, (DW_VALUES // wp - 1) // kh)
    return cc // 4 * 4 if cc >= 4 and cc < c else cc


def conv_depthwise(c: KernelCall, node: Node, g: Graph) -> Answer:
    """Depthwise convolution (groups = in = out channels, dilation 1) whose requantization
    shifts are all >= 33 and where one input row of one channel (plus padding) fits the row
    ring: 3x3 stride 1 or 2 -> conv2d_s8_dsp_dw3x3 (transposed when that makes fewer 4-output
    blocks), anything else -> conv2d_s8_dsp_dw."""
    a = c.args
    n, h, wd, ch, oh, ow, oc = (a[k] for k in ("n", "h", "wd", "c", "oh", "ow", "oc"))
    kh, kw, sh, sw, pt, pl = (a[k] for k in ("kh", "kw", "sh", "sw", "pt", "pl"))
    if not (a["groups"] == ch == oc):
        return Declined("grouped convolution that is not depthwise")
    if a["dh"] != 1 or a["dw"] != 1:
        return Declined("dilated convolution")
    wq = np.asarray(a["w"].data).astype(np.int64).reshape(ch, kh, kw)
    b = np.asarray(a["bias"].data).astype(np.int64)
    q = fast_requant(np.asarray(a["mult"].data), np.asarray(a["shift"].data), int(a["zy"]),
                     int(np.abs(b).max()) + kh * kw * MAX_PRODUCT)
    if q is None:
        return Declined(REQUANT_RULE)
    tail = dsp_tail(a["zx"], a["lo"], a["hi"])
    io = pick(a, "in out n c")
    if kh == kw == 3 and sh == sw and sh in (1, 2):
        # the kernel works along rows, 4 outputs per block: walk a narrow image by its columns
        transposed = ow * -(-oh // 4) < oh * -(-ow // 4)
        if transposed:
            h, wd, oh, ow, pt, pl = wd, h, ow, oh, pl, pt
            wq = wq.transpose(0, 2, 1)
        wp = round_up(max(pl + wd, 4 * sw * -(-ow // 4) + 2), 2)
        cc = dw_chunk(ch, 3, wp)
        if cc < 1:
            return Declined("one input row does not fit the depthwise row ring")
        rows = np.stack([wq[:, :, 0], wq[:, :, 1], wq[:, :, 2], np.zeros_like(wq[:, :, 0]),
                         np.zeros_like(wq[:, :, 0]), wq[:, :, 0], wq[:, :, 1], wq[:, :, 2]], axis=2)  # [c][3][8]
        stream = np.concatenate([as_int16(np.repeat(b.reshape(ch, 1), 4, axis=1)).reshape(ch, 8),
                                 rows.reshape(ch, 24).astype(np.int16), as_int16(q).reshape(ch, 6)], axis=1)
        return kernel(SET, "conv2d_s8_dsp_dw3x3")(
            **io, w=Weight("w16", stream.reshape(-1).astype(np.int16), "int16_t"), h=h, wd=wd, oh=oh, ow=ow, s=sw,
            pt=pt, pl=pl, transposed=int(transposed), wp=wp, cc=cc, **tail)
    kwp = round_up(kw, 2)
    wp = round_up(max(pl + wd, (ow - 1) * sw + kwp), 2)
    cc = dw_chunk(ch, kh, wp)
    if cc < 1:
        return Declined("one input row does not fit the depthwise row ring")
    taps = np.zeros((ch, kh, kwp), dtype=np.int64)
    taps[:, :, :kw] = wq
    stream = np.concatenate([as_int16(b.reshape(ch, 1)).reshape(ch, 2), taps.reshape(ch, -1).astype(np.int16),
                             as_int16(q).reshape(ch, 6)], axis=1)
    return kernel(SET, "conv2d_s8_dsp_dw")(
        **io, **pick(a, "h wd oh ow kh kw sh sw pt pl"), w=Weight("w16", stream.reshape(-1).astype(np.int16), "int16_t"),
        wp=wp, cc=cc, stream=stream.shape[1], **tail)


def conv_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Depthwise (conv_depthwise) or groups 1 (conv_im2col); anything else stays portable."""
    if c["groups"] > 1:
        return conv_depthwise(c, node, g)
    return conv_im2col(c, node, g)


# --- fully connected ------------------------------------------------------------------------------
def fc_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Fully connected with K' = k rounded up to 8 at most 2048 and requantization shifts
    >= 33: the input row becomes int16 (x - zx) once, then 1 row x 4 outputs per SMLAD loop."""
    a = c.args
    k, n = a["k"], a["n"]
    kp = round_up(k, 8)
    if kp > 2 * FC_COL_WORDS:
        return Declined(f"more than {2 * FC_COL_WORDS} inputs")
    wq = np.asarray(a["w"].data).astype(np.int64)  # [n][k]
    b = np.asarray(a["bias"].data).astype(np.int64)
    q = fast_requant(np.asarray(a["mult"].data), np.asarray(a["shift"].data), int(a["zy"]),
                     int(np.abs(b).max()) + k * MAX_PRODUCT)
    if q is None:
        return Declined(REQUANT_RULE)
    col = arrange(wq, row_order(k))
    col = np.concatenate([col, np.zeros((n, kp - col.shape[1]), dtype=col.dtype)], axis=1)
    return kernel(SET, "fc_s8_dsp")(**pick(a, "in out rows k n"), w=Weight("w16", quad_streams(col, b, q), "int16_t"),
                                    kp=kp, **dsp_tail(a["zx"], a["lo"], a["hi"]))


# --- pooling and element-wise ------------------------------------------------------------------
def maxpool_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every undilated int8 max pooling (the bottom and right pads are implied by the window bounds)."""
    a = undilated_pool(c.args)
    return a if isinstance(a, Declined) else kernel(SET, "maxpool_s8_dsp")(**pick(a, "in out n h w c oh ow kh kw sh sw pt pl"))


def avgpool_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Undilated average pooling whose window rows have at most 256 taps (int16 lane sums)."""
    if c["kw"] > AVG_LANE_TAPS:
        return Declined(f"window rows of more than {AVG_LANE_TAPS} taps")
    a = undilated_pool(c.args)
    return a if isinstance(a, Declined) else kernel(SET, "avgpool_s8_dsp")(**a)


def add_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Add of two operands with the output's shape (no broadcasting) when the folded constant
    c0 = 2^(shift-1) - za*ma - zb*mb + (zy << shift) keeps every int32 sum in range."""
    a = c.args
    dims = [a[f"d{i}"] for i in range(4)]
    sa, sb = [a[f"sa{i}"] for i in range(4)], [a[f"sb{i}"] for i in range(4)]
    za, zb, ma, mb, shift, zy, lo, hi = (int(a[k]) for k in ("za", "zb", "ma", "mb", "shift", "zy", "lo", "hi"))
    contiguous = [int(np.prod(dims[i + 1:], dtype=np.int64)) if dims[i] > 1 else 0 for i in range(4)]
    if [int(v) if d > 1 else 0 for v, d in zip(sa, dims)] != contiguous or \
            [int(v) if d > 1 else 0 for v, d in zip(sb, dims)] != contiguous:
        return Declined("broadcasting add")
    c0 = (1 << (shift - 1)) - za * ma - zb * mb + (zy << shift)
    if abs(c0) + 128 * (abs(ma) + abs(mb)) > INT32_MAX:
        return Declined("the folded rounding constant leaves int32")
    size = int(np.prod(dims, dtype=np.int64))
    return kernel(SET, "add_s8_dsp")(**pick(a, "a b out ma mb shift"), size=size, c0=c0, lo4=bytes4(lo),
                                     hi4=bytes4(hi))


@register_kernel_set
class CortexMDsp(KernelSet):
    name = SET
    rules = {"conv2d_s8": conv_rule, "fc_s8": fc_rule, "maxpool_s8": maxpool_rule,
             "avgpool_s8": avgpool_rule, "add_s8": add_rule}
