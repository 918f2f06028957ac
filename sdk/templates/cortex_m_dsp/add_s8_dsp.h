/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * add_s8_dsp: element-wise add with 4-D broadcasting; constants come from cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
/* y = clamp(zy + ((a * ma + b * mb + c0) >> shift), lo, hi) where Python folded the input zero
 * points and the rounding term into c0 = 2^(shift-1) - za*ma - zb*mb (taken modulo 2^32: the
 * sum is add_s8's (a - za) * ma + (b - zb) * mb + 2^(shift-1), an int32 value, so wrapping
 * unsigned arithmetic gives it exactly whatever the order of the terms). */
static inline int32_t cuvil_add1(int32_t a, int32_t b, int32_t ma, int32_t mb, uint32_t c0, int32_t shift,
                                 int32_t zy)
{
    int32_t v = ((int32_t)(c0 + (uint32_t)a * (uint32_t)ma + (uint32_t)b * (uint32_t)mb) >> shift) + zy;
    __asm__("ssat %0, #8, %1" : "=r"(v) : "r"(v));
    return v;
}

struct cuvil_add {
    int32_t ma, mb, shift, zy;
    uint32_t c0, lo4, hi4;
};

/* One innermost run of `len` outputs; sa/sb: 1 (contiguous) or 0 (one value broadcast).
 * Both contiguous (the same-shape add and per-channel broadcasting in NHWC): 4 per step,
 * one 4-lane clamp and one word store. */
static void cuvil_add_run(const struct cuvil_add *k, const int8_t *a, const int8_t *b, int8_t *out, int len, int sa,
                          int sb)
{
    int i = 0;
    if (sa == 1 && sb == 1) {
        for (; i + 4 <= len; i += 4, a += 4, b += 4, out += 4) {
            const int32_t y0 = cuvil_add1(a[0], b[0], k->ma, k->mb, k->c0, k->shift, k->zy);
            const int32_t y1 = cuvil_add1(a[1], b[1], k->ma, k->mb, k->c0, k->shift, k->zy);
            const int32_t y2 = cuvil_add1(a[2], b[2], k->ma, k->mb, k->c0, k->shift, k->zy);
            const int32_t y3 = cuvil_add1(a[3], b[3], k->ma, k->mb, k->c0, k->shift, k->zy);
            cuvil_st32(out, cuvil_clamp4(cuvil_pack4(y0, y1, y2, y3), k->lo4, k->hi4));
        }
    }
    for (; i < len; i++, a += sa, b += sb, out++) {
        *out = (int8_t)cuvil_clamp4((uint32_t)cuvil_add1(*a, *b, k->ma, k->mb, k->c0, k->shift, k->zy), k->lo4, k->hi4);
    }
}

/* int8 add with 4-D broadcasting (element strides per input, 0 = broadcast), as add_s8 bit for
 * bit; Python merges contiguous dimensions first, so the innermost run is as long as it can be. */
static void add_s8_dsp(const int8_t *a, const int8_t *b, int8_t *out, int d0, int d1, int d2, int d3, int sa0, int sa1,
                       int sa2, int sa3, int sb0, int sb1, int sb2, int sb3, int32_t ma, int32_t mb, uint32_t c0,
                       int32_t shift, int32_t zy, uint32_t lo4, uint32_t hi4)
{
    const struct cuvil_add k = {ma, mb, shift, zy, c0, lo4, hi4};
    for (int i0 = 0; i0 < d0; i0++)
        for (int i1 = 0; i1 < d1; i1++)
            for (int i2 = 0; i2 < d2; i2++, out += d3) {
                const long oa = (long)i0 * sa0 + (long)i1 * sa1 + (long)i2 * sa2;
                const long ob = (long)i0 * sb0 + (long)i1 * sb1 + (long)i2 * sb2;
                cuvil_add_run(&k, a + oa, b + ob, out, d3, sa3, sb3);
            }
}
