/* conv2d_s8_neon: int8 2-D convolution (one group, no dilation), NHWC, aarch64 NEON with the
 * dot-product extension (SDOT; plain NEON without it). Same result as conv2d_s8 (portable),
 * bit for bit: acc = bias + sum over valid taps of (x - zx) * w, requantized by cuvil_requant.
 *
 * The panel holds the raw int8 input, padded with the zero point zx: a padded tap then adds
 * zx * w, and the compiler's bias, bias - zx * (sum of all the channel's weights), takes
 * sum(x * w) back to sum((x - zx) * w) over the valid taps (exact modulo 2^32, as the
 * portable int32 sums). Layout (kset_neon.py): the taps of a kernel row, kw * c values
 * (kx-major, channel-minor), in quads of 4 (zero-padded, kq quads); output channels in
 * blocks of 16 (a last block of 8 when oc % 16 is 1..8); per block, per kernel row, per quad:
 * the block's channels x 4 taps, int8. SDOT by lane multiplies one quad of an output pixel's
 * taps with 4 channels' quads. Tiles of 4 pixels x 16 channels (16 accumulators). mult, rq
 * (cuvil_neon_requant4) and bias are per channel, padded to the blocks. With CUVIL_THREADS and
 * threads > 1, the output rows are split over threads. */
#include "cuvil_neon_common.h"

#define CONV2D_S8_NEON_MR 4

static inline __attribute__((always_inline)) void conv2d_s8_neon_tile(
    const int8_t *const *xp, const int8_t *wb, int kh, int kq, int rowlen, const int32_t *bias, const int32_t *mult,
    const int64_t *rq, int64x2_t zy, int8_t *dst, int oc, int width, int mr, int nv, int8x16_t vlo, int8x16_t vhi)
{
    int32x4_t acc[CONV2D_S8_NEON_MR][4];
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) acc[i][v] = vld1q_s32(bias + 4 * v);
    }
    for (int ky = 0; ky < kh; ky++) {
        const long ro = (long)ky * rowlen;
        const int8_t *wk = wb + (long)ky * kq * 16 * nv;
        int q = 0;
        for (; q + 4 <= kq; q += 4) {
            int8x16_t x[CONV2D_S8_NEON_MR];
#pragma GCC unroll 4
            for (int i = 0; i < mr; i++) x[i] = vld1q_s8(xp[i] + ro + 4 * q);
#define CONV2D_S8_NEON_STEP(L)                                                          \
    do {                                                                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < nv; v++) {                         \
            const int8x16_t w = vld1q_s8(wk + ((L) * nv + v) * 16);                    \
            _Pragma("GCC unroll 4") for (int i = 0; i < mr; i++) acc[i][v] =           \
                CUVIL_NEON_DOT_LANE(acc[i][v], w, x[i], L);                            \
        }                                                                              \
    } while (0)
            CONV2D_S8_NEON_STEP(0);
            CONV2D_S8_NEON_STEP(1);
            CONV2D_S8_NEON_STEP(2);
            CONV2D_S8_NEON_STEP(3);
#undef CONV2D_S8_NEON_STEP
            wk += 4 * 16 * nv;
        }
        for (; q < kq; q++, wk += 16 * nv) {
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) {
                const int8x16_t w = vld1q_s8(wk + v * 16);
#pragma GCC unroll 4
                for (int i = 0; i < mr; i++) acc[i][v] = cuvil_neon_dot(acc[i][v], w, cuvil_neon_quad(xp[i] + ro + 4 * q));
            }
        }
    }
    const int32x4_t m0 = vld1q_s32(mult), m1 = vld1q_s32(mult + 4);
    const int32x4_t m2 = nv == 4 ? vld1q_s32(mult + 8) : m0, m3 = nv == 4 ? vld1q_s32(mult + 12) : m1;
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
        const int32x4_t r0 = cuvil_neon_requant4(acc[i][0], m0, rq, zy);
        const int32x4_t r1 = cuvil_neon_requant4(acc[i][1], m1, rq + 8, zy);
        const int32x4_t r2 = nv == 4 ? cuvil_neon_requant4(acc[i][2], m2, rq + 16, zy) : r0;
        const int32x4_t r3 = nv == 4 ? cuvil_neon_requant4(acc[i][3], m3, rq + 24, zy) : r1;
        cuvil_neon_store_s8(dst + (long)i * oc, cuvil_neon_narrow16(r0, r1, r2, r3, vlo, vhi), width);
    }
}

struct conv2d_s8_neon_args {
    const int8_t *in;
    int8_t *out;
    const int8_t *w;
    const int32_t *bias;
    const int32_t *mult;
    const int64_t *rq;
    int n, h, wd, c, oh, ow, oc, kh, kw, sh, sw, pt, pl, kq, band;
    int32_t zx, zy, lo, hi;
};

static void conv2d_s8_neon_part(const void *args, int part, int parts)
{
    const struct conv2d_s8_neon_args *a = (const struct conv2d_s8_neon_args *)args;
    const int h = a->h, wd = a->wd, c = a->c, oh = a->oh, ow = a->ow, oc = a->oc, kh = a->kh, sh = a->sh,
              sw = a->sw, band = a->band, kq = a->kq;
    const int total = a->n * oh;
    const int row0 = (int)((long)total * part / parts), row1 = (int)((long)total * (part + 1) / parts);
    const int cols = (ow - 1) * sw + a->kw;
    const int rowlen = (cols * c + 16 + 15) & ~15;
    int8_t panel[((band - 1) * sh + kh) * rowlen];
    const int8x16_t vlo = vdupq_n_s8((int8_t)a->lo), vhi = vdupq_n_s8((int8_t)a->hi);
    const int64x2_t zy = vdupq_n_s64(a->zy);
    for (int r = row0; r < row1;) {
        const int b = r / oh, oy0 = r % oh;
        int rows = band < oh - oy0 ? band : oh - oy0;
        if (rows > row1 - r) rows = row1 - r;
        cuvil_neon_panel_s8(panel, (rows - 1) * sh + kh, rowlen, cols, a->in + (long)b * h * wd * c, h, wd, c,
                            oy0 * sh - a->pt, a->pl, (int8_t)a->zx);
        int8_t *dst0 = a->out + (long)r * ow * oc;
        const int pixels = rows * ow;
        const int8_t *wb = a->w;
        for (int o = 0; o < oc;) {
            const int nv = oc - o > 8 ? 4 : 2;
            const int width = oc - o < 4 * nv ? oc - o : 4 * nv;
            const int32_t *bb = a->bias + o, *mb = a->mult + o;
            const int64_t *qb = a->rq + (long)o * 2;
            int y = 0, x = 0; /* the next tile's first pixel */
            for (int q = 0; q < pixels; q += CONV2D_S8_NEON_MR) {
                const int mr = pixels - q < CONV2D_S8_NEON_MR ? pixels - q : CONV2D_S8_NEON_MR;
                const int8_t *xp[CONV2D_S8_NEON_MR];
                for (int i = 0; i < mr; i++) {
                    xp[i] = panel + (long)y * sh * rowlen + (long)x * sw * c;
                    if (++x == ow) {
                        x = 0;
                        y++;
                    }
                }
                int8_t *dst = dst0 + (long)q * oc + o;
#define CONV2D_S8_NEON_TILE(MR, NV) \
    conv2d_s8_neon_tile(xp, wb, kh, kq, rowlen, bb, mb, qb, zy, dst, oc, width, MR, NV, vlo, vhi)
                if (nv == 4) {
                    switch (mr) {
                    case 4: CONV2D_S8_NEON_TILE(4, 4); break;
                    case 3: CONV2D_S8_NEON_TILE(3, 4); break;
                    case 2: CONV2D_S8_NEON_TILE(2, 4); break;
                    default: CONV2D_S8_NEON_TILE(1, 4); break;
                    }
                } else {
                    switch (mr) {
                    case 4: CONV2D_S8_NEON_TILE(4, 2); break;
                    case 3: CONV2D_S8_NEON_TILE(3, 2); break;
                    case 2: CONV2D_S8_NEON_TILE(2, 2); break;
                    default: CONV2D_S8_NEON_TILE(1, 2); break;
                    }
                }
#undef CONV2D_S8_NEON_TILE
            }
            wb += (long)kh * kq * 16 * nv;
            o += 4 * nv;
        }
        r += rows;
    }
}

static void conv2d_s8_neon(const int8_t *in, int8_t *out, const int8_t *w, const int32_t *bias, const int32_t *mult,
                           const int64_t *rq, int n, int h, int wd, int c, int oh, int ow, int oc, int kh, int kw, int sh,
                           int sw, int pt, int pl, int kq, int band, int32_t zx, int32_t zy, int32_t lo, int32_t hi,
                           int threads)
{
    const struct conv2d_s8_neon_args a = {in, out, w, bias, mult, rq, n, h, wd, c, oh, ow, oc, kh, kw, sh, sw, pt, pl,
                                          kq, band, zx, zy, lo, hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(conv2d_s8_neon_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    conv2d_s8_neon_part(&a, 0, 1);
}
