/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * maxpool_s8_dsp: 4-lane SIMD max pooling; constants come from cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
/* int8 max pooling, NHWC, as maxpool_s8 bit for bit: 4 channels per word, a running maximum
 * of 4 int8 lanes by SSUB8 + SEL per tap; padded positions are skipped (an all-padding window
 * gives -128). Channels beyond a multiple of 4 one by one. */
static void maxpool_s8_dsp(const int8_t *in, int8_t *out, int n, int h, int w, int c, int oh, int ow, int kh, int kw,
                           int sh, int sw, int pt, int pl)
{
    const int c4 = c & ~3;
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < oh; oy++) {
            const int y0 = oy * sh - pt;
            const int ylo = y0 < 0 ? 0 : y0, yhi = y0 + kh > h ? h : y0 + kh;
            for (int ox = 0; ox < ow; ox++) {
                const int x0 = ox * sw - pl;
                const int xlo = x0 < 0 ? 0 : x0, xhi = x0 + kw > w ? w : x0 + kw;
                const int8_t *base = in + (((long)b * h + ylo) * w + xlo) * c;
                int8_t *dst = out + (((long)b * oh + oy) * ow + ox) * c;
                for (int ch = 0; ch < c4; ch += 4) {
                    uint32_t m = 0x80808080u;
                    const int8_t *rowp = base + ch;
                    for (int iy = ylo; iy < yhi; iy++, rowp += (long)w * c) {
                        const int8_t *p = rowp;
                        for (int ix = xlo; ix < xhi; ix++, p += c) {
                            uint32_t t;
                            const uint32_t v = cuvil_ld32(p);
                            __asm__("ssub8 %[t], %[v], %[m]\n\tsel %[m], %[v], %[m]"
                                    : [m] "+r"(m), [t] "=&r"(t) : [v] "r"(v) : "cc");
                        }
                    }
                    cuvil_st32(dst + ch, m);
                }
                for (int ch = c4; ch < c; ch++) {
                    int32_t m = -128;
                    for (int iy = ylo; iy < yhi; iy++)
                        for (int ix = xlo; ix < xhi; ix++) {
                            const int32_t v = base[((long)(iy - ylo) * w + (ix - xlo)) * c + ch];
                            if (v > m) m = v;
                        }
                    dst[ch] = (int8_t)m;
                }
            }
        }
}
