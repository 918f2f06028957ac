/* argmax_s8_avx2: ArgMax / ArgMin of int8 codes along the middle axis of [outer][n][inner], to int64
 * indices, x86-64 AVX2; the same result as argmax_s8 (portable), bit for bit. code bit 0: ArgMin;
 * bit 1: the last of equal values, else the first.
 * - inner > 1 (a head over the channel planes of NCHW): 32 positions per vector, a running best and
 *   its byte-wide indices, both blended where the channel's value is better (strictly, for the
 *   first of equal values; or not worse, for the last). Byte indices hold n <= 256 (the rule
 *   declines more). Positions beyond a multiple of 32 one by one.
 * - inner == 1 (channels-last: each position's n values in a row): the best value by a byte max
 *   (min) over 32 values at a time, then its first (last) index by compares and a bit scan. */
#include "cuvil_avx2_common.h"

static inline __m256i argmax_s8_avx2_pick(__m256i best, __m256i v, int code)
{
    /* the lanes where v replaces best */
    switch (code & 3) {
    case 0: return _mm256_cmpgt_epi8(v, best);                                                   /* v > best */
    case 2: return _mm256_xor_si256(_mm256_cmpgt_epi8(best, v), _mm256_set1_epi8(-1));         /* v >= best */
    case 1: return _mm256_cmpgt_epi8(best, v);                                                   /* v < best */
    default: return _mm256_xor_si256(_mm256_cmpgt_epi8(v, best), _mm256_set1_epi8(-1));        /* v <= best */
    }
}

static inline int32_t argmax_s8_avx2_row(const int8_t *x, int n, int code)
{
    const int minimum = code & 1, n32 = n & ~31;
    __m256i m = _mm256_set1_epi8(minimum ? 127 : -128);
    for (int j = 0; j < n32; j += 32) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(x + j));
        m = minimum ? _mm256_min_epi8(m, v) : _mm256_max_epi8(m, v);
    }
    int8_t lanes[32];
    _mm256_storeu_si256((__m256i *)lanes, m);
    int32_t best = lanes[0];
    for (int k = 1; k < 32; k++) best = minimum ? (lanes[k] < best ? lanes[k] : best) : (lanes[k] > best ? lanes[k] : best);
    for (int j = n32; j < n; j++) best = minimum ? (x[j] < best ? x[j] : best) : (x[j] > best ? x[j] : best);
    const __m256i b = _mm256_set1_epi8((char)best);
    if (code & 2) {
        for (int j = n - 1; j >= n32; j--)
            if (x[j] == best) return j;
        for (int j = n32 - 32; j >= 0; j -= 32) {
            const uint32_t hit = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(x + j)), b));
            if (hit) return j + 31 - __builtin_clz(hit);
        }
        return 0;
    }
    for (int j = 0; j < n32; j += 32) {
        const uint32_t hit = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(x + j)), b));
        if (hit) return j + __builtin_ctz(hit);
    }
    for (int j = n32; j < n; j++)
        if (x[j] == best) return j;
    return 0;
}

static void argmax_s8_avx2(const int8_t *in, int64_t *out, int outer, int n, int inner, int code)
{
    for (int o = 0; o < outer; o++) {
        const int8_t *x = in + (long)o * n * inner;
        int64_t *y = out + (long)o * inner;
        if (inner == 1) {
            y[0] = argmax_s8_avx2_row(x, n, code);
            continue;
        }
        int i = 0;
        for (; i + 32 <= inner; i += 32) {
            __m256i best = _mm256_loadu_si256((const __m256i *)(x + i)), idx = _mm256_setzero_si256();
            for (int j = 1; j < n; j++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(x + (long)j * inner + i));
                const __m256i take = argmax_s8_avx2_pick(best, v, code);
                best = _mm256_blendv_epi8(best, v, take);
                idx = _mm256_blendv_epi8(idx, _mm256_set1_epi8((char)j), take);
            }
            uint8_t lanes[32];
            _mm256_storeu_si256((__m256i *)lanes, idx);
            for (int k = 0; k < 32; k++) y[i + k] = lanes[k];
        }
        for (; i < inner; i++) { /* the last positions one by one, as argmax_s8 */
            int32_t best = x[i], at = 0;
            for (int j = 1; j < n; j++) {
                const int32_t e = x[(long)j * inner + i];
                const int better = (code & 1) ? ((code & 2) ? e <= best : e < best) : ((code & 2) ? e >= best : e > best);
                if (better) {
                    best = e;
                    at = j;
                }
            }
            y[i] = at;
        }
    }
}
