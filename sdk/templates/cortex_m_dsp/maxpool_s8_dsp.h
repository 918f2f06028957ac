/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * maxpool_s8_dsp: 4-lane SIMD max pooling; constants come from cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#ifndef CUVIL_DSP_COMMON_H
#define CUVIL_DSP_COMMON_H
#include <stdint.h>
#include <string.h>
#if !defined(__ARM_FEATURE_DSP) || !defined(__thumb2__)
#error "the cortex_m_dsp kernels need the Armv7E-M DSP extension (-mcpu=cortex-m7 -mthumb)"
#endif

/* Unaligned 32/16-bit accesses (LDR/STR/LDRH/STRH allow them on Armv7-M; LDRD/LDM do not). */
static inline uint32_t cuvil_ld32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline void cuvil_st32(void *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void cuvil_st16(void *p, uint32_t v) { uint16_t h = (uint16_t)v; memcpy(p, &h, 2); }

/* a + sign-extended bytes 0 and 2 of x (two 16-bit lanes); _r8: bytes 1 and 3. */
static inline uint32_t cuvil_sxtab16(uint32_t a, uint32_t x)
{
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(x));
    return r;
}
static inline uint32_t cuvil_sxtab16_r8(uint32_t a, uint32_t x)
{
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
    return r;
}
static inline uint32_t cuvil_smlad(uint32_t x, uint32_t y, uint32_t acc)
{
    uint32_t r;
    __asm__("smlad %0, %1, %2, %3" : "=r"(r) : "r"(x), "r"(y), "r"(acc));
    return r;
}

/* The rounding rule of cuvil_requant for a shift S >= 33 (checked in Python), in three
 * instructions: with s = S - 32, (acc * M + 2^(S-1)) >> S == (hi32(acc * M) + 2^(s-1)) >> s,
 * and the output zero point is folded in: rnd = 2^(s-1) + (zy << s) (Python checks that it
 * cannot overflow). q = {M, rnd, s}; the result is saturated to int8. */
static inline int32_t cuvil_rq(int32_t acc, int32_t m, int32_t rnd, int32_t s)
{
    int32_t r;
    __asm__("smmla %0, %1, %2, %3" : "=r"(r) : "r"(acc), "r"(m), "r"(rnd));
    r >>= s;
    __asm__("ssat %0, #8, %1" : "=r"(r) : "r"(r));
    return r;
}

/* Four int8 lanes clamped to [lo, hi] (lo4/hi4: the bound in every byte). */
static inline uint32_t cuvil_clamp4(uint32_t v, uint32_t lo4, uint32_t hi4)
{
    uint32_t t;
    __asm__("ssub8 %[t], %[v], %[lo]\n\t"
            "sel %[v], %[v], %[lo]\n\t"
            "ssub8 %[t], %[hi], %[v]\n\t"
            "sel %[v], %[v], %[hi]"
            : [v] "+r"(v), [t] "=&r"(t) : [lo] "r"(lo4), [hi] "r"(hi4) : "cc");
    return v;
}

/* Bytes b0 | b1 << 8 | b2 << 16 | b3 << 24 of four int8 results. */
static inline uint32_t cuvil_pack4(int32_t b0, int32_t b1, int32_t b2, int32_t b3)
{
    uint32_t v = (uint32_t)b0;
    __asm__("bfi %0, %1, #8, #8\n\t"
            "bfi %0, %2, #16, #8\n\t"
            "bfi %0, %3, #24, #8"
            : "+&r"(v) : "r"(b1), "r"(b2), "r"(b3));
    return v;
}
#endif /* CUVIL_DSP_COMMON_H */
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
