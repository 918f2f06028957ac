/* avgpool_s8_neon: int8 average pooling, NHWC, aarch64 NEON; same arguments and result as
 * avgpool_s8 (portable): the sum of (x - zx) over the window's valid positions (int32, 16
 * channels at a time), requantized by cuvil_neon_requant4n with the multiplier and shift for
 * the window's count (which includes the padding when asked). */
#include "cuvil_neon_common.h"


static void avgpool_s8_neon(const int8_t *in, int8_t *out, int n, int h, int w, int c, int oh, int ow, int kh, int kw,
                            int sh, int sw, int pt, int pl, int pb, int pr, int include_pad, int32_t zx, int32_t zy,
                            const int32_t *mult, const int32_t *shift)
{
    const int8x16_t vlo = vdupq_n_s8(-128), vhi = vdupq_n_s8(127);
    const int64x2_t vzy = vdupq_n_s64(zy);
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                const int y0 = oy * sh - pt, x0 = ox * sw - pl;
                const int ylo = y0 < 0 ? 0 : y0, yhi = y0 + kh > h ? h : y0 + kh;
                const int xlo = x0 < 0 ? 0 : x0, xhi = x0 + kw > w ? w : x0 + kw;
                const int valid = (yhi - ylo) * (xhi - xlo);
                int count = valid;
                if (include_pad) {
                    const int py0 = y0 < -pt ? -pt : y0, py1 = y0 + kh > h + pb ? h + pb : y0 + kh;
                    const int px0 = x0 < -pl ? -pl : x0, px1 = x0 + kw > w + pr ? w + pr : x0 + kw;
                    count = (py1 - py0) * (px1 - px0);
                }
                const int8_t *img = in + (long)b * h * w * c;
                int8_t *dst = out + (((long)b * oh + oy) * ow + ox) * c;
                const int32_t m = mult[count], s = shift[count];
                const int32x4_t vz = vdupq_n_s32(valid * zx);
                const int c16 = c & ~15;
                for (int ch = 0; ch < c16; ch += 16) {
                    int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0;
                    for (int iy = ylo; iy < yhi; iy++)
                        for (int ix = xlo; ix < xhi; ix++) {
                            const int8x16_t v = vld1q_s8(img + ((long)iy * w + ix) * c + ch);
                            const int16x8_t lo = vmovl_s8(vget_low_s8(v)), hi = vmovl_high_s8(v);
                            s0 = vaddw_s16(s0, vget_low_s16(lo));
                            s1 = vaddw_high_s16(s1, lo);
                            s2 = vaddw_s16(s2, vget_low_s16(hi));
                            s3 = vaddw_high_s16(s3, hi);
                        }
                    s0 = cuvil_neon_requant4n(vsubq_s32(s0, vz), m, s, vzy);
                    s1 = cuvil_neon_requant4n(vsubq_s32(s1, vz), m, s, vzy);
                    s2 = cuvil_neon_requant4n(vsubq_s32(s2, vz), m, s, vzy);
                    s3 = cuvil_neon_requant4n(vsubq_s32(s3, vz), m, s, vzy);
                    vst1q_s8(dst + ch, cuvil_neon_narrow16(s0, s1, s2, s3, vlo, vhi));
                }
                for (int ch = c16; ch < c; ch++) {
                    int32_t acc = 0;
                    for (int iy = ylo; iy < yhi; iy++)
                        for (int ix = xlo; ix < xhi; ix++) acc += img[((long)iy * w + ix) * c + ch] - zx;
                    dst[ch] = cuvil_requant(acc, m, s, zy, -128, 127);
                }
            }
}
