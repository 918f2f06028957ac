/* dwconv2d_f32_neon: float depthwise 2-D convolution (groups == c == oc), NHWC, aarch64 NEON.
 * Same sums as conv2d_f32 (portable) with fused multiply-adds (float rounding may differ).
 * Channels in blocks of 4 (weights [block][tap][4], bias padded); per band of output rows the
 * input rows go into a zero-padded panel on the stack with the channels padded to 4. With
 * CUVIL_THREADS and threads > 1, the output rows are split over threads. */
#include "cuvil_neon_common.h"


struct dwconv2d_f32_neon_args {
    const float *in;
    float *out;
    const float *w;
    const float *bias;
    int n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl, band;
    float lo, hi;
};

static void dwconv2d_f32_neon_part(const void *args, int part, int parts)
{
    const struct dwconv2d_f32_neon_args *a = (const struct dwconv2d_f32_neon_args *)args;
    const int h = a->h, wd = a->wd, c = a->c, oh = a->oh, ow = a->ow, kh = a->kh, kw = a->kw, sh = a->sh,
              sw = a->sw, band = a->band;
    const int total = a->n * oh;
    const int row0 = (int)((long)total * part / parts), row1 = (int)((long)total * (part + 1) / parts);
    const int cp = (c + 3) & ~3;
    const int cols = (ow - 1) * sw + kw;
    const int rowlen = cols * cp;
    const int taps = kh * kw;
    long toff[taps];
    for (int t = 0; t < taps; t++) toff[t] = (long)(t / kw) * rowlen + (long)(t % kw) * cp;
    float panel[((band - 1) * sh + kh) * rowlen];
    const float32x4_t vlo = vdupq_n_f32(a->lo), vhi = vdupq_n_f32(a->hi);
    for (int r = row0; r < row1;) {
        const int b = r / oh, oy0 = r % oh;
        int rows = band < oh - oy0 ? band : oh - oy0;
        if (rows > row1 - r) rows = row1 - r;
        cuvil_neon_panel_f32(panel, (rows - 1) * sh + kh, rowlen, cols, cp, a->in + (long)b * h * wd * c, h, wd, c,
                             oy0 * sh - a->pt, a->pl);
        float *dst0 = a->out + (long)r * ow * c;
        for (int cb = 0; cb < cp; cb += 4) {
            const float32x4_t bias = vld1q_f32(a->bias + cb);
            const float *wb = a->w + (long)cb * taps;
            for (int y = 0; y < rows; y++) {
                for (int x = 0; x < ow; x++) {
                    const float *base = panel + (long)y * sh * rowlen + (long)x * sw * cp + cb;
                    float32x4_t acc = bias;
                    for (int t = 0; t < taps; t++) acc = vfmaq_f32(acc, vld1q_f32(base + toff[t]), vld1q_f32(wb + 4 * t));
                    cuvil_neon_store_f32(dst0 + ((long)y * ow + x) * c + cb, cuvil_neon_clampf(acc, vlo, vhi), c - cb);
                }
            }
        }
        r += rows;
    }
}

static void dwconv2d_f32_neon(const float *in, float *out, const float *w, const float *bias, int n, int h, int wd,
                              int c, int oh, int ow, int kh, int kw, int sh, int sw, int pt, int pl, int band, float lo,
                              float hi, int threads)
{
    const struct dwconv2d_f32_neon_args a = {in, out, w, bias, n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl, band, lo,
                                             hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(dwconv2d_f32_neon_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    dwconv2d_f32_neon_part(&a, 0, 1);
}
