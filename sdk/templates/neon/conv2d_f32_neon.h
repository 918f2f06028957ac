/* conv2d_f32_neon: float 2-D convolution (one group, no dilation), NHWC, aarch64 NEON (FMLA).
 * The same sums as conv2d_f32 (portable) in another order with fused multiply-adds: results
 * agree to float rounding, not bit for bit. Layout (kset_neon.py, as kset_avx2.py): output
 * channels in blocks of 16 (a last block of 8 when oc % 16 is 1..8); per block, per kernel
 * row, per tap of the row's kw * c taps: the block's channels, float. Per band of output rows
 * the input rows are copied into a zero-padded panel on the stack. Tiles of 4 pixels x 16
 * channels; FMLA by lane takes 4 consecutive taps of a pixel from one vector load. With
 * CUVIL_THREADS and threads > 1, the output rows are split over threads. */
#include "cuvil_neon_common.h"

#define CONV2D_F32_NEON_MR 4

static inline __attribute__((always_inline)) void conv2d_f32_neon_tile(
    const float *const *xp, const float *wb, int kh, int kr, int rowlen, const float *bias, float *dst, int oc,
    int width, int mr, int nv, float32x4_t vlo, float32x4_t vhi)
{
    float32x4_t acc[CONV2D_F32_NEON_MR][4];
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) acc[i][v] = vld1q_f32(bias + 4 * v);
    }
    for (int ky = 0; ky < kh; ky++) {
        const long ro = (long)ky * rowlen;
        const float *wk = wb + (long)ky * kr * 4 * nv;
        int k = 0;
        for (; k + 4 <= kr; k += 4) {
            float32x4_t x[CONV2D_F32_NEON_MR];
#pragma GCC unroll 4
            for (int i = 0; i < mr; i++) x[i] = vld1q_f32(xp[i] + ro + k);
#define CONV2D_F32_NEON_STEP(L)                                                            \
    do {                                                                                  \
        _Pragma("GCC unroll 4") for (int v = 0; v < nv; v++) {                            \
            const float32x4_t w = vld1q_f32(wk + ((L) * nv + v) * 4);                     \
            _Pragma("GCC unroll 4") for (int i = 0; i < mr; i++) acc[i][v] =              \
                vfmaq_laneq_f32(acc[i][v], w, x[i], L);                                   \
        }                                                                                 \
    } while (0)
            CONV2D_F32_NEON_STEP(0);
            CONV2D_F32_NEON_STEP(1);
            CONV2D_F32_NEON_STEP(2);
            CONV2D_F32_NEON_STEP(3);
#undef CONV2D_F32_NEON_STEP
            wk += 4 * 4 * nv;
        }
        for (; k < kr; k++, wk += 4 * nv) {
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) {
                const float32x4_t w = vld1q_f32(wk + 4 * v);
#pragma GCC unroll 4
                for (int i = 0; i < mr; i++) acc[i][v] = vfmaq_n_f32(acc[i][v], w, xp[i][ro + k]);
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            cuvil_neon_store_f32(dst + (long)i * oc + 4 * v, cuvil_neon_clampf(acc[i][v], vlo, vhi), width - 4 * v);
    }
}

struct conv2d_f32_neon_args {
    const float *in;
    float *out;
    const float *w;
    const float *bias;
    int n, h, wd, c, oh, ow, oc, kh, kw, sh, sw, pt, pl, band;
    float lo, hi;
};

static void conv2d_f32_neon_part(const void *args, int part, int parts)
{
    const struct conv2d_f32_neon_args *a = (const struct conv2d_f32_neon_args *)args;
    const int h = a->h, wd = a->wd, c = a->c, oh = a->oh, ow = a->ow, oc = a->oc, kh = a->kh, sh = a->sh,
              sw = a->sw, band = a->band;
    const int total = a->n * oh;
    const int row0 = (int)((long)total * part / parts), row1 = (int)((long)total * (part + 1) / parts);
    const int cols = (ow - 1) * sw + a->kw;
    const int rowlen = (cols * c + 3) & ~3;
    const int kr = a->kw * c;
    float panel[((band - 1) * sh + kh) * rowlen];
    const float32x4_t vlo = vdupq_n_f32(a->lo), vhi = vdupq_n_f32(a->hi);
    for (int r = row0; r < row1;) {
        const int b = r / oh, oy0 = r % oh;
        int rows = band < oh - oy0 ? band : oh - oy0;
        if (rows > row1 - r) rows = row1 - r;
        cuvil_neon_panel_f32(panel, (rows - 1) * sh + kh, rowlen, cols, c, a->in + (long)b * h * wd * c, h, wd, c,
                             oy0 * sh - a->pt, a->pl);
        float *dst0 = a->out + (long)r * ow * oc;
        const int pixels = rows * ow;
        const float *wb = a->w;
        for (int o = 0; o < oc;) {
            const int nv = oc - o > 8 ? 4 : 2;
            const int width = oc - o < 4 * nv ? oc - o : 4 * nv;
            const float *bb = a->bias + o;
            int y = 0, x = 0; /* the next tile's first pixel */
            for (int q = 0; q < pixels; q += CONV2D_F32_NEON_MR) {
                const int mr = pixels - q < CONV2D_F32_NEON_MR ? pixels - q : CONV2D_F32_NEON_MR;
                const float *xp[CONV2D_F32_NEON_MR];
                for (int i = 0; i < mr; i++) {
                    xp[i] = panel + (long)y * sh * rowlen + (long)x * sw * c;
                    if (++x == ow) {
                        x = 0;
                        y++;
                    }
                }
                float *dst = dst0 + (long)q * oc + o;
#define CONV2D_F32_NEON_TILE(MR, NV) conv2d_f32_neon_tile(xp, wb, kh, kr, rowlen, bb, dst, oc, width, MR, NV, vlo, vhi)
                if (nv == 4) {
                    switch (mr) {
                    case 4: CONV2D_F32_NEON_TILE(4, 4); break;
                    case 3: CONV2D_F32_NEON_TILE(3, 4); break;
                    case 2: CONV2D_F32_NEON_TILE(2, 4); break;
                    default: CONV2D_F32_NEON_TILE(1, 4); break;
                    }
                } else {
                    switch (mr) {
                    case 4: CONV2D_F32_NEON_TILE(4, 2); break;
                    case 3: CONV2D_F32_NEON_TILE(3, 2); break;
                    case 2: CONV2D_F32_NEON_TILE(2, 2); break;
                    default: CONV2D_F32_NEON_TILE(1, 2); break;
                    }
                }
#undef CONV2D_F32_NEON_TILE
            }
            wb += (long)kh * kr * 4 * nv;
            o += 4 * nv;
        }
        r += rows;
    }
}

static void conv2d_f32_neon(const float *in, float *out, const float *w, const float *bias, int n, int h, int wd, int c,
                            int oh, int ow, int oc, int kh, int kw, int sh, int sw, int pt, int pl, int band, float lo,
                            float hi, int threads)
{
    const struct conv2d_f32_neon_args a = {in, out, w, bias, n, h, wd, c, oh, ow, oc, kh, kw, sh, sw, pt, pl, band,
                                           lo, hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(conv2d_f32_neon_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    conv2d_f32_neon_part(&a, 0, 1);
}
