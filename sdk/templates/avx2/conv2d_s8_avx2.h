/* conv2d_s8_avx2: int8 2-D convolution (one group, no dilation), NHWC, x86-64 AVX2.
 * Same result as conv2d_s8 (portable), bit for bit: acc = bias + sum over valid taps of
 * (x - zx) * w, requantized by cuvil_requant's rule.
 *
 * Layout (made by sdk/codegen/kset_avx2.py): the taps of one kernel row are kw * c values,
 * kx-major and channel-minor, zero-padded to an even count kr. Output channels go in blocks
 * of 16 (a last block of 8 when oc % 16 is 1..8); w holds, per block, per kernel row ky, per
 * pair p of taps: the block's channels x 2 taps, int16. bias is padded to the blocks; rq holds
 * the requantization parameters of cuvil_avx2_requant8, 8 channels at a time.
 *
 * Per band of `band` output rows, the input rows the band reads are converted once into an
 * int16 panel (x - zx) on the stack, zero outside the input: padded taps then contribute 0,
 * and the kw * c taps of an output pixel's kernel row are contiguous. _mm256_madd_epi16 of a
 * broadcast pair of (x - zx) (|.| <= 255) with 16 pairs of weights (|w| <= 127) is exact in
 * int32, as are the sums. Tiles of 4 pixels x 16 channels (or 6 x 8) keep the accumulators in registers.
 * With CUVIL_THREADS defined and threads > 1, the output rows are split over threads. */
#ifndef CUVIL_AVX2_COMMON_H
#define CUVIL_AVX2_COMMON_H
/* Shared by every avx2 kernel header (each header carries this same block, so any one of them
 * compiles alone; the guard keeps one copy per translation unit). Needs -mavx2 (and -mfma for
 * the float kernels). */
#include <immintrin.h>
#include <string.h>

/* Requantize 8 int32 accumulators exactly as cuvil_requant (cuvil_common.h):
 * y = ((acc * mult + 2^(s-1)) >> s) + zy in 64-bit arithmetic. AVX2 has no 64-bit arithmetic
 * right shift, so 2^62 is added before a logical shift and 2^(62-s) taken off after it:
 * |acc * mult| < 2^62, so the sum is positive as an unsigned number and the shift exact.
 * The compiler checked that y fits int32 for every accumulator the layer can produce
 * (kset_avx2.py, requant_fits_int32), so the low 32 bits are y; the packs that follow
 * saturate and the caller clamps to [lo, hi]. Even lanes (0, 2, 4, 6) and odd lanes are
 * separate 64-bit vectors: me/mo the multipliers, re/ro 2^(s-1) + 2^62, se/so the shifts;
 * off, per 32-bit lane, is the low 32 bits of 2^(62-s) - zy, taken off after the two halves
 * are put back together (only the low 32 bits of the difference are kept). */
static inline __m256i cuvil_avx2_requant8v(__m256i acc, __m256i me, __m256i mo, __m256i re, __m256i ro, __m256i se,
                                           __m256i so, __m256i off)
{
    const __m256i e = _mm256_srlv_epi64(_mm256_add_epi64(_mm256_mul_epi32(acc, me), re), se);
    const __m256i o = _mm256_srlv_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(acc, 32), mo), ro), so);
    return _mm256_sub_epi32(_mm256_blend_epi32(e, _mm256_slli_epi64(o, 32), 0xAA), off);
}

/* The same when every lane's shift s is in [32, 54] ("fast" layers, kset_avx2.py): zy is
 * folded into the rounding term, re = 2^(s-1) + zy * 2^s (|acc * mult + re| < 2^63), the high
 * 32 bits of each 64-bit sum are floor(sum / 2^32), and an arithmetic shift by s - 32 finishes
 * the division: y = ((acc * mult + 2^(s-1)) >> s) + zy exactly, and always within int32. */
static inline __m256i cuvil_avx2_requant8f(__m256i acc, __m256i me, __m256i mo, __m256i re, __m256i ro, __m256i s32)
{
    const __m256i e = _mm256_add_epi64(_mm256_mul_epi32(acc, me), re);
    const __m256i o = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(acc, 32), mo), ro);
    return _mm256_srav_epi32(_mm256_blend_epi32(_mm256_srli_epi64(e, 32), o, 0xAA), s32);
}

/* Either rule with per-lane parameters laid out by the compiler, 32 int64 per 8 lanes:
 * [me x4, mo x4, re x4, ro x4, se x4, so x4, off as 8 int32, 4 unused] (cuvil_avx2_requant8v),
 * or, when `fast`, [me x4, mo x4, re x4, ro x4, s - 32 as 8 int32, 12 unused]. */
static inline __m256i cuvil_avx2_requant8(__m256i acc, const int64_t *q, int fast)
{
    const __m256i *v = (const __m256i *)q;
    if (fast)
        return cuvil_avx2_requant8f(acc, _mm256_loadu_si256(v), _mm256_loadu_si256(v + 1), _mm256_loadu_si256(v + 2),
                                    _mm256_loadu_si256(v + 3), _mm256_loadu_si256(v + 4));
    return cuvil_avx2_requant8v(acc, _mm256_loadu_si256(v), _mm256_loadu_si256(v + 1), _mm256_loadu_si256(v + 2),
                                _mm256_loadu_si256(v + 3), _mm256_loadu_si256(v + 4), _mm256_loadu_si256(v + 5),
                                _mm256_loadu_si256(v + 6));
}

/* 16 int32 (r0: lanes 0-7, r1: lanes 8-15) -> 16 int8 in lane order, clamped to [lo, hi]. */
static inline __m128i cuvil_avx2_pack16(__m256i r0, __m256i r1, __m128i lo, __m128i hi)
{
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(r0, r1), 0xD8);
    const __m128i b = _mm_packs_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
    return _mm_min_epi8(_mm_max_epi8(b, lo), hi);
}

/* 8 int32 -> 8 int8 in the low half, clamped to [lo, hi]. */
static inline __m128i cuvil_avx2_pack8(__m256i r, __m128i lo, __m128i hi)
{
    const __m128i p = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    return _mm_min_epi8(_mm_max_epi8(_mm_packs_epi16(p, p), lo), hi);
}

/* Store the first `count` bytes of v (count <= 16). */
static inline void cuvil_avx2_store_s8(int8_t *dst, __m128i v, int count)
{
    if (count == 16) {
        _mm_storeu_si128((__m128i *)dst, v);
    } else {
        int8_t tmp[16];
        _mm_storeu_si128((__m128i *)tmp, v);
        memcpy(dst, tmp, (size_t)count);
    }
}

/* Store the first `count` floats of v (all 8 when count >= 8, none when count <= 0). */
static inline void cuvil_avx2_store_f32(float *dst, __m256 v, int count)
{
    if (count >= 8) {
        _mm256_storeu_ps(dst, v);
    } else if (count > 0) {
        float tmp[8];
        _mm256_storeu_ps(tmp, v);
        memcpy(dst, tmp, (size_t)count * sizeof *dst);
    }
}

/* dst[i] = src[i] - zx as int16 (|x - zx| <= 255). */
static inline void cuvil_avx2_widen_s8(int16_t *dst, const int8_t *src, int count, int32_t zx)
{
    const __m256i z = _mm256_set1_epi16((int16_t)zx);
    int i = 0;
    for (; i + 16 <= count; i += 16)
        _mm256_storeu_si256((__m256i *)(dst + i),
                            _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + i))), z));
    for (; i < count; i++) dst[i] = (int16_t)(src[i] - zx);
}

/* One band of a padded int16 panel: `rows` rows of `rowlen` elements, row r holding input row
 * iy0 + r of image `img` (h x wd x c int8) as (x - zx), `cols` columns of `cstride` elements
 * (c values, then zeros up to cstride), column j being input column j - pl; zero where the
 * row or column is outside the input, and zero after the last column up to rowlen. */
static inline void cuvil_avx2_panel_s16(int16_t *panel, int rows, int rowlen, int cols, int cstride,
                                        const int8_t *img, int h, int wd, int c, int iy0, int pl, int32_t zx)
{
    const int j0 = pl < cols ? pl : cols;
    const int j1 = pl + wd < cols ? pl + wd : cols;
    for (int r = 0; r < rows; r++) {
        int16_t *row = panel + (long)r * rowlen;
        const int iy = iy0 + r;
        if (iy < 0 || iy >= h || j1 <= j0) {
            memset(row, 0, (size_t)rowlen * sizeof *row);
            continue;
        }
        memset(row, 0, (size_t)j0 * cstride * sizeof *row);
        const int8_t *src = img + ((long)iy * wd + (j0 - pl)) * c;
        if (cstride == c) {
            cuvil_avx2_widen_s8(row + (long)j0 * c, src, (j1 - j0) * c, zx);
        } else {
            for (int j = j0; j < j1; j++) {
                cuvil_avx2_widen_s8(row + (long)j * cstride, src + (long)(j - j0) * c, c, zx);
                memset(row + (long)j * cstride + c, 0, (size_t)(cstride - c) * sizeof *row);
            }
        }
        memset(row + (long)j1 * cstride, 0, (size_t)(rowlen - (long)j1 * cstride) * sizeof *row);
    }
}

/* The same for float inputs: x as is, zeros outside. */
static inline void cuvil_avx2_panel_f32(float *panel, int rows, int rowlen, int cols, int cstride, const float *img,
                                        int h, int wd, int c, int iy0, int pl)
{
    const int j0 = pl < cols ? pl : cols;
    const int j1 = pl + wd < cols ? pl + wd : cols;
    for (int r = 0; r < rows; r++) {
        float *row = panel + (long)r * rowlen;
        const int iy = iy0 + r;
        if (iy < 0 || iy >= h || j1 <= j0) {
            memset(row, 0, (size_t)rowlen * sizeof *row);
            continue;
        }
        memset(row, 0, (size_t)j0 * cstride * sizeof *row);
        const float *src = img + ((long)iy * wd + (j0 - pl)) * c;
        if (cstride == c) {
            memcpy(row + (long)j0 * c, src, (size_t)(j1 - j0) * c * sizeof *row);
        } else {
            for (int j = j0; j < j1; j++) {
                memcpy(row + (long)j * cstride, src + (long)(j - j0) * c, (size_t)c * sizeof *row);
                memset(row + (long)j * cstride + c, 0, (size_t)(cstride - c) * sizeof *row);
            }
        }
        memset(row + (long)j1 * cstride, 0, (size_t)(rowlen - (long)j1 * cstride) * sizeof *row);
    }
}

/* y = min(hi, max(lo, v)): NaN passes through, as in cuvil_clampf. */
static inline __m256 cuvil_avx2_clampf(__m256 v, __m256 lo, __m256 hi)
{
    return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
}
/* cuvil_quantize (cuvil_common.h) on n floats, 16 at a time: the same float32 division and
 * addition (IEEE, no contraction), NaN and values below -1024 to -1024 (max_ps returns its
 * second operand for NaN), above 1024 to 1024, floor, + zp, saturated to int8. The generated
 * quantize_input uses it through CUVIL_QUANTIZE_INPUT. */
static inline void cuvil_avx2_quantize(const float *src, int8_t *dst, int32_t n, float scale, int32_t zp)
{
    const __m256 vs = _mm256_set1_ps(scale), half = _mm256_set1_ps(0.5f);
    const __m256 lo = _mm256_set1_ps(-1024.0f), hi = _mm256_set1_ps(1024.0f);
    const __m256i vz = _mm256_set1_epi32(zp);
    const __m128i blo = _mm_set1_epi8(-128), bhi = _mm_set1_epi8(127);
    const int32_t n16 = n & ~15;
    for (int32_t i = 0; i < n16; i += 16) {
        __m256 a = _mm256_add_ps(_mm256_div_ps(_mm256_loadu_ps(src + i), vs), half);
        __m256 b = _mm256_add_ps(_mm256_div_ps(_mm256_loadu_ps(src + i + 8), vs), half);
        a = _mm256_min_ps(_mm256_max_ps(a, lo), hi);
        b = _mm256_min_ps(_mm256_max_ps(b, lo), hi);
        const __m256i ia = _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_floor_ps(a)), vz);
        const __m256i ib = _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_floor_ps(b)), vz);
        _mm_storeu_si128((__m128i *)(dst + i), cuvil_avx2_pack16(ia, ib, blo, bhi));
    }
    for (int32_t i = n16; i < n; i++) dst[i] = cuvil_quantize(src[i], scale, zp);
}
#define CUVIL_QUANTIZE_INPUT cuvil_avx2_quantize
#endif /* CUVIL_AVX2_COMMON_H */

#define CONV2D_S8_AVX2_MR 6

static inline __attribute__((always_inline)) void conv2d_s8_avx2_tile(
    const int16_t *const *xp, const int16_t *wb, int kh, int pairs, int rowlen, const int32_t *bias,
    const int64_t *rq, int fast, int8_t *dst, int oc, int width, int mr, int nv, __m128i vlo, __m128i vhi)
{
    __m256i acc[CONV2D_S8_AVX2_MR][2];
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)bias);
    const __m256i b1 = nv == 2 ? _mm256_loadu_si256((const __m256i *)(bias + 8)) : b0;
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        acc[i][0] = b0;
        acc[i][1] = b1;
    }
    for (int ky = 0; ky < kh; ky++) {
        const long ro = (long)ky * rowlen;
        const int16_t *wk = wb + (long)ky * pairs * 16 * nv;
        for (int p = 0; p < pairs; p++, wk += 16 * nv) {
            const __m256i w0 = _mm256_loadu_si256((const __m256i *)wk);
            const __m256i w1 = nv == 2 ? _mm256_loadu_si256((const __m256i *)(wk + 16)) : w0;
#pragma GCC unroll 6
            for (int i = 0; i < mr; i++) {
                int32_t pair;
                memcpy(&pair, xp[i] + ro + 2 * p, sizeof pair);
                const __m256i x = _mm256_set1_epi32(pair);
                acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(x, w0));
                if (nv == 2) acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(x, w1));
            }
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        const __m256i r0 = cuvil_avx2_requant8(acc[i][0], rq, fast);
        if (nv == 2) {
            const __m256i r1 = cuvil_avx2_requant8(acc[i][1], rq + 32, fast);
            cuvil_avx2_store_s8(dst + (long)i * oc, cuvil_avx2_pack16(r0, r1, vlo, vhi), width);
        } else {
            cuvil_avx2_store_s8(dst + (long)i * oc, cuvil_avx2_pack8(r0, vlo, vhi), width);
        }
    }
}

struct conv2d_s8_avx2_args {
    const int8_t *in;
    int8_t *out;
    const int16_t *w;
    const int32_t *bias;
    const int64_t *rq;
    int n, h, wd, c, oh, ow, oc, kh, kw, sh, sw, pt, pl, kr, band, fast;
    int32_t zx, lo, hi;
};

/* Part `part` of `parts`: a share of the flattened (batch, output row) range. */
static void conv2d_s8_avx2_part(const void *args, int part, int parts)
{
    const struct conv2d_s8_avx2_args *a = (const struct conv2d_s8_avx2_args *)args;
    const int h = a->h, wd = a->wd, c = a->c, oh = a->oh, ow = a->ow, oc = a->oc, kh = a->kh, sh = a->sh,
              sw = a->sw, band = a->band, fast = a->fast;
    const int total = a->n * oh;
    const int row0 = (int)((long)total * part / parts), row1 = (int)((long)total * (part + 1) / parts);
    const int cols = (ow - 1) * sw + a->kw;
    const int rowlen = (cols * c + 2 + 15) & ~15;
    const int pairs = a->kr / 2;
    int16_t panel[((band - 1) * sh + kh) * rowlen];
    const __m128i vlo = _mm_set1_epi8((int8_t)a->lo), vhi = _mm_set1_epi8((int8_t)a->hi);
    for (int r = row0; r < row1;) {
        const int b = r / oh, oy0 = r % oh;
        int rows = band < oh - oy0 ? band : oh - oy0;
        if (rows > row1 - r) rows = row1 - r;
        cuvil_avx2_panel_s16(panel, (rows - 1) * sh + kh, rowlen, cols, c, a->in + (long)b * h * wd * c, h, wd, c,
                             oy0 * sh - a->pt, a->pl, a->zx);
        int8_t *dst0 = a->out + (long)r * ow * oc;
        const int pixels = rows * ow;
        const int16_t *wb = a->w;
        for (int o = 0; o < oc;) {
            const int nv = oc - o > 8 ? 2 : 1;
            const int width = oc - o < 8 * nv ? oc - o : 8 * nv;
            const int32_t *bb = a->bias + o;
            const int64_t *qb = a->rq + (long)o * 4;
            /* tiles of 4 pixels x 16 channels (8 accumulators) or 6 pixels x 8 channels: the
             * accumulators, weights and broadcasts stay within the 16 vector registers */
            const int mrmax = nv == 2 ? 4 : 6;
            int y = 0, x = 0; /* the next tile's first pixel */
            for (int q = 0; q < pixels; q += mrmax) {
                const int mr = pixels - q < mrmax ? pixels - q : mrmax;
                const int16_t *xp[CONV2D_S8_AVX2_MR];
                for (int i = 0; i < mr; i++) {
                    xp[i] = panel + (long)y * sh * rowlen + (long)x * sw * c;
                    if (++x == ow) {
                        x = 0;
                        y++;
                    }
                }
                int8_t *dst = dst0 + (long)q * oc + o;
#define CONV2D_S8_AVX2_TILE(MR, NV) \
    conv2d_s8_avx2_tile(xp, wb, kh, pairs, rowlen, bb, qb, fast, dst, oc, width, MR, NV, vlo, vhi)
                if (nv == 2) {
                    switch (mr) {
                    case 4: CONV2D_S8_AVX2_TILE(4, 2); break;
                    case 3: CONV2D_S8_AVX2_TILE(3, 2); break;
                    case 2: CONV2D_S8_AVX2_TILE(2, 2); break;
                    default: CONV2D_S8_AVX2_TILE(1, 2); break;
                    }
                } else {
                    switch (mr) {
                    case 6: CONV2D_S8_AVX2_TILE(6, 1); break;
                    case 5: CONV2D_S8_AVX2_TILE(5, 1); break;
                    case 4: CONV2D_S8_AVX2_TILE(4, 1); break;
                    case 3: CONV2D_S8_AVX2_TILE(3, 1); break;
                    case 2: CONV2D_S8_AVX2_TILE(2, 1); break;
                    default: CONV2D_S8_AVX2_TILE(1, 1); break;
                    }
                }
#undef CONV2D_S8_AVX2_TILE
            }
            wb += (long)kh * pairs * 16 * nv;
            o += 8 * nv;
        }
        r += rows;
    }
}

static void conv2d_s8_avx2(const int8_t *in, int8_t *out, const int16_t *w, const int32_t *bias, const int64_t *rq,
                           int n, int h, int wd, int c, int oh, int ow, int oc, int kh, int kw, int sh, int sw, int pt,
                           int pl, int kr, int band, int fast, int32_t zx, int32_t lo, int32_t hi, int threads)
{
    const struct conv2d_s8_avx2_args a = {in, out, w, bias, rq, n, h, wd, c, oh, ow, oc, kh, kw, sh, sw, pt, pl, kr,
                                          band, fast, zx, lo, hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(conv2d_s8_avx2_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    conv2d_s8_avx2_part(&a, 0, 1);
}
