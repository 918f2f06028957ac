"""Compile-time weight layouts and checks shared by the SIMD kernel sets (sdk/kernels/avx2/rules.py,
sdk/kernels/neon/rules.py). Python decides every layout; the C headers only read them.

Everything here keeps the portable kernels' integer results exactly: the layouts only
re-order and zero-pad weights, and the requantization tables encode the same rule as
cuvil_requant (cuvil_common.h, sdk/kernels/requant.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .contract import Declined, Weight
from .options import CodegenOptions

INT32_LIMIT = 2**31 - 1
# A layer is split over threads (--threads N > 1) only from this many multiply-adds (dense
# convolutions and fully connected layers), and from THREAD_MIN_MACS // DEPTHWISE_MAC_COST for
# depthwise ones, which do 4-8x fewer multiply-adds per cycle (MobileNetV2 on AVX2: dense 17-40,
# depthwise 2.8-9.5 per TSC cycle). Measured on an idle 2-core AMD EPYC (benchmarks/README.md,
# Threads): splitting a layer costs about a microsecond of hand-over while the pool's workers
# poll. The autoencoder's 82K-MAC layer lost 6% split at 64K; ResNet-8, DS-CNN, MobileNetV1-0.25
# and MobileNetV2 gained from every split down to these values.
THREAD_MIN_MACS = 1 << 17
DEPTHWISE_MAC_COST = 8


def pick(args: dict[str, Any], names: str) -> dict[str, Any]:
    """The named arguments (space separated) of a call, to pass on to another kernel."""
    return {k: args[k] for k in names.split()}


def undilated_pool(args: dict[str, Any]) -> dict[str, Any] | Declined:
    """A pooling call's arguments without dh and dw, for the SIMD pooling kernels (which have no
    dilation), or Declined for a dilated window."""
    if args["dh"] != 1 or args["dw"] != 1:
        return Declined("dilated pooling window")
    return {k: v for k, v in args.items() if k not in ("dh", "dw")}


MAXPOOL_ARGS = "in out n h w c oh ow kh kw sh sw pt pl"  # a SIMD max pooling kernel's (no bottom/right pads)


def pool_call(c, decl, names: str | None = None):
    """A SIMD pooling kernel's call for the portable pooling call c: its arguments without the
    dilation (those named, if given), or Declined for a dilated window."""
    a = undilated_pool(c.args)
    if isinstance(a, Declined):
        return a
    return decl(**(pick(a, names) if names else a))


def data(w: Weight) -> np.ndarray:
    return np.asarray(w.data)


def threads_for(options: CodegenOptions, macs: int, depthwise: bool = False) -> int:
    """The thread count a layer of `macs` multiply-accumulates gets: the build's --threads
    when the layer is large enough (a lower bar for depthwise layers), else 1."""
    threads = int(options.threads or 1)
    least = THREAD_MIN_MACS // DEPTHWISE_MAC_COST if depthwise else THREAD_MIN_MACS
    return threads if threads > 1 and macs >= least else 1


def channel_blocks(channels: int, wide: int, narrow: int) -> list[tuple[int, int]]:
    """(first channel, block width) of blocks of `wide` channels, the last one `narrow` wide
    when the remainder fits it (the kernels' rule: a block is narrow when at most `narrow`
    channels are left)."""
    blocks, o = [], 0
    while o < channels:
        width = wide if channels - o > narrow else narrow
        blocks.append((o, width))
        o += width
    return blocks


def padded(values: np.ndarray, count: int, fill=0) -> np.ndarray:
    out = np.full(count, fill, dtype=values.dtype)
    out[:len(values)] = values
    return out


FAST_SHIFTS = (32, 54)  # cuvil_avx2_requant8f: every shift in this range (zy folded into the rounding term)


def requant_fast(shift: np.ndarray) -> bool:
    """True when cuvil_avx2_requant8f applies to these shifts (with accumulators within int32)."""
    s = np.asarray(shift).reshape(-1)
    return bool(len(s)) and bool(np.all((s >= FAST_SHIFTS[0]) & (s <= FAST_SHIFTS[1])))


def acc_bounds(w: np.ndarray, bias: np.ndarray, x_range: int = 255) -> tuple[np.ndarray, np.ndarray]:
    """Per output channel: the largest |sum (x - zx) * w| (the kernels' 32-bit lanes must hold
    it exactly) and the largest |acc| = |bias + that sum| the layer can reach."""
    flat = np.abs(w.astype(np.int64)).reshape(w.shape[0], -1).sum(axis=1) * x_range
    return flat, np.abs(bias.astype(np.int64)) + flat


def sums_fit(w: np.ndarray, bias: np.ndarray) -> bool:
    """True when every channel's weight sum stays exact in int32 lanes (what the kernels need;
    only layers of more than 66,000 full-range inputs fail it)."""
    return bool(np.all(acc_bounds(w, bias)[0] <= INT32_LIMIT))


def requant_mode(w: np.ndarray, bias: np.ndarray, shift: np.ndarray) -> int:
    """cuvil_avx2_requant8's mode for a layer: 1 (fast) when every shift is in FAST_SHIFTS and
    no accumulator can leave int32, 2 (wide) when one can (T is rebuilt in 64 bits from
    bias + (acc - bias)), else 0 (the general rule, any shift)."""
    if np.any(acc_bounds(w, bias)[1] > INT32_LIMIT):
        return 2
    return 1 if requant_fast(shift) else 0


def requant_table_avx2(mult: np.ndarray, shift: np.ndarray, zy: int, lanes: np.ndarray | None = None,
                       fast: bool = False) -> np.ndarray:
    """cuvil_avx2_requant8's parameters: per 8 lanes, 32 int64 (even lanes 0, 2, 4, 6, then odd
    lanes 1, 3, 5, 7 in each group of 4). The general rule: [me x4, mo x4, re x4, ro x4,
    se x4, so x4, ke x4, ko x4] with re = 2^(s-1), s, and k = 2^(63-s) - zy. With `fast` (every
    s in FAST_SHIFTS): [me x4, mo x4, re x4, ro x4, s - 32 as 8 int32, 0 x12] with
    re = 2^(s-1) + zy * 2^s. `lanes` maps each lane to its channel (natural order by default;
    -1 = a padding lane, given multiplier 0)."""
    mult = np.asarray(mult, dtype=np.int64).reshape(-1)
    shift = np.asarray(shift, dtype=np.int64).reshape(-1)
    if lanes is None:
        lanes = np.arange(-(-len(mult) // 8) * 8)
        lanes[len(mult):] = -1
    rows = []
    for group in np.asarray(lanes).reshape(-1, 8):
        m = np.array([mult[c] if c >= 0 else 0 for c in group], dtype=np.int64)
        if fast:
            s = np.array([shift[c] if c >= 0 else FAST_SHIFTS[0] for c in group], dtype=np.int64)
            rnd = (np.int64(1) << (s - 1)) + np.int64(zy) * (np.int64(1) << s)
            s32 = (s - 32).astype(np.uint64)
            packed = (s32[0::2] | (s32[1::2] << np.uint64(32))).view(np.int64)
            rows.append(np.concatenate([m[0::2], m[1::2], rnd[0::2], rnd[1::2], packed, np.zeros(12, np.int64)]))
            continue
        s = np.array([shift[c] if c >= 0 else 1 for c in group], dtype=np.int64)
        rnd = np.int64(1) << (s - 1)
        k = ((np.uint64(1) << (63 - s).astype(np.uint64)) - np.int64(zy).astype(np.uint64)).view(np.int64)
        rows.append(np.concatenate([m[0::2], m[1::2], rnd[0::2], rnd[1::2], s[0::2], s[1::2], k[0::2], k[1::2]]))
    return np.concatenate(rows).astype(np.int64)


def requant_table_neon(shift: np.ndarray, count: int, bias: np.ndarray) -> np.ndarray:
    """cuvil_neon_requant4's parameters for `count` lanes (a multiple of 4, padding lanes get
    shift 1 and bias 0): per 4 lanes, 8 int64 = [2^(s-1) x4, then x4 the int64 with -s in its
    low 32 bits and the channel's int32 bias in its high 32 bits]."""
    s = padded(np.asarray(shift, dtype=np.int64).reshape(-1), count, 1).reshape(-1, 4)
    b = padded(np.asarray(bias, dtype=np.int64).reshape(-1), count, 0).reshape(-1, 4)
    low = (-s).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    packed = ((b.astype(np.uint64) << np.uint64(32)) | low).view(np.int64)
    return np.concatenate([(np.int64(1) << (s - 1)), packed], axis=1).reshape(-1).astype(np.int64)


def zero_point_bias(bias: np.ndarray, w: np.ndarray, zx: int) -> np.ndarray:
    """bias - zx * (sum of each output's weights), the bias of kernels that multiply raw int8
    inputs padded with zx (int64; the kernels use it modulo 2^32)."""
    return bias.astype(np.int64) - int(zx) * w.astype(np.int64).reshape(w.shape[0], -1).sum(axis=1)


def conv_tap_rows(w: np.ndarray, multiple: int) -> tuple[np.ndarray, int]:
    """[oc][kh][kw][c] weights as [oc][kh][kr]: each kernel row's kw * c taps (kx-major,
    channel-minor) zero-padded to kr, the next multiple of `multiple`."""
    oc, kh, kw, c = w.shape
    k = kw * c
    kr = -(-k // multiple) * multiple
    rows = np.zeros((oc, kh, kr), dtype=w.dtype)
    rows[:, :, :k] = w.reshape(oc, kh, k)
    return rows, kr


def conv_panels(rows: np.ndarray, blocks: list[tuple[int, int]], group: int) -> np.ndarray:
    """[oc][kh][kr] tap rows (conv_tap_rows) as the SIMD convolutions read them: per block of
    output channels (channel_blocks, zero channels past oc), [ky][kr / group][channel][group],
    `group` taps per channel together (1 float, 2 for vpmaddwd, 4 for vpdpbusd/SDOT quads)."""
    oc, kh, kr = rows.shape
    packed = []
    for o, width in blocks:
        block = np.zeros((width, kh, kr), dtype=rows.dtype)
        block[:min(width, oc - o)] = rows[o:o + width]
        packed.append(block.reshape(width, kh, kr // group, group).transpose(1, 2, 0, 3).reshape(-1))
    return np.concatenate(packed)


def fc_panels(w: np.ndarray, kp: int, lanes: int, group: int) -> np.ndarray:
    """[n][k] weights as the SIMD fully connected kernels read them: outputs in blocks of up to
    32 (whole vectors of `lanes`, zero outputs past n), each block [kp / group][output][group]
    with the inputs zero-padded to kp."""
    n, k = w.shape
    packed = []
    for j in range(0, n, 32):
        width = min(32, -(-(n - j) // lanes) * lanes)
        block = np.zeros((width, kp), dtype=w.dtype)
        block[:min(width, n - j), :k] = w[j:j + width]
        packed.append(block.reshape(width, kp // group, group).transpose(1, 0, 2).reshape(-1))
    return np.concatenate(packed)


PANEL_BYTES = 48 * 1024  # stack budget of a kernel's input panel (per thread)
# The most a panel may take when even one band of PANEL_BYTES does not fit (rows hundreds of
# pixels wide with many channels): Linux boards give the calling thread megabytes of stack
# and cuvil_parallel's threads CUVIL_THREAD_STACK_BYTES (1 MB).
PANEL_MAX_BYTES = 512 * 1024
SUM_RANGE = "a channel's weight sum times 255 leaves int32 (more than 66,000 full-range inputs)"


def int8_constants(args: dict[str, Any], k_max: int | None = None) -> tuple[np.ndarray, ...] | Declined:
    """(weights as int64, bias, multipliers, shifts) of an int8 convolution or fully connected
    call, or Declined where the SIMD kernels cannot take it: more than `k_max` inputs (fc), or
    a channel whose 32-bit lane sums could overflow."""
    w = data(args["w"]).astype(np.int64)
    bias, mult, shift = data(args["bias"]), data(args["mult"]), data(args["shift"])
    if k_max is not None and args["k"] > k_max:
        return Declined(f"more than {k_max} inputs")
    if not sums_fit(w, bias):
        return Declined(SUM_RANGE)
    return w, bias, mult, shift


def panel_band(oh: int, sh: int, kh: int, row_bytes: int) -> int:
    """band_rows within PANEL_BYTES, or within PANEL_MAX_BYTES when not even one band fits
    the first; 0 when neither holds one."""
    return band_rows(oh, sh, kh, row_bytes, PANEL_BYTES) or band_rows(oh, sh, kh, row_bytes, PANEL_MAX_BYTES)


def channel_tile(channels: int, kh: int, row_bytes_per_channel: int) -> int:
    """The output channels (a multiple of 8, at most `channels` rounded up to 8) per panel tile
    of a depthwise kernel: as many as let kh panel rows fit PANEL_BYTES, at least 8."""
    cp = -(-channels // 8) * 8
    fit = PANEL_BYTES // max(1, kh * row_bytes_per_channel) // 8 * 8
    return max(8, min(cp, fit))


def dense_conv_weights(w: np.ndarray, groups: int, channels: int, dh: int, dw: int) -> np.ndarray:
    """[oc][kh][kw][c / groups] weights of a grouped and/or dilated convolution as the [oc][kh'][kw'][c]
    weights of an ungrouped, undilated one with the same result: each output channel's weights
    placed at its group's input channels (zeros elsewhere) and taps spread dh / dw apart
    (zeros between). Zero weights add nothing to the exact integer sums."""
    oc, kh, kw, icg = w.shape
    out = np.zeros((oc, (kh - 1) * dh + 1, (kw - 1) * dw + 1, channels), dtype=w.dtype)
    ocg = oc // groups
    for g in range(groups):
        out[g * ocg:(g + 1) * ocg, ::dh, ::dw, g * icg:(g + 1) * icg] = w[g * ocg:(g + 1) * ocg]
    return out


def band_rows(oh: int, sh: int, kh: int, row_bytes: int, budget: int) -> int:
    """The most output rows whose input rows ((band - 1) * sh + kh of row_bytes each) fit in
    `budget` bytes of stack panel; 0 when not even one does."""
    if kh * row_bytes > budget:
        return 0
    band = (budget // row_bytes - kh) // sh + 1
    return max(1, min(oh, band))


def row_softmax_args(c) -> dict | None:
    """A softmax call's arguments for the fast sets' kernels, which read contiguous rows: None
    when the call's axis is not the innermost (inner > 1)."""
    if c["inner"] != 1:
        return None
    return {k: v for k, v in c.args.items() if k != "inner"}


STRIDED_SOFTMAX = "softmax over an axis that is not the innermost (strided rows)"


