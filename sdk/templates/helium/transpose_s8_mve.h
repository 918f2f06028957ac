/* Helium (Armv8.1-M MVE) kernel set, cuvil-sdk. Generated code, do not edit.
 * transpose_s8_mve: int8 transpose, contiguous loads scattered to the output. */
#include "cuvil_mve_common.h"

/* out[i0][i1][i2][i3] = in[i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3], as transpose_s8: the loops run
 * over the output axes, the innermost along `axis`, the output axis whose input stride is 1
 * (rules.py picks it): `lanes` consecutive input bytes per load (the last ones predicated),
 * scattered at that axis's output stride (byte offsets in 16 lanes, or 16-bit offsets in 8:
 * Python picks the widest whose offsets fit). */
static void transpose_s8_mve(const int8_t *in, int8_t *out, int o0, int o1, int o2, int o3, int s0, int s1, int s2,
                             int s3, int axis, int lanes)
{
    const int d[4] = {o0, o1, o2, o3};
    const long s[4] = {s0, s1, s2, s3};
    const long t[4] = {(long)o1 * o2 * o3, (long)o2 * o3, o3, 1};
    int a[3], k = 0;
    for (int i = 0; i < 4; i++) {
        if (i != axis) a[k++] = i;
    }
    const int run = d[axis];
    const long os = t[axis];
    const uint8x16_t off8 = vmulq_n_u8(vidupq_n_u8(0u, 1), (uint8_t)os);
    const uint16x8_t off16 = vmulq_n_u16(vidupq_n_u16(0u, 1), (uint16_t)os);
    for (int i = 0; i < d[a[0]]; i++)
        for (int j = 0; j < d[a[1]]; j++)
            for (int l = 0; l < d[a[2]]; l++) {
                const int8_t *src = in + i * s[a[0]] + j * s[a[1]] + l * s[a[2]];
                int8_t *dst = out + i * t[a[0]] + j * t[a[1]] + l * t[a[2]];
                for (int v = 0; v < run; v += lanes, src += lanes, dst += lanes * os) {
                    if (lanes == 16) {
                        const mve_pred16_t p = vctp8q((uint32_t)(run - v));
                        vstrbq_scatter_offset_p_s8(dst, off8, vldrbq_z_s8(src, p), p);
                    } else {
                        const mve_pred16_t p = vctp16q((uint32_t)(run - v));
                        vstrbq_scatter_offset_p_s16(dst, off16, vldrbq_z_s16(src, p), p);
                    }
                }
            }
}
