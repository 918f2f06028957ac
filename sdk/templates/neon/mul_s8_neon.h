/* mul_s8_neon: int8 element-wise multiply with broadcasting (4-D, per-input element strides,
 * 0 = broadcast; axes merged as for add_s8_neon), aarch64 NEON; same result as mul_s8
 * (portable), bit for bit: y = requant((a - za) * (b - zb)) by cuvil_requant's rule (the
 * product is exact in int32), cuvil_neon_requant4n with the one multiplier and shift. */
#include "cuvil_neon_common.h"


static void mul_s8_neon(const int8_t *a, const int8_t *b, int8_t *out, int d0, int d1, int d2, int d3, int sa0, int sa1,
                        int sa2, int sa3, int sb0, int sb1, int sb2, int sb3, int32_t za, int32_t zb, int32_t mult,
                        int32_t shift, int32_t zy, int32_t lo, int32_t hi)
{
    const int16x8_t vza = vdupq_n_s16((int16_t)za), vzb = vdupq_n_s16((int16_t)zb);
    const int64x2_t vzy = vdupq_n_s64(zy);
    const int8x16_t vlo = vdupq_n_s8((int8_t)lo), vhi = vdupq_n_s8((int8_t)hi);
    const int c16 = d3 & ~15;
    for (int i0 = 0; i0 < d0; i0++)
        for (int i1 = 0; i1 < d1; i1++)
            for (int i2 = 0; i2 < d2; i2++, out += d3) {
                const int8_t *pa = a + (long)i0 * sa0 + (long)i1 * sa1 + (long)i2 * sa2;
                const int8_t *pb = b + (long)i0 * sb0 + (long)i1 * sb1 + (long)i2 * sb2;
                for (int i = 0; i < c16; i += 16) {
                    const int8x16_t va = sa3 ? vld1q_s8(pa + i) : vdupq_n_s8(*pa);
                    const int8x16_t vb = sb3 ? vld1q_s8(pb + i) : vdupq_n_s8(*pb);
                    const int16x8_t xa[2] = {vsubq_s16(vmovl_s8(vget_low_s8(va)), vza), vsubq_s16(vmovl_high_s8(va), vza)};
                    const int16x8_t xb[2] = {vsubq_s16(vmovl_s8(vget_low_s8(vb)), vzb), vsubq_s16(vmovl_high_s8(vb), vzb)};
                    int32x4_t r[4];
                    for (int q = 0; q < 4; q++) {
                        const int16x4_t x = q & 1 ? vget_high_s16(xa[q >> 1]) : vget_low_s16(xa[q >> 1]);
                        const int16x4_t y = q & 1 ? vget_high_s16(xb[q >> 1]) : vget_low_s16(xb[q >> 1]);
                        r[q] = cuvil_neon_requant4n(vmull_s16(x, y), mult, shift, vzy);
                    }
                    vst1q_s8(out + i, cuvil_neon_narrow16(r[0], r[1], r[2], r[3], vlo, vhi));
                }
                for (int i = c16; i < d3; i++)
                    out[i] = cuvil_requant((pa[(long)i * sa3] - za) * (pb[(long)i * sb3] - zb), mult, shift, zy, lo, hi);
            }
}
