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

/* The word loop's constants (cuvil_add_words), in the order its LDM takes them. */
struct cuvil_add_w {
    int32_t ma8, mb8; /* 0, 4: ma << 8, mb << 8 */
    uint32_t c0;      /* 8 */
    int32_t f;        /* 12: 2^(32 - shift) */
    int32_t zy;       /* 16 */
    uint32_t lo4, hi4; /* 20, 24 */
};

/* `words` x 4 outputs of a same-shape run, 35 instructions per word, exact: SMLAWB/T of ma << 8
 * with a lane holding a << 8 (the word's odd bytes masked by 0xFF00FF00, its even bytes shifted
 * up first) is ((ma * a) << 16) >> 16 = ma * a, accumulated onto c0 and then mb * b (wrapping,
 * as the C form); SMMLA with 2^(32 - shift) and zy gives zy + (sum >> shift) (shift >= 2).
 * Each word of a and b is read before the word of out at the same offset is written: out may
 * be a or b itself (in place). r7 (the Thumb frame pointer) is saved by the block itself. */
static void __attribute__((noinline)) cuvil_add_words(const int8_t *a, const int8_t *b, int8_t *out, int words,
                                                      const struct cuvil_add_w *k)
{
    register const int8_t *ra __asm__("r0") = a;
    register const int8_t *rb __asm__("r1") = b;
    register int8_t *ro __asm__("r2") = out;
    register int rn __asm__("r3") = words;
    register const struct cuvil_add_w *rk __asm__("r12") = k;
    __asm__ volatile(
        "push {r7}\n\t"
        "ldrd r10, r11, [r12, #20]\n\t"
        "push {r10, r11}\n\t"
        "ldm r12, {r4, r5, r6, r8, r9}\n\t"
        "1:\n\t"
        "ldr r10, [r0], #4\n\t"
        "ldr r11, [r1], #4\n\t"
        "lsl r12, r10, #8\n\t"
        "and r12, r12, #0xff00ff00\n\t"
        "lsl lr, r11, #8\n\t"
        "and lr, lr, #0xff00ff00\n\t"
        "smlawb r7, r4, r12, r6\n\t"
        "smlawt r12, r4, r12, r6\n\t"
        "smlawb r7, r5, lr, r7\n\t"
        "smlawt r12, r5, lr, r12\n\t"
        "smmla r7, r7, r8, r9\n\t"
        "smmla r12, r12, r8, r9\n\t"
        "ssat r7, #8, r7\n\t"
        "ssat r12, #8, r12\n\t"
        "bfi r7, r12, #16, #8\n\t"
        "and r10, r10, #0xff00ff00\n\t"
        "and r11, r11, #0xff00ff00\n\t"
        "smlawb r12, r4, r10, r6\n\t"
        "smlawt r10, r4, r10, r6\n\t"
        "smlawb r12, r5, r11, r12\n\t"
        "smlawt r10, r5, r11, r10\n\t"
        "smmla r12, r12, r8, r9\n\t"
        "smmla r10, r10, r8, r9\n\t"
        "ssat r12, #8, r12\n\t"
        "ssat r10, #8, r10\n\t"
        "bfi r7, r12, #8, #8\n\t"
        "bfi r7, r10, #24, #8\n\t"
        "ldrd r12, lr, [sp]\n\t"
        "ssub8 r11, r7, r12\n\t"
        "sel r7, r7, r12\n\t"
        "ssub8 r11, lr, r7\n\t"
        "sel r7, r7, lr\n\t"
        "str r7, [r2], #4\n\t"
        "subs r3, r3, #1\n\t"
        "bne 1b\n\t"
        "add sp, sp, #8\n\t"
        "pop {r7}"
        : "+r"(ra), "+r"(rb), "+r"(ro), "+r"(rn), "+r"(rk)
        :
        : "r4", "r5", "r6", "r8", "r9", "r10", "r11", "lr", "cc", "memory");
}

/* One innermost run of `len` outputs; sa/sb: 1 (contiguous) or 0 (one value broadcast).
 * Both contiguous (the same-shape add and per-channel broadcasting in NHWC): whole words through
 * cuvil_add_words (w: its constants, 0 when a shift below 2 leaves every run to C), the rest in C.
 * Every element is read before the output at its index is written (in place: out == a or b). */
static void cuvil_add_run(const struct cuvil_add *k, const struct cuvil_add_w *w, const int8_t *a, const int8_t *b,
                          int8_t *out, int len, int sa, int sb)
{
    int i = 0;
    if (sa == 1 && sb == 1 && w && len >= 4) {
        cuvil_add_words(a, b, out, len >> 2, w);
        i = len & ~3;
        a += i;
        b += i;
        out += i;
    }
    for (; i < len; i++, a += sa, b += sb, out++) {
        *out = (int8_t)cuvil_clamp4((uint32_t)cuvil_add1(*a, *b, k->ma, k->mb, k->c0, k->shift, k->zy), k->lo4, k->hi4);
    }
}

/* int8 add with 4-D broadcasting (element strides per input, 0 = broadcast), as add_s8 bit for
 * bit; Python merges contiguous dimensions first, so the innermost run is as long as it can be.
 * In place: out may be a or b itself (the same buffer, not a shifted one) when that input has the
 * output's shape (declarations.py says so to the planner). */
static void add_s8_dsp(const int8_t *a, const int8_t *b, int8_t *out, int d0, int d1, int d2, int d3, int sa0, int sa1,
                       int sa2, int sa3, int sb0, int sb1, int sb2, int sb3, int32_t ma, int32_t mb, uint32_t c0,
                       int32_t shift, int32_t zy, uint32_t lo4, uint32_t hi4)
{
    const struct cuvil_add k = {ma, mb, shift, zy, c0, lo4, hi4};
    const struct cuvil_add_w kw = {(int32_t)((uint32_t)ma << 8), (int32_t)((uint32_t)mb << 8), c0,
                                   shift >= 2 ? (int32_t)(1u << (32 - shift)) : 0, zy, lo4, hi4};
    const struct cuvil_add_w *w = shift >= 2 ? &kw : 0;
    for (int i0 = 0; i0 < d0; i0++)
        for (int i1 = 0; i1 < d1; i1++)
            for (int i2 = 0; i2 < d2; i2++, out += d3) {
                const long oa = (long)i0 * sa0 + (long)i1 * sa1 + (long)i2 * sa2;
                const long ob = (long)i0 * sb0 + (long)i1 * sb1 + (long)i2 * sb2;
                cuvil_add_run(&k, w, a + oa, b + ob, out, d3, sa3, sb3);
            }
}
