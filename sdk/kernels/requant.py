"""The one rounding rule of cuvil-sdk, shared by the numpy reference and every C kernel.

Requantization of an int32 accumulator `acc` by a real factor r > 0 uses an int32
multiplier M in [2^30, 2^31) and a right shift S in [1, 62], found at compile time so
that r ~= M / 2^S. At run time, in 64-bit integer arithmetic:

    y = (acc * M + 2^(S-1)) >> S        (arithmetic shift: rounds half toward +inf)

then the output zero point is added and the result clamped to the activation range.
|acc| < 2^31 and M < 2^31 keep the product within int64. This single rounding is what
`requant` in sdk/templates/common/cuvil_common.h.j2 implements, and every SIMD or CUDA
kernel must reproduce it exactly.

Float <-> int8 at the model boundary, in float32 arithmetic (IEEE, no contraction):

    q = clamp(floor(x / scale + 0.5) + zero_point, -128, 127)     (NaN -> -128)
    x = (float)(q - zero_point) * scale
"""
from __future__ import annotations

import math

import numpy as np

INT8_MIN, INT8_MAX = -128, 127


class RequantRangeError(ValueError):
    """A scale ratio that the integer requantization cannot represent (the model's weights or
    scales are out of range); quantize_graph turns it into a ModelError naming the layer."""


def quantize_multiplier(real: float, bits: int = 31) -> tuple[int, int]:
    """(M, S) with M in [2^(bits-1), 2^bits) and S in [1, 62] such that real ~= M / 2^S.
    int16 (16x8) layers use bits=15: their 64-bit accumulators times M must stay in int64."""
    if not real > 0.0 or not math.isfinite(real):
        return 0, 1
    mantissa, exponent = math.frexp(real)  # real = mantissa * 2^exponent, mantissa in [0.5, 1)
    m = round(mantissa * (1 << bits))
    if m == 1 << bits:
        m //= 2
        exponent += 1
    shift = bits - exponent
    if shift > 62:  # too small to represent: shrink the multiplier instead
        m >>= shift - 62
        shift = 62
    if shift < 1:
        raise RequantRangeError(f"requantization factor {real:.3g} is too large (the limit is 2^{bits - 1})")
    return int(m), int(shift)


def quantize_multipliers(reals: np.ndarray, bits: int = 31) -> tuple[np.ndarray, np.ndarray]:
    pairs = [quantize_multiplier(float(r), bits) for r in np.ravel(reals)]
    return (np.array([p[0] for p in pairs], dtype=np.int32), np.array([p[1] for p in pairs], dtype=np.int32))


def requant(acc: np.ndarray, mult: np.ndarray | int, shift: np.ndarray | int) -> np.ndarray:
    """The rounding rule above, on int64 numpy arrays (mult/shift broadcast per channel)."""
    acc = np.asarray(acc, dtype=np.int64)
    mult = np.asarray(mult, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    return (acc * mult + (np.int64(1) << (shift - 1))) >> shift


def clamp_int8(y: np.ndarray, lo: int = INT8_MIN, hi: int = INT8_MAX) -> np.ndarray:
    return np.clip(y, lo, hi).astype(np.int8)


INT16_MIN, INT16_MAX = -32768, 32767


def clamp_to(y: np.ndarray, lo: int, hi: int, dtype: str) -> np.ndarray:
    return np.clip(y, lo, hi).astype(dtype)


def quantize_float(x: np.ndarray, scale: float, zero_point: int, dtype: str = "int8") -> np.ndarray:
    """Float32 -> int8 (or int16: an --input-precision NAME=int16 input) exactly as the generated
    C does it."""
    lo, hi = (INT16_MIN, INT16_MAX) if dtype == "int16" else (INT8_MIN, INT8_MAX)
    v = np.floor(np.asarray(x, dtype=np.float32) / np.float32(scale) + np.float32(0.5)) + np.float32(zero_point)
    v = np.where(np.isnan(v), np.float32(lo), v)
    return np.clip(v, lo, hi).astype(dtype)


def dequantize(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """Int8 -> float32 exactly as the generated C does it."""
    return (q.astype(np.int32) - np.int32(zero_point)).astype(np.float32) * np.float32(scale)


# Element-wise Add: both inputs are rescaled to a common fixed point whose multipliers fit
# 21 bits, so the whole sum stays in int32 on every target (no 64-bit lanes needed):
#   y = zy + (((a - za) * Ma + (b - zb) * Mb + 2^(S-1)) >> S)
ADD_MULT_BITS = 21
ADD_MAX_SHIFT = 30


def add_multipliers(ra: float, rb: float) -> tuple[int, int, int]:
    """(Ma, Mb, S) for the Add rule above, given the real ratios sa/sy and sb/sy."""
    top = max(ra, rb)
    shift = ADD_MAX_SHIFT
    while shift > 1 and round(top * (1 << shift)) >= (1 << ADD_MULT_BITS):
        shift -= 1
    if round(top * (1 << shift)) >= (1 << ADD_MULT_BITS):
        raise RequantRangeError("element-wise scales differ too much to requantize")
    return round(ra * (1 << shift)), round(rb * (1 << shift)), shift


def add_offset(za: int, zb: int, ma: int, mb: int, shift: int) -> int:
    """c0 = 2^(S-1) - za * Ma - zb * Mb modulo 2^32, in [0, 2^32): with it the SIMD kernels reach
    the rule's int32 sum from the raw operands in wrapping arithmetic, a * Ma + b * Mb + c0."""
    return ((1 << (shift - 1)) - za * ma - zb * mb) & 0xFFFFFFFF


def add_rule(a: np.ndarray, b: np.ndarray, za: int, zb: int, ma: int, mb: int, shift: int) -> np.ndarray:
    acc = (a.astype(np.int32) - za) * np.int32(ma) + (b.astype(np.int32) - zb) * np.int32(mb)
    return (acc + np.int32(1 << (shift - 1))) >> np.int32(shift)
