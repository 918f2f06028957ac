/* Helium (Armv8.1-M MVE) kernel set, cuvil-sdk. Generated code, do not edit.
 * softmax_s8_mve: int8 softmax over contiguous rows; the maximum and the sum by vectors. */
#include "cuvil_mve_common.h"

/* int8 softmax over rows of `cols`, as softmax_s8 bit for bit (output scale 1/256, zero point
 * -128): m = the row maximum (VMAXV over 16 lanes), e = exp_table[m - x] (<= 2^16,
 * sdk/ops/softmax.py) gathered 4 at a time and summed (VADDVA) into S, then per output
 * y = floor((512 e + S) / (2 S)) - 128 by one division each (MVE divides nothing). With
 * cols < 2^15, S < 2^31 and 512 e + S < 2^32: exact in uint32; `wide` rows (Python sets it for
 * cols >= 2^15) sum and divide in 64 bits. */
static void softmax_s8_mve(const int8_t *in, int8_t *out, int rows, int cols, const int32_t *exp_table, int wide)
{
    for (int r = 0; r < rows; r++, in += cols, out += cols) {
        int8_t m = -128;
        for (int i = 0; i < cols; i += 16) {
            m = vmaxvq_p_s8(m, vldrbq_z_s8(in + i, vctp8q((uint32_t)(cols - i))), vctp8q((uint32_t)(cols - i)));
        }
        const int32x4_t vm = vdupq_n_s32(m);
        uint32_t sum = 0u;
        int64_t wide_sum = 0;
        for (int i = 0; i < cols; i += 4) {
            const mve_pred16_t p = vctp32q((uint32_t)(cols - i));
            const uint32x4_t index = vreinterpretq_u32_s32(vsubq_s32(vm, vldrbq_z_s32(in + i, p)));
            const int32x4_t e = vldrwq_gather_shifted_offset_z_s32(exp_table, index, p);
            if (wide) {
                wide_sum = vaddlvaq_p_s32(wide_sum, e, p);
            } else {
                sum = vaddvaq_p_u32(sum, vreinterpretq_u32_s32(e), p);
            }
        }
        for (int i = 0; i < cols; i++) {
            const uint32_t e = (uint32_t)exp_table[m - in[i]];
            int32_t q;
            if (wide) {
                q = (int32_t)((512 * (int64_t)e + wide_sum) / (2 * wide_sum) - 128);
            } else {
                q = (int32_t)((512u * e + sum) / (2u * sum)) - 128;
            }
            out[i] = (int8_t)(q > 127 ? 127 : q);
        }
    }
}
