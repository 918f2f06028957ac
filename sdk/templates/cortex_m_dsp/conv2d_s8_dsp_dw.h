/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * conv2d_s8_dsp_dw: depthwise convolution (any kernel and stride) on int16 row planes with
 * SMLAD tap pairs; layouts and constants come from cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
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
/* Weight stream per channel (kset_cortex_m_dsp.py): [bias], then kh rows of kwp/2 pairs
 * [w(kx) w(kx+1)] (kwp = kw rounded up to even: a 0 after an odd kw), then [M, rnd, s];
 * `stream` = its length in int16 values. */
static void cuvil_dw_row_general(const struct cuvil_dw *k, int oy, const int16_t *const *rows)
{
    const int pairs = (k->kw + 1) >> 1;
    int8_t *out = k->out + (long)oy * k->out_row;
    for (int ch = 0; ch < k->cc; ch++) {
        const int16_t *w = k->w + ch * k->stream;
        const int32_t bias = (int32_t)cuvil_ld32(w);
        const int16_t *q = w + 2 + 2 * k->kh * pairs;
        const int32_t m = (int32_t)cuvil_ld32(q), rnd = (int32_t)cuvil_ld32(q + 2), s = (int32_t)cuvil_ld32(q + 4);
        int8_t *o = out + ch;
        for (int ox = 0; ox < k->ow; ox++, o += k->out_pix) {
            int32_t acc = bias;
            const int16_t *wr = w + 2;
            for (int ky = 0; ky < k->kh; ky++) {
                if (rows[ky] == k->zero) {
                    wr += 2 * pairs;
                    continue;
                }
                const int16_t *x = rows[ky] + ch * k->wp + ox * k->sw;
                for (int t = 0; t < pairs; t++, x += 2, wr += 2) {
                    acc = (int32_t)cuvil_smlad(cuvil_ld32(x), cuvil_ld32(wr), (uint32_t)acc);
                }
            }
            *o = (int8_t)cuvil_clamp4((uint32_t)cuvil_rq(acc, m, rnd, s), k->lo4, k->hi4);
        }
    }
}

/* int8 depthwise convolution (channel multiplier 1, dilation 1, any kernel, stride, pads),
 * NHWC, as conv2d_s8 bit for bit: input rows as int16 planes (cuvil_dsp_dwrow), then per
 * channel and output one SMLAD per pair of horizontal taps.
 * w: the stream above; wp: plane width (even, covering (ow-1)*sw + kwp columns and pl + wd);
 * cc: channels per chunk; nzx2: -zx in both 16-bit halves; lo4/hi4: clamp in every byte. */
static void conv2d_s8_dsp_dw(const int8_t *in, int8_t *out, const int16_t *w, int n, int h, int wd, int c, int oh,
                             int ow, int kh, int kw, int sh, int sw, int pt, int pl, int wp, int cc, int stream,
                             uint32_t nzx2, int32_t zx, uint32_t lo4, uint32_t hi4)
{
    struct cuvil_dw k = {in, out, w, 0, 0, n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl, wp, cc, stream,
                         (long)wd * c, c, (long)ow * c, c, nzx2, lo4, hi4, zx};
    cuvil_dw_run(&k, cc, cuvil_dw_row_general);
}
