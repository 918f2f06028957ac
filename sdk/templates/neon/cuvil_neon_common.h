/* Shared helpers of the neon kernel set: copied into a generated project with any of its kernels. */
#ifndef CUVIL_NEON_COMMON_H
#define CUVIL_NEON_COMMON_H
/* Any aarch64 CPU: with the
 * dot-product extension (__ARM_FEATURE_DOTPROD, e.g. -mcpu=cortex-a76 or cortex-a78ae) the
 * int8 dots are SDOT instructions, without it the same sums from widening multiplies. */
#include <arm_neon.h>
#include <string.h>

/* acc[i] += sum over j < 4 of w[4i + j] * x[4i + j] (int8 products, exact in int32). */
static inline int32x4_t cuvil_neon_dot(int32x4_t acc, int8x16_t w, int8x16_t x)
{
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(acc, w, x);
#else
    const int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(x));
    const int16x8_t hi = vmull_high_s8(w, x);
    return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
#endif
}

/* acc[i] += sum over j < 4 of w[4i + j] * x[4 * lane + j]: one quad of x against 4 outputs. */
#if defined(__ARM_FEATURE_DOTPROD)
#define CUVIL_NEON_DOT_LANE(acc, w, x, lane) vdotq_laneq_s32((acc), (w), (x), (lane))
#else
#define CUVIL_NEON_DOT_LANE(acc, w, x, lane) \
    cuvil_neon_dot((acc), (w), vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x), (lane))))
#endif

/* The 4 bytes at p, repeated 4 times. */
static inline int8x16_t cuvil_neon_quad(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

/* Requantize 4 accumulators exactly as the numpy reference (quant/requant.py), in 64-bit
 * lanes: ((T * mult + 2^(s-1)) >> s) + zy with an arithmetic shift (SSHL by -s), then
 * saturated to int32 (the int8 narrowing that follows saturates again and the caller clamps,
 * so the result is the reference's whatever the magnitude). q: [2^(s-1) x4, then x4 the int64
 * whose low 32 bits are -s (SSHL reads the low byte) and high 32 bits the channel's bias].
 * With `wide` (the layer's worst-case |T| passes int32, kset_neon.py) the lanes hold T mod
 * 2^32 and acc - bias is exact in int32, so T = bias + (acc - bias) is rebuilt in 64 bits and
 * T * mult formed from T's 32-bit halves, mod 2^64 as numpy's int64. */
static inline int64x2_t cuvil_neon_mul64x31(int64x2_t t, int32x2_t m)
{
    const uint64x2_t lo = vmull_u32(vmovn_u64(vreinterpretq_u64_s64(t)), vreinterpret_u32_s32(m));
    return vaddq_s64(vreinterpretq_s64_u64(lo), vshlq_n_s64(vmull_s32(vshrn_n_s64(t, 32), m), 32));
}

static inline int32x4_t cuvil_neon_requant4(int32x4_t acc, int32x4_t mult, const int64_t *q, int64x2_t zy, int wide)
{
    const int64x2_t s0 = vld1q_s64(q + 4), s1 = vld1q_s64(q + 6);
    int64x2_t lo, hi;
    if (wide) {
        const int32x4_t bias = vcombine_s32(vshrn_n_s64(s0, 32), vshrn_n_s64(s1, 32));
        const int32x4_t sum = vsubq_s32(acc, bias);
        lo = cuvil_neon_mul64x31(vaddl_s32(vget_low_s32(bias), vget_low_s32(sum)), vget_low_s32(mult));
        hi = cuvil_neon_mul64x31(vaddl_high_s32(bias, sum), vget_high_s32(mult));
    } else {
        lo = vmull_s32(vget_low_s32(acc), vget_low_s32(mult));
        hi = vmull_high_s32(acc, mult);
    }
    lo = vaddq_s64(vshlq_s64(vaddq_s64(lo, vld1q_s64(q)), s0), zy);
    hi = vaddq_s64(vshlq_s64(vaddq_s64(hi, vld1q_s64(q + 2)), s1), zy);
    return vqmovn_high_s64(vqmovn_s64(lo), hi);
}

/* The same with one multiplier and shift for all lanes. */
static inline int32x4_t cuvil_neon_requant4n(int32x4_t acc, int32_t mult, int32_t shift, int64x2_t zy)
{
    const int64x2_t rnd = vdupq_n_s64((int64_t)1 << (shift - 1)), sh = vdupq_n_s64(-(int64_t)shift);
    const int32x2_t m = vdup_n_s32(mult);
    int64x2_t lo = vmull_s32(vget_low_s32(acc), m);
    int64x2_t hi = vmull_s32(vget_high_s32(acc), m);
    lo = vaddq_s64(vshlq_s64(vaddq_s64(lo, rnd), sh), zy);
    hi = vaddq_s64(vshlq_s64(vaddq_s64(hi, rnd), sh), zy);
    return vqmovn_high_s64(vqmovn_s64(lo), hi);
}

/* The 64-bit products of the low halves of a and m (SMULL) on the whole registers: written as
 * GNU asm, GCC keeps one register per loop-invariant multiplier instead of a second copy of
 * its low half. */
static inline int64x2_t cuvil_neon_mull_lo(int32x4_t a, int32x4_t m)
{
#if defined(__GNUC__)
    int64x2_t r;
    __asm__("smull %0.2d, %1.2s, %2.2s" : "=w"(r) : "w"(a), "w"(m));
    return r;
#else
    return vmull_s32(vget_low_s32(a), vget_low_s32(m));
#endif
}

/* Requantize 8 exact int32 accumulators (not `wide`) as cuvil_neon_requant4 does, bit for
 * bit, up to the int16 sum with zy: SRSHL by -s (the low byte of rq's second half) is
 * (T * mult + 2^(s-1)) >> s, rounding exactly (no 64-bit overflow: |T * mult| < 2^62); the
 * int32 and int16 saturations and the saturating int16 add of zy (|zy| <= 128) leave any value
 * beyond int8 beyond it, so the int8 narrowing and the clamp to [lo, hi] that follow give the
 * reference's result. */
static inline int16x8_t cuvil_neon_rq16(int32x4_t lo, int32x4_t hi, int32x4_t m0, int32x4_t m1, int64x2_t s0,
                                              int64x2_t s1, int64x2_t s2, int64x2_t s3, int16x8_t zy)
{
    const int64x2_t p0 = vrshlq_s64(cuvil_neon_mull_lo(lo, m0), s0);
    const int64x2_t p1 = vrshlq_s64(vmull_high_s32(lo, m0), s1);
    const int64x2_t p2 = vrshlq_s64(cuvil_neon_mull_lo(hi, m1), s2);
    const int64x2_t p3 = vrshlq_s64(vmull_high_s32(hi, m1), s3);
    const int32x4_t r0 = vqmovn_high_s64(vqmovn_s64(p0), p1), r1 = vqmovn_high_s64(vqmovn_s64(p2), p3);
    return vqaddq_s16(vqmovn_high_s32(vqmovn_s32(r0), r1), zy);
}

/* The same in 32-bit lanes, where every channel's shift s is at least 32 (rs = 31 - s, the
 * compiler's `rq32` layers): SQDMULH is floor(T * mult / 2^31) (no saturation: mult > 0), and
 * SRSHL by 31 - s adds 2^(s-32) and shifts right by s - 31, which is floor((T * mult + 2^(s-1))
 * / 2^s): the floor of the first step drops only a fraction below 1, which cannot carry the
 * integer sum across a multiple of 2^(s-31). A channel whose multiplier is 0 gets 0 either way. */
static inline int16x8_t cuvil_neon_rq16_32(int32x4_t lo, int32x4_t hi, int32x4_t m0, int32x4_t m1, int32x4_t r0,
                                           int32x4_t r1, int16x8_t zy)
{
    const int32x4_t a = vrshlq_s32(vqdmulhq_s32(lo, m0), r0), b = vrshlq_s32(vqdmulhq_s32(hi, m1), r1);
    return vqaddq_s16(vqmovn_high_s32(vqmovn_s32(a), b), zy);
}

/* 16 int32 -> 16 int8 (saturating), clamped to [lo, hi]. */
static inline int8x16_t cuvil_neon_narrow16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d, int8x16_t lo,
                                            int8x16_t hi)
{
    const int16x8_t ab = vqmovn_high_s32(vqmovn_s32(a), b), cd = vqmovn_high_s32(vqmovn_s32(c), d);
    return vminq_s8(vmaxq_s8(vqmovn_high_s16(vqmovn_s16(ab), cd), lo), hi);
}

/* 16 values p[0..15] - z as two int16x8 (x[0]: 0..7, x[1]: 8..15), or p[0] - z 16 times when
 * step is 0. */
static inline void cuvil_neon_load16_s16(const int8_t *p, int step, int16x8_t z, int16x8_t x[2])
{
    const int8x16_t v = step ? vld1q_s8(p) : vdupq_n_s8(*p);
    x[0] = vsubq_s16(vmovl_s8(vget_low_s8(v)), z);
    x[1] = vsubq_s16(vmovl_high_s8(v), z);
}

/* Store the first `count` bytes of v (all 16 when count >= 16, none when count <= 0). */
static inline void cuvil_neon_store_s8(int8_t *dst, int8x16_t v, int count)
{
    if (count >= 16) {
        vst1q_s8(dst, v);
    } else if (count == 8) { /* a block of 8 channels: one 8-byte store */
        vst1_s8(dst, vget_low_s8(v));
    } else if (count > 0) {
        int8_t tmp[16];
        vst1q_s8(tmp, v);
        memcpy(dst, tmp, (size_t)count);
    }
}

/* Store the first `count` floats of v (all 4 when count >= 4, none when count <= 0). */
static inline void cuvil_neon_store_f32(float *dst, float32x4_t v, int count)
{
    if (count >= 4) {
        vst1q_f32(dst, v);
    } else if (count > 0) {
        float tmp[4];
        vst1q_f32(tmp, v);
        memcpy(dst, tmp, (size_t)count * sizeof *dst);
    }
}

/* y = min(hi, max(lo, v)) with NaN passing through, as cuvil_clampf. */
static inline float32x4_t cuvil_neon_clampf(float32x4_t v, float32x4_t lo, float32x4_t hi)
{
    const uint32x4_t below = vcltq_f32(v, lo), above = vcgtq_f32(v, hi);
    return vbslq_f32(below, lo, vbslq_f32(above, hi, v));
}

/* One band of a padded int8 panel: `rows` rows of `rowlen` bytes, row r holding input row
 * iy0 + r of image `img` (h x wd x c), `cols` columns of c bytes, column j being input column
 * j - pl; `pad` (the input zero point) outside the input and after the last column. */
static inline void cuvil_neon_panel_s8(int8_t *panel, int rows, int rowlen, int cols, const int8_t *img, int h, int wd,
                                       int c, int iy0, int pl, int8_t pad)
{
    const int j0 = pl < cols ? pl : cols;
    const int j1 = pl + wd < cols ? pl + wd : cols;
    for (int r = 0; r < rows; r++) {
        int8_t *row = panel + (long)r * rowlen;
        const int iy = iy0 + r;
        if (iy < 0 || iy >= h || j1 <= j0) {
            memset(row, pad, (size_t)rowlen);
            continue;
        }
        memset(row, pad, (size_t)j0 * c);
        memcpy(row + (long)j0 * c, img + ((long)iy * wd + (j0 - pl)) * c, (size_t)(j1 - j0) * c);
        memset(row + (long)j1 * c, pad, (size_t)(rowlen - (long)j1 * c));
    }
}

/* An int16 panel of (x - zx), zero outside the input; columns of cstride >= c elements. */
static inline void cuvil_neon_panel_s16(int16_t *panel, int rows, int rowlen, int cols, int cstride, const int8_t *img,
                                        int h, int wd, int c, int iy0, int pl, int32_t zx)
{
    const int j0 = pl < cols ? pl : cols;
    const int j1 = pl + wd < cols ? pl + wd : cols;
    const int16x8_t z = vdupq_n_s16((int16_t)zx);
    for (int r = 0; r < rows; r++) {
        int16_t *row = panel + (long)r * rowlen;
        const int iy = iy0 + r;
        memset(row, 0, (size_t)rowlen * sizeof *row);
        if (iy < 0 || iy >= h || j1 <= j0) continue;
        for (int j = j0; j < j1; j++) {
            const int8_t *src = img + ((long)iy * wd + (j - pl)) * c;
            int16_t *dst = row + (long)j * cstride;
            int i = 0;
            for (; i + 8 <= c; i += 8) vst1q_s16(dst + i, vsubq_s16(vmovl_s8(vld1_s8(src + i)), z));
            for (; i < c; i++) dst[i] = (int16_t)(src[i] - zx);
        }
    }
}

/* A float panel (float or fp16 elements of `size` bytes): x as is, zero outside the input;
 * columns of cstride >= c elements. */
static inline void cuvil_neon_panel_any(void *panel_ptr, size_t size, int rows, int rowlen, int cols, int cstride,
                                        const void *img_ptr, int h, int wd, int c, int iy0, int pl)
{
    unsigned char *panel = (unsigned char *)panel_ptr;
    const unsigned char *img = (const unsigned char *)img_ptr;
    const int j0 = pl < cols ? pl : cols;
    const int j1 = pl + wd < cols ? pl + wd : cols;
    for (int r = 0; r < rows; r++) {
        unsigned char *row = panel + (long)r * rowlen * size;
        const int iy = iy0 + r;
        memset(row, 0, (size_t)rowlen * size);
        if (iy < 0 || iy >= h || j1 <= j0) continue;
        if (cstride == c) {
            memcpy(row + (long)j0 * c * size, img + ((long)iy * wd + (j0 - pl)) * c * size, (size_t)(j1 - j0) * c * size);
        } else {
            for (int j = j0; j < j1; j++)
                memcpy(row + (long)j * cstride * size, img + ((long)iy * wd + (j - pl)) * c * size, (size_t)c * size);
        }
    }
}

static inline void cuvil_neon_panel_f32(float *panel, int rows, int rowlen, int cols, int cstride, const float *img,
                                        int h, int wd, int c, int iy0, int pl)
{
    cuvil_neon_panel_any(panel, sizeof *panel, rows, rowlen, cols, cstride, img, h, wd, c, iy0, pl);
}

#if defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC) && defined(CUVIL_F16) /* an fp16 build (cuvil_common.h) */
/* fp16 kernels (FEAT_FP16: -mcpu=cortex-a76, cortex-a78ae). Products are summed in fp16 (FMLA on
 * 8 half lanes) over blocks of at most CUVIL_NEON_F16_BLOCK taps or inputs, and the blocks in
 * float32: a whole dot product in fp16 rounds every partial sum to 11 bits. Measured on
 * MobileNetV2-1.0 224x224 (PyTorch export, random weights, one random normal input; rpi5 under
 * qemu-aarch64; benchmarks/check_torch_models.py --board rpi5 --precisions fp16), against ONNX
 * Runtime's float model: sums in fp16 over whole kernel rows (1x1 convolutions up to 960
 * channels, the 1280-input classifier) max abs error 1.26e-3, cosine 0.999993, 131.7 M guest
 * instructions; blocks of 32: 1.82e-4, cosine > 0.9999995, 140.2 M; blocks of 16: 1.55e-4,
 * 149.9 M. 32 keeps nearly all of the accuracy for 6% more instructions than whole rows. */
#define CUVIL_NEON_F16_BLOCK 32

/* acc (float32, low and high halves) += the 8 fp16 partial sums of s. */
static inline void cuvil_neon_f16_flush(float32x4_t acc[2], float16x8_t s)
{
    acc[0] = vaddq_f32(acc[0], vcvt_f32_f16(vget_low_f16(s)));
    acc[1] = vaddq_f32(acc[1], vcvt_high_f32_f16(s));
}

/* Clamp both float32 halves to [lo, hi], round them to fp16 and store the first `count` (<= 8). */
static inline void cuvil_neon_store_f16(cuvil_f16 *dst, const float32x4_t acc[2], float32x4_t lo, float32x4_t hi,
                                        int count)
{
    const float16x8_t v = vcombine_f16(vcvt_f16_f32(cuvil_neon_clampf(acc[0], lo, hi)),
                                       vcvt_f16_f32(cuvil_neon_clampf(acc[1], lo, hi)));
    if (count >= 8) {
        vst1q_f16(dst, v);
    } else if (count > 0) {
        cuvil_f16 tmp[8];
        vst1q_f16(tmp, v);
        memcpy(dst, tmp, (size_t)count * sizeof *dst);
    }
}
#endif

/* cuvil_quantize (cuvil_common.h) on n floats, 4 at a time: the same float32 division and
 * addition; NaN and values below -1024 to -1024 (FMAXNM returns the number beside a NaN), then
 * floor and conversion in one (FCVTMS, saturating at the int32 range), + zp saturating, the
 * int16 and int8 narrowings saturating: a value above 1024 ends at 127 as its clamp to 1024
 * would (1024 + zp > 127). The generated quantize_input uses it through CUVIL_QUANTIZE_INPUT. */
static inline void cuvil_neon_quantize(const float *src, int8_t *dst, int32_t n, float scale, int32_t zp)
{
    const float32x4_t vs = vdupq_n_f32(scale), half = vdupq_n_f32(0.5f), lo = vdupq_n_f32(-1024.0f);
    const int32x4_t vz = vdupq_n_s32(zp);
    const int32_t n16 = n & ~15;
    for (int32_t i = 0; i < n16; i += 16) {
        int32x4_t q[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            const float32x4_t v = vmaxnmq_f32(vaddq_f32(vdivq_f32(vld1q_f32(src + i + 4 * j), vs), half), lo);
            q[j] = vqaddq_s32(vcvtmq_s32_f32(v), vz);
        }
        const int16x8_t h0 = vqmovn_high_s32(vqmovn_s32(q[0]), q[1]), h1 = vqmovn_high_s32(vqmovn_s32(q[2]), q[3]);
        vst1q_s8(dst + i, vqmovn_high_s16(vqmovn_s16(h0), h1));
    }
    for (int32_t i = n16; i < n; i++) dst[i] = cuvil_quantize(src[i], scale, zp);
}
#define CUVIL_QUANTIZE_INPUT cuvil_neon_quantize
#endif /* CUVIL_NEON_COMMON_H */
