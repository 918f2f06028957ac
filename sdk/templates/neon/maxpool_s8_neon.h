/* maxpool_s8_neon: int8 max pooling, NHWC, aarch64 NEON; same arguments and result as
 * maxpool_s8 (portable): the max over the window's valid positions, -128 when there is none.
 * 16 channels per SMAX, the rest one at a time. */
#include "cuvil_neon_common.h"


static void maxpool_s8_neon(const int8_t *in, int8_t *out, int n, int h, int w, int c, int oh, int ow, int kh, int kw,
                            int sh, int sw, int pt, int pl, int pb, int pr)
{
    (void)pb; (void)pr;
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                const int y0 = oy * sh - pt, x0 = ox * sw - pl;
                const int ylo = y0 < 0 ? 0 : y0, yhi = y0 + kh > h ? h : y0 + kh;
                const int xlo = x0 < 0 ? 0 : x0, xhi = x0 + kw > w ? w : x0 + kw;
                const int8_t *img = in + (long)b * h * w * c;
                int8_t *dst = out + (((long)b * oh + oy) * ow + ox) * c;
                const int c16 = c & ~15;
                for (int ch = 0; ch < c16; ch += 16) {
                    int8x16_t m = vdupq_n_s8(-128);
                    for (int iy = ylo; iy < yhi; iy++)
                        for (int ix = xlo; ix < xhi; ix++) m = vmaxq_s8(m, vld1q_s8(img + ((long)iy * w + ix) * c + ch));
                    vst1q_s8(dst + ch, m);
                }
                for (int ch = c16; ch < c; ch++) {
                    int32_t m = -128;
                    for (int iy = ylo; iy < yhi; iy++)
                        for (int ix = xlo; ix < xhi; ix++) {
                            const int32_t v = img[((long)iy * w + ix) * c + ch];
                            if (v > m) m = v;
                        }
                    dst[ch] = (int8_t)m;
                }
            }
}
