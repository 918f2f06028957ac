/* 16x8 2-D convolution (int16 activations, int8 weights, int64 accumulator), NHWC activations, weights [oc][kh][kw][c/groups].
 * acc = bias + sum over valid taps of (x - zx) * w; padded taps contribute nothing. */
static void conv2d_s16(const int16_t *in, int16_t *out, const int8_t *w, const int64_t *bias, const int32_t *mult,
                      const int32_t *shift, int n, int h, int wd, int c, int oh, int ow, int oc, int kh, int kw,
                      int sh, int sw, int pt, int pl, int dh, int dw, int groups, int32_t zx, int32_t zy,
                      int32_t lo, int32_t hi)
{
    const int icg = c / groups, ocg = oc / groups;
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int16_t *dst = out + (((long)b * oh + oy) * ow + ox) * oc;
                for (int o = 0; o < oc; o++) {
                    const int g = o / ocg;
                    int64_t acc = bias[o];
                    for (int ky = 0; ky < kh; ky++) {
                        const int iy = oy * sh - pt + ky * dh;
                        if (iy < 0 || iy >= h) continue;
                        for (int kx = 0; kx < kw; kx++) {
                            const int ix = ox * sw - pl + kx * dw;
                            if (ix < 0 || ix >= wd) continue;
                            const int16_t *px = in + (((long)b * h + iy) * wd + ix) * c + g * icg;
                            const int8_t *pw = w + (((long)o * kh + ky) * kw + kx) * icg;
                            for (int i = 0; i < icg; i++) acc += (int64_t)((int32_t)px[i] - zx) * pw[i];
                        }
                    }
                    dst[o] = (int16_t)cuvil_requant_wide(acc, mult[o], shift[o], zy, lo, hi);
                }
            }
}
