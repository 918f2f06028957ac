/* transpose_s8_neon: the portable transpose_s8 (output dims o0..o3, input element strides
 * s0..s3 of each output axis), aarch64 NEON. Where output axis 2 is contiguous in the input
 * (s2 == 1), as NCHW -> NHWC at a model's input, input rows are read in order and written
 * with the output's stride; with 3 or 4 channels, 16 pixels at a time are interleaved by
 * ST3 / ST4. Other layouts go through cuvil_transpose_rows. */
#include "cuvil_neon_common.h"


static void transpose_s8_neon(const int8_t *in, int8_t *out, int o0, int o1, int o2, int o3, int s0, int s1, int s2,
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
                for (; c0 + 16 <= o2; c0 += 16) {
                    const int8x16x3_t v = {{vld1q_s8(src + c0), vld1q_s8(src + s3 + c0), vld1q_s8(src + 2L * s3 + c0)}};
                    vst3q_s8(dst + (long)c0 * 3, v);
                }
            } else if (o3 == 4) {
                for (; c0 + 16 <= o2; c0 += 16) {
                    const int8x16x4_t v = {{vld1q_s8(src + c0), vld1q_s8(src + s3 + c0), vld1q_s8(src + 2L * s3 + c0),
                                            vld1q_s8(src + 3L * s3 + c0)}};
                    vst4q_s8(dst + (long)c0 * 4, v);
                }
            }
            for (int d = 0; d < o3; d++) {
                const int8_t *s = src + (long)d * s3;
                int8_t *t = dst + d;
                for (int c = c0; c < o2; c++) t[(long)c * o3] = s[c];
            }
        }
}
