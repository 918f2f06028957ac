/* Shared helpers of the cortex_m_dsp kernel set: copied into a generated project with any of its kernels. */
#ifndef CUVIL_DSP_DWROW_H
#define CUVIL_DSP_DWROW_H
#define CUVIL_DSP_DW_VALUES 2048 /* row ring (stack), int16 values: 4 KiB; (kh * cc + zero planes) * wp <= this */

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

/* Two pixels of 4 channels (the words at s and s + c) into planes 0-3 (d0, d0 + wb,
 * d0 + 2 wb, d3; wb = bytes between planes), s, d0 and d3 advanced. */
#define CUVIL_DW_ROW_PAIR                         \
    "ldr %[a], [%[s]]\n\t"                        \
    "ldr %[b], [%[s], %[c]]\n\t"                  \
    "add %[s], %[s], %[c], lsl #1\n\t"            \
    "pkhbt %[lo], %[a], %[b], lsl #16\n\t"        \
    "pkhtb %[hi], %[b], %[a], asr #16\n\t"        \
    "sxtab16 %[a], %[z], %[lo]\n\t"               \
    "sxtab16 %[b], %[z], %[lo], ror #8\n\t"       \
    "str %[b], [%[d0], %[wb]]\n\t"                \
    "sxtab16 %[b], %[z], %[hi]\n\t"               \
    "str %[b], [%[d0], %[wb], lsl #1]\n\t"        \
    "sxtab16 %[b], %[z], %[hi], ror #8\n\t"       \
    "str %[b], [%[d3]], #4\n\t"                   \
    "str %[a], [%[d0]], #4\n\t"
/* pairs (>= 1) of pixels of 4 channels from *ps (pixels c bytes apart) into the 4 planes
 * from d (wp values apart); *ps advanced past them. */
static inline void cuvil_dw_pairs(const int8_t **ps, int16_t *d, int pairs, long c, int wp, uint32_t nzx2)
{
    const int8_t *s = *ps;
    char *d0 = (char *)d, *d3 = (char *)(d + 3 * wp);
    char *const end = d0 + 4 * pairs;
    const int32_t wb = 2 * wp;
    uint32_t a, b, lo, hi;
    __asm__ volatile("1:\n\t" CUVIL_DW_ROW_PAIR
                     "cmp %[d0], %[end]\n\t"
                     "bne 1b\n\t"
                     : [s] "+r"(s), [d0] "+r"(d0), [d3] "+r"(d3), [a] "=&r"(a), [b] "=&r"(b), [lo] "=&r"(lo),
                       [hi] "=&r"(hi)
                     : [c] "r"(c), [end] "r"(end), [wb] "r"(wb), [z] "r"(nzx2)
                     : "cc", "memory");
    *ps = s;
}

/* Channels [0, cc) of input row `src` (w pixels, `c` bytes apart) into planes at dst
 * (dst[ch * wp + pl + ix]); 4 channels x 2 pixels per step (cuvil_dw_pairs, in assembly):
 * the pixels' words a, b as the bytes [a0 a1 b0 b1] and [a2 a3 b2 b3] (PKHBT, PKHTB), then
 * SXTAB16 (and ror 8) of each is one channel's pair of pixels minus zx. */
static void cuvil_dw_row(const int8_t *src, int16_t *dst, int w, int cc, long c, int wp, int pl, uint32_t nzx2,
                         int32_t zx)
{
    const int c4 = cc & ~3;
    for (int ch = 0; ch < c4; ch += 4) {
        int16_t *d = dst + ch * wp + pl;
        const int8_t *s = src + ch;
        if (w >= 2) cuvil_dw_pairs(&s, d, w >> 1, c, wp, nzx2);
        const int ix = w & ~1;
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
    int fast; /* dw3x3: zy folded into the rounding constant, no clamp */
    long in_row, in_pix, out_row, out_pix; /* bytes between rows / adjacent pixels of a row */
    uint32_t nzx2, lo4, hi4;
    int32_t zx, zy;
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

/* The depthwise driver: channel chunks of at most cc_max (a multiple of 4 that fits the ring);
 * the zero slot read for padded rows holds zplanes planes (1, or cc_max for a kernel that
 * steps through a row's planes channel by channel). */
static void cuvil_dw_run(const struct cuvil_dw *args, int cc_max, int zplanes,
                         void (*row)(const struct cuvil_dw *, int, const int16_t *const *))
{
    int16_t ring[CUVIL_DSP_DW_VALUES] __attribute__((aligned(8)));
    struct cuvil_dw k = *args;
    memset(ring, 0, (size_t)((k.kh * cc_max + zplanes) * k.wp) * sizeof ring[0]);
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
