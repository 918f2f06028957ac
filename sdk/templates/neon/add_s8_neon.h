/* add_s8_neon: int8 element-wise add with broadcasting (4-D, per-input element strides, 0 =
 * broadcast; kset_neon.py merges the axes that are contiguous in both inputs first), aarch64
 * NEON; same result as add_s8 (portable), bit for bit:
 * y = zy + (((a - za) * ma + (b - zb) * mb + 2^(shift-1)) >> shift), all in int32, clamped.
 * Per inner row, an input of inner stride 0 is one value repeated. */
#include "cuvil_neon_common.h"


static void add_s8_neon(const int8_t *a, const int8_t *b, int8_t *out, int d0, int d1, int d2, int d3, int sa0, int sa1,
                        int sa2, int sa3, int sb0, int sb1, int sb2, int sb3, int32_t za, int32_t zb, int32_t ma,
                        int32_t mb, int32_t shift, int32_t zy, int32_t lo, int32_t hi)
{
    const int32_t round = (int32_t)1 << (shift - 1);
    const int16x8_t vza = vdupq_n_s16((int16_t)za), vzb = vdupq_n_s16((int16_t)zb);
    const int32x4_t vround = vdupq_n_s32(round), vzy = vdupq_n_s32(zy), vsh = vdupq_n_s32(-shift);
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
                        const int32x4_t x = q & 1 ? vmovl_high_s16(xa[q >> 1]) : vmovl_s16(vget_low_s16(xa[q >> 1]));
                        const int32x4_t y = q & 1 ? vmovl_high_s16(xb[q >> 1]) : vmovl_s16(vget_low_s16(xb[q >> 1]));
                        const int32x4_t s = vaddq_s32(vmlaq_n_s32(vmulq_n_s32(x, ma), y, mb), vround);
                        r[q] = vaddq_s32(vshlq_s32(s, vsh), vzy);
                    }
                    vst1q_s8(out + i, cuvil_neon_narrow16(r[0], r[1], r[2], r[3], vlo, vhi));
                }
                for (int i = c16; i < d3; i++) {
                    const int32_t x = pa[(long)i * sa3] - za, y = pb[(long)i * sb3] - zb;
                    out[i] = cuvil_clamp8(((x * ma + y * mb + round) >> shift) + zy, lo, hi);
                }
            }
}
