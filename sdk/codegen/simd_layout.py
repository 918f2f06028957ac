"""Compile-time weight layouts and checks shared by the SIMD kernel sets (kset_avx2.py,
kset_neon.py). Python decides every layout; the C headers only read them.

Everything here keeps the portable kernels' integer results exactly: the layouts only
re-order and zero-pad weights, and the requantization tables encode the same rule as
cuvil_requant (cuvil_common.h, quant/requant.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .kernel_api import Declined, Weight
from .options import CodegenOptions

INT32_LIMIT = 2**31 - 1
# A layer is split over threads (--threads N > 1) only from this many multiply-adds: each
# split layer starts and joins its threads (tens of microseconds), so small ones run faster
# on one thread.
THREAD_MIN_MACS = 4 << 20


def pick(args: dict[str, Any], names: str) -> dict[str, Any]:
    """The named arguments (space separated) of a call, to pass on to another kernel."""
    return {k: args[k] for k in names.split()}


def undilated_pool(args: dict[str, Any]) -> dict[str, Any] | Declined:
    """A pooling call's arguments without dh and dw, for the SIMD pooling kernels (which have no
    dilation), or Declined for a dilated window."""
    if args["dh"] != 1 or args["dw"] != 1:
        return Declined("dilated pooling window")
    return {k: v for k, v in args.items() if k not in ("dh", "dw")}


def data(w: Weight) -> np.ndarray:
    return np.asarray(w.data)


def threads_for(options: CodegenOptions, macs: int) -> int:
    """The thread count a layer of `macs` multiply-accumulates gets: the build's --threads
    when the layer is large enough, else 1."""
    threads = int(options.threads or 1)
    return threads if threads > 1 and macs >= THREAD_MIN_MACS else 1


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


def requant_bound_ok(acc_max: np.ndarray, mult: np.ndarray, shift: np.ndarray, zy: int) -> bool:
    """True when y = ((acc * mult + 2^(s-1)) >> s) + zy fits int32 for every |acc| <= acc_max
    (per channel): the SIMD requantization then keeps 32-bit lanes after the 64-bit shift."""
    acc_max = np.asarray(acc_max, dtype=object)
    for a, m, s in zip(np.ravel(acc_max), np.ravel(mult).tolist(), np.ravel(shift).tolist()):
        y = (int(a) * int(m) + (1 << (int(s) - 1))) >> int(s)
        if y + abs(int(zy)) + 1 > INT32_LIMIT:
            return False
    return True


FAST_SHIFTS = (32, 54)  # cuvil_avx2_requant8f: every shift in this range (zy folded into the rounding term)


def requant_fast(shift: np.ndarray) -> bool:
    """True when cuvil_avx2_requant8f applies to these shifts (no int32 bound needed then)."""
    s = np.asarray(shift).reshape(-1)
    return bool(len(s)) and bool(np.all((s >= FAST_SHIFTS[0]) & (s <= FAST_SHIFTS[1])))


def requant_table_avx2(mult: np.ndarray, shift: np.ndarray, zy: int, lanes: np.ndarray | None = None,
                       fast: bool = False) -> np.ndarray:
    """cuvil_avx2_requant8's parameters: per 8 lanes, 32 int64 (even lanes 0, 2, 4, 6, then odd
    lanes 1, 3, 5, 7 in each group of 4). The general rule: [me x4, mo x4, re x4, ro x4,
    se x4, so x4, off x4, 0 x4] with re = 2^(s-1) + 2^62 and off the 8 lanes' low 32 bits of
    2^(62-s) - zy as int32 pairs (lane 2i in the low half of int64 i). With `fast` (every s in
    FAST_SHIFTS): [me x4, mo x4, re x4, ro x4, s - 32 as 8 int32, 0 x12] with
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
        rnd = (np.int64(1) << (s - 1)) + (np.int64(1) << 62)
        off = ((np.int64(1) << (62 - s)) - np.int64(zy)).astype(np.uint64) & np.uint64(0xFFFFFFFF)
        off_pairs = (off[0::2] | (off[1::2] << np.uint64(32))).view(np.int64)
        rows.append(np.concatenate([m[0::2], m[1::2], rnd[0::2], rnd[1::2], s[0::2], s[1::2], off_pairs,
                                    np.zeros(4, dtype=np.int64)]))
    return np.concatenate(rows).astype(np.int64)


def requant_table_neon(shift: np.ndarray, count: int) -> np.ndarray:
    """cuvil_neon_requant4's parameters for `count` lanes (a multiple of 4, padding lanes get
    shift 1): per 4 lanes, 8 int64 = [2^(s-1) x4, -s x4]."""
    s = padded(np.asarray(shift, dtype=np.int64).reshape(-1), count, 1).reshape(-1, 4)
    return np.concatenate([(np.int64(1) << (s - 1)), -s], axis=1).reshape(-1).astype(np.int64)


def zero_point_bias(bias: np.ndarray, w: np.ndarray, zx: int) -> np.ndarray | None:
    """bias - zx * (sum of each output's weights), the bias of kernels that multiply raw int8
    inputs padded with zx (int64), or None when it leaves int32."""
    out = bias.astype(np.int64) - int(zx) * w.astype(np.int64).reshape(w.shape[0], -1).sum(axis=1)
    return out if np.all(np.abs(out) <= INT32_LIMIT) else None


def conv_tap_rows(w: np.ndarray, multiple: int) -> tuple[np.ndarray, int]:
    """[oc][kh][kw][c] weights as [oc][kh][kr]: each kernel row's kw * c taps (kx-major,
    channel-minor) zero-padded to kr, the next multiple of `multiple`."""
    oc, kh, kw, c = w.shape
    k = kw * c
    kr = -(-k // multiple) * multiple
    rows = np.zeros((oc, kh, kr), dtype=w.dtype)
    rows[:, :, :k] = w.reshape(oc, kh, k)
    return rows, kr


def band_rows(oh: int, sh: int, kh: int, row_bytes: int, budget: int) -> int:
    """The most output rows whose input rows ((band - 1) * sh + kh of row_bytes each) fit in
    `budget` bytes of stack panel; 0 when not even one does."""
    if kh * row_bytes > budget:
        return 0
    band = (budget // row_bytes - kh) // sh + 1
    return max(1, min(oh, band))
