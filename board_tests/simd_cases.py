"""Kernel cases for the SIMD kernel sets (avx2 on host, neon on rpi5), on top of
kernel_cases.py: channel counts around the vector and block widths (16-channel blocks with
an 8-channel tail, 32-output groups), pixel counts that leave partial tiles, layers wide
enough to be cut into several stack-panel bands, odd tap counts, windows of more than 256
positions, element counts that leave a scalar tail. Used by test_simd_host.py,
test_simd_rpi5.py and test_threads.py, with kernel_cases' builders and checks.

Each case names the SIMD kernel its main layer must get (`EXPECT`), so a rule that
silently falls back to the portable kernel fails the tests instead of passing them.
"""
from __future__ import annotations

import numpy as np

import kernel_cases as kc

CASES: list[kc.Case] = []
EXPECT: dict[str, str] = {}  # case id -> kernel family of its first weighted/pooled layer


def case(expect: str, *inputs: tuple[int, ...], ranges=()):
    def register(fn):
        CASES.append(kc.Case(fn.__name__, tuple(inputs), fn, ranges, (fn.__doc__ or "").strip()))
        EXPECT[fn.__name__] = expect
        return fn
    return register


# --- convolution --------------------------------------------------------------------------------
@case("conv2d", (1, 19, 9, 13))
def simd_conv_c19_oc40(b, x):
    """40 output channels: blocks 16 + 16 + 8; 117 pixels: tiles of 6 and a tile of 3"""
    return b.conv(x[0], 19, 40, (3, 3), pads=[1, 1, 1, 1])


@case("conv2d", (1, 32, 11, 10))
def simd_conv_oc24_s2(b, x):
    return b.conv(x[0], 32, 24, (3, 3), strides=[2, 2], pads=[1, 0, 1, 1])


@case("conv2d", (1, 33, 5, 7))
def simd_conv_1x1_oc17(b, x):
    """17 output channels: a 16 block and an 8 block holding one channel"""
    return b.op("Relu", [b.conv(x[0], 33, 17, (1, 1))])


@case("conv2d", (1, 4, 12, 9))
def simd_conv_5x5_oc9(b, x):
    """9 output channels: one 16 block, 7 lanes unused"""
    return b.conv(x[0], 4, 9, (5, 5), pads=[2, 2, 2, 2])


@case("conv2d", (1, 8, 6, 7))
def simd_conv_oc28_tail(b, x):
    """28 output channels: a 16 block of 12 with the fast requantization (the zmm tile's masked
    stores)"""
    return b.op("Relu", [b.conv(x[0], 8, 28, (3, 3), pads=[1, 1, 1, 1])])


@case("conv2d", (1, 3, 16, 17))
def simd_conv_odd_row_taps(b, x):
    """kw * c = 9 taps per kernel row: padded to 10 (int16 pairs) or 12 (SDOT quads)"""
    return b.clip(b.conv(x[0], 3, 8, (3, 3), strides=[2, 1], pads=[1, 1, 1, 1]), 0.0, 6.0)


@case("conv2d", (1, 1, 49, 10))
def simd_conv_dscnn_stem(b, x):
    """DS-CNN's first layer: one input channel, a 10x4 kernel, stride 2, SAME_UPPER"""
    return b.op("Relu", [b.conv(x[0], 1, 64, (10, 4), strides=[2, 2], auto_pad="SAME_UPPER")])


@case("conv2d", (1, 3, 20, 37))
def simd_conv_rgb_stem(b, x):
    """a 3-channel image 37 wide: the input transpose interleaves 16 pixels at a time, then a tail"""
    return b.op("Relu", [b.conv(x[0], 3, 8, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1])])


@case("conv2d", (1, 32, 40, 30))
def simd_conv_bands(b, x):
    """wide enough that the input panel is built in several bands of output rows"""
    return b.conv(x[0], 32, 16, (3, 3), pads=[1, 1, 1, 1])


def p2(k: int) -> float:
    return 2.0 ** -k


# 1x1 convolutions read in place on neon (`direct`: stride 1, no padding, c % 8 == 0): full tiles of 4
# pixels and a tail of 1 to 3, the last 2 quads of a pixel from an 8-byte load (c % 16 == 8), 16- and
# 8-channel blocks, input zero points at both ends (the bias carries -zx * sum(w)), clamps and saturation
@case("conv2d", (1, 24, 7, 9), ranges=((0.0, 4.0),))
def simd_conv_1x1_direct_c24(b, x):
    """c = 24: one 4-quad step, then 2 quads from 8 bytes; 40 outputs (16 + 16 + 8); 63 pixels (a tail of 3);
    inputs >= 0 (zx = -128); ReLU6"""
    return b.clip(b.conv(x[0], 24, 40, (1, 1)), 0.0, 6.0)


@case("conv2d", (1, 2, 16, 5, 5), ranges=((-4.0, 0.5),))
def simd_conv_1x1_direct_batch2(b, x):
    """c = 16, 2 images through a Reshape (one run of 50 pixels: a tail of 2); 24 outputs (16 + 8); zx
    near +127"""
    return b.conv(b.reshape(x[0], [2, 16, 5, 5]), 16, 24, (1, 1))


@case("conv2d", (1, 8, 3, 7))
def simd_conv_1x1_direct_c8(b, x):
    """c = 8: only the 2-quad tail (no full step); 21 pixels (a tail of 1); 25 outputs (a full 16 block,
    then one of 9: the asm tile, then the C one)"""
    return b.op("Relu", [b.conv(x[0], 8, 25, (1, 1))])


@case("conv2d", (1, 16, 3, 5), ranges=((-0.1, 0.1),))
def simd_qdq_conv_1x1_direct_shift31(b, x):
    """a direct 1x1 layer with shift 31 (variant rq64): the C tile's 64-bit requantization, not the asm
    block's 32-bit one; inputs of a few codes keep the outputs off the clamps"""
    w = b.qconst(b.rng.integers(-1, 2, (16, 16, 1, 1)), p2(6))
    return b.qdq(b.op("Conv", [b.qdq(x[0], p2(5)), w], kernel_shape=[1, 1]), p2(10))


@case("conv2d", (1, 96, 4, 3), ranges=((-2.0, 2.0),))
def simd_conv_1x1_direct_c96_sat(b, x):
    """c = 96 (6 steps), full-range int8 weights (-128 included) and an imposed output scale far too
    fine for the sums: most outputs saturate, at both ends"""
    w = b.qconst(b.rng.integers(-128, 128, (16, 96, 1, 1)), p2(6))
    return b.qdq(b.op("Conv", [b.qdq(x[0], p2(6)), w], kernel_shape=[1, 1]), p2(6))


@case("conv2d", (1, 32, 3, 6), ranges=((-2.0, 2.0),))
def simd_qdq_conv_1x1_direct_relu_clamp(b, x):
    """a direct rq32 layer whose clamp acts (a Relu quantized with zero point 0: lo = 0), so the asm
    block's SMAX/SMIN run (where lo = -128 and hi = 127 it leaves them out); 18 pixels"""
    w = b.qconst(b.rng.integers(-20, 21, (16, 32, 1, 1)), p2(6))
    return b.qdq(b.op("Relu", [b.op("Conv", [b.qdq(x[0], p2(5)), w], kernel_shape=[1, 1])]), p2(4))


@case("conv2d", (1, 8, 7, 9), ranges=((-2.0, 2.0),))
def simd_qdq_conv_3x3_panel_relu_clamp(b, x):
    """the panel path's asm tile (rq32, 16 channels): kernel rows of 24 taps (one 4-quad step, then 2
    quads), a Relu quantized with zero point 0 (the clamping body); 24 outputs (the asm's block, then
    the C tile's 8); 63 pixels"""
    w = b.qconst(b.rng.integers(-20, 21, (24, 8, 3, 3)), p2(6))
    y = b.op("Conv", [b.qdq(x[0], p2(5)), w], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    return b.qdq(b.op("Relu", [y]), p2(4))


@case("conv2d", (1, 16, 6, 5))
def simd_conv_1x1_panel_padded_strided(b, x):
    """1x1 layers the direct path declines (padding, stride 2): the panel path"""
    y = b.conv(x[0], 16, 16, (1, 1), pads=[1, 0, 0, 1])
    return b.conv(y, 16, 16, (1, 1), strides=[2, 2])


@case("conv2d", (1, 2, 7, 9), ranges=((-0.1, 0.1),))
def simd_qdq_conv_shift31(b, x):
    """imposed scales with a requantization ratio of 1/2 (shift 31): the general 64-bit rule,
    not the fast one (shifts 32..54); inputs of a few codes keep the outputs off the clamps"""
    w = b.qconst(b.rng.integers(-1, 2, (4, 2, 3, 3)), p2(6))
    return b.qdq(b.op("Conv", [b.qdq(x[0], p2(5)), w], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), p2(10))


# large enough for the x86 amx variant (avx2 rules.amx_layout): 16-pixel x 16-channel tiles
@case("conv2d", (1, 24, 13, 79), ranges=((-0.5, 3.0),))
def simd_amx_conv_s2_oc40(b, x):
    """kw * c = 72 taps per kernel row (two 64-byte slabs, the second 8 taps), stride 2, padding on
    every side with a zero point near -90 (padding bytes far from 128), 40 output channels (a
    16 + 16 block pair, then an 8 block alone); 7 rows of 40 pixels (16 + 16 + 8: 21 segments) in
    two panel bands (5 rows and 2)"""
    return b.conv(x[0], 24, 40, (3, 3), strides=[2, 2], pads=[1, 1, 1, 1])


@case("conv2d", (1, 80, 3, 12), ranges=((-1.75, 14.1875),))
def simd_amx_qdq_conv_1x1_zp(b, x):
    """1 x 1, 80 taps (a 64-byte slab and 16), weights over all of int8 (-128 included), input
    zero point -100, 48 channels (a pair of blocks and a single 16 block), rows of 12 pixels
    (3 segments), an output scale that saturates many outputs at both ends"""
    w = b.qconst(b.rng.integers(-128, 128, (48, 80, 1, 1)), p2(7))
    bias = qbias(b, b.rng.integers(-5000, 5000, 48), p2(11))
    y = b.op("Conv", [b.qdq(x[0], p2(4), -100), w, bias], kernel_shape=[1, 1])
    return b.qdq(y, p2(2), 20)


# --- depthwise ----------------------------------------------------------------------------------
@case("dwconv2d", (1, 16, 6, 9), ranges=((-2.0, 2.0),))
def simd_qdq_dw_relu_clamp_s1(b, x):
    """rq32 3x3 stride 1 (the asm pairs, SHARE 1) with a Relu quantized with zero point 0 (lo = 0: the
    clamping body); rows of 9 (4 pairs and the C step's odd pixel)"""
    w = b.qconst(b.rng.integers(-20, 21, (16, 1, 3, 3)), p2(6))
    y = b.op("Conv", [b.qdq(x[0], p2(5)), w], group=16, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    return b.qdq(b.op("Relu", [y]), p2(4))


@case("dwconv2d", (1, 24, 9, 12), ranges=((-2.0, 2.0),))
def simd_qdq_dw_relu_clamp_s2(b, x):
    """the same at stride 2 (SHARE 2: A reads columns 0-2, B 2-4); rows of 6 output pixels"""
    w = b.qconst(b.rng.integers(-20, 21, (24, 1, 3, 3)), p2(6))
    y = b.op("Conv", [b.qdq(x[0], p2(5)), w], group=24, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    return b.qdq(b.op("Relu", [y]), p2(4))


@case("dwconv2d", (1, 40, 9, 11))
def simd_dw_c40(b, x):
    """40 channels: blocks 16 + 16 + a partial one"""
    return b.op("Relu", [b.conv(x[0], 40, 40, (3, 3), group=40, pads=[1, 1, 1, 1])])


@case("dwconv2d", (1, 28, 7, 9))
def simd_dw_c28_s1(b, x):
    """28 channels, 3x3 stride 1: a 16-channel zmm block of 12 lanes stored (avx512vnni), rows of
    9 (the odd last pixel)"""
    return b.op("Relu", [b.conv(x[0], 28, 28, (3, 3), group=28, pads=[1, 1, 1, 1])])


@case("dwconv2d", (1, 28, 9, 11))
def simd_dw_c28_s2(b, x):
    """the same at stride 2 (the zmm 3x3 row)"""
    return b.op("Relu", [b.conv(x[0], 28, 28, (3, 3), group=28, strides=[2, 2], pads=[1, 1, 1, 1])])


@case("dwconv2d", (1, 32, 9, 12))
def simd_dw_dot_s2_c32(b, x):
    """neon's dot path (3x3, 16-channel blocks, rq32) at stride 2: the panel's one quad column per
    output pixel, edge columns on both sides"""
    return b.op("Relu", [b.conv(x[0], 32, 32, (3, 3), group=32, strides=[2, 2], pads=[1, 1, 1, 1])])


@case("dwconv2d", (1, 16, 7, 5))
def simd_dw_dot_asym_c16(b, x):
    """the dot path with padding on one side of each axis only (an edge column where j + 2 passes
    the row, none before it), 5 columns"""
    return b.conv(x[0], 16, 16, (3, 3), group=16, pads=[0, 0, 2, 2])


@case("dwconv2d", (1, 96, 24, 112))
def simd_dw_dot_tiles_s2(b, x):
    """96 channels over rows 56 output pixels wide at stride 2: the dot path's channel tile (64,
    then 32) and bands of the panel budget"""
    return b.conv(x[0], 96, 96, (3, 3), group=96, strides=[2, 2], pads=[1, 1, 1, 1])


@case("dwconv2d", (1, 24, 13, 12))
def simd_dw_5x5_s2(b, x):
    """25 taps: the last pair padded with a zero-weight tap"""
    return b.conv(x[0], 24, 24, (5, 5), group=24, strides=[2, 2], pads=[2, 2, 2, 2])


@case("dwconv2d", (1, 16, 6, 7))
def simd_dw_2x2_asym(b, x):
    return b.conv(x[0], 16, 16, (2, 2), group=16, pads=[0, 1, 1, 0])


@case("dwconv2d", (1, 64, 48, 30))
def simd_dw_bands(b, x):
    return b.conv(x[0], 64, 64, (3, 3), group=64, pads=[1, 1, 1, 1])


@case("dwconv2d", (1, 9, 6, 7), ranges=((-0.1, 0.1),))
def simd_qdq_dw_shift31(b, x):
    w = b.qconst(b.rng.integers(-2, 3, (9, 1, 3, 3)), p2(6))
    return b.qdq(b.op("Conv", [b.qdq(x[0], p2(5)), w], kernel_shape=[3, 3], group=9, pads=[1, 1, 1, 1]), p2(10))


@case("dwconv2d", (1, 8, 9, 10))
def simd_dw_mult2_s2(b, x):
    """depth multiplier 2: output channel o reads input channel o / 2"""
    return b.conv(x[0], 8, 16, (3, 3), group=8, strides=[2, 2], pads=[1, 1, 1, 1])


@case("dwconv2d", (1, 12, 11, 13))
def simd_dw_dilated(b, x):
    return b.op("Relu", [b.conv(x[0], 12, 12, (3, 3), group=12, dilations=[2, 3], pads=[2, 3, 2, 3])])


@case("dwconv2d", (1, 8, 7, 5))
def simd_dw_s13_tiny(b, x):
    """3x3, column stride 3: two output columns that share no panel column (the 3x3 path's
    unshared pair), 8 channels in one contiguous panel run"""
    return b.conv(x[0], 8, 8, (3, 3), group=8, strides=[1, 3], pads=[1, 1, 1, 1])


@case("dwconv2d", (1, 5, 6, 3))
def simd_dw_mult3_narrow(b, x):
    """depth multiplier 3, stride 1, 3 output columns (a shared pair and a single pixel), 15
    output channels: a block of 8 and one of 7 lanes stored"""
    return b.op("Relu", [b.conv(x[0], 5, 15, (3, 3), group=5, pads=[0, 1, 2, 1])])


@case("dwconv2d", (1, 24, 9, 3))
def simd_dw_one_column_s2(b, x):
    """one output column (no pair) of 24 channels, stride 2, padding on one side only"""
    return b.conv(x[0], 24, 24, (3, 3), group=24, strides=[2, 2], pads=[1, 0, 1, 0])


@case("dwconv2d", (1, 16, 10, 9))
def simd_dw_dil_rows_s21(b, x):
    """dilation 2 between kernel rows only, row stride 2: the 3x3 path's shared pair"""
    return b.conv(x[0], 16, 16, (3, 3), group=16, dilations=[2, 1], strides=[2, 1], pads=[2, 1, 2, 1])


@case("dwconv2d", (1, 13, 5, 1))
def simd_dw_s1_c13_w1(b, x):
    """3x3 stride 1 (the even/odd column-pair path): one output column, 13 channels (a 5-channel tail)"""
    return b.conv(x[0], 13, 13, (3, 3), group=13, pads=[1, 1, 1, 1])


@case("dwconv2d", (1, 21, 4, 2))
def simd_dw_s1_c21_w2_asym(b, x):
    """3x3 stride 1: two output columns, no padding on the left, a 5-channel tail"""
    return b.conv(x[0], 21, 21, (3, 3), group=21, pads=[1, 0, 1, 2])


@case("dwconv2d", (1, 10, 5, 8))
def simd_dw_s1_c10_even_nopad(b, x):
    """3x3 stride 1 without padding: 6 output columns (even), a 2-channel tail"""
    return b.op("Relu", [b.conv(x[0], 10, 10, (3, 3), group=10)])


@case("dwconv2d", (1, 5, 6, 7))
def simd_dw_mult3_s1(b, x):
    """3x3 stride 1, depth multiplier 3: 15 output channels, the input row read per channel"""
    return b.conv(x[0], 5, 15, (3, 3), group=5, pads=[1, 1, 1, 1])


@case("dwconv2d", (1, 24, 7, 9))
def simd_dw_5x5_s1(b, x):
    return b.conv(x[0], 24, 24, (5, 5), group=24, pads=[2, 2, 2, 2])


@case("dwconv2d", (1, 19, 9, 8))
def simd_dw_s1_dilated2(b, x):
    """3x3 stride 1, dilation 2 (not the even/odd path), a 3-channel tail"""
    return b.conv(x[0], 19, 19, (3, 3), group=19, dilations=[2, 2], pads=[2, 2, 2, 2])


@case("dwconv2d", (1, 35, 7, 9))
def simd_dw_s2_c35_odd(b, x):
    """3x3 stride 2 with odd input width, a 3-channel tail"""
    return b.conv(x[0], 35, 35, (3, 3), group=35, strides=[2, 2], pads=[0, 1, 1, 1])


@case("conv2d", (1, 16, 7, 8))
def simd_conv_grouped4(b, x):
    """4 groups of 4 input channels: a dense kernel with zero weights across groups"""
    return b.conv(x[0], 16, 24, (3, 3), group=4, pads=[1, 1, 1, 1])


@case("conv2d", (1, 6, 11, 12))
def simd_conv_dilated(b, x):
    return b.conv(x[0], 6, 10, (3, 3), dilations=[2, 2], strides=[1, 2], pads=[2, 2, 2, 2])


def qbias(b, codes, scale: float) -> str:
    """An int32 bias given as codes and a DequantizeLinear (scale = input scale x weight scale)."""
    raw = b.const(np.asarray(codes), "bq", np.int32)
    return b.op("DequantizeLinear", [raw, b.const(scale, "s"), b.const(0, "zp", np.int32)])


def big_bias(n: int) -> np.ndarray:
    """Biases at and near both ends of int32: bias + sum passes int32 for most inputs."""
    return np.resize([2**31 - 1, -2**31, 2**31 - 3000, -2**31 + 3000], n)


SHIFT62_NEAR_2P31 = 2.0 ** 20 / 0.99  # output scale: ratio 2^-11 / it = 0.99 * 2^-31, so S = 62 and M ~ 0.99 * 2^31


@case("conv2d", (1, 2, 7, 9), ranges=((-0.1, 0.1),))
def simd_qdq_conv_shift62_wide(b, x):
    """requantization ratio 0.99 * 2^-31 (shift 62, M near 2^31) and biases at the ends of what
    int32 sums allow (the quantizer clips them to 2^31 - 1 - 255 * sum|w|): outputs 0 / +-1
    decided by the sums near the int32 limits"""
    w = b.qconst(b.rng.integers(-127, 128, (8, 2, 3, 3)), p2(6))
    y = b.op("Conv", [b.qdq(x[0], p2(5)), w, qbias(b, big_bias(8), p2(11))], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    return b.qdq(y, SHIFT62_NEAR_2P31)


@case("conv2d", (1, 3, 6, 7), ranges=((-0.1, 0.1),))
def simd_qdq_conv_shift32_mult_near_2_31(b, x):
    """ratio 2^-2 (shift 32, M = 2^30: the 32-bit rule's smallest shift, SRSHL by -1) and 20 output
    channels (a block of 16 and one of 8) with M = 2^31 - 128 at shift 33 (SQDMULH near its limit)"""
    w = b.qconst(b.rng.integers(-2, 3, (20, 3, 3, 3)), p2(6))
    near = b.qconst(b.rng.integers(-2, 3, (20, 3, 3, 3)), p2(7) * (1 - 2.0 ** -24))
    return [b.qdq(b.op("Conv", [b.qdq(x[0], p2(5)), w], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), p2(9)),
            b.qdq(b.op("Conv", [b.qdq(x[0], p2(5)), near], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), p2(9))]


@case("conv2d", (1, 4, 5, 6), ranges=((-4.0, 4.0),))
def simd_qdq_conv_shift40_bias(b, x):
    """an arbitrary multiplier at shift 40 (ratio 0.7391 * 2^-9) on accumulators of +-2^16 from the
    bias: SRSHL by -9 rounds every output, ties included, off the clamps"""
    w = b.qconst(b.rng.integers(-127, 128, (12, 4, 1, 1)), p2(6) * 0.7391)
    bias = qbias(b, b.rng.integers(-2**16, 2**16, 12), p2(11) * 0.7391)
    return b.qdq(b.op("Conv", [b.qdq(x[0], p2(5)), w, bias], kernel_shape=[1, 1]), p2(2))


@case("conv2d", (1, 2, 7, 9), ranges=((-0.1, 0.1),))
def simd_qdq_conv_shift6(b, x):
    """requantization ratio 2^24 (shift 6): y = acc * 2^24 + rounding, saturating"""
    w = b.qconst(b.rng.integers(-1, 2, (4, 2, 3, 3)), p2(6))
    return b.qdq(b.op("Conv", [b.qdq(x[0], p2(5)), w], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), p2(35))


@case("dwconv2d", (1, 9, 6, 7), ranges=((-0.1, 0.1),))
def simd_qdq_dw_shift62_wide(b, x):
    w = b.qconst(b.rng.integers(-127, 128, (9, 1, 3, 3)), p2(6))
    y = b.op("Conv", [b.qdq(x[0], p2(5)), w, qbias(b, big_bias(9), p2(11))], kernel_shape=[3, 3], group=9,
             pads=[1, 1, 1, 1])
    return b.qdq(y, SHIFT62_NEAR_2P31)


# --- shapes of MobileNetV2 / ResNet-50 at 224x224 -----------------------------------------------
@case("dwconv2d", (1, 96, 112, 112))
def simd_wide_dw_112x112x96_s2(b, x):
    """MobileNetV2's second depthwise layer: 113 input columns of 96 channels per panel row (21.7 KB:
    one tile of all channels and bands of 2 output rows within DW_PANEL_BYTES)"""
    return b.clip(b.conv(x[0], 96, 96, (3, 3), group=96, strides=[2, 2], pads=[1, 1, 1, 1]), 0.0, 6.0)


@case("dwconv2d", (1, 144, 20, 56), ranges=((0.0, 4.0),))
def simd_wide_dw_144_s1_zx(b, x):
    """144 channels, rows of 58 columns (16.7 KB): one tile of all channels filled contiguously, 4
    bands of 5 output rows (more than PANEL_BYTES would hold); inputs >= 0, so the padding is zx = -128"""
    return b.clip(b.conv(x[0], 144, 144, (3, 3), group=144, pads=[1, 1, 1, 1]), 0.0, 6.0)


@case("conv2d", (1, 64, 3, 224))
def simd_wide_conv_224(b, x):
    """rows 224 wide with 64 channels: one band needs the large panel"""
    return b.conv(x[0], 64, 16, (3, 3), pads=[1, 1, 1, 1])


@case("conv2d", (1, 320, 3, 3))
def simd_wide_conv_1x1_1280(b, x):
    """MobileNetV2's last 1x1 convolution: 320 -> 1280 channels"""
    return b.clip(b.conv(x[0], 320, 1280, (1, 1)), 0.0, 6.0)


@case("fc", (1, 1280))
def simd_wide_gemm_1280(b, x):
    return b.gemm(x[0], 1280, 40)


# --- fully connected ----------------------------------------------------------------------------
@case("fc", (1, 301))
def simd_gemm_k301_n70(b, x):
    """odd k; 70 outputs: groups of 32 + 32 + a block of 8 holding 6"""
    return b.gemm(x[0], 301, 70)


@case("fc", (1, 640))
def simd_gemm_k640_n128_relu(b, x):
    return b.op("Relu", [b.gemm(x[0], 640, 128)])


@case("fc", (1, 8))
def simd_gemm_k8_n5(b, x):
    return b.gemm(x[0], 8, 5)


@case("fc", (1, 4, 33))
def simd_gemm_rows4(b, x):
    return b.gemm(b.reshape(x[0], [4, 33]), 33, 40)


@case("fc", (1, 20, 150))
def simd_amx_gemm_rows20_k150_n52(b, x):
    """20 rows (x86 amx: a full 16-row tile and 4), k 150 (quads to 152: three 64-byte slabs, the
    last 24), 52 outputs (a group of 32, then 20: a 16-output half and an 8 block holding 4)"""
    return b.gemm(b.reshape(x[0], [20, 150]), 150, 52)


@case("fc", (1, 24), ranges=((-0.1, 0.1),))
def simd_qdq_gemm_shift31(b, x):
    w = b.qconst(b.rng.integers(-2, 3, (11, 24)), p2(6))
    return b.qdq(b.op("Gemm", [b.qdq(x[0], p2(5)), w], transB=1), p2(10))


@case("fc", (1, 24), ranges=((-0.1, 0.1),))
def simd_qdq_gemm_mult_near_2_31(b, x):
    """multipliers 2^31 - 128 (a weight scale just below a power of two), shifts 33 and 30"""
    scale = p2(6) * (1 - 2.0 ** -24)
    w = b.qconst(b.rng.integers(-3, 4, (11, 24)), scale)
    y = b.op("Gemm", [b.qdq(x[0], p2(5)), w], transB=1)
    return [b.qdq(y, p2(8)), b.qdq(b.op("Gemm", [b.qdq(x[0], p2(5)), w], transB=1), p2(12))]


@case("fc", (1, 40), ranges=((-0.1, 0.1),))
def simd_qdq_gemm_shift62_wide(b, x):
    w = b.qconst(b.rng.integers(-127, 128, (12, 40)), p2(6))
    return b.qdq(b.op("Gemm", [b.qdq(x[0], p2(5)), w, qbias(b, big_bias(12), p2(11))], transB=1), SHIFT62_NEAR_2P31)


# --- pooling and add ----------------------------------------------------------------------------
@case("maxpool", (1, 40, 9, 9))
def simd_maxpool_c40(b, x):
    """40 channels: 32 in one vector, then 8 one at a time"""
    return b.op("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


@case("maxpool", (1, 20, 8, 8))
def simd_maxpool_c20(b, x):
    return b.op("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2])


@case("avgpool", (1, 40, 9, 9))
def simd_avgpool_c40_include_pad(b, x):
    return b.op("AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)


@case("avgpool", (1, 33, 8, 7))
def simd_avgpool_c33_ceil(b, x):
    return b.op("AveragePool", x, kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1)


@case("avgpool", (1, 40, 20, 20))
def simd_gap_400(b, x):
    """a window of 400 positions: sums in int32"""
    return b.op("GlobalAveragePool", x)


@case("add", (1, 10, 10, 10), (1, 10, 10, 10), ranges=((-1.0, 2.0), (-3.0, 0.5)))
def simd_add_1000(b, x):
    """1000 elements: 62 vectors of 16 and a scalar tail of 8"""
    return b.op("Add", x)


@case("add", (1, 48, 5, 7), (1, 48, 5, 7))
def simd_add_relu_c48(b, x):
    return b.op("Relu", [b.op("Add", x)])


@case("add", (1, 24, 5, 7), (1, 24, 1, 1), ranges=((-1.0, 2.0), (-0.5, 0.5)))
def simd_add_bcast_channel(b, x):
    """a per-channel operand: inner rows of 24 channels, the other operand repeated per pixel"""
    return b.op("Add", x)


@case("add", (1, 20, 6, 7), (1, 1, 1, 1))
def simd_add_bcast_scalar(b, x):
    return b.op("Add", x)


@case("add", (1, 1, 1, 31), (1, 1, 1, 31), ranges=((0.0, 3.0), (-2.0, 0.0)))
def simd_add_tail15_zp_edges(b, x):
    """31 elements: one vector of 16 and a scalar tail of 15; zero points -128 (a >= 0) and 127 (b <= 0)"""
    return b.op("Add", x)


@case("add", (1, 17, 1, 1), (1, 17, 1, 1), ranges=((-0.002, 0.001), (-60.0, 40.0)))
def simd_add_tail1_extreme_scales(b, x):
    """17 elements (a tail of 1); scales 10^4 apart: a multiplier of a few units beside one near 2^21"""
    return b.op("Add", x)


@case("add", (1, 1, 5, 7), (1, 19, 5, 7), ranges=((-4.0, 1.0), (-0.25, 0.75)))
def simd_add_bcast_pixel_first(b, x):
    """the first operand one value per pixel, repeated along rows of 19 channels (a vector and a tail of 3)"""
    return b.op("Relu", [b.op("Add", x)])


@case("add", (1, 1, 1, 1), (1, 33, 3, 1), ranges=((0.5, 0.6), (-1.0, 1.0)))
def simd_add_bcast_scalar_first(b, x):
    """a scalar first operand (zero point -128) before rows of 33 channels"""
    return b.op("Add", x)


@case("add", (1, 32, 4, 4), (1, 32, 4, 4), ranges=((-10.0, 10.0), (-10.0, 10.0)))
def simd_add_saturating(b, x):
    """512 elements, no tail; inputs sampled a bit beyond calibration: sums past the int8 range saturate"""
    return b.op("Add", x)


@case("mul", (1, 40, 5, 6), (1, 40, 1, 1), ranges=((-1.0, 2.0), (0.0, 1.0)))
def simd_mul_bcast_se(b, x):
    """a squeeze-and-excitation scale: per-channel multiply"""
    return b.op("Mul", x)


@case("mul", (1, 10, 10, 10), (1, 10, 10, 10))
def simd_mul_1000(b, x):
    return b.op("Mul", x)


@case("softmax", (1, 1000))
def simd_softmax_1000(b, x):
    return b.op("Softmax", x, axis=-1)


@case("softmax", (1, 3, 37), ranges=((-8.0, 8.0),))
def simd_softmax_rows37(b, x):
    """3 rows of 37: vector blocks and a scalar tail per row"""
    return b.op("Softmax", x, axis=-1)


# --- int4 weights: twins of these cases, simd_w4_<rest>, whose conv and fc layers get int4 weights in
# grids built with int4=True (kernel_cases.int4_layers): 16-channel blocks with an 8-block tail, a 1 x 1
# with one channel in its last block, 9 taps per kernel row, odd k, rows; the depthwise one stays on
# its kernel's int8/int16 weights (listed).
INT4_TWINS = ("simd_conv_c19_oc40", "simd_conv_1x1_oc17", "simd_conv_odd_row_taps", "simd_dw_c40",
              "simd_gemm_k301_n70", "simd_gemm_rows4")
for _case in [c for c in CASES if c.id in INT4_TWINS]:
    _twin = _case.id.replace("simd_", "simd_" + kc.W4_MARK, 1)
    CASES.append(kc.Case(_twin, _case.inputs, _case.make, _case.ranges, "int4 weights: " + _case.doc))
    EXPECT[_twin] = EXPECT[_case.id]

GROUPS: dict[str, list[str]] = {
    "conv": [c.id for c in CASES if EXPECT[c.id] == "conv2d" and not c.id.startswith("simd_wide_")],
    "dw_fc": [c.id for c in CASES if EXPECT[c.id] in ("dwconv2d", "fc") and not c.id.startswith("simd_wide_")],
    "pool_add": [c.id for c in CASES if EXPECT[c.id] in ("maxpool", "avgpool", "add", "mul", "softmax")],
    "wide": [c.id for c in CASES if c.id.startswith("simd_wide_")],
}
DEPTH_MULTIPLIER_IDS = ("simd_dw_mult2_s2", "simd_dw_mult3_narrow", "simd_dw_mult3_s1")  # the float depthwise kernels take dm == 1
FP32_IDS = [c.id for c in CASES if EXPECT[c.id] in ("conv2d", "dwconv2d", "fc") and c.id not in DEPTH_MULTIPLIER_IDS
            and kc.W4_MARK not in c.id]
BY_ID = {c.id: c for c in CASES}


def make_net(name: str, ids: list[str]) -> kc.Net:
    """kc.make_net over these cases (registered in kc.CASES only while it runs)."""
    saved = dict(kc.CASES)
    try:
        kc.CASES.update({c.id: c for c in CASES})
        return kc.make_net(name, ids)
    finally:
        kc.CASES.clear()
        kc.CASES.update(saved)


# the cases whose layer the avx2 set gives its AMX-INT8 tile twin, conv2d_s8amx_avx2 (avx2
# rules.amx_layout: 32 or more output channels, rows of 8 or more pixels, taps filling half the
# 64-byte slabs) or fc_s8amx_avx2 (rules.fc_amx_layout: 8 or more rows); their int4 twins too
# where built with int8 weights, else on the s8w4 kernels
AMX_IDS = ("simd_conv_c19_oc40", "simd_amx_conv_s2_oc40", "simd_amx_qdq_conv_1x1_zp",
           "simd_amx_gemm_rows20_k150_n52")


def expected_kernel(cid: str, kernel_set: str, int4: bool) -> str:
    """The kernel a case's main layer must get on a set's board ("portable" for the portable
    boards), in a grid built with int4 (the w4_ cases' conv and fc layers on the int4 kernels;
    depthwise ones on the depthwise kernel, which reads int8 or int16 weights; AMX_IDS on the
    avx2 set's amx twin)."""
    family = EXPECT[cid]
    four = int4 and kc.W4_MARK in cid
    if kernel_set == "avx2" and not four and cid.replace("simd_" + kc.W4_MARK, "simd_", 1) in AMX_IDS:
        return f"{family}_s8amx_avx2"
    if kernel_set == "portable":
        base = {"dwconv2d": "conv2d", "fc": "fc"}.get(family, family)
        return f"{base}_{'s8w4' if four and base in ('conv2d', 'fc') else 's8'}"
    return f"{family}_{'s8w4' if four and family in ('conv2d', 'fc') else 's8'}_{kernel_set}"


def main_layers(info: dict, net: kc.Net) -> dict[str, dict]:
    """case id -> the build's row of the layer that writes the case's output (or, for a fused
    activation that is a separate layer, the first weighted/pooling layer before it); {} for none."""
    ops = {"Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "Add", "Mul", "Softmax"}
    out = {}
    for cid in net.outputs:
        prefix = f"{cid}_"
        layers = [l for l in info["layers"] if l["name"].startswith(prefix) and l["op"] in ops]
        out[cid] = layers[-1] if layers else {}
    return out


def main_layer_kernels(info: dict, net: kc.Net) -> dict[str, str]:
    """case id -> the kernel of its main layer (main_layers)."""
    return {cid: layer.get("kernel", "(none)") for cid, layer in main_layers(info, net).items()}


# case id -> what the neon rule's variant of its main layer must name: the path the case is there for
# (the direct rq32 layers' full 16-channel tiles run conv2d_s8_neon_direct16's asm; the qdq one, rq64, the C tile)
NEON_PATHS = {**{c.id: "rq32 direct" for c in CASES if "_1x1_direct_" in c.id},
              "simd_qdq_conv_1x1_direct_shift31": "rq64 direct",
              "simd_conv_1x1_panel_padded_strided": "panel: strided 1x1"}
