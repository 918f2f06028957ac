/* softmax_s8_avx2: int8 softmax over rows of `cols` (output scale 1/256, zero point -128),
 * x86-64 AVX2; same result as softmax_s8 (portable), bit for bit: e = exp_table[max - x],
 * S the row's sum (int64), y = min(127, floor((512 e + S) / (2 S)) - 128). The row maximum
 * is a byte max over 32 inputs at a time, e is gathered 8 at a time, and the division is done
 * in double: 512 e + S and 2 S are exact (< 2^53), and floor of the correctly rounded quotient
 * is the integer quotient while 2 S < 2^44 (a quotient's distance below the next integer,
 * at least 1 / (2 S), then exceeds the rounding error, at most 257 * 2^-53); kset_avx2.py
 * takes only rows short enough for that (cols < 2^26, e <= 2^16). */
#include "cuvil_avx2_common.h"

static void softmax_s8_avx2(const int8_t *in, int8_t *out, int rows, int cols, const int32_t *exp_table)
{
    const int c8 = cols & ~7, c32 = cols & ~31;
    for (int r = 0; r < rows; r++) {
        const int8_t *x = in + (long)r * cols;
        int8_t *y = out + (long)r * cols;
        __m256i vmax = _mm256_set1_epi8(-128);
        for (int i = 0; i < c32; i += 32) vmax = _mm256_max_epi8(vmax, _mm256_loadu_si256((const __m256i *)(x + i)));
        int8_t lanes[32];
        _mm256_storeu_si256((__m256i *)lanes, vmax);
        int32_t m = -128;
        for (int i = 0; i < 32; i++) m = lanes[i] > m ? lanes[i] : m;
        for (int i = c32; i < cols; i++) m = x[i] > m ? x[i] : m;
        const __m256i vm = _mm256_set1_epi32(m);
        __m256i acc = _mm256_setzero_si256(); /* 4 int64 */
        for (int i = 0; i < c8; i += 8) {
            const __m256i idx = _mm256_sub_epi32(vm, _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(x + i))));
            const __m256i e = _mm256_i32gather_epi32((const int *)exp_table, idx, 4);
            acc = _mm256_add_epi64(acc, _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(e)),
                                                         _mm256_cvtepi32_epi64(_mm256_extracti128_si256(e, 1))));
        }
        int64_t parts[4];
        _mm256_storeu_si256((__m256i *)parts, acc);
        int64_t sum = parts[0] + parts[1] + parts[2] + parts[3];
        for (int i = c8; i < cols; i++) sum += exp_table[m - x[i]];
        const __m256d vs = _mm256_set1_pd((double)sum), vd = _mm256_set1_pd(2.0 * (double)sum);
        const __m256d v512 = _mm256_set1_pd(512.0);
        const __m256i v128 = _mm256_set1_epi32(128), v127 = _mm256_set1_epi32(127);
        for (int i = 0; i < c8; i += 8) {
            const __m256i idx = _mm256_sub_epi32(vm, _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(x + i))));
            const __m256i e = _mm256_i32gather_epi32((const int *)exp_table, idx, 4);
            const __m256d lo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(e));
            const __m256d hi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(e, 1));
            const __m128i qlo = _mm256_cvttpd_epi32(_mm256_floor_pd(_mm256_div_pd(_mm256_add_pd(_mm256_mul_pd(lo, v512), vs), vd)));
            const __m128i qhi = _mm256_cvttpd_epi32(_mm256_floor_pd(_mm256_div_pd(_mm256_add_pd(_mm256_mul_pd(hi, v512), vs), vd)));
            const __m256i q = _mm256_min_epi32(_mm256_sub_epi32(_mm256_set_m128i(qhi, qlo), v128), v127);
            const __m128i p = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
            _mm_storel_epi64((__m128i *)(y + i), _mm_packs_epi16(p, p));
        }
        for (int i = c8; i < cols; i++) {
            const int64_t q = (512 * (int64_t)exp_table[m - x[i]] + sum) / (2 * sum) - 128;
            y[i] = (int8_t)(q > 127 ? 127 : q);
        }
    }
}
