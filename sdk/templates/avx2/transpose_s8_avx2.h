/* transpose_s8_avx2: the portable transpose_s8 (output dims o0..o3, input element strides
 * s0..s3 of each output axis). Where output axis 2 is contiguous in the input (s2 == 1), as
 * NCHW -> NHWC at a model's input, input rows are read in order and written with the
 * output's stride; with 3 channels, 16 pixels at a time are interleaved by byte shuffles.
 * Other layouts go through cuvil_transpose_rows (rows copied whole where the last axis is
 * contiguous, element by element otherwise). */
#include "cuvil_avx2_common.h"

static void transpose_s8_avx2(const int8_t *in, int8_t *out, int o0, int o1, int o2, int o3, int s0, int s1, int s2,
                              int s3)
{
    if (s2 != 1) {
        cuvil_transpose_rows(in, out, o0, o1, o2, o3, s0, s1, s2, s3);
        return;
    }
    for (int a = 0; a < o0; a++)
        for (int b = 0; b < o1; b++) {
            int8_t *dst = out + ((long)a * o1 + b) * o2 * o3;
            const int8_t *src = in + (long)a * s0 + (long)b * s1;
            int c0 = 0;
            if (o3 == 3) {
                const __m128i m0r = _mm_setr_epi8(0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5);
                const __m128i m0g = _mm_setr_epi8(-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1);
                const __m128i m0b = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
                const __m128i m1r = _mm_setr_epi8(-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1);
                const __m128i m1g = _mm_setr_epi8(5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10);
                const __m128i m1b = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1);
                const __m128i m2r = _mm_setr_epi8(-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1);
                const __m128i m2g = _mm_setr_epi8(-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1);
                const __m128i m2b = _mm_setr_epi8(10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15);
                for (; c0 + 16 <= o2; c0 += 16) {
                    const __m128i r = _mm_loadu_si128((const __m128i *)(src + c0));
                    const __m128i g = _mm_loadu_si128((const __m128i *)(src + s3 + c0));
                    const __m128i bl = _mm_loadu_si128((const __m128i *)(src + 2L * s3 + c0));
                    int8_t *d = dst + (long)c0 * 3;
                    _mm_storeu_si128((__m128i *)d, _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, m0r),
                                                                             _mm_shuffle_epi8(g, m0g)),
                                                                _mm_shuffle_epi8(bl, m0b)));
                    _mm_storeu_si128((__m128i *)(d + 16), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, m1r),
                                                                                    _mm_shuffle_epi8(g, m1g)),
                                                                       _mm_shuffle_epi8(bl, m1b)));
                    _mm_storeu_si128((__m128i *)(d + 32), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, m2r),
                                                                                    _mm_shuffle_epi8(g, m2g)),
                                                                       _mm_shuffle_epi8(bl, m2b)));
                }
            }
            for (int d = 0; d < o3; d++) {
                const int8_t *s = src + (long)d * s3;
                int8_t *t = dst + d;
                for (int c = c0; c < o2; c++) t[(long)c * o3] = s[c];
            }
        }
}
