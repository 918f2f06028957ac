/* add_s8_neon: int8 element-wise add of two same-shape tensors (no broadcasting), aarch64 NEON;
 * same result as add_s8 (portable), bit for bit:
 * y = zy + (((a - za) * ma + (b - zb) * mb + 2^(shift-1)) >> shift), all in int32, clamped. */
#include "cuvil_neon_common.h"


static void add_s8_neon(const int8_t *a, const int8_t *b, int8_t *out, int count, int32_t za, int32_t zb, int32_t ma,
                        int32_t mb, int32_t shift, int32_t zy, int32_t lo, int32_t hi)
{
    const int32_t round = (int32_t)1 << (shift - 1);
    const int16x8_t vza = vdupq_n_s16((int16_t)za), vzb = vdupq_n_s16((int16_t)zb);
    const int32x4_t vround = vdupq_n_s32(round), vzy = vdupq_n_s32(zy), vsh = vdupq_n_s32(-shift);
    const int8x16_t vlo = vdupq_n_s8((int8_t)lo), vhi = vdupq_n_s8((int8_t)hi);
    const int c16 = count & ~15;
    for (int i = 0; i < c16; i += 16) {
        const int8x16_t va = vld1q_s8(a + i), vb = vld1q_s8(b + i);
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
    for (int i = c16; i < count; i++) {
        const int32_t x = a[i] - za, y = b[i] - zb;
        out[i] = cuvil_clamp8(((x * ma + y * mb + round) >> shift) + zy, lo, hi);
    }
}
