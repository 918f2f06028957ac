/* mul_s8_avx2: int8 element-wise multiply with broadcasting (4-D, per-input element strides,
 * 0 = broadcast; axes merged as for add_s8_avx2), x86-64 AVX2; same result as mul_s8
 * (portable), bit for bit: y = requant((a - za) * (b - zb)) by cuvil_requant's rule (the
 * product is exact in int32: |.| <= 255 * 255), cuvil_avx2_requant8g with one multiplier
 * and shift for every lane. */
#include "cuvil_avx2_common.h"

static void mul_s8_avx2(const int8_t *a, const int8_t *b, int8_t *out, int d0, int d1, int d2, int d3, int sa0, int sa1,
                        int sa2, int sa3, int sb0, int sb1, int sb2, int sb3, int32_t za, int32_t zb, int32_t mult,
                        int32_t shift, int32_t zy, int32_t lo, int32_t hi)
{
    const __m256i vza = _mm256_set1_epi32(za), vzb = _mm256_set1_epi32(zb);
    const __m128i vlo = _mm_set1_epi8((int8_t)lo), vhi = _mm_set1_epi8((int8_t)hi);
    __m256i q[8]; /* cuvil_avx2_requant8g's table, the same for every lane */
    q[0] = q[1] = _mm256_set1_epi64x(mult);
    q[2] = q[3] = _mm256_set1_epi64x((int64_t)1 << (shift - 1));
    q[4] = q[5] = _mm256_set1_epi64x(shift);
    q[6] = q[7] = _mm256_set1_epi64x((int64_t)(((uint64_t)1 << (63 - shift)) - (uint64_t)(int64_t)zy));
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
                        const __m256i p = _mm256_mullo_epi32(cuvil_avx2_load8_s32(pa + (long)j * sa3, sa3, vza),
                                                             cuvil_avx2_load8_s32(pb + (long)j * sb3, sb3, vzb));
                        r[half] = cuvil_avx2_requant8g(p, p, q, 0);
                    }
                    _mm_storeu_si128((__m128i *)(out + i), cuvil_avx2_pack16(r[0], r[1], vlo, vhi));
                }
                for (int i = c16; i < d3; i++)
                    out[i] = cuvil_requant((pa[(long)i * sa3] - za) * (pb[(long)i * sb3] - zb), mult, shift, zy, lo, hi);
            }
}
