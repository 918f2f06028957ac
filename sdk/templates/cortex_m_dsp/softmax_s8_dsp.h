/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * softmax_s8_dsp: int8 softmax with 32-bit sums and one UDIV per output. */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
/* int8 softmax over rows of `cols`, as softmax_s8 bit for bit (output scale 1/256, zero point
 * -128): e = exp_table[max - x] (<= 2^16, sdk/ops/softmax.py), S the row sum, and
 * y = floor((512 e + S) / (2 S)) - 128. With cols < 2^15, S < 2^31 and 512 e + S < 2^32, so the
 * sum and the quotient are exact in uint32 (UDIV, no 64-bit division call); `wide` rows
 * (Python sets it for cols >= 2^15) use the 64-bit form. */
static void softmax_s8_dsp(const int8_t *in, int8_t *out, int rows, int cols, const int32_t *exp_table, int wide)
{
    for (int r = 0; r < rows; r++, in += cols, out += cols) {
        int32_t m = -128;
        for (int i = 0; i < cols; i++) m = in[i] > m ? in[i] : m;
        const int32_t *e = exp_table + m; /* e[-x] = exp_table[m - x] */
        if (wide) {
            int64_t sum = 0;
            for (int i = 0; i < cols; i++) sum += e[-in[i]];
            for (int i = 0; i < cols; i++) {
                const int64_t q = (512 * (int64_t)e[-in[i]] + sum) / (2 * sum) - 128;
                out[i] = (int8_t)(q > 127 ? 127 : q);
            }
            continue;
        }
        uint32_t sum = 0u;
        for (int i = 0; i < cols; i++) sum += (uint32_t)e[-in[i]];
        const uint32_t twice = 2u * sum;
        for (int i = 0; i < cols; i++) {
            const int32_t q = (int32_t)((512u * (uint32_t)e[-in[i]] + sum) / twice) - 128;
            out[i] = (int8_t)(q > 127 ? 127 : q);
        }
    }
}
