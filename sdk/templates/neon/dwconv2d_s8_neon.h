/* dwconv2d_s8_neon: int8 depthwise 2-D convolution (groups == c == oc), NHWC, aarch64 NEON.
 * Same result as conv2d_s8 (portable) with groups == c, bit for bit. Per band of output rows
 * the input rows are converted to an int16 panel (x - zx) on the stack, zero outside the
 * input, channels padded to 8; per tap, SMLAL/SMLAL2 multiply 8 channels' (x - zx) (|.| <= 255)
 * by their int16 weights (|w| <= 127) into int32, exactly. Weights [block of 8][tap][8] int16;
 * bias, mult and rq (cuvil_neon_requant4) per channel, padded to 8. With CUVIL_THREADS and
 * threads > 1, the output rows are split over threads. */
#include "cuvil_neon_common.h"


struct dwconv2d_s8_neon_args {
    const int8_t *in;
    int8_t *out;
    const int16_t *w;
    const int32_t *bias;
    const int32_t *mult;
    const int64_t *rq;
    int n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl, band;
    int32_t zx, zy, lo, hi;
};

static void dwconv2d_s8_neon_part(const void *args, int part, int parts)
{
    const struct dwconv2d_s8_neon_args *a = (const struct dwconv2d_s8_neon_args *)args;
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
    int16_t panel[((band - 1) * sh + kh) * rowlen];
    const int8x16_t vlo = vdupq_n_s8((int8_t)a->lo), vhi = vdupq_n_s8((int8_t)a->hi);
    const int64x2_t zy = vdupq_n_s64(a->zy);
    for (int r = row0; r < row1;) {
        const int b = r / oh, oy0 = r % oh;
        int rows = band < oh - oy0 ? band : oh - oy0;
        if (rows > row1 - r) rows = row1 - r;
        cuvil_neon_panel_s16(panel, (rows - 1) * sh + kh, rowlen, cols, cp, a->in + (long)b * h * wd * c, h, wd, c,
                             oy0 * sh - a->pt, a->pl, a->zx);
        int8_t *dst0 = a->out + (long)r * ow * c;
        for (int cb = 0; cb < cp; cb += 8) {
            const int32x4_t b0 = vld1q_s32(a->bias + cb), b1 = vld1q_s32(a->bias + cb + 4);
            const int32x4_t m0 = vld1q_s32(a->mult + cb), m1 = vld1q_s32(a->mult + cb + 4);
            const int64_t *qb = a->rq + (long)cb * 2;
            const int16_t *wb = a->w + (long)cb * taps;
            const int width = c - cb < 8 ? c - cb : 8;
            for (int y = 0; y < rows; y++) {
                for (int x = 0; x < ow; x++) {
                    const int16_t *base = panel + (long)y * sh * rowlen + (long)x * sw * cp + cb;
                    int32x4_t lo = b0, hi = b1;
                    for (int t = 0; t < taps; t++) {
                        const int16x8_t xv = vld1q_s16(base + toff[t]), wv = vld1q_s16(wb + 8 * t);
                        lo = vmlal_s16(lo, vget_low_s16(xv), vget_low_s16(wv));
                        hi = vmlal_high_s16(hi, xv, wv);
                    }
                    const int32x4_t r0 = cuvil_neon_requant4(lo, m0, qb, zy), r1 = cuvil_neon_requant4(hi, m1, qb + 8, zy);
                    cuvil_neon_store_s8(dst0 + ((long)y * ow + x) * c + cb, cuvil_neon_narrow16(r0, r1, r0, r1, vlo, vhi),
                                        width);
                }
            }
        }
        r += rows;
    }
}

static void dwconv2d_s8_neon(const int8_t *in, int8_t *out, const int16_t *w, const int32_t *bias, const int32_t *mult,
                             const int64_t *rq, int n, int h, int wd, int c, int oh, int ow, int kh, int kw, int sh,
                             int sw, int pt, int pl, int band, int32_t zx, int32_t zy, int32_t lo, int32_t hi,
                             int threads)
{
    const struct dwconv2d_s8_neon_args a = {in, out, w, bias, mult, rq, n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl,
                                            band, zx, zy, lo, hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(dwconv2d_s8_neon_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    dwconv2d_s8_neon_part(&a, 0, 1);
}
