/* add_s8_avx2: int8 element-wise add with broadcasting (4-D, per-input element strides, 0 =
 * broadcast; kset_avx2.py merges the axes that are contiguous in both inputs first, so the
 * inner axis is as long as it can be), x86-64 AVX2; same result as add_s8 (portable), bit for
 * bit: y = zy + (((a - za) * ma + (b - zb) * mb + 2^(shift-1)) >> shift), all in int32,
 * clamped. Per inner row, an input of inner stride 0 is one value repeated. */
#include "cuvil_avx2_common.h"

static void add_s8_avx2(const int8_t *a, const int8_t *b, int8_t *out, int d0, int d1, int d2, int d3, int sa0, int sa1,
                        int sa2, int sa3, int sb0, int sb1, int sb2, int sb3, int32_t za, int32_t zb, int32_t ma,
                        int32_t mb, int32_t shift, int32_t zy, int32_t lo, int32_t hi)
{
    const int32_t round = (int32_t)1 << (shift - 1);
    const __m256i vza = _mm256_set1_epi32(za), vzb = _mm256_set1_epi32(zb);
    const __m256i vma = _mm256_set1_epi32(ma), vmb = _mm256_set1_epi32(mb);
    const __m256i vround = _mm256_set1_epi32(round), vzy = _mm256_set1_epi32(zy);
    const __m128i vshift = _mm_cvtsi32_si128(shift);
    const __m128i vlo = _mm_set1_epi8((int8_t)lo), vhi = _mm_set1_epi8((int8_t)hi);
    const int c16 = d3 & ~15;
    for (int i0 = 0; i0 < d0; i0++)
        for (int i1 = 0; i1 < d1; i1++)
            for (int i2 = 0; i2 < d2; i2++, out += d3) {
                const int8_t *pa = a + (long)i0 * sa0 + (long)i1 * sa1 + (long)i2 * sa2;
                const int8_t *pb = b + (long)i0 * sb0 + (long)i1 * sb1 + (long)i2 * sb2;
                for (int i = 0; i < c16; i += 16) {
                    __m256i r[2];
                    for (int half = 0; half < 2; half++) {
                        const int j = i + 8 * half;
                        const __m256i x = cuvil_avx2_load8_s32(pa + (long)j * sa3, sa3, vza);
                        const __m256i y = cuvil_avx2_load8_s32(pb + (long)j * sb3, sb3, vzb);
                        const __m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(x, vma),
                                                                            _mm256_mullo_epi32(y, vmb)), vround);
                        r[half] = _mm256_add_epi32(_mm256_sra_epi32(s, vshift), vzy);
                    }
                    _mm_storeu_si128((__m128i *)(out + i), cuvil_avx2_pack16(r[0], r[1], vlo, vhi));
                }
                for (int i = c16; i < d3; i++) {
                    const int32_t x = pa[(long)i * sa3] - za, y = pb[(long)i * sb3] - zb;
                    out[i] = cuvil_clamp8(((x * ma + y * mb + round) >> shift) + zy, lo, hi);
                }
            }
}
