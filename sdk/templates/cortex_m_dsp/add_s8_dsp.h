/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * add_s8_dsp: element-wise add of same-shape tensors; constants come from cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
/* int8 element-wise add of two tensors of the same shape, as add_s8 bit for bit:
 * y = clamp(((a * ma + b * mb + c0) >> shift), lo, hi) where Python folded the zero points,
 * the rounding term and the output zero point into c0 = 2^(shift-1) - za*ma - zb*mb + (zy << shift)
 * (only when no int32 sum can overflow). 4 elements per step: two MLAs each, SSAT, then one
 * 4-lane clamp and one word store. */
static inline int32_t cuvil_add1(int32_t a, int32_t b, int32_t ma, int32_t mb, int32_t c0, int32_t shift)
{
    int32_t v = (c0 + a * ma + b * mb) >> shift;
    __asm__("ssat %0, #8, %1" : "=r"(v) : "r"(v));
    return v;
}

static void add_s8_dsp(const int8_t *a, const int8_t *b, int8_t *out, int size, int32_t ma, int32_t mb, int32_t c0,
                       int32_t shift, uint32_t lo4, uint32_t hi4)
{
    const int8_t *end4 = a + (size & ~3);
    for (; a < end4; a += 4, b += 4, out += 4) {
        const int32_t y0 = cuvil_add1(a[0], b[0], ma, mb, c0, shift), y1 = cuvil_add1(a[1], b[1], ma, mb, c0, shift);
        const int32_t y2 = cuvil_add1(a[2], b[2], ma, mb, c0, shift), y3 = cuvil_add1(a[3], b[3], ma, mb, c0, shift);
        cuvil_st32(out, cuvil_clamp4(cuvil_pack4(y0, y1, y2, y3), lo4, hi4));
    }
    for (int i = 0; i < (size & 3); i++) {
        out[i] = (int8_t)cuvil_clamp4((uint32_t)cuvil_add1(a[i], b[i], ma, mb, c0, shift), lo4, hi4);
    }
}
