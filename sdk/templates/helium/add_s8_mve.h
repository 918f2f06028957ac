/* Helium (Armv8.1-M MVE) kernel set, cuvil-sdk. Generated code, do not edit.
 * add_s8_mve: int8 element-wise add with 4-D broadcasting, 4 int32 lanes; constants from
 * cuvil_sdk/kernels/helium/rules.py. */
#include "cuvil_mve_common.h"

/* 4 values of an operand along the innermost axis: contiguous (stride 1), one value broadcast
 * (stride 0) or gathered at the stride; lanes past the run are not read (predicated). */
static inline int32x4_t cuvil_mve_add_load(const int8_t *p, int stride, uint32x4_t offsets, mve_pred16_t valid)
{
    if (stride == 1) return vldrbq_z_s32(p, valid);
    if (stride == 0) return vdupq_n_s32(*p);
    return vldrbq_gather_offset_z_s32(p, offsets, valid);
}

/* A run of n elements where both operands are contiguous: 4 int32 lanes per pass of a
 * tail-predicated loop (DLSTP/LETP: nothing past the run is read or written), 11 instructions.
 * VLDRB.S32 with write-back takes low base registers only. */
static inline void cuvil_mve_add_run(const int8_t *a, const int8_t *b, int8_t *out, int n, int32_t ma, int32_t mb,
                                     uint32_t c0, int32_t shift, int32_t zy, int32x4_t vlo, int32x4_t vhi)
{
    __asm__ volatile("dlstp.32 lr, %[n]\n"
                     "1:\n\t"
                     "vldrb.s32 q0, [%[a]], #4\n\t"
                     "vldrb.s32 q1, [%[b]], #4\n\t"
                     "vmul.i32 q0, q0, %[ma]\n\t"
                     "vmla.s32 q0, q1, %[mb]\n\t"
                     "vadd.i32 q0, q0, %[c0]\n\t"
                     "vshl.s32 q0, %[sh]\n\t"
                     "vadd.i32 q0, q0, %[zy]\n\t"
                     "vmax.s32 q0, q0, %q[lo]\n\t"
                     "vmin.s32 q0, q0, %q[hi]\n\t"
                     "vstrb.32 q0, [%[o]], #4\n\t"
                     "letp lr, 1b"
                     : [a] "+l"(a), [b] "+l"(b), [o] "+l"(out)
                     : [n] "r"(n), [ma] "r"(ma), [mb] "r"(mb), [c0] "r"(c0), [sh] "r"(-shift), [zy] "r"(zy),
                       [lo] "w"(vlo), [hi] "w"(vhi)
                     : "lr", "q0", "q1", "memory");
}

/* y = clamp(zy + ((a * ma + b * mb + c0) >> shift), lo, hi), as add_s8 bit for bit: Python folded
 * the zero points and the rounding term into c0 = 2^(shift-1) - za * ma - zb * mb modulo 2^32,
 * so the wrapping int32 lanes reach add_s8's sum, an int32 value, exactly. Geometry: output dims
 * d0..d3 (contiguous), element strides of a and b per axis (0 where broadcast). Each vector of a
 * and b is read before the vector of out at the same place is written: out may be a or b itself. */
static void add_s8_mve(const int8_t *a, const int8_t *b, int8_t *out, int d0, int d1, int d2, int d3, int sa0, int sa1,
                       int sa2, int sa3, int sb0, int sb1, int sb2, int sb3, int32_t ma, int32_t mb, uint32_t c0,
                       int32_t shift, int32_t zy, int32_t lo, int32_t hi)
{
    const uint32x4_t ia = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)sa3);
    const uint32x4_t ib = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)sb3);
    const int32x4_t vlo = vdupq_n_s32(lo), vhi = vdupq_n_s32(hi);
    for (int i0 = 0; i0 < d0; i0++)
        for (int i1 = 0; i1 < d1; i1++)
            for (int i2 = 0; i2 < d2; i2++) {
                const int8_t *pa = a + (long)i0 * sa0 + (long)i1 * sa1 + (long)i2 * sa2;
                const int8_t *pb = b + (long)i0 * sb0 + (long)i1 * sb1 + (long)i2 * sb2;
                if (sa3 == 1 && sb3 == 1) {
                    cuvil_mve_add_run(pa, pb, out, d3, ma, mb, c0, shift, zy, vlo, vhi);
                    out += d3;
                    continue;
                }
                for (int i3 = 0; i3 < d3; i3 += 4, pa += 4 * sa3, pb += 4 * sb3, out += 4) {
                    const int left = d3 - i3;
                    const mve_pred16_t valid = vctp32q((uint32_t)left);
                    int32x4_t v = vmulq_n_s32(cuvil_mve_add_load(pa, sa3, ia, valid), ma);
                    v = vmlaq_n_s32(v, cuvil_mve_add_load(pb, sb3, ib, valid), mb);
                    v = vshlq_r_s32(vaddq_n_s32(v, (int32_t)c0), -shift);
                    v = vminq_s32(vmaxq_s32(vaddq_n_s32(v, zy), vlo), vhi);
                    vstrbq_p_s32(out, v, valid);
                    if (left < 4) out -= 4 - left;
                }
            }
}
