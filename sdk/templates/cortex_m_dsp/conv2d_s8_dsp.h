/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * conv2d_s8_dsp: im2col + SMLAD GEMM convolution; layouts and constants come from
 * cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
/* ---- cuvil_dsp_gemm (identical in every cortex_m_dsp header that multiplies int16 columns) ----
 * Layouts (made at compile time by kset_cortex_m_dsp.py):
 *  - a column is K' int16 values (x - zx) of one output pixel, K' a multiple of 8, 32-bit
 *    aligned; the two pixels' columns are col0 and col1;
 *  - one flash stream per pair of output channels (2j, 2j+1), 32-bit aligned:
 *      [bias 2j, bias 2j, bias 2j+1, bias 2j+1]                                  4 words
 *      K'/4 groups of [4 int16 weights of oc 2j][4 int16 weights of oc 2j+1]     K' words
 *        (int8 weights, w8: [4 int8 of oc 2j][4 int8 of oc 2j+1]                 K'/2 words)
 *      [M, rnd, s of oc 2j][M, rnd, s of oc 2j+1]   (cuvil_rq)                   6 words
 *    an odd channel count ends with a pair whose second channel is all zero.
 * One SMLAD multiplies a pair of column values by a pair of weights: 2 MACs. */
#ifndef CUVIL_DSP_GEMM_H
#define CUVIL_DSP_GEMM_H
#define CUVIL_DSP_COL_WORDS 1024 /* im2col buffer (stack): 4 KiB, two columns of K' <= 1024 values */

struct cuvil_gemm {
    const uint32_t *col0, *col1; /* 0, 4: the two pixels' columns */
    int32_t n8;          /* 8: K' / 8 */
    int8_t *out;         /* 12: pixel 0's output channel 2j (advanced by 2 per pair) */
    int32_t oc;          /* 16: output channels = offset of pixel 1's outputs */
    uint32_t lo4, hi4;   /* 20, 24: output clamp in every byte */
    const int16_t *end;  /* 28: stream end of the full pairs */
    const int16_t *w;    /* 32: stream position */
    int32_t zy;          /* 36: output zero point */
    int32_t w8;          /* 40: 1: int8 weights (CUVIL_GEMM_K4_W8), 0: int16 */
};

/* Per 4 column values, int16 weights: LDM of [4 of oc 2j][4 of oc 2j+1], 8 SMLAD. */
#define CUVIL_GEMM_K4_W16                     \
    "ldmia r1!, {r4, r5, r6, r7}\n\t"         \
    "ldrd lr, r0, [r3], #8\n\t"               \
    "smlad r8, lr, r4, r8\n\t"                \
    "smlad r8, r0, r5, r8\n\t"                \
    "smlad r10, lr, r6, r10\n\t"              \
    "smlad r10, r0, r7, r10\n\t"              \
    "ldrd lr, r0, [r2], #8\n\t"               \
    "smlad r9, lr, r4, r9\n\t"                \
    "smlad r9, r0, r5, r9\n\t"                \
    "smlad r11, lr, r6, r11\n\t"              \
    "smlad r11, r0, r7, r11\n\t"
/* Per 4 column values, int8 weights: LDRD of [4 bytes of oc 2j][4 of oc 2j+1], widened by
 * SXTB16 (bytes 0, 2) and SXTB16 ROR 8 (bytes 1, 3) to the column's pairs, 8 SMLAD. */
#define CUVIL_GEMM_K4_W8                      \
    "ldrd r4, r5, [r1], #8\n\t"               \
    "sxtb16 r6, r4\n\t"                       \
    "sxtb16 r4, r4, ror #8\n\t"               \
    "sxtb16 r7, r5\n\t"                       \
    "sxtb16 r5, r5, ror #8\n\t"               \
    "ldrd lr, r0, [r3], #8\n\t"               \
    "smlad r8, lr, r6, r8\n\t"                \
    "smlad r8, r0, r4, r8\n\t"                \
    "smlad r10, lr, r7, r10\n\t"              \
    "smlad r10, r0, r5, r10\n\t"              \
    "ldrd lr, r0, [r2], #8\n\t"               \
    "smlad r9, lr, r6, r9\n\t"                \
    "smlad r9, r0, r4, r9\n\t"                \
    "smlad r11, lr, r7, r11\n\t"              \
    "smlad r11, r0, r5, r11\n\t"

/* Two pixels x every full pair of output channels: bias, 2x2 SMLAD blocks over K' (8 values
 * per iteration: K4 twice), requantization (+ zy), clamp and two 16-bit stores per pair, all in
 * registers. The block needs 14 registers. r7 is the Thumb frame pointer at -O0 or with
 * -fno-omit-frame-pointer, where GCC refuses it as a clobber: the block saves it itself,
 * together with g (r2 holds pixel 1's column in the inner loop), and reads g back from [sp]. */
#define CUVIL_GEMM_PAIRS(K4)                  \
    "push {r2, r7}\n\t"                       \
    "2:\n\t"                                  \
    "ldmia r1!, {r8, r9, r10, r11}\n\t"       \
    "ldr r12, [r2, #8]\n\t"                   \
    "ldrd r3, r2, [r2, #0]\n\t"               \
    "1:\n\t"                                  \
    K4 K4                                     \
    "subs r12, r12, #1\n\t"                   \
    "bne 1b\n\t"                              \
    "ldr r2, [sp]\n\t"                        \
    "ldr r12, [r2, #36]\n\t"                  \
    "ldmia r1!, {r0, r3, r4, r5, r6, r7}\n\t" \
    "smmla r8, r8, r0, r3\n\t"                \
    "smmla r9, r9, r0, r3\n\t"                \
    "smmla r10, r10, r5, r6\n\t"              \
    "smmla r11, r11, r5, r6\n\t"              \
    "asr r8, r8, r4\n\t"                      \
    "asr r9, r9, r4\n\t"                      \
    "asr r10, r10, r7\n\t"                    \
    "asr r11, r11, r7\n\t"                    \
    CUVIL_ASM_ZY_SAT4("r12")               \
    "bfi r8, r10, #8, #8\n\t"                 \
    "bfi r8, r9, #16, #8\n\t"                 \
    "bfi r8, r11, #24, #8\n\t"                \
    "ldrd r0, r3, [r2, #20]\n\t"              \
    "ssub8 r4, r8, r0\n\t"                    \
    "sel r8, r8, r0\n\t"                      \
    "ssub8 r4, r3, r8\n\t"                    \
    "sel r8, r8, r3\n\t"                      \
    "ldrd r0, r3, [r2, #12]\n\t"              \
    "lsr r4, r8, #16\n\t"                     \
    "strh r4, [r0, r3]\n\t"                   \
    "strh r8, [r0], #2\n\t"                   \
    "str r0, [r2, #12]\n\t"                   \
    "ldr r0, [r2, #28]\n\t"                   \
    "cmp r1, r0\n\t"                          \
    "bne 2b\n\t"                              \
    "pop {r2, r7}"

CUVIL_ASM_STREAM_FN(cuvil_gemm2x2_pairs, struct cuvil_gemm, CUVIL_GEMM_PAIRS(CUVIL_GEMM_K4_W16))
CUVIL_ASM_STREAM_FN(cuvil_gemm2x2_pairs_w8, struct cuvil_gemm, CUVIL_GEMM_PAIRS(CUVIL_GEMM_K4_W8))

/* The portable-speed path of the same stream for what cuvil_gemm2x2_pairs does not do: one
 * pair (the last of an odd channel count: its second channel is not stored) for one or two
 * pixels (`two`), or every pair of a layer with a shift below 33. Returns the stream position
 * after the pair. */
static const int16_t *cuvil_gemm_pair_c(const int16_t *w, const struct cuvil_gemm *g, int two, int both)
{
    int32_t a[4];
    for (int i = 0; i < 4; i++, w += 2) a[i] = (int32_t)cuvil_ld32(w);
    const uint32_t *p0 = g->col0, *p1 = g->col1;
    const int step = g->w8 ? 2 : 4; /* int16 slots per channel per 4 column values */
    for (int k = 0; k < 2 * g->n8; k++, w += 2 * step, p0 += 2, p1 += 2) {
        uint32_t w0, w1, w2, w3;
        cuvil_w4(w, g->w8, &w0, &w1);
        cuvil_w4(w + step, g->w8, &w2, &w3);
        a[0] = (int32_t)cuvil_smlad(p0[1], w1, cuvil_smlad(p0[0], w0, (uint32_t)a[0]));
        a[2] = (int32_t)cuvil_smlad(p0[1], w3, cuvil_smlad(p0[0], w2, (uint32_t)a[2]));
        if (two) {
            a[1] = (int32_t)cuvil_smlad(p1[1], w1, cuvil_smlad(p1[0], w0, (uint32_t)a[1]));
            a[3] = (int32_t)cuvil_smlad(p1[1], w3, cuvil_smlad(p1[0], w2, (uint32_t)a[3]));
        }
    }
    int32_t q[6];
    for (int i = 0; i < 6; i++, w += 2) q[i] = (int32_t)cuvil_ld32(w);
    const int32_t y00 = cuvil_rq(a[0], q[0], q[1], q[2], g->zy), y01 = cuvil_rq(a[1], q[0], q[1], q[2], g->zy);
    const int32_t y10 = cuvil_rq(a[2], q[3], q[4], q[5], g->zy), y11 = cuvil_rq(a[3], q[3], q[4], q[5], g->zy);
    const uint32_t v = cuvil_clamp4(cuvil_pack4(y00, y10, y01, y11), g->lo4, g->hi4);
    int8_t *o = g->out;
    o[0] = (int8_t)v;
    if (both) o[1] = (int8_t)(v >> 8);
    if (two) {
        o[g->oc] = (int8_t)(v >> 16);
        if (both) o[g->oc + 1] = (int8_t)(v >> 24);
    }
    return w;
}
#endif /* CUVIL_DSP_GEMM_H */
/* ---- end cuvil_dsp_gemm ---- */
/* Whole 4-byte groups of a run of input bytes into a column: each word [b0 b1 b2 b3] becomes
 * the pairs [b0 b2] [b1 b3] (SXTAB16 also subtracts zx). Returns the column's next word. */
static inline uint32_t *cuvil_col_words(const int8_t *src, uint32_t *o, int nw, uint32_t nzx2)
{
    if (nw >= 4 && ((uintptr_t)src & 3u) == 0u) { /* 16 bytes: LDM, 8 SXTAB16, 2 STM */
        int n16 = nw >> 2;
        nw &= 3;
        __asm__ volatile(
            "1:\n\t"
            "ldmia %[s]!, {r4, r5, r6, lr}\n\t"
            "sxtab16 r8, %[z], r4\n\t"
            "sxtab16 r9, %[z], r4, ror #8\n\t"
            "sxtab16 r10, %[z], r5\n\t"
            "sxtab16 r11, %[z], r5, ror #8\n\t"
            "stmia %[o]!, {r8, r9, r10, r11}\n\t"
            "sxtab16 r4, %[z], r6\n\t"
            "sxtab16 r5, %[z], r6, ror #8\n\t"
            "sxtab16 r6, %[z], lr\n\t"
            "sxtab16 lr, %[z], lr, ror #8\n\t"
            "stmia %[o]!, {r4, r5, r6, lr}\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b"
            : [s] "+r"(src), [o] "+r"(o), [n] "+r"(n16)
            : [z] "r"(nzx2) /* lr, not r7: r7 may be the frame pointer (-O0, -fno-omit-frame-pointer) */
            : "r4", "r5", "r6", "r8", "r9", "r10", "r11", "lr", "cc", "memory");
    }
    for (; nw > 0; nw--, src += 4, o += 2) {
        const uint32_t v = cuvil_ld32(src);
        o[0] = cuvil_sxtab16(nzx2, v);
        o[1] = cuvil_sxtab16_r8(nzx2, v);
    }
    return o;
}

struct cuvil_im2col {
    const int8_t *in; /* the image (batch item), at the group's first channel */
    int h, w, c, kh, kw, seg, nw, tail;
    long rowbytes;
    uint32_t nzx2;
    int32_t zx;
    int cs, dh, dw; /* bytes between pixels (all channels of all groups), dilations */
};

/* The 1-3 last bytes of a run (after its nw whole words) into the column at o, in order,
 * padded with a zero to an even count. */
static inline void cuvil_col_tail(const int8_t *t, uint32_t *o, int tail, int32_t zx)
{
    const int32_t e1 = tail > 1 ? t[1] - zx : 0;
    o[0] = ((uint32_t)(t[0] - zx) & 0xFFFFu) | ((uint32_t)e1 << 16);
    if (tail == 3) o[1] = (uint32_t)(t[2] - zx) & 0xFFFFu;
}

/* One kernel row of a window whose taps are not one contiguous run (padding at the left or
 * right, input channels of one group among others, or a horizontal dilation): the taps are
 * gathered into a byte run with zx in the padded ones (x - zx = 0 there), then converted. */
static void cuvil_im2col_gather(const struct cuvil_im2col *m, const int8_t *row, uint32_t *d, int ix0)
{
    int8_t run[CUVIL_DSP_COL_WORDS] __attribute__((aligned(4)));
    const int c = m->c;
    for (int kx = 0; kx < m->kw; kx++) {
        const int ix = ix0 + kx * m->dw;
        int8_t *r = run + kx * c;
        if (ix < 0 || ix >= m->w) {
            for (int i = 0; i < c; i++) r[i] = (int8_t)m->zx;
        } else {
            const int8_t *s = row + (long)ix * m->cs;
            for (int i = 0; i < c; i++) r[i] = s[i];
        }
    }
    uint32_t *o = cuvil_col_words(run, d, m->nw, m->nzx2);
    if (m->tail) cuvil_col_tail(run + 4 * m->nw, o, m->tail, m->zx);
}

/* The column of a pixel whose window has padding, or whose kernel-row runs are not whole
 * contiguous words (see cuvil_im2col). */
static void __attribute__((noinline)) cuvil_im2col_border(const struct cuvil_im2col *m, uint32_t *d, int iy0, int ix0)
{
    const int c = m->c, w = m->w, seg = m->seg, len = m->kw * c, nw = m->nw;
    const int dense = m->cs == c && m->dw == 1;
    const int rowfull = dense && ix0 >= 0 && ix0 + m->kw <= w;
    for (int ky = 0; ky < m->kh; ky++, d += seg >> 1) {
        const int iy = iy0 + ky * m->dh;
        if (iy < 0 || iy >= m->h) {
            for (int p = 0; p < seg; p += 2) d[p >> 1] = 0u;
            continue;
        }
        const int8_t *row = m->in + (long)iy * m->rowbytes;
        if (rowfull) {
            const int8_t *src = row + (long)ix0 * c;
            uint32_t *o = cuvil_col_words(src, d, nw, m->nzx2);
            if (m->tail) cuvil_col_tail(src + 4 * nw, o, m->tail, m->zx);
        } else if (dense && (c & 3) == 0) {
            /* valid taps kx0..kx1-1 are one contiguous run; the others are zeros */
            const int kx0 = ix0 < 0 ? -ix0 : 0, kx1 = ix0 + m->kw > w ? w - ix0 : m->kw;
            uint32_t *o = d;
            for (int k = 0; k < kx0 * c; k += 4, o += 2) o[0] = o[1] = 0u;
            if (kx1 > kx0) o = cuvil_col_words(row + (long)(ix0 + kx0) * c, o, (kx1 - kx0) * c >> 2, m->nzx2);
            for (int k = (kx1 > kx0 ? kx1 : kx0) * c; k < len; k += 4, o += 2) o[0] = o[1] = 0u;
        } else {
            cuvil_im2col_gather(m, row, d, ix0);
        }
    }
}

/* One pixel's column into d.
 * Per kernel row ky a segment of `seg` values (kw*c rounded up to even): the kw*c input bytes
 * (contiguous in NHWC when groups and the horizontal dilation are 1); whole 4-byte groups go
 * in as [b0 b2] [b1 b3], the last 1-3 bytes in order, then a zero if kw*c is odd. Padded taps
 * are 0 = zx - zx: the portable kernel's sum over valid taps, exactly. A window inside the
 * image with contiguous whole-word runs is the fast path. */
static inline void cuvil_im2col(const struct cuvil_im2col *m, uint32_t *d, int iy0, int ix0)
{
    if (m->cs == m->c && m->dw == 1 && iy0 >= 0 && iy0 + (m->kh - 1) * m->dh < m->h && ix0 >= 0 &&
        ix0 + m->kw <= m->w) {
        const int8_t *src = m->in + (long)iy0 * m->rowbytes + (long)ix0 * m->c;
        const long step = m->rowbytes * m->dh;
        for (int ky = 0; ky < m->kh; ky++, src += step, d += m->seg >> 1) {
            uint32_t *o = cuvil_col_words(src, d, m->nw, m->nzx2);
            if (m->tail) cuvil_col_tail(src + 4 * m->nw, o, m->tail, m->zx);
        }
    } else {
        cuvil_im2col_border(m, d, iy0, ix0);
    }
}

struct cuvil_conv {
    struct cuvil_im2col m;
    struct cuvil_gemm g;
    const int16_t *w;
    int8_t *out;
    long pixels, image;
    int oh, ow, sh, sw, pt, pl, oc, kp, kh, seg, fastq;
};

/* The pixel loop of conv2d_s8_dsp for one group (a separate function: its frame is small, so
 * every field is one load away while the 4 KiB column lives in the caller's frame).
 * k->oc: the group's output channels; k->g.oc: the output pixel stride (all channels). */
static void __attribute__((noinline)) cuvil_conv_run(struct cuvil_conv *k)
{
    uint32_t *col[2] = {(uint32_t *)k->g.col0, (uint32_t *)k->g.col1};
    for (int i = (k->kh * k->seg) >> 1; i < k->kp >> 1; i++) col[0][i] = col[1][i] = 0u; /* after the last row */
    const int full = k->oc >> 1;
    int oy = 0, ox = 0, iy0 = -k->pt, ix0 = -k->pl;
    for (long p = 0; p < k->pixels; p += 2) {
        const int two = p + 1 < k->pixels;
        for (int s = 0; s <= two; s++) {
            cuvil_im2col(&k->m, col[s], iy0, ix0);
            ix0 += k->sw;
            if (++ox == k->ow) {
                ox = 0;
                ix0 = -k->pl;
                iy0 += k->sh;
                if (++oy == k->oh) {
                    oy = 0;
                    iy0 = -k->pt;
                    k->m.in += k->image;
                }
            }
        }
        k->g.out = k->out + p * k->g.oc;
        k->g.w = k->w;
        if (two && full > 0 && k->fastq) {
            if (k->g.w8) cuvil_gemm2x2_pairs_w8(&k->g);
            else cuvil_gemm2x2_pairs(&k->g);
        } else {
            for (int j = 0; j < full; j++, k->g.out += 2) k->g.w = cuvil_gemm_pair_c(k->g.w, &k->g, two, 1);
        }
        if (k->oc & 1) cuvil_gemm_pair_c(k->g.w, &k->g, two, 0);
    }
}

/* ---- the K-tiled path: a column too long for the buffer ----
 * Column layout (kset_cortex_m_dsp.conv_tiled): per tap (ky, kx) `seg` values (the group's
 * channels, whole 4-byte groups as [b0 b2] [b1 b3], the 1-3 last in order, zeros up to a
 * multiple of 4); taps in order ky, kx. A tile is `tile` taps; the output channels go in blocks
 * of CUVIL_DSP_TILE_OC with their int32 sums on the stack while the tiles pass. */
#define CUVIL_DSP_TILE_OC 128

/* One tap's values (seg, a multiple of 4) of the window at (iy, ix) into d; zeros outside. */
static uint32_t *cuvil_tap(const struct cuvil_im2col *m, uint32_t *d, int iy, int ix, int seg)
{
    uint32_t *end = d + (seg >> 1);
    if (iy >= 0 && iy < m->h && ix >= 0 && ix < m->w) {
        const int8_t *src = m->in + (long)iy * m->rowbytes + (long)ix * m->cs;
        d = cuvil_col_words(src, d, m->c >> 2, m->nzx2);
        if (m->c & 3) {
            cuvil_col_tail(src + (m->c & ~3), d, m->c & 3, m->zx);
            if ((m->c & 3) < 3) d[1] = 0u;
            d += 2;
        }
    }
    while (d < end) *d++ = 0u;
    return end;
}

/* Output channels [o0, o0 + count) of one pixel (count even but for the layer's last odd
 * channel), the pixel's window at (iy0, ix0): per tile, the tile's column, then SMLAD over
 * each channel's slice of its pair stream. */
static void cuvil_conv_tiled_block(const struct cuvil_conv *k, uint32_t *col, int iy0, int ix0, int o0, int count,
                                   int8_t *out, int tile)
{
    int32_t acc[CUVIL_DSP_TILE_OC];
    const int w8 = k->g.w8, step = w8 ? 2 : 4; /* int16 slots per channel per 4 values */
    const long pair = (long)k->kp * (w8 ? 1 : 2) + 20;
    const int taps = k->kh * k->m.kw, seg = k->seg;
    for (int o = 0; o < count; o++) acc[o] = (int32_t)cuvil_ld32(k->w + ((o0 + o) >> 1) * pair + ((o0 + o) & 1) * 4);
    for (int t0 = 0; t0 < taps; t0 += tile) {
        const int t1 = t0 + tile < taps ? t0 + tile : taps;
        uint32_t *d = col;
        for (int t = t0; t < t1; t++) d = cuvil_tap(&k->m, d, iy0 + (t / k->m.kw) * k->m.dh, ix0 + (t % k->m.kw) * k->m.dw,
                                                     seg);
        const int groups4 = (t1 - t0) * seg >> 2; /* 4-value groups in this tile */
        for (int o = 0; o < count; o++) {
            const int16_t *w = k->w + ((o0 + o) >> 1) * pair + 8 + (long)(t0 * seg >> 2) * 2 * step +
                               ((o0 + o) & 1) * step;
            const uint32_t *x = col;
            uint32_t a = (uint32_t)acc[o];
            for (int j = 0; j < groups4; j++, w += 2 * step, x += 2) {
                uint32_t lo, hi;
                cuvil_w4(w, w8, &lo, &hi);
                a = cuvil_smlad(x[1], hi, cuvil_smlad(x[0], lo, a));
            }
            acc[o] = (int32_t)a;
        }
    }
    for (int o = 0; o < count; o++) {
        const int16_t *q = k->w + ((o0 + o) >> 1) * pair + 8 + (long)k->kp * (w8 ? 1 : 2) + ((o0 + o) & 1) * 6;
        const int32_t y = cuvil_rq(acc[o], (int32_t)cuvil_ld32(q), (int32_t)cuvil_ld32(q + 2), (int32_t)cuvil_ld32(q + 4),
                                   k->g.zy);
        out[o0 + o] = (int8_t)cuvil_clamp4((uint32_t)y, k->g.lo4, k->g.hi4);
    }
}

/* The pixel loop of the tiled path for one group (k->oc channels, output stride k->g.oc). */
static void cuvil_conv_tiled(struct cuvil_conv *k, uint32_t *col, int tile)
{
    for (long p = 0; p < k->pixels; p++) {
        const long img = p / ((long)k->oh * k->ow), pix = p % ((long)k->oh * k->ow);
        const int oy = (int)(pix / k->ow), ox = (int)(pix % k->ow);
        struct cuvil_conv kb = *k;
        kb.m.in = k->m.in + img * k->image;
        for (int o0 = 0; o0 < k->oc; o0 += CUVIL_DSP_TILE_OC) {
            const int count = k->oc - o0 < CUVIL_DSP_TILE_OC ? k->oc - o0 : CUVIL_DSP_TILE_OC;
            cuvil_conv_tiled_block(&kb, col, oy * k->sh - k->pt, ox * k->sw - k->pl, o0, count, k->out + p * k->g.oc,
                                   tile);
        }
    }
}
/* ---- end of the K-tiled path ---- */

/* int8 2-D convolution (any groups, strides, dilations, pads), NHWC, as conv2d_s8 bit for bit:
 * per group, im2col of two output pixels into int16 (x - zx), then cuvil_gemm2x2_pairs over the
 * group's channel-pair streams of `w` (see "cuvil_dsp_gemm"; the groups' streams follow each
 * other); a last single pixel or odd channel in C, and all of it in C when fastq is 0 (a
 * requantization shift below 33 in the layer: cuvil_rq's 64-bit form).
 * c, oc: all channels; seg: column values per kernel row (kw * c / groups, rounded up to even);
 * kp: K' (a multiple of 8, <= CUVIL_DSP_COL_WORDS); nzx2: -zx in both 16-bit halves; lo4/hi4:
 * the output clamp in every byte. tile > 0: the K-tiled path (a longer column, `tile` taps of
 * seg values at a time, see above). w8: the weights are int8 (else int16) in the streams. */
static void conv2d_s8_dsp(const int8_t *in, int8_t *out, const int16_t *w, int n, int h, int wd, int c, int oh, int ow,
                          int oc, int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw, int groups, int seg,
                          int kp, int fastq, int tile, int w8, uint32_t nzx2, int32_t zx, int32_t zy, uint32_t lo4,
                          uint32_t hi4)
{
    uint32_t col[CUVIL_DSP_COL_WORDS] __attribute__((aligned(8)));
    const int icg = c / groups, ocg = oc / groups;
    const long pair = (long)kp * (w8 ? 1 : 2) + 20; /* int16 slots per channel pair */
    const long stream = (long)((ocg + 1) >> 1) * pair; /* per group */
    for (int gi = 0; gi < groups; gi++) {
        const int16_t *wg = w + gi * stream;
        struct cuvil_conv k = {
            {in + gi * icg, h, wd, icg, kh, kw, seg, (kw * icg) >> 2, (kw * icg) & 3, (long)wd * c, nzx2, zx, c, dh,
             dw},
            {col, col + CUVIL_DSP_COL_WORDS / 2, kp >> 3, out, oc, lo4, hi4, wg + (long)(ocg >> 1) * pair, wg, zy, w8},
            wg, out + gi * ocg, (long)n * oh * ow, (long)h * wd * c, oh, ow, sh, sw, pt, pl, ocg, kp, kh, seg, fastq};
        if (tile) cuvil_conv_tiled(&k, col, tile);
        else cuvil_conv_run(&k);
    }
}
