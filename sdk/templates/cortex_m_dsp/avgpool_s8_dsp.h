/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * avgpool_s8_dsp: average pooling with int16-lane SIMD sums; constants come from cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
/* int8 average pooling, NHWC, as avgpool_s8 bit for bit: 4 channels per word summed in int16
 * lanes by SXTAB16 (at most 256 taps between flushes into int32, so no lane overflows, however long a row), then
 * acc = sum - valid * zx and cuvil_requant with the multiplier of the window's count (which
 * includes the padding when asked). Channels beyond a multiple of 4 one by one. */
static void avgpool_s8_dsp(const int8_t *in, int8_t *out, int n, int h, int w, int c, int oh, int ow, int kh, int kw,
                           int sh, int sw, int pt, int pl, int pb, int pr, int include_pad, int32_t zx, int32_t zy,
                           const int32_t *mult, const int32_t *shift)
{
    const int c4 = c & ~3;
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
                const int32_t m = mult[count], s = shift[count], offset = valid * zx;
                const int8_t *base = in + (((long)b * h + ylo) * w + xlo) * c;
                int8_t *dst = out + (((long)b * oh + oy) * ow + ox) * c;
                const int width = xhi - xlo;
                for (int ch = 0; ch < c4; ch += 4) {
                    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
                    uint32_t s02 = 0u, s13 = 0u;
                    int taps = 0;
                    const int8_t *rowp = base + ch;
                    for (int iy = ylo; iy < yhi; iy++, rowp += (long)w * c) {
                        const int8_t *p = rowp;
                        for (int ix = 0; ix < width;) {
                            if (taps == 256) {
                                a0 += (int16_t)s02; a2 += (int32_t)s02 >> 16; a1 += (int16_t)s13; a3 += (int32_t)s13 >> 16;
                                s02 = s13 = 0u;
                                taps = 0;
                            }
                            const int run = width - ix < 256 - taps ? width - ix : 256 - taps;
                            for (int e = ix + run; ix < e; ix++, p += c) {
                                const uint32_t v = cuvil_ld32(p);
                                s02 = cuvil_sxtab16(s02, v);
                                s13 = cuvil_sxtab16_r8(s13, v);
                            }
                            taps += run;
                        }
                    }
                    a0 += (int16_t)s02; a2 += (int32_t)s02 >> 16; a1 += (int16_t)s13; a3 += (int32_t)s13 >> 16;
                    dst[ch] = cuvil_requant(a0 - offset, m, s, zy, -128, 127);
                    dst[ch + 1] = cuvil_requant(a1 - offset, m, s, zy, -128, 127);
                    dst[ch + 2] = cuvil_requant(a2 - offset, m, s, zy, -128, 127);
                    dst[ch + 3] = cuvil_requant(a3 - offset, m, s, zy, -128, 127);
                }
                for (int ch = c4; ch < c; ch++) {
                    int32_t acc = 0;
                    for (int iy = ylo; iy < yhi; iy++)
                        for (int ix = xlo; ix < xhi; ix++) acc += base[((long)(iy - ylo) * w + (ix - xlo)) * c + ch];
                    dst[ch] = cuvil_requant(acc - offset, m, s, zy, -128, 127);
                }
            }
}
