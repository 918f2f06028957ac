/* Shared helpers of the helium kernel set (Armv8.1-M MVE, Cortex-M55): copied into a generated
 * project with any of its kernels. Generated code, do not edit. */
#ifndef CUVIL_MVE_COMMON_H
#define CUVIL_MVE_COMMON_H
#include <arm_mve.h>
#include <stdint.h>
#if !defined(__ARM_FEATURE_MVE) || !defined(__thumb2__)
#error "the helium kernels need the M-profile Vector Extension (-mcpu=cortex-m55 -mthumb)"
#endif

/* The rounding rule of cuvil_requant (sdk/kernels/requant.py), y = clamp(zy + ((acc * M +
 * 2^(S-1)) >> S), lo, hi), on 4 int32 lanes that share M and S, for S >= 33: VMULH gives
 * floor(acc * M / 2^32) exactly, and VRSHL by 32 - S its rounding shift right by S - 32,
 * (hi + 2^(S-33)) >> (S - 32), which is (acc * M + 2^(S-1)) >> S: the rounding constant is a
 * multiple of 2^32, so flooring the product first changes nothing. |hi| <= 2^30, so nothing
 * overflows for any int32 accumulator. (VQRDMULH, TFLite's form, rounds twice and differs.) */
static inline int32x4_t cuvil_mve_rq(int32x4_t acc, int32_t m, int32_t s, int32_t zy, int32_t lo, int32_t hi)
{
    int32x4_t v = vrshlq_n_s32(vmulhq_s32(acc, vdupq_n_s32(m)), 32 - s);
    v = vaddq_n_s32(v, zy);
    return vminq_s32(vmaxq_s32(v, vdupq_n_s32(lo)), vdupq_n_s32(hi));
}

/* The same with a multiplier and a shift per lane: m, and r = 32 - S as the kernels keep it for
 * layers whose shifts are all >= 33 (rules.py, quad_requant), the VRSHL operand itself. */
static inline int32x4_t cuvil_mve_rqv(int32x4_t acc, int32x4_t m, int32x4_t r, int32_t zy, int32_t lo, int32_t hi)
{
    int32x4_t v = vrshlq_s32(vmulhq_s32(acc, m), r);
    v = vaddq_n_s32(v, zy);
    return vminq_s32(vmaxq_s32(v, vdupq_n_s32(lo)), vdupq_n_s32(hi));
}

/* Stores the low bytes of 4 lanes, the first `left` of them when fewer than 4 are left (a
 * predicated store only then: the others skip setting the predicate). */
static inline void cuvil_mve_store4(int8_t *dst, int32x4_t y, int left)
{
    if (left >= 4) {
        vstrbq_s32(dst, y);
    } else {
        vstrbq_p_s32(dst, y, vctp32q((uint32_t)left));
    }
}

/* Any shift S in [1, 62]: cuvil_requant (64-bit) lane by lane, for the layers whose shifts do
 * not all reach 33 (Python's `fastq` = 0). */
static inline int32x4_t cuvil_mve_rq64(int32x4_t acc, int32x4_t m, int32x4_t s, int32_t zy, int32_t lo, int32_t hi)
{
    int32x4_t y = vdupq_n_s32(0);
    y = vsetq_lane_s32(cuvil_requant(vgetq_lane_s32(acc, 0), vgetq_lane_s32(m, 0), vgetq_lane_s32(s, 0), zy, lo, hi), y, 0);
    y = vsetq_lane_s32(cuvil_requant(vgetq_lane_s32(acc, 1), vgetq_lane_s32(m, 1), vgetq_lane_s32(s, 1), zy, lo, hi), y, 1);
    y = vsetq_lane_s32(cuvil_requant(vgetq_lane_s32(acc, 2), vgetq_lane_s32(m, 2), vgetq_lane_s32(s, 2), zy, lo, hi), y, 2);
    y = vsetq_lane_s32(cuvil_requant(vgetq_lane_s32(acc, 3), vgetq_lane_s32(m, 3), vgetq_lane_s32(s, 3), zy, lo, hi), y, 3);
    return y;
}

/* `count` pixels' 4 channels (acc, acc + acc_step, ...) requantized with the channels' m and r
 * (cuvil_mve_rqv; S in r and the 64-bit rule when !fastq) and stored at dst, dst + dst_step, ...;
 * `left` channels are stored when fewer than 4 are left. The branches stay outside the loops, so
 * each stays a low-overhead loop. */
static inline void cuvil_mve_rq_pixels(const int32_t *acc, int acc_step, int32x4_t m, int32x4_t r, int8_t *dst,
                                       long dst_step, int count, int left, int fastq, int32_t zy, int32_t lo,
                                       int32_t hi)
{
    if (!fastq) {
        for (int j = 0; j < count; j++, acc += acc_step, dst += dst_step) {
            cuvil_mve_store4(dst, cuvil_mve_rq64(vld1q_s32(acc), m, r, zy, lo, hi), left);
        }
    } else if (left >= 4) {
        for (int j = 0; j < count; j++, acc += acc_step, dst += dst_step) {
            vstrbq_s32(dst, cuvil_mve_rqv(vld1q_s32(acc), m, r, zy, lo, hi));
        }
    } else {
        const mve_pred16_t valid = vctp32q((uint32_t)left);
        for (int j = 0; j < count; j++, acc += acc_step, dst += dst_step) {
            vstrbq_p_s32(dst, cuvil_mve_rqv(vld1q_s32(acc), m, r, zy, lo, hi), valid);
        }
    }
}

/* Copies of n bytes (any n >= 0) in a tail-predicated low-overhead loop: 16 bytes per VLDRB/VSTRB
 * pair, the last iteration predicated by the loop itself (nothing past src + n is read or past the
 * run written); the destination advances by STEP bytes per 16: 16 for a contiguous copy, 64 for a
 * column of conv2d_s8_mve's interleaved tile. The fill stores the byte v the same way. */
#define CUVIL_MVE_COPY_FILL(copy, fill, STEP)                                                             \
    static inline void copy(int8_t *dst, const int8_t *src, int n)                                        \
    {                                                                                                     \
        __asm__ volatile("wlstp.8 lr, %[n], 2f\n"                                                         \
                         "1:\n\t"                                                                         \
                         "vldrb.8 q0, [%[s]], #16\n\t"                                                    \
                         "vstrb.8 q0, [%[d]], #" #STEP "\n\t"                                             \
                         "letp lr, 1b\n"                                                                  \
                         "2:"                                                                             \
                         : [d] "+r"(dst), [s] "+r"(src)                                                   \
                         : [n] "r"(n)                                                                     \
                         : "lr", "q0", "memory");                                                         \
    }                                                                                                     \
    static inline void fill(int8_t *dst, int32_t v, int n)                                                \
    {                                                                                                     \
        __asm__ volatile("vdup.8 q0, %[v]\n\t"                                                            \
                         "wlstp.8 lr, %[n], 2f\n"                                                         \
                         "1:\n\t"                                                                         \
                         "vstrb.8 q0, [%[d]], #" #STEP "\n\t"                                             \
                         "letp lr, 1b\n"                                                                  \
                         "2:"                                                                             \
                         : [d] "+r"(dst)                                                                  \
                         : [n] "r"(n), [v] "r"(v)                                                         \
                         : "lr", "q0", "memory");                                                         \
    }

CUVIL_MVE_COPY_FILL(cuvil_mve_copy, cuvil_mve_fill, 16)

#endif
