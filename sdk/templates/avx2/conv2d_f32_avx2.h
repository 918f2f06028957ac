/* conv2d_f32_avx2: float 2-D convolution (one group, no dilation), NHWC, x86-64 AVX2 + FMA.
 * The same sums as conv2d_f32 (portable) in another order, with fused multiply-adds: results
 * agree to float rounding, not bit for bit (only int8 is bit-exact across targets).
 *
 * Layout (kset_avx2.py): output channels in blocks of 16 (a last block of 8 when oc % 16 is
 * 1..8); per block, per kernel row ky, per tap k of the row's kw * c taps (kx-major,
 * channel-minor): the block's channels, float; bias padded to the blocks. Per band of `band`
 * output rows, the input rows are copied into a zero-padded panel on the stack, so each
 * output pixel's kernel row is kw * c contiguous floats. Tiles of 4 pixels x 16 channels (or
 * 6 x 8) keep the accumulators in registers. With CUVIL_THREADS and threads > 1, rows are split over threads. */
#include "cuvil_avx2_common.h"
#define CONV2D_F32_AVX2_MR 6

static inline __attribute__((always_inline)) void conv2d_f32_avx2_tile(
    const float *const *xp, const float *wb, int kh, int kr, int rowlen, const float *bias, float *dst, int oc,
    int width, int mr, int nv, __m256 vlo, __m256 vhi)
{
    __m256 acc[CONV2D_F32_AVX2_MR][2];
    const __m256 b0 = _mm256_loadu_ps(bias);
    const __m256 b1 = nv == 2 ? _mm256_loadu_ps(bias + 8) : b0;
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        acc[i][0] = b0;
        acc[i][1] = b1;
    }
    for (int ky = 0; ky < kh; ky++) {
        const long ro = (long)ky * rowlen;
        const float *wk = wb + (long)ky * kr * 8 * nv;
        for (int k = 0; k < kr; k++, wk += 8 * nv) {
            const __m256 w0 = _mm256_loadu_ps(wk);
            const __m256 w1 = nv == 2 ? _mm256_loadu_ps(wk + 8) : w0;
#pragma GCC unroll 6
            for (int i = 0; i < mr; i++) {
                const __m256 x = _mm256_broadcast_ss(xp[i] + ro + k);
                acc[i][0] = _mm256_fmadd_ps(x, w0, acc[i][0]);
                if (nv == 2) acc[i][1] = _mm256_fmadd_ps(x, w1, acc[i][1]);
            }
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < mr; i++) {
        float *d = dst + (long)i * oc;
        cuvil_avx2_store_f32(d, cuvil_avx2_clampf(acc[i][0], vlo, vhi), width);
        if (nv == 2) cuvil_avx2_store_f32(d + 8, cuvil_avx2_clampf(acc[i][1], vlo, vhi), width - 8);
    }
}

struct conv2d_f32_avx2_args {
    const float *in;
    float *out;
    const float *w;
    const float *bias;
    int n, h, wd, c, oh, ow, oc, kh, kw, sh, sw, pt, pl, band;
    float lo, hi;
};

static void conv2d_f32_avx2_part(const void *args, int part, int parts)
{
    const struct conv2d_f32_avx2_args *a = (const struct conv2d_f32_avx2_args *)args;
    const int h = a->h, wd = a->wd, c = a->c, oh = a->oh, ow = a->ow, oc = a->oc, kh = a->kh, sh = a->sh,
              sw = a->sw, band = a->band;
    const int total = a->n * oh;
    const int row0 = (int)((long)total * part / parts), row1 = (int)((long)total * (part + 1) / parts);
    const int cols = (ow - 1) * sw + a->kw;
    const int rowlen = (cols * c + 7) & ~7;
    const int kr = a->kw * c;
    float panel[((band - 1) * sh + kh) * rowlen];
    const __m256 vlo = _mm256_set1_ps(a->lo), vhi = _mm256_set1_ps(a->hi);
    for (int r = row0; r < row1;) {
        const int b = r / oh, oy0 = r % oh;
        int rows = band < oh - oy0 ? band : oh - oy0;
        if (rows > row1 - r) rows = row1 - r;
        cuvil_avx2_panel_f32(panel, (rows - 1) * sh + kh, rowlen, cols, c, a->in + (long)b * h * wd * c, h, wd, c,
                             oy0 * sh - a->pt, a->pl);
        float *dst0 = a->out + (long)r * ow * oc;
        const int pixels = rows * ow;
        const float *wb = a->w;
        for (int o = 0; o < oc;) {
            const int nv = oc - o > 8 ? 2 : 1;
            const int width = oc - o < 8 * nv ? oc - o : 8 * nv;
            const float *bb = a->bias + o;
            /* tiles of 4 pixels x 16 channels (8 accumulators) or 6 pixels x 8 channels: the
             * accumulators, weights and broadcasts stay within the 16 vector registers */
            const int mrmax = nv == 2 ? 4 : 6;
            int y = 0, x = 0; /* the next tile's first pixel */
            for (int q = 0; q < pixels; q += mrmax) {
                const int mr = pixels - q < mrmax ? pixels - q : mrmax;
                const float *xp[CONV2D_F32_AVX2_MR];
                for (int i = 0; i < mr; i++) {
                    xp[i] = panel + (long)y * sh * rowlen + (long)x * sw * c;
                    if (++x == ow) {
                        x = 0;
                        y++;
                    }
                }
                float *dst = dst0 + (long)q * oc + o;
#define CONV2D_F32_AVX2_TILE(MR, NV) conv2d_f32_avx2_tile(xp, wb, kh, kr, rowlen, bb, dst, oc, width, MR, NV, vlo, vhi)
                if (nv == 2) {
                    switch (mr) {
                    case 4: CONV2D_F32_AVX2_TILE(4, 2); break;
                    case 3: CONV2D_F32_AVX2_TILE(3, 2); break;
                    case 2: CONV2D_F32_AVX2_TILE(2, 2); break;
                    default: CONV2D_F32_AVX2_TILE(1, 2); break;
                    }
                } else {
                    switch (mr) {
                    case 6: CONV2D_F32_AVX2_TILE(6, 1); break;
                    case 5: CONV2D_F32_AVX2_TILE(5, 1); break;
                    case 4: CONV2D_F32_AVX2_TILE(4, 1); break;
                    case 3: CONV2D_F32_AVX2_TILE(3, 1); break;
                    case 2: CONV2D_F32_AVX2_TILE(2, 1); break;
                    default: CONV2D_F32_AVX2_TILE(1, 1); break;
                    }
                }
#undef CONV2D_F32_AVX2_TILE
            }
            wb += (long)kh * kr * 8 * nv;
            o += 8 * nv;
        }
        r += rows;
    }
}

static void conv2d_f32_avx2(const float *in, float *out, const float *w, const float *bias, int n, int h, int wd, int c,
                            int oh, int ow, int oc, int kh, int kw, int sh, int sw, int pt, int pl, int band, float lo,
                            float hi, int threads)
{
    const struct conv2d_f32_avx2_args a = {in, out, w, bias, n, h, wd, c, oh, ow, oc, kh, kw, sh, sw, pt, pl, band,
                                           lo, hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(conv2d_f32_avx2_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    conv2d_f32_avx2_part(&a, 0, 1);
}
