/* add_s8_avx2: int8 element-wise add of two same-shape tensors (no broadcasting), x86-64 AVX2;
 * same result as add_s8 (portable), bit for bit:
 * y = zy + (((a - za) * ma + (b - zb) * mb + 2^(shift-1)) >> shift), all in int32, clamped. */
#include "cuvil_avx2_common.h"

static void add_s8_avx2(const int8_t *a, const int8_t *b, int8_t *out, int count, int32_t za, int32_t zb, int32_t ma,
                        int32_t mb, int32_t shift, int32_t zy, int32_t lo, int32_t hi)
{
    const int32_t round = (int32_t)1 << (shift - 1);
    const __m256i vza = _mm256_set1_epi32(za), vzb = _mm256_set1_epi32(zb);
    const __m256i vma = _mm256_set1_epi32(ma), vmb = _mm256_set1_epi32(mb);
    const __m256i vround = _mm256_set1_epi32(round), vzy = _mm256_set1_epi32(zy);
    const __m128i vshift = _mm_cvtsi32_si128(shift);
    const __m128i vlo = _mm_set1_epi8((int8_t)lo), vhi = _mm_set1_epi8((int8_t)hi);
    const int c16 = count & ~15;
    for (int i = 0; i < c16; i += 16) {
        __m256i r[2];
        for (int half = 0; half < 2; half++) {
            const __m256i x = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(a + i + 8 * half))), vza);
            const __m256i y = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + i + 8 * half))), vzb);
            const __m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(x, vma), _mm256_mullo_epi32(y, vmb)), vround);
            r[half] = _mm256_add_epi32(_mm256_sra_epi32(s, vshift), vzy);
        }
        _mm_storeu_si128((__m128i *)(out + i), cuvil_avx2_pack16(r[0], r[1], vlo, vhi));
    }
    for (int i = c16; i < count; i++) {
        const int32_t x = a[i] - za, y = b[i] - zb;
        out[i] = cuvil_clamp8(((x * ma + y * mb + round) >> shift) + zy, lo, hi);
    }
}
