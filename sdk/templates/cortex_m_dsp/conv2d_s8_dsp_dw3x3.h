/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * conv2d_s8_dsp_dw3x3: depthwise 3x3 convolution, stride 1 or 2, 4 outputs per SMLAD block on
 * int16 row planes; layouts and constants come from cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
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
/* ---- cuvil_dsp_dwrow (identical in every cortex_m_dsp depthwise header) ----
 * Depthwise kernels keep the input rows they need as int16 (x - zx) planes: one row of a chunk
 * of cc channels is cc planes of wp values, plane ch holding channel ch of every pixel at
 * column pl + ix (columns of the left and right padding stay 0 = zx - zx). Horizontally
 * adjacent taps of one channel are then adjacent int16 values, a pair for one SMLAD. Rows
 * live in a ring of kh slots on the stack (row iy in slot iy % kh); a padded row reads a
 * zero plane. Channels go in chunks that fit the ring, so no input is converted twice. */
#ifndef CUVIL_DSP_DWROW_H
#define CUVIL_DSP_DWROW_H
#define CUVIL_DSP_DW_VALUES 2048 /* row ring (stack), int16 values: 4 KiB; kh * 4 * wp + wp <= this */

static inline uint32_t cuvil_pkhbt(uint32_t lo, uint32_t hi)
{
    uint32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo), "r"(hi));
    return r;
}
static inline uint32_t cuvil_pkhtb(uint32_t hi, uint32_t lo)
{
    uint32_t r;
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(r) : "r"(hi), "r"(lo));
    return r;
}

/* Channels [0, cc) of input row `src` (w pixels, `c` bytes apart) into planes at dst
 * (dst[ch * wp + pl + ix]); 4 channels x 2 pixels per step. */
static void cuvil_dw_row(const int8_t *src, int16_t *dst, int w, int cc, long c, int wp, int pl, uint32_t nzx2,
                         int32_t zx)
{
    const int c4 = cc & ~3;
    for (int ch = 0; ch < c4; ch += 4) {
        int16_t *d = dst + ch * wp + pl;
        const int8_t *s = src + ch;
        int ix = 0;
        for (; ix + 2 <= w; ix += 2, s += 2 * c) {
            const uint32_t a = cuvil_ld32(s), b = cuvil_ld32(s + c);
            const uint32_t a02 = cuvil_sxtab16(nzx2, a), a13 = cuvil_sxtab16_r8(nzx2, a);
            const uint32_t b02 = cuvil_sxtab16(nzx2, b), b13 = cuvil_sxtab16_r8(nzx2, b);
            cuvil_st32(d + ix, cuvil_pkhbt(a02, b02));
            cuvil_st32(d + wp + ix, cuvil_pkhbt(a13, b13));
            cuvil_st32(d + 2 * wp + ix, cuvil_pkhtb(b02, a02));
            cuvil_st32(d + 3 * wp + ix, cuvil_pkhtb(b13, a13));
        }
        if (ix < w) {
            const uint32_t a = cuvil_ld32(s);
            const uint32_t a02 = cuvil_sxtab16(nzx2, a), a13 = cuvil_sxtab16_r8(nzx2, a);
            d[ix] = (int16_t)a02;
            d[wp + ix] = (int16_t)a13;
            d[2 * wp + ix] = (int16_t)(a02 >> 16);
            d[3 * wp + ix] = (int16_t)(a13 >> 16);
        }
    }
    for (int t = 0; t < (cc & 3); t++) {
        int16_t *d = dst + (c4 + t) * wp + pl;
        const int8_t *s = src + c4 + t;
        for (int ix = 0; ix < w; ix++, s += c) d[ix] = (int16_t)(*s - zx);
    }
}

/* The geometry is that of the image as the kernel walks it: rows of wd pixels. A transposed
 * walk (rows = the image's columns) only swaps the sizes and strides, which Python sets. */
struct cuvil_dw {
    const int8_t *in;  /* input, at the chunk's first channel */
    int8_t *out;       /* output, at the chunk's first channel */
    const int16_t *w;  /* weight stream, at the chunk's first channel */
    int16_t *ring, *zero;
    int n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl, wp, cc, stream;
    long in_row, in_pix, out_row, out_pix; /* bytes between rows / adjacent pixels of a row */
    uint32_t nzx2, lo4, hi4;
    int32_t zx;
};

/* Per output row of the chunk: convert the input rows it needs that are not in the ring yet,
 * then call row(k, oy, rows) with rows[ky] = the ring slot of input row oy*sh - pt + ky, or
 * the zero plane. */
static void cuvil_dw_chunk(struct cuvil_dw *k, void (*row)(const struct cuvil_dw *, int, const int16_t *const *))
{
    const int16_t *rows[16];
    for (int b = 0; b < k->n; b++) {
        const int8_t *in_b = k->in + (long)b * k->h * k->wd * k->c;
        int next = 0;
        for (int oy = 0; oy < k->oh; oy++) {
            const int iy0 = oy * k->sh - k->pt;
            for (int ky = 0; ky < k->kh; ky++) {
                const int iy = iy0 + ky;
                if (iy < 0 || iy >= k->h) {
                    rows[ky] = k->zero;
                    continue;
                }
                int16_t *slot = k->ring + (iy % k->kh) * k->cc * k->wp;
                if (iy >= next) {
                    cuvil_dw_row(in_b + iy * k->in_row, slot, k->wd, k->cc, k->in_pix, k->wp, k->pl, k->nzx2, k->zx);
                    next = iy + 1;
                }
                rows[ky] = slot;
            }
            row(k, b * k->oh + oy, rows);
        }
    }
}

/* The depthwise driver: channel chunks of at most cc (a multiple of 4 that fits the ring). */
static void cuvil_dw_run(const struct cuvil_dw *args, int cc_max,
                         void (*row)(const struct cuvil_dw *, int, const int16_t *const *))
{
    int16_t ring[CUVIL_DSP_DW_VALUES] __attribute__((aligned(8)));
    struct cuvil_dw k = *args;
    for (int i = 0; i < (k.kh * cc_max + 1) * k.wp; i++) ring[i] = 0;
    k.ring = ring;
    k.zero = ring + k.kh * cc_max * k.wp;
    for (int ch0 = 0; ch0 < args->c; ch0 += cc_max) {
        k.cc = args->c - ch0 < cc_max ? args->c - ch0 : cc_max;
        k.in = args->in + ch0;
        k.out = args->out + ch0;
        k.w = args->w + (long)ch0 * k.stream;
        cuvil_dw_chunk(&k, row);
    }
}
#endif /* CUVIL_DSP_DWROW_H */
/* ---- end cuvil_dsp_dwrow ---- */
/* Weight stream per channel (kset_cortex_m_dsp.py), 19 words:
 *   [bias x 4] then per kernel row [w0 w1] [w2 0] [0 w0] [w1 w2] (int16 pairs), then [M, rnd, s].
 * Stride 1: with the row's values x0..x5 from column ox as pairs [x0 x1] [x2 x3] [x4 x5],
 * outputs ox..ox+3 are [x0 x1].[w0 w1] + [x2 x3].[w2 0], [x0 x1].[0 w0] + [x2 x3].[w1 w2], and
 * the same from [x2 x3] [x4 x5]: 8 SMLAD per row for 12 MACs, each pair loaded once.
 * Stride 2: from pairs P0..P4 at column 2*ox, output ox+j is P(j).[w0 w1] + P(j+1).[w2 0]. */
struct cuvil_dw3 {
    const int16_t *r0, *r1, *r2; /* 0, 4, 8: the channel's plane in kernel rows 0, 1, 2 */
    const int16_t *w;            /* 12: the channel's stream */
    int8_t *out;                 /* 16: the first output of the row */
    int32_t step;                /* 20: bytes between horizontally adjacent outputs */
    uint32_t lo4, hi4;           /* 24, 28: output clamp in every byte */
    int32_t count;               /* 32: outputs in the row (the last block stores 1-4) */
};

#define CUVIL_DW3_ROW_S1(R)                   \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "ldmia r12!, {r4, r5, r6, r7}\n\t"        \
    "smlad r8, lr, r4, r8\n\t"                \
    "smlad r8, r0, r5, r8\n\t"                \
    "smlad r9, lr, r6, r9\n\t"                \
    "smlad r9, r0, r7, r9\n\t"                \
    "smlad r10, r0, r4, r10\n\t"              \
    "smlad r11, r0, r6, r11\n\t"              \
    "ldr lr, [" R "]\n\t"                     \
    "smlad r10, lr, r5, r10\n\t"              \
    "smlad r11, lr, r7, r11\n\t"
#define CUVIL_DW3_ROW_S2(R)                   \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "ldmia r12!, {r4, r5, r6, r7}\n\t"        \
    "smlad r8, lr, r4, r8\n\t"                \
    "smlad r8, r0, r5, r8\n\t"                \
    "smlad r9, r0, r4, r9\n\t"                \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "smlad r9, lr, r5, r9\n\t"                \
    "smlad r10, lr, r4, r10\n\t"              \
    "smlad r10, r0, r5, r10\n\t"              \
    "smlad r11, r0, r4, r11\n\t"              \
    "ldr lr, [" R "]\n\t"                     \
    "smlad r11, lr, r5, r11\n\t"
/* The block loop: bias, three kernel rows (ROW), requantization, clamp, then 4 strided byte
 * stores (fewer in the last block). Registers: r8-r11 outputs, r1/r3/r2 the rows, r12 stream. */
#define CUVIL_DW3_BLOCKS(ROW)                 \
    "ldr r12, [r2, #12]\n\t"                  \
    "ldr r1, [r2, #0]\n\t"                    \
    "ldr r3, [r2, #4]\n\t"                    \
    "ldr r2, [r2, #8]\n\t"                    \
    "2:\n\t"                                  \
    "ldmia r12!, {r8, r9, r10, r11}\n\t"      \
    ROW("r1") ROW("r3") ROW("r2")             \
    "ldmia r12, {r4, r5, r6}\n\t"             \
    "sub r12, r12, #64\n\t"                   \
    "smmla r8, r8, r4, r5\n\t"                \
    "smmla r9, r9, r4, r5\n\t"                \
    "smmla r10, r10, r4, r5\n\t"              \
    "smmla r11, r11, r4, r5\n\t"              \
    "asr r8, r8, r6\n\t"                      \
    "asr r9, r9, r6\n\t"                      \
    "asr r10, r10, r6\n\t"                    \
    "asr r11, r11, r6\n\t"                    \
    "ssat r8, #8, r8\n\t"                     \
    "ssat r9, #8, r9\n\t"                     \
    "ssat r10, #8, r10\n\t"                   \
    "ssat r11, #8, r11\n\t"                   \
    "bfi r8, r9, #8, #8\n\t"                  \
    "bfi r8, r10, #16, #8\n\t"                \
    "bfi r8, r11, #24, #8\n\t"                \
    "ldr r4, %[save]\n\t"                     \
    "ldrd r5, r6, [r4, #24]\n\t"              \
    "ssub8 r7, r8, r5\n\t"                    \
    "sel r8, r8, r5\n\t"                      \
    "ssub8 r7, r6, r8\n\t"                    \
    "sel r8, r8, r6\n\t"                      \
    "ldrd r5, r6, [r4, #16]\n\t"              \
    "ldr r7, [r4, #32]\n\t"                   \
    "strb r8, [r5]\n\t"                       \
    "cmp r7, #4\n\t"                          \
    "blt 4f\n\t"                              \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r5, r6]\n\t"                   \
    "add r5, r5, r6, lsl #1\n\t"              \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r5]\n\t"                       \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r5, r6]\n\t"                   \
    "add r5, r5, r6, lsl #1\n\t"              \
    "str r5, [r4, #16]\n\t"                   \
    "subs r7, r7, #4\n\t"                     \
    "str r7, [r4, #32]\n\t"                   \
    "bne 2b\n\t"                              \
    "b 5f\n\t"                                \
    "4:\n\t"                                  \
    "cmp r7, #1\n\t"                          \
    "beq 5f\n\t"                              \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r5, r6]\n\t"                   \
    "cmp r7, #2\n\t"                          \
    "beq 5f\n\t"                              \
    "add r5, r5, r6\n\t"                      \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r5, r6]\n\t"                   \
    "5:"

/* count outputs of one channel in one output row, stride 1 or 2, 4 per block in registers. */
static void __attribute__((noinline)) cuvil_dw3x3_s1(struct cuvil_dw3 *d)
{
    register struct cuvil_dw3 *dr __asm__("r2") = d;
    struct cuvil_dw3 *volatile save = d; /* r2 holds a row pointer in the loop */
    __asm__ volatile(CUVIL_DW3_BLOCKS(CUVIL_DW3_ROW_S1)
                     : "+r"(dr)
                     : [save] "m"(save)
                     : "r0", "r1", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory");
}

static void __attribute__((noinline)) cuvil_dw3x3_s2(struct cuvil_dw3 *d)
{
    register struct cuvil_dw3 *dr __asm__("r2") = d;
    struct cuvil_dw3 *volatile save = d;
    __asm__ volatile(CUVIL_DW3_BLOCKS(CUVIL_DW3_ROW_S2)
                     : "+r"(dr)
                     : [save] "m"(save)
                     : "r0", "r1", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory");
}

/* One output row of the chunk: per channel, one call for the whole row. */
static void cuvil_dw3x3_row(const struct cuvil_dw *k, int oy, const int16_t *const *rows)
{
    struct cuvil_dw3 d;
    d.step = (int32_t)k->out_pix;
    d.lo4 = k->lo4;
    d.hi4 = k->hi4;
    const long b = oy / k->oh;
    int8_t *out = k->out + b * k->oh * k->ow * k->c + (oy - b * k->oh) * k->out_row;
    for (int ch = 0; ch < k->cc; ch++) {
        const long off = (long)ch * k->wp;
        d.r0 = rows[0] == k->zero ? k->zero : rows[0] + off;
        d.r1 = rows[1] == k->zero ? k->zero : rows[1] + off;
        d.r2 = rows[2] == k->zero ? k->zero : rows[2] + off;
        d.w = k->w + ch * 38;
        d.out = out + ch;
        d.count = k->ow;
        if (k->sw == 1) cuvil_dw3x3_s1(&d);
        else cuvil_dw3x3_s2(&d);
    }
}

/* int8 depthwise 3x3 convolution, stride 1 or 2 (channel multiplier 1), NHWC, as conv2d_s8
 * bit for bit: input rows as int16 planes (cuvil_dsp_dwrow), 4 outputs per SMLAD block.
 * `transposed`: the kernel walks the image's columns as rows (Python swapped h/wd, oh/ow,
 * pt/pl and the 3x3 weights; a narrow image then has long rows).
 * w: the stream above; s: the stride (both axes); wp: plane width (even, >= pl + wd, and
 * covering every block's reads: 4 * s * ceil(ow / 4) + 2 columns); cc: channels per chunk;
 * nzx2: -zx in both 16-bit halves; lo4/hi4: clamp in every byte. */
static void conv2d_s8_dsp_dw3x3(const int8_t *in, int8_t *out, const int16_t *w, int n, int h, int wd, int c, int oh,
                                int ow, int s, int pt, int pl, int transposed, int wp, int cc, uint32_t nzx2,
                                int32_t zx, uint32_t lo4, uint32_t hi4)
{
    /* strides of the walked image (rows of wd pixels) in the NHWC tensor of the real one */
    const long in_row = transposed ? c : (long)wd * c, in_pix = transposed ? (long)h * c : c;
    const long out_row = transposed ? c : (long)ow * c, out_pix = transposed ? (long)oh * c : c;
    struct cuvil_dw k = {in, out, w, 0, 0, n, h, wd, c, oh, ow, 3, 3, s, s, pt, pl, wp, cc, 38,
                         in_row, in_pix, out_row, out_pix, nzx2, lo4, hi4, zx};
    cuvil_dw_run(&k, cc, cuvil_dw3x3_row);
}
