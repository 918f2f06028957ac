/* dwconv2d_s8_avx2: int8 depthwise 2-D convolution (groups == c == oc), NHWC, x86-64 AVX2.
 * Same result as conv2d_s8 (portable) with groups == c, bit for bit.
 *
 * Per band of `band` output rows, each input row the band reads is converted to int16
 * (x - zx), zero outside the input, with the channels padded to blocks of 8, and stored as
 * column pairs: at column j, for each channel, its values at columns j and j + 1 side by side
 * (with an even stride, taps start at even columns only, and only those pairs are made).
 * One 32-byte load then holds 8 channels x 2 horizontally adjacent taps, and
 * _mm256_madd_epi16 with the weights of taps (kx, kx + 1) (kset_avx2.py: per block of 8
 * channels, per kernel row, per pair of columns, 8 channels x 2 taps, the last pair of an odd
 * kw with a zero weight) sums both taps exactly in int32 (|x - zx| <= 255, |w| <= 127).
 * bias and rq (cuvil_avx2_requant8) are per channel, padded to whole blocks. With
 * CUVIL_THREADS and threads > 1, the output rows are split over threads. */
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

/* One output row of one 8-channel block, two pixels at a time: the kh x kwp column-pair taps
 * (constants for 3x3 after inlining), requantized, packed together, stored 8 bytes each. */
static inline __attribute__((always_inline)) void dwconv2d_s8_avx2_row(
    const int16_t *prow, const int16_t *wb, const int32_t *bias, const int64_t *qb, int8_t *orow, int ow, int c,
    int xstep, int rowlen, int kxstep, int width, int kh, int kwp, int fast, __m128i vlo, __m128i vhi)
{
    const __m256i b = _mm256_loadu_si256((const __m256i *)bias);
    for (int x = 0; x < ow; x += 2) {
        const int two = x + 1 < ow;
        const int16_t *p0 = prow + (long)x * xstep, *p1 = two ? p0 + xstep : p0;
        __m256i acc0 = b, acc1 = b;
        for (int ky = 0; ky < kh; ky++)
            for (int kx = 0; kx < kwp; kx++) {
                const long o = (long)ky * rowlen + (long)kx * kxstep;
                const __m256i w = _mm256_loadu_si256((const __m256i *)(wb + (ky * kwp + kx) * 16));
                acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(p0 + o)), w));
                acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(p1 + o)), w));
            }
        const __m256i r0 = cuvil_avx2_requant8(acc0, qb, fast), r1 = cuvil_avx2_requant8(acc1, qb, fast);
        const __m128i v = cuvil_avx2_pack16(r0, r1, vlo, vhi);
        if (width == 8) {
            _mm_storel_epi64((__m128i *)(orow + (long)x * c), v);
            if (two) _mm_storel_epi64((__m128i *)(orow + (long)(x + 1) * c), _mm_unpackhi_epi64(v, v));
        } else {
            int8_t tmp[16];
            _mm_storeu_si128((__m128i *)tmp, v);
            memcpy(orow + (long)x * c, tmp, (size_t)width);
            if (two) memcpy(orow + (long)(x + 1) * c, tmp + 8, (size_t)width);
        }
    }
}

struct dwconv2d_s8_avx2_args {
    const int8_t *in;
    int8_t *out;
    const int16_t *w;
    const int32_t *bias;
    const int64_t *rq;
    int n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl, band, fast;
    int32_t zx, lo, hi;
};

static void dwconv2d_s8_avx2_part(const void *args, int part, int parts)
{
    const struct dwconv2d_s8_avx2_args *a = (const struct dwconv2d_s8_avx2_args *)args;
    const int h = a->h, wd = a->wd, c = a->c, oh = a->oh, ow = a->ow, kh = a->kh, kw = a->kw, sh = a->sh,
              sw = a->sw, band = a->band;
    const int total = a->n * oh;
    const int row0 = (int)((long)total * part / parts), row1 = (int)((long)total * (part + 1) / parts);
    const int cp = (c + 7) & ~7;
    const int cols = (ow - 1) * sw + kw;
    const int kwp = (kw + 1) / 2;
    const int jstep = sw % 2 == 0 ? 2 : 1;
    const int rowlen = cols * cp * 2; /* column pairs: 2 values per channel and column */
    int16_t row[(cols + 1) * cp];
    int16_t panel[((band - 1) * sh + kh) * rowlen];
    const __m128i vlo = _mm_set1_epi8((int8_t)a->lo), vhi = _mm_set1_epi8((int8_t)a->hi);
    for (int r = row0; r < row1;) {
        const int b = r / oh, oy0 = r % oh;
        int rows = band < oh - oy0 ? band : oh - oy0;
        if (rows > row1 - r) rows = row1 - r;
        const int prows = (rows - 1) * sh + kh;
        for (int pr = 0; pr < prows; pr++) {
            cuvil_avx2_panel_s16(row, 1, (cols + 1) * cp, cols, cp, a->in + (long)b * h * wd * c, h, wd, c,
                                 oy0 * sh - a->pt + pr, a->pl, a->zx);
            int16_t *dst = panel + (long)pr * rowlen;
            for (int j = 0; j < cols; j += jstep) /* with an even stride, only even columns start pairs */
                for (int cb = 0; cb < cp; cb += 8) {
                    const __m128i x0 = _mm_loadu_si128((const __m128i *)(row + (long)j * cp + cb));
                    const __m128i x1 = _mm_loadu_si128((const __m128i *)(row + (long)(j + 1) * cp + cb));
                    _mm256_storeu_si256((__m256i *)(dst + ((long)j * cp + cb) * 2),
                                        _mm256_set_m128i(_mm_unpackhi_epi16(x0, x1), _mm_unpacklo_epi16(x0, x1)));
                }
        }
        int8_t *dst0 = a->out + (long)r * ow * c;
        for (int cb = 0; cb < cp; cb += 8) {
            const int16_t *wb = a->w + (long)cb * kh * kwp * 2;
            const int64_t *qb = a->rq + (long)cb * 4;
            const int width = c - cb < 8 ? c - cb : 8;
            for (int y = 0; y < rows; y++) {
                const int16_t *prow = panel + (long)y * sh * rowlen + cb * 2;
                int8_t *orow = dst0 + (long)y * ow * c + cb;
                if (kh == 3 && kwp == 2)
                    dwconv2d_s8_avx2_row(prow, wb, a->bias + cb, qb, orow, ow, c, sw * cp * 2, rowlen, cp * 4, width, 3,
                                         2, a->fast, vlo, vhi);
                else
                    dwconv2d_s8_avx2_row(prow, wb, a->bias + cb, qb, orow, ow, c, sw * cp * 2, rowlen, cp * 4, width, kh,
                                         kwp, a->fast, vlo, vhi);
            }
        }
        r += rows;
    }
}

static void dwconv2d_s8_avx2(const int8_t *in, int8_t *out, const int16_t *w, const int32_t *bias, const int64_t *rq,
                             int n, int h, int wd, int c, int oh, int ow, int kh, int kw, int sh, int sw, int pt,
                             int pl, int band, int fast, int32_t zx, int32_t lo, int32_t hi, int threads)
{
    const struct dwconv2d_s8_avx2_args a = {in, out, w, bias, rq, n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl, band,
                                            fast, zx, lo, hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(dwconv2d_s8_avx2_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    dwconv2d_s8_avx2_part(&a, 0, 1);
}
