"""The Helium kernel set (Armv8.1-M MVE, Cortex-M55), templates in sdk/templates/helium/.

Python decides, per call and from compile-time shapes, whether an MVE kernel takes it and
lays out its constants; the C headers only implement:

- convolutions are GEMMs of 4 output pixels x 2 output channels on VMLADAVA.S8 (16 multiply-adds
  per instruction, int32 accumulators): per group, each pixel's column (kh x kw x c/groups int8
  values, padded to K' = a multiple of 16) is built on the stack (im2col), or read straight from
  the input for a 1 x 1 convolution without padding over a multiple of 16 channels; the weights
  are int8 in flash, per pair of channels and per 16 values of K', zero where K' passes K;
- the input zero point is folded into the bias: bias' = bias - zx * sum(w), so the kernels sum
  raw x * w; padded taps hold zx (x - zx = 0). Sums are int32 modulo 2^32 like the portable
  kernels', so they are the portable accumulator exactly;
- requantization: for every shift S >= 33, VMULH (floor(acc * M / 2^32)) then VRSHL by 32 - S
  (a rounding shift right by S - 32), exact for the rule of sdk/kernels/requant.py and every
  int32 accumulator (cuvil_mve_rq, proved over the whole range by tests/test_helium_rules.py);
  a layer with a smaller shift requantizes lane by lane in 64 bits (`fastq` = 0, variant "rq64");
- depthwise convolutions: 4 channels per int32 vector x 4 output pixels, read from a zx-padded
  copy of the input rows, VMUL + VADD per tap (MVE has no vector-by-vector integer MLA);
- fully connected layers: 1 row x 4 outputs per VMLADAVA loop, tail-predicated (DLSTP/LETP);
- pooling, Add, softmax and transposes on 16 (int8) or 4 (int32) lanes.

A rule declines (Declined, with the reason the build reports and the DSP set then takes the
layer) only when its kernel cannot take the call; each rule's docstring says when.
Every kernel is bit-identical to its portable counterpart (board_tests/test_kernels_m55_helium.py).
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import Graph, Node
from ..contract import Declined, KernelCall, Weight, kernel
from ..kernel_sets import Answer, KernelSet, register_kernel_set
from ..requant import add_offset
from ..simd_layout import STRIDED_SOFTMAX, MAXPOOL_ARGS, pick, pool_call, row_softmax_args
from ..simd_rules import broadcast_loop

SET = "helium"
CHUNK = 16  # int8 lanes of one MVE vector: K' is a multiple of it
COL_BYTES = 8192  # CONV2D_S8_MVE_COL: the 4 columns of a tile on the stack, 4 x K' bytes
DW_ROWS_BYTES = 8192  # CONV2D_S8_MVE_DW_ROWS: the zx-padded input rows of a depthwise layer
DW_MAX_ROWS = 16  # the kernel rows conv2d_s8_mve_dw keeps pointers for
FAST_SHIFT = 33  # cuvil_mve_rq: shifts from here to 62


def round_up(x: int, to: int) -> int:
    return (x + to - 1) // to * to


def wrap32(values: np.ndarray) -> np.ndarray:
    """int64 values modulo 2^32 as int32 (the kernels' wrapping sums)."""
    return ((np.asarray(values, dtype=np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def fast_shifts(shift: np.ndarray) -> int:
    """1 when every shift takes cuvil_mve_rq (S >= 33), else 0 (the 64-bit rule lane by lane)."""
    return int(bool(np.all(np.asarray(shift) >= FAST_SHIFT)))


def folded_bias(bias: np.ndarray, wsum: np.ndarray, zx: int) -> np.ndarray:
    """bias - zx * sum(w) per channel, modulo 2^32: the kernels sum raw x * w."""
    return wrap32(np.asarray(bias, dtype=np.int64) - int(zx) * np.asarray(wsum, dtype=np.int64))


def quad_requant(mult: np.ndarray, shift: np.ndarray, fastq: int) -> np.ndarray:
    """Per 4 channels (zero rows pad the last) {M x 4, R x 4}: the vectors the kernels requantize 4
    channels with. R is 32 - S when the layer's shifts all take the fast form (fastq: VRSHL's
    operand, cuvil_mve_rqv), else S (cuvil_mve_rq64)."""
    mult, shift = np.asarray(mult).reshape(-1), np.asarray(shift).reshape(-1)
    r = 32 - shift if fastq else shift
    rq = np.stack([mult, r], axis=1).astype(np.int64)
    quads = round_up(rq.shape[0], 4) // 4
    return pad_rows(rq, 4 * quads).reshape(quads, 4, 2).transpose(0, 2, 1).reshape(-1).astype(np.int32)


def pad_rows(a: np.ndarray, count: int) -> np.ndarray:
    """a with zero rows appended along axis 0 up to `count` rows."""
    if a.shape[0] >= count:
        return a
    return np.concatenate([a, np.zeros((count - a.shape[0], *a.shape[1:]), dtype=a.dtype)])


def pad_cols(a: np.ndarray, count: int) -> np.ndarray:
    """a [rows][k] with zero columns appended up to `count`."""
    return np.concatenate([a, np.zeros((a.shape[0], count - a.shape[1]), dtype=a.dtype)], axis=1)


def tile_weights(wk: np.ndarray, kp: int, lanes: int) -> np.ndarray:
    """int8 weights [oc][K] -> [oc / lanes][K' / 16][lanes][16]: for each block of `lanes`
    channels (zero channels pad the last) and each 16 values of K' (zero past K), 16 weights of
    each channel in turn, the order the GEMM tile (lanes 2) and the FC loop (lanes 4) read."""
    oc = wk.shape[0]
    w = pad_rows(pad_cols(wk.astype(np.int8), kp), round_up(oc, lanes))
    return np.ascontiguousarray(w.reshape(-1, lanes, kp // CHUNK, CHUNK).transpose(0, 2, 1, 3)).reshape(-1)


# --- convolution --------------------------------------------------------------------------------
def conv_gemm(c: KernelCall, node: Node, g: Graph) -> Answer:
    """Any convolution (groups, strides, dilations, pads): per group, tiles of 4 pixels x 2
    channels over columns of K' = kh x kw x c/groups rounded up to 16, built on the stack (4 x K'
    bytes, up to COL_BYTES; straight into the tile when c/groups is a multiple of 16 or the window
    one tap, `aligned`; else through a staging column).
    A 1 x 1 convolution without padding whose tile would not fit is the FC kernel over its pixels;
    any other one is declined (the DSP set's K-tiled path takes it)."""
    a = c.args
    oc, kh, kw, ch, groups = a["oc"], a["kh"], a["kw"], a["c"], a["groups"]
    icg, ocg = ch // groups, oc // groups
    k = kh * kw * icg
    kp = round_up(k, CHUNK)
    if 4 * kp > COL_BYTES:
        if pointwise(a):
            return fc_call(a, a["n"] * a["oh"] * a["ow"], ch, oc)
        return Declined(f"a column of {k} values (the 4-pixel im2col tile takes {COL_BYTES // 4})")
    wq = np.asarray(a["w"].data).astype(np.int64).reshape(oc, k)  # [oc][kh][kw][icg]
    bias = np.asarray(a["bias"].data).astype(np.int64)
    mult, shift = np.asarray(a["mult"].data), np.asarray(a["shift"].data)
    fastq = fast_shifts(shift)
    ws, bs, rs = [], [], []
    for i in range(groups):
        part = slice(i * ocg, (i + 1) * ocg)
        ws.append(tile_weights(wq[part], kp, 2))
        pair_bias = pad_rows(folded_bias(bias[part], wq[part].sum(axis=1), a["zx"]), round_up(ocg, 2))
        bs.append(np.repeat(pair_bias.reshape(-1, 2), 4, axis=1).reshape(-1))  # per pair {b0 x 4, b1 x 4}
        rs.append(quad_requant(mult[part], shift[part], fastq))
    # the column's runs start on 16-byte chunks (each tap a multiple of 16 channels, or a single tap):
    # im2col writes them straight into the interleaved tile
    aligned = int(icg % CHUNK == 0 or kh * kw == 1)
    call = kernel(SET, "conv2d_s8_mve")(
        **pick(a, "in out n h wd c oh ow oc kh kw sh sw pt pl dh dw groups zx zy lo hi"),
        w=Weight("w8", np.concatenate(ws), "int8_t"), bias=Weight("bias", np.concatenate(bs), "int32_t"),
        rq=Weight("rq", np.concatenate(rs).reshape(-1), "int32_t"), kp=kp, aligned=aligned, fastq=fastq)
    call.variant = "4x2" + ("" if aligned else " staged") + ("" if fastq else " rq64")
    return call.with_stack(tile=4 * kp, col=CHUNK if aligned else kp)


def pointwise(a: dict) -> bool:
    """A 1 x 1 convolution, groups 1, stride 1, no padding: in NHWC a GEMM of pixels x channels."""
    return (a["kh"], a["kw"], a["sh"], a["sw"], a["groups"], a["pt"], a["pl"]) == (1, 1, 1, 1, 1, 0, 0) and \
        (a["oh"], a["ow"]) == (a["h"], a["wd"])


def dw_row_width(a: dict) -> int:
    """Pixels per zx-padded input row of conv2d_s8_mve_dw: the left padding and the input, and as
    far as the last output's window reaches."""
    return max(a["pl"] + a["wd"], (a["ow"] - 1) * a["sw"] + (a["kw"] - 1) * a["dw"] + 1)


def conv_depthwise(c: KernelCall, node: Node, g: Graph) -> Answer:
    """Depthwise convolution (groups = in = out channels) whose kh zx-padded input rows fit
    DW_ROWS_BYTES: 4 channels x 4 output pixels per step, any kernel, stride, dilation and
    padding. None otherwise (conv_gemm takes it as a grouped convolution)."""
    a = c.args
    ch = a["c"]
    if not (a["groups"] == ch == a["oc"]) or ch < 2:
        return None
    wp = dw_row_width(a)
    c4 = round_up(ch, 4)
    rows = a["kh"] * c4 * wp  # kh rows of wp pixels, by channel quads
    if rows > DW_ROWS_BYTES or a["kh"] > DW_MAX_ROWS:
        return None
    ring = int(math.gcd(a["dh"], a["kh"]) == 1)  # the kh rows an output row reads fall in kh distinct slots iy mod kh
    taps = a["kh"] * a["kw"]
    wq = np.asarray(a["w"].data).astype(np.int64).reshape(ch, taps)
    quads = pad_rows(wq, c4).reshape(c4 // 4, 4, taps).transpose(0, 2, 1)  # [quad][tap][4 channels]
    fastq = fast_shifts(a["shift"].data)
    call = kernel(SET, "conv2d_s8_mve_dw")(
        **pick(a, "in out n h wd c oh ow kh kw sh sw pt pl dh dw zx zy lo hi"),
        w=Weight("wdw", quads.astype(np.int32).reshape(-1), "int32_t"),
        bias=Weight("bias", pad_rows(folded_bias(a["bias"].data, wq.sum(axis=1), a["zx"]), c4), "int32_t"),
        rq=Weight("rq", quad_requant(a["mult"].data, a["shift"].data, fastq), "int32_t"), wp=wp, ring=ring,
        fastq=fastq)
    call.variant = f"4x4 {a['kh']}x{a['kw']} s{a['sw']}" + (" d" if a["dw"] > 1 or a["dh"] > 1 else "") + \
        ("" if ring else " rows") + ("" if fastq else " rq64")
    return call.with_stack(rows=rows)


def conv_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Depthwise (conv_depthwise) where its row buffer fits, else the GEMM (conv_gemm)."""
    return conv_depthwise(c, node, g) or conv_gemm(c, node, g)


# --- fully connected ------------------------------------------------------------------------------
def fc_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every int8 fully connected layer: per row, 4 outputs per tail-predicated VMLADAVA loop over
    K (weights per 4 outputs and 16 values of K, zero past K and past n)."""
    return fc_call(c.args, c.args["rows"], c.args["k"], c.args["n"])


def fc_call(a: dict, rows: int, k: int, n: int) -> KernelCall:
    """fc_s8_mve for `rows` rows of k inputs and n outputs, weights a["w"] as [n][k]."""
    kp = round_up(k, CHUNK)
    wq = np.asarray(a["w"].data).astype(np.int64).reshape(n, k)
    quads = round_up(n, 4) // 4
    bias = pad_rows(folded_bias(a["bias"].data, wq.sum(axis=1), a["zx"]), 4 * quads)
    fastq = fast_shifts(a["shift"].data)
    rq = quad_requant(a["mult"].data, a["shift"].data, fastq)
    call = kernel(SET, "fc_s8_mve")(**pick(a, "in out zy lo hi"), rows=rows, k=k, n=n,
                                    w=Weight("w8", tile_weights(wq, kp, 4), "int8_t"),
                                    bias=Weight("bias", bias, "int32_t"), rq=Weight("rq", rq, "int32_t"), fastq=fastq)
    call.variant = "1x4" + ("" if fastq else " rq64")
    return call


# --- pooling, element-wise, softmax, transpose --------------------------------------------------
def maxpool_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every undilated int8 max pooling: 16 channels per vector (VMAX), the last ones predicated."""
    return pool_call(c, kernel(SET, "maxpool_s8_mve"), MAXPOOL_ARGS)


def avgpool_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every undilated int8 average pooling: 4 channels per int32 vector, the window's multiplier."""
    return pool_call(c, kernel(SET, "avgpool_s8_mve"))


def add_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every int8 add, broadcasting included: 4 int32 lanes, y = zy + ((a * ma + b * mb + c0) >> shift)
    with c0 = 2^(shift-1) - za * ma - zb * mb modulo 2^32 (the add rule's int32 sum, reached
    exactly in wrapping arithmetic); operands are read contiguously, broadcast or gathered."""
    a = c.args
    geometry = broadcast_loop(a)
    za, zb, ma, mb, shift = (int(a[k]) for k in ("za", "zb", "ma", "mb", "shift"))
    call = kernel(SET, "add_s8_mve")(**pick(a, "a b out ma mb shift zy lo hi"), **geometry, c0=add_offset(za, zb, ma, mb, shift))
    call.variant = "contiguous" if geometry["sa3"] == geometry["sb3"] == 1 else "strided"
    return call


def softmax_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every int8 softmax over contiguous rows: the maximum (VMAXV) and the sum of the table's
    exponentials (gathered, VADDVA) by vectors, the division per output (MVE has none); 32-bit
    sums below 2^15 values per row, 64-bit beyond (`wide`). Strided rows: declined."""
    args = row_softmax_args(c)
    if args is None:
        return Declined(STRIDED_SOFTMAX)
    return kernel(SET, "softmax_s8_mve")(**args, wide=int(c["cols"] >= 1 << 15))


def transpose_rule(c: KernelCall, node: Node, g: Graph, options) -> Answer:
    """Every int8 transpose (up to 4 axes) of a contiguous input whose vectors can run along the
    output axis with input stride 1 (contiguous loads), scattered to that axis's output stride:
    16 lanes when 15 strides fit a byte offset, 8 (16-bit offsets) when 7 fit 65535. None
    otherwise (no such axis, or a longer stride: the DSP kernel takes it)."""
    a = c.args
    dims = [a[f"o{i}"] for i in range(4)]
    axes = [i for i in range(4) if a[f"s{i}"] == 1 and dims[i] > 1]
    if not axes:
        return None
    axis = axes[-1]
    out_stride = int(np.prod(dims[axis + 1:], dtype=np.int64))
    lanes = 16 if 15 * out_stride <= 0xFF else 8 if 7 * out_stride <= 0xFFFF else 0
    if not lanes:
        return None
    call = kernel(SET, "transpose_s8_mve")(**a, axis=axis, lanes=lanes)
    call.variant = f"{lanes} lanes"
    return call


def int4_rule(c: KernelCall, node: Node, g: Graph, options) -> Declined:
    """int4 weights (--weight-bits 4/auto): the set has no nibble-unpacking kernels, so such a
    layer runs the next set's (cortex_m_dsp's int4 kernels on the M55), named in the fallbacks."""
    return Declined("no Helium kernel for int4 weights")


@register_kernel_set
class Helium(KernelSet):
    name = SET
    rules = {"conv2d_s8": conv_rule, "fc_s8": fc_rule, "maxpool_s8": maxpool_rule, "avgpool_s8": avgpool_rule,
             "add_s8": add_rule, "softmax_s8": softmax_rule, "transpose_s8": transpose_rule,
             "conv2d_s8w4": int4_rule, "fc_s8w4": int4_rule}
