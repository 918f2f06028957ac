"""int4 weights (--weight-bits 4|auto, --int4-layers, INT4 QDQ initializers): packing two per
byte and the unpacked view that kernel-set rules read.

The quantizer decides the integer values (symmetric per output channel in [-7, 7], or an
imported INT4 tensor's own values in [-8, 7]); the IR keeps them as int8 data with the node's
`weight_bits` = 4, so the numpy reference and every kernel compute the same integers. The
kernels only store them packed and unpack them exactly:

- the portable kernels (conv2d_s8w4, fc_s8w4) read the weights in their int8 order, element e
  in byte e / 2, the low nibble first (`pack`), and sign-extend a nibble as (v ^ 8) - 8;
- the SIMD sets (avx2, neon) pack their own int8 stream in groups of 16 bytes, byte i of a
  group holding element i (low nibble) and element i + 8 (high nibble) (`pack_groups`): one
  8-byte load, two masks and a table lookup give the 16 int8 weights a 16-byte load gave;
- the Cortex-M DSP streams have layouts of their own (sdk/kernels/cortex_m_dsp/rules.py).

A rule that takes an int4 call with its int8 kernel (unpacked storage of the same values: the
depthwise kernels, a layer outside an int4 kernel's limits) says why in
`KernelCall.int8_storage`; the build lists the layer (never a silent fall-back).
"""
from __future__ import annotations

import numpy as np

from .contract import KernelCall, Weight, kernel

INT4_MIN, INT4_MAX = -8, 7
# the portable int4 kernel of each int8 kernel whose weights can be int4
W4_KERNELS = {"conv2d_s8": "conv2d_s8w4", "fc_s8": "fc_s8w4"}
INT8_OF = {v: k for k, v in W4_KERNELS.items()}


def check_range(values: np.ndarray) -> None:
    if values.size and (int(values.min()) < INT4_MIN or int(values.max()) > INT4_MAX):
        raise ValueError(f"int4 weights must be within [{INT4_MIN}, {INT4_MAX}]")


def pack(values: np.ndarray) -> np.ndarray:
    """int4 values (any shape, C order) as bytes: element e in byte e // 2, the low nibble for
    even e; an odd count ends with a zero nibble."""
    flat = np.asarray(values, dtype=np.int64).reshape(-1)
    check_range(flat)
    if flat.size % 2:
        flat = np.concatenate([flat, [0]])
    nib = flat & 15
    return (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8)


def unpack(packed: np.ndarray, count: int) -> np.ndarray:
    """The inverse of `pack`: `count` int4 values as int8."""
    b = np.asarray(packed, dtype=np.uint8).reshape(-1).astype(np.int64)
    nib = np.stack([b & 15, b >> 4], axis=1).reshape(-1)[:count]
    return ((nib ^ 8) - 8).astype(np.int8)


def pack_groups(stream: np.ndarray) -> np.ndarray:
    """An int8 weight stream (a multiple of 16 values) as the SIMD kernels read int4 weights: per
    16 values g, 8 bytes, byte i = (g[i] & 15) | (g[i + 8] & 15) << 4 (as int8_t data)."""
    g = np.asarray(stream, dtype=np.int64).reshape(-1, 16)
    check_range(g)
    return ((g[:, :8] & 15) | ((g[:, 8:] & 15) << 4)).astype(np.uint8).view(np.int8).reshape(-1)


def weight_values(c: KernelCall) -> np.ndarray:
    """The int4 values of a portable int4 call, as int8, in the shape its int8 twin's `w` has:
    conv2d [oc][kh][kw][c / groups], fc [n][k]."""
    a = c.args
    if c.kernel == "conv2d_s8w4":
        shape = (a["oc"], a["kh"], a["kw"], a["c"] // a["groups"])
    else:
        shape = (a["n"], a["k"])
    return unpack(np.asarray(a["w"].data), int(np.prod(shape))).reshape(shape)


def as_int8(c: KernelCall) -> KernelCall:
    """The portable int8 call with the same (int4) values unpacked: what a rule gives its int8
    kernel when it keeps a layer's int4 weights as int8 bytes."""
    args = dict(c.args)
    args["w"] = Weight(c.args["w"].hint, weight_values(c), "int8_t")
    return kernel("portable", INT8_OF[c.kernel])(**args)


def unpacked(call: KernelCall | list[KernelCall], reason: str):
    """A rule's int8-kernel answer for an int4 layer, marked with why it stores the int4 values as
    int8 (the build lists the layer with the reason)."""
    for one in call if isinstance(call, list) else [call]:
        if isinstance(one, KernelCall):
            one.int8_storage = reason
    return call
