/* dwconv2d_f32_avx2: float depthwise 2-D convolution (groups == c == oc), NHWC, AVX2 + FMA.
 * Same sums as conv2d_f32 (portable) with fused multiply-adds (float rounding may differ).
 * Channels in blocks of 8 (weights [block][tap][8], bias padded); per band of output rows
 * the input rows go into a zero-padded panel on the stack with the channels padded to 8.
 * With CUVIL_THREADS and threads > 1, rows are split over threads. */
#include "cuvil_avx2_common.h"

struct dwconv2d_f32_avx2_args {
    const float *in;
    float *out;
    const float *w;
    const float *bias;
    int n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl, band;
    float lo, hi;
};

static void dwconv2d_f32_avx2_part(const void *args, int part, int parts)
{
    const struct dwconv2d_f32_avx2_args *a = (const struct dwconv2d_f32_avx2_args *)args;
    const int h = a->h, wd = a->wd, c = a->c, oh = a->oh, ow = a->ow, kh = a->kh, kw = a->kw, sh = a->sh,
              sw = a->sw, band = a->band;
    const int total = a->n * oh;
    const int row0 = (int)((long)total * part / parts), row1 = (int)((long)total * (part + 1) / parts);
    const int cp = (c + 7) & ~7;
    const int cols = (ow - 1) * sw + kw;
    const int rowlen = cols * cp;
    const int taps = kh * kw;
    long toff[taps];
    for (int t = 0; t < taps; t++) toff[t] = (long)(t / kw) * rowlen + (long)(t % kw) * cp;
    float panel[((band - 1) * sh + kh) * rowlen];
    const __m256 vlo = _mm256_set1_ps(a->lo), vhi = _mm256_set1_ps(a->hi);
    for (int r = row0; r < row1;) {
        const int b = r / oh, oy0 = r % oh;
        int rows = band < oh - oy0 ? band : oh - oy0;
        if (rows > row1 - r) rows = row1 - r;
        cuvil_avx2_panel_f32(panel, (rows - 1) * sh + kh, rowlen, cols, cp, a->in + (long)b * h * wd * c, h, wd, c,
                             oy0 * sh - a->pt, a->pl);
        float *dst0 = a->out + (long)r * ow * c;
        for (int cb = 0; cb < cp; cb += 8) {
            const __m256 bias = _mm256_loadu_ps(a->bias + cb);
            const float *wb = a->w + (long)cb * taps;
            const int width = c - cb < 8 ? c - cb : 8;
            for (int y = 0; y < rows; y++) {
                for (int x = 0; x < ow; x++) {
                    const float *base = panel + (long)y * sh * rowlen + (long)x * sw * cp + cb;
                    __m256 acc = bias;
                    for (int t = 0; t < taps; t++)
                        acc = _mm256_fmadd_ps(_mm256_loadu_ps(base + toff[t]), _mm256_loadu_ps(wb + 8 * t), acc);
                    cuvil_avx2_store_f32(dst0 + ((long)y * ow + x) * c + cb, cuvil_avx2_clampf(acc, vlo, vhi), width);
                }
            }
        }
        r += rows;
    }
}

static void dwconv2d_f32_avx2(const float *in, float *out, const float *w, const float *bias, int n, int h, int wd,
                              int c, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl, int band, float lo,
                              float hi, int threads)
{
    const struct dwconv2d_f32_avx2_args a = {in, out, w, bias, n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl, band, lo,
                                             hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(dwconv2d_f32_avx2_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    dwconv2d_f32_avx2_part(&a, 0, 1);
}
