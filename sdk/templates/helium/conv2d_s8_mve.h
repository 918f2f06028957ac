/* Helium (Armv8.1-M MVE) kernel set, cuvil-sdk. Generated code, do not edit.
 * conv2d_s8_mve: int8 convolution as a GEMM of 4 pixels x 2 output channels on VMLADAVA;
 * weights and constants laid out by cuvil_sdk/kernels/helium/rules.py. */
#include "cuvil_mve_common.h"

#define CUVIL_MVE_PAIRS 16 /* channel pairs per cuvil_mve_gemm4x2 call: their accumulators on the stack */

/* The GEMM of one tile of 4 columns: x holds them interleaved, per 16 values of K' (a multiple of
 * 16) the 16 of column 0, then of 1, 2 and 3; w the weights of `pairs` channel pairs, per pair
 * and per 16 values of K', 16 of the first channel then 16 of the second (zero past K, and for
 * the missing second channel of an odd group); bias per pair {b0 x 4, b1 x 4}. acc[j][2 * i + e]
 * (j < 4 the pixel, i < pairs, e < 2 the channel of the pair; 2 * CUVIL_MVE_PAIRS per pixel) gets
 * the bias plus the sum of x * w. */
struct cuvil_mve_gemm {
    const int8_t *x;
    const int8_t *w;     /* advanced past the pairs done */
    const int32_t *bias; /* 8 per pair, advanced likewise */
    int32_t *acc;
    int32_t chunks; /* K' / 16, >= 1 */
    int32_t pairs;  /* 1 to CUVIL_MVE_PAIRS */
};

/* Per 16 values of K': 6 loads and 8 VMLADAVA (16 multiply-adds each) and the loop, 16
 * instructions for 128 multiply-adds; per pair 9 more (the column pointer and count from the
 * stack, the biases by one LDM, 4 STRD into acc). The accumulators are the 8 even registers
 * (VMLADAVA writes only even ones), pointers and counts the odd ones. */
static void __attribute__((noinline)) cuvil_mve_gemm4x2(struct cuvil_mve_gemm *g)
{
    register struct cuvil_mve_gemm *gr __asm__("r0") = g;
    __asm__ volatile(
        "ldrd r1, r3, [r0]\n\t"
        "ldrd r7, r9, [r0, #8]\n\t"
        "ldrd r5, r11, [r0, #16]\n\t"
        "push {r0, r1, r5}\n"
        "2:\n\t"
        "ldrd r1, r5, [sp, #4]\n\t"
        "ldm r7!, {r0, r2, r4, r6, r8, r10, r12, lr}\n"
        "1:\n\t"
        "vldrb.8 q4, [r3], #32\n\t"
        "vldrb.8 q5, [r3, #-16]\n\t"
        "vldrb.8 q0, [r1], #64\n\t"
        "vldrb.8 q1, [r1, #-48]\n\t"
        "vldrb.8 q2, [r1, #-32]\n\t"
        "vldrb.8 q3, [r1, #-16]\n\t"
        "vmladava.s8 r0, q0, q4\n\t"
        "vmladava.s8 r2, q1, q4\n\t"
        "vmladava.s8 r4, q2, q4\n\t"
        "vmladava.s8 r6, q3, q4\n\t"
        "vmladava.s8 r8, q0, q5\n\t"
        "vmladava.s8 r10, q1, q5\n\t"
        "vmladava.s8 r12, q2, q5\n\t"
        "vmladava.s8 lr, q3, q5\n\t"
        "subs r5, r5, #1\n\t"
        "bne 1b\n\t"
        "strd r0, r8, [r9]\n\t"
        "strd r2, r10, [r9, #128]\n\t" /* 8 * CUVIL_MVE_PAIRS bytes per pixel */
        "strd r4, r12, [r9, #256]\n\t"
        "strd r6, lr, [r9, #384]\n\t"
        "adds r9, r9, #8\n\t"
        "subs r11, r11, #1\n\t"
        "bne 2b\n\t"
        "pop {r0, r1, r5}\n\t"
        "strd r3, r7, [r0, #4]"
        : "+r"(gr)
        :
        : "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "q0", "q1", "q2", "q3",
          "q4", "q5", "memory", "cc");
}

/* cuvil_mve_copy_col and cuvil_mve_fill_col: n bytes to every 4th 16-byte chunk of dst (a column
 * of the tile), the last chunk predicated when n is not a multiple of 16. */
CUVIL_MVE_COPY_FILL(cuvil_mve_copy_col, cuvil_mve_fill_col, 64)

/* How a run of one pixel's column is written: straight into the tile (every run starts on a
 * 16-value chunk: `aligned`), or into a contiguous staging column that cuvil_mve_copy_col then
 * interleaves. */
static inline void cuvil_mve_run(int8_t *d, const int8_t *s, int n, int aligned)
{
    if (aligned) {
        cuvil_mve_copy_col(d, s, n);
    } else {
        cuvil_mve_copy(d, s, n);
    }
}

static inline void cuvil_mve_pad(int8_t *d, int32_t zx, int n, int aligned)
{
    if (aligned) {
        cuvil_mve_fill_col(d, zx, n);
    } else {
        cuvil_mve_fill(d, zx, n);
    }
}

/* One pixel's column for group g: K values [ky][kx][ci] (the weights' order), a padded tap as
 * zx (x - zx = 0, which the folded bias expects). Aligned (every run starts on a 16-value chunk:
 * c/groups a multiple of 16, or one tap): written straight into the tile's column (every 4th
 * chunk: a position k of the column lies at k / 16 * 64 + k % 16; a run's last chunk may be
 * partial); else contiguously into col. Runs of contiguous input bytes (a whole kernel row when
 * groups = 1 and dw = 1) are copied whole. */
static void cuvil_mve_im2col(const int8_t *plane, int8_t *col, int iy0, int ix0, int h, int wd, int c, int kh, int kw,
                             int dh, int dw, int icg, int aligned, int32_t zx)
{
    const int step = aligned ? 4 : 1; /* bytes of the destination per byte of the column */
    for (int ky = 0; ky < kh; ky++) {
        const int iy = iy0 + ky * dh;
        if (iy < 0 || iy >= h) {
            cuvil_mve_pad(col, zx, kw * icg, aligned);
            col += step * kw * icg;
            continue;
        }
        const int8_t *row = plane + (long)iy * wd * c;
        if (dw == 1 && icg == c) { /* the row's taps are one run of bytes, clipped at the borders */
            const int lo = ix0 < 0 ? (-ix0 < kw ? -ix0 : kw) : 0;
            const int hi = ix0 + kw > wd ? (wd - ix0 > lo ? wd - ix0 : lo) : kw;
            if (lo > 0) cuvil_mve_pad(col, zx, lo * c, aligned);
            cuvil_mve_run(col + step * lo * c, row + (long)(ix0 + lo) * c, (hi - lo) * c, aligned);
            if (hi < kw) cuvil_mve_pad(col + step * hi * c, zx, (kw - hi) * c, aligned);
            col += step * kw * c;
            continue;
        }
        for (int kx = 0; kx < kw; kx++, col += step * icg) {
            const int ix = ix0 + kx * dw;
            if (ix < 0 || ix >= wd) {
                cuvil_mve_pad(col, zx, icg, aligned);
            } else {
                cuvil_mve_run(col, row + (long)ix * c, icg, aligned);
            }
        }
    }
}

/* The whole window inside the input, groups 1, no dilation across a row, aligned: the kh
 * rows of the column are kh runs of kw * c input bytes, copied straight into the tile. */
static inline void cuvil_mve_window(const int8_t *src, int8_t *col, int kh, int dh, int wd, int c, int run)
{
    for (int ky = 0; ky < kh; ky++, src += (long)dh * wd * c, col += 4 * run) {
        cuvil_mve_copy_col(col, src, run);
    }
}

/* int8 2-D convolution, NHWC, as conv2d_s8 bit for bit: acc = bias' + sum of x * w over the
 * column, with bias' = bias - zx * sum(w) (rules.py), which is bias + sum of (x - zx) * w modulo
 * 2^32 and so exactly the portable kernel's int32 accumulator; then, 4 channels per vector with
 * their M and 32 - S, cuvil_mve_rqv (every shift >= 33: fastq), or M and S, the 64-bit rule per lane. Per
 * group, tiles of 4 output pixels (the last tile stores only the pixels it has) x the group's
 * channel pairs (an odd group's last pair has a zero second channel, never stored). Per group
 * of ocg channels: w and bias (8 per pair) by pairs, rq by 4 channels (rules.quad_requant); the tile
 * (4 x K' bytes) and, when c/groups is not a multiple of 16, a staging column (K' bytes) are on
 * the stack. */
static void conv2d_s8_mve(const int8_t *in, int8_t *out, const int8_t *w, const int32_t *bias, const int32_t *rq,
                          int n, int h, int wd, int c, int oh, int ow, int oc, int kh, int kw, int sh, int sw, int pt,
                          int pl, int dh, int dw, int groups, int kp, int aligned, int fastq, int32_t zx, int32_t zy,
                          int32_t lo, int32_t hi)
{
    int8_t tile[CONV2D_S8_MVE_TILE] __attribute__((aligned(16)));
    int8_t col[CONV2D_S8_MVE_COL] __attribute__((aligned(16)));
    int32_t acc[4 * 2 * CUVIL_MVE_PAIRS] __attribute__((aligned(16)));
    const int icg = c / groups, ocg = oc / groups, pairs = (ocg + 1) / 2, quads = (ocg + 3) / 4, chunks = kp / 16;
    const int rows = aligned && groups == 1 && dw == 1; /* windows inside the input: kh runs of bytes */
    struct cuvil_mve_gemm g;
    for (int grp = 0; grp < groups; grp++) {
        const int8_t *wg = w + (long)grp * pairs * 2 * kp;
        const int32_t *bg = bias + grp * pairs * 8, *rg = rq + grp * quads * 8;
        int b = 0, oy = 0, ox = 0; /* the tile's first pixel */
        for (long p = 0; p < (long)n * oh * ow; p += 4) {
            int count = 0;
            for (int j = 0; j < 4 && b < n; j++) { /* the tile's columns (past the last pixel: not stored) */
                const int8_t *plane = in + (long)b * h * wd * c + (long)grp * icg;
                const int iy0 = oy * sh - pt, ix0 = ox * sw - pl;
                if (rows && iy0 >= 0 && ix0 >= 0 && iy0 + (kh - 1) * dh < h && ix0 + kw <= wd) {
                    cuvil_mve_window(plane + ((long)iy0 * wd + ix0) * c, tile + 16 * j, kh, dh, wd, c, kw * c);
                } else {
                    cuvil_mve_im2col(plane, aligned ? tile + 16 * j : col, iy0, ix0, h, wd, c, kh, kw, dh, dw, icg,
                                     aligned, zx);
                    if (!aligned) cuvil_mve_copy_col(tile + 16 * j, col, kp);
                }
                count++;
                if (++ox == ow) {
                    ox = 0;
                    if (++oy == oh) {
                        oy = 0;
                        b++;
                    }
                }
            }
            int8_t *dst = out + p * oc + (long)grp * ocg;
            g.x = tile;
            g.w = wg;
            g.bias = bg;
            g.chunks = chunks;
            for (int o = 0; o < pairs; o += CUVIL_MVE_PAIRS) {
                const int todo = pairs - o < CUVIL_MVE_PAIRS ? pairs - o : CUVIL_MVE_PAIRS;
                g.acc = acc;
                g.pairs = todo;
                cuvil_mve_gemm4x2(&g);
                for (int ch = 2 * o; ch < 2 * (o + todo) && ch < ocg; ch += 4) { /* 4 channels at a time */
                    const int32_t *q = rg + 2 * ch;
                    cuvil_mve_rq_pixels(acc + ch - 2 * o, 2 * CUVIL_MVE_PAIRS, vld1q_s32(q), vld1q_s32(q + 4), dst + ch,
                                        oc, count, ocg - ch, fastq, zy, lo, hi);
                }
            }
        }
    }
}
