/* Shared helpers of the cortex_m_dsp kernel set: copied into a generated project with any of its kernels. */
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
/* Sign-extended bytes 0 and 2 of x (two 16-bit lanes); _r8: bytes 1 and 3 (int8 weights). */
static inline uint32_t cuvil_sxtb16(uint32_t x)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(x));
    return r;
}
static inline uint32_t cuvil_sxtb16_r8(uint32_t x)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
static inline uint32_t cuvil_smlad(uint32_t x, uint32_t y, uint32_t acc)
{
    uint32_t r;
    __asm__("smlad %0, %1, %2, %3" : "=r"(r) : "r"(x), "r"(y), "r"(acc));
    return r;
}

/* The 4 weights of one channel for 4 column values as the column's two int16 pairs: int16
 * weights are stored that way, int8 ones as 4 bytes widened by SXTB16 (bytes 0, 2; 1, 3). */
static inline void cuvil_w4(const int16_t *w, int w8, uint32_t *lo, uint32_t *hi)
{
    if (w8) {
        const uint32_t v = cuvil_ld32(w);
        *lo = cuvil_sxtb16(v);
        *hi = cuvil_sxtb16_r8(v);
    } else {
        *lo = cuvil_ld32(w);
        *hi = cuvil_ld32(w + 2);
    }
}

/* The rounding rule of cuvil_requant for any multiplier and shift S in [1, 62], exact for every
 * int32 accumulator (the portable kernels' accumulator type), output zero point zy added, the
 * result saturated to int8. q = {M, rnd, s} per channel (kset_cortex_m_dsp.fast_requant):
 *  - S >= 33: s = S - 32, rnd = 2^(s-1): SMMLA gives hi32(acc * M) + rnd, and
 *    (hi32(acc * M) + 2^(s-1)) >> s == (acc * M + 2^(S-1)) >> S; |hi32| <= 2^30 and
 *    rnd <= 2^29, so nothing overflows for any acc (the assembly blocks use this form only);
 *  - S <= 32: s = 0 and rnd = S: the 64-bit product, as cuvil_requant. */
static inline int32_t cuvil_rq(int32_t acc, int32_t m, int32_t rnd, int32_t s, int32_t zy)
{
    int32_t r;
    if (s > 0) {
        __asm__("smmla %0, %1, %2, %3" : "=r"(r) : "r"(acc), "r"(m), "r"(rnd));
        r = (r >> s) + zy;
    } else {
        const int64_t v = (((int64_t)acc * m + ((int64_t)1 << (rnd - 1))) >> rnd) + zy;
        r = v > 127 ? 127 : (v < -128 ? -128 : (int32_t)v); /* saturated in 64 bits: v may pass int32 */
    }
    __asm__("ssat %0, #8, %1" : "=r"(r) : "r"(r));
    return r;
}

/* In an assembly block: the output zero point (register Z) added to the four shifted results
 * r8-r11, each saturated to int8 (the end of cuvil_rq for four outputs). */
#define CUVIL_ASM_ZY_SAT4(Z)                  \
    "add r8, r8, " Z "\n\t"                   \
    "add r9, r9, " Z "\n\t"                   \
    "add r10, r10, " Z "\n\t"                 \
    "add r11, r11, " Z "\n\t"                 \
    "ssat r8, #8, r8\n\t"                     \
    "ssat r9, #8, r9\n\t"                     \
    "ssat r10, #8, r10\n\t"                   \
    "ssat r11, #8, r11\n\t"

/* A noinline function around an assembly block that walks a weight stream: the stream
 * position (field w of the TYPE struct) in r1, the struct in r2, r7 saved by the block itself. */
#define CUVIL_ASM_STREAM_FN(NAME, TYPE, BLOCK)                                                                 \
    static void __attribute__((noinline)) NAME(TYPE *s)                                                        \
    {                                                                                                          \
        register const int16_t *w __asm__("r1") = s->w;                                                        \
        register TYPE *sr __asm__("r2") = s;                                                                   \
        __asm__ volatile(BLOCK                                                                                 \
                         : "+r"(w)                                                                             \
                         : "r"(sr)                                                                             \
                         : "r0", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory"); \
        s->w = w;                                                                                              \
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
