/* softmax_s8_neon: int8 softmax over rows of `cols` (output scale 1/256, zero point -128),
 * aarch64 NEON; same result as softmax_s8 (portable), bit for bit: e = exp_table[max - x],
 * S the row's sum (int64), y = min(127, floor((512 e + S) / (2 S)) - 128). The row maximum
 * is a byte max over 16 inputs at a time, and the division is done in double, 2 lanes per
 * FDIV: 512 e + S and 2 S are exact (< 2^53), and floor of the correctly rounded quotient is
 * the integer quotient while 2 S < 2^44 (the rounding error, at most 257 * 2^-53, is then
 * below a quotient's distance to the next integer, at least 1 / (2 S)); kset_neon.py takes
 * only rows short enough for that (cols < 2^26, e <= 2^16). */
#include "cuvil_neon_common.h"


static void softmax_s8_neon(const int8_t *in, int8_t *out, int rows, int cols, const int32_t *exp_table)
{
    const int c16 = cols & ~15, c4 = cols & ~3;
    for (int r = 0; r < rows; r++) {
        const int8_t *x = in + (long)r * cols;
        int8_t *y = out + (long)r * cols;
        int8x16_t vmax = vdupq_n_s8(-128);
        for (int i = 0; i < c16; i += 16) vmax = vmaxq_s8(vmax, vld1q_s8(x + i));
        int32_t m = vmaxvq_s8(vmax);
        for (int i = c16; i < cols; i++) m = x[i] > m ? x[i] : m;
        int64_t sum = 0;
        for (int i = 0; i < cols; i++) sum += exp_table[m - x[i]];
        const float64x2_t vs = vdupq_n_f64((double)sum), vd = vdupq_n_f64(2.0 * (double)sum);
        for (int i = 0; i < c4; i += 4) {
            const int32x4_t e = {exp_table[m - x[i]], exp_table[m - x[i + 1]], exp_table[m - x[i + 2]],
                                 exp_table[m - x[i + 3]]};
            const float64x2_t lo = vcvtq_f64_s64(vmovl_s32(vget_low_s32(e)));
            const float64x2_t hi = vcvtq_f64_s64(vmovl_high_s32(e));
            const int64x2_t qlo = vcvtmq_s64_f64(vdivq_f64(vfmaq_n_f64(vs, lo, 512.0), vd));
            const int64x2_t qhi = vcvtmq_s64_f64(vdivq_f64(vfmaq_n_f64(vs, hi, 512.0), vd));
            const int32x4_t q = vminq_s32(vsubq_s32(vcombine_s32(vmovn_s64(qlo), vmovn_s64(qhi)), vdupq_n_s32(128)),
                                          vdupq_n_s32(127));
            const int16x4_t q16 = vmovn_s32(q);
            const int8x8_t q8 = vmovn_s16(vcombine_s16(q16, q16));
            memcpy(y + i, &q8, 4);
        }
        for (int i = c4; i < cols; i++) {
            const int64_t q = (512 * (int64_t)exp_table[m - x[i]] + sum) / (2 * sum) - 128;
            y[i] = (int8_t)(q > 127 ? 127 : q);
        }
    }
}
