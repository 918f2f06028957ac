/* fc_s8_avx2: int8 fully connected, x86-64 AVX2. Same result as fc_s8 (portable), bit for bit:
 * out[r][j] = requant(bias[j] + sum_k (in[r][k] - zx) * w[j][k]).
 *
 * Layout (kset_avx2.py): outputs in blocks of 8, blocks in groups of up to 4; per group, per
 * pair of inputs (k zero-padded to an even kp): the group's outputs x 2 inputs, int8. Each row
 * of inputs is converted once to int16 (x - zx) on the stack; per pair, a broadcast of the two
 * inputs is multiplied with the sign-extended weights by _mm256_madd_epi16 (exact in int32).
 * bias is padded to whole blocks, rq holds cuvil_avx2_requant8's parameters. With
 * CUVIL_THREADS and threads > 1, the groups are split over threads. */
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

static inline __attribute__((always_inline)) void fc_s8_avx2_group(const int16_t *x, const int8_t *wg, int pairs,
                                                                   const int32_t *bias, const int64_t *rq, int fast,
                                                                   int8_t *dst, int count, int nb, __m128i vlo,
                                                                   __m128i vhi)
{
    __m256i acc[4];
#pragma GCC unroll 4
    for (int v = 0; v < nb; v++) acc[v] = _mm256_loadu_si256((const __m256i *)(bias + 8 * v));
    for (int p = 0; p < pairs; p++, wg += 16 * nb) {
        int32_t pair;
        memcpy(&pair, x + 2 * p, sizeof pair);
        const __m256i xb = _mm256_set1_epi32(pair);
#pragma GCC unroll 4
        for (int v = 0; v < nb; v++) {
            const __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wg + 16 * v)));
            acc[v] = _mm256_add_epi32(acc[v], _mm256_madd_epi16(xb, wv));
        }
    }
#pragma GCC unroll 4
    for (int v = 0; v < nb; v++) {
        const int left = count - 8 * v;
        const __m128i y = cuvil_avx2_pack8(cuvil_avx2_requant8(acc[v], rq + 32 * v, fast), vlo, vhi);
        if (left >= 8) {
            _mm_storel_epi64((__m128i *)(dst + 8 * v), y);
        } else {
            int8_t tmp[16];
            _mm_storeu_si128((__m128i *)tmp, y);
            memcpy(dst + 8 * v, tmp, (size_t)left);
        }
    }
}

struct fc_s8_avx2_args {
    const int8_t *in;
    int8_t *out;
    const int8_t *w;
    const int32_t *bias;
    const int64_t *rq;
    int rows, k, n, kp, fast;
    int32_t zx, lo, hi;
};

static void fc_s8_avx2_part(const void *args, int part, int parts)
{
    const struct fc_s8_avx2_args *a = (const struct fc_s8_avx2_args *)args;
    const int k = a->k, n = a->n, kp = a->kp, pairs = a->kp / 2;
    const int groups = (n + 31) / 32;
    const int g0 = (int)((long)groups * part / parts), g1 = (int)((long)groups * (part + 1) / parts);
    int16_t x[kp];
    const __m128i vlo = _mm_set1_epi8((int8_t)a->lo), vhi = _mm_set1_epi8((int8_t)a->hi);
    for (int r = 0; r < a->rows; r++) {
        cuvil_avx2_widen_s8(x, a->in + (long)r * k, k, a->zx);
        if (kp > k) x[k] = 0;
        for (int g = g0; g < g1; g++) {
            const int j = g * 32;
            const int nb = (n - j + 7) / 8 < 4 ? (n - j + 7) / 8 : 4;
            const int8_t *wg = a->w + (long)j * kp;
            int8_t *dst = a->out + (long)r * n + j;
            const int count = n - j;
            switch (nb) {
            case 4: fc_s8_avx2_group(x, wg, pairs, a->bias + j, a->rq + 4L * j, a->fast, dst, count, 4, vlo, vhi); break;
            case 3: fc_s8_avx2_group(x, wg, pairs, a->bias + j, a->rq + 4L * j, a->fast, dst, count, 3, vlo, vhi); break;
            case 2: fc_s8_avx2_group(x, wg, pairs, a->bias + j, a->rq + 4L * j, a->fast, dst, count, 2, vlo, vhi); break;
            default: fc_s8_avx2_group(x, wg, pairs, a->bias + j, a->rq + 4L * j, a->fast, dst, count, 1, vlo, vhi); break;
            }
        }
    }
}

static void fc_s8_avx2(const int8_t *in, int8_t *out, const int8_t *w, const int32_t *bias, const int64_t *rq,
                       int rows, int k, int n, int kp, int fast, int32_t zx, int32_t lo, int32_t hi, int threads)
{
    const struct fc_s8_avx2_args a = {in, out, w, bias, rq, rows, k, n, kp, fast, zx, lo, hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(fc_s8_avx2_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    fc_s8_avx2_part(&a, 0, 1);
}
