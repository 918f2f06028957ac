/* float 2-D convolution, NHWC activations, weights [oc][kh][kw][c/groups]. */
static void conv2d_f32(const float *in, float *out, const float *w, const float *bias, int n, int h, int wd, int c,
                       int oh, int ow, int oc, int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw,
                       int groups, float lo, float hi)
{
    const int icg = c / groups, ocg = oc / groups;
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                float *dst = out + (((long)b * oh + oy) * ow + ox) * oc;
                for (int o = 0; o < oc; o++) {
                    const int g = o / ocg;
                    float acc = bias[o];
                    for (int ky = 0; ky < kh; ky++) {
                        const int iy = oy * sh - pt + ky * dh;
                        if (iy < 0 || iy >= h) continue;
                        for (int kx = 0; kx < kw; kx++) {
                            const int ix = ox * sw - pl + kx * dw;
                            if (ix < 0 || ix >= wd) continue;
                            const float *px = in + (((long)b * h + iy) * wd + ix) * c + g * icg;
                            const float *pw = w + (((long)o * kh + ky) * kw + kx) * icg;
                            for (int i = 0; i < icg; i++) acc += px[i] * pw[i];
                        }
                    }
                    dst[o] = cuvil_clampf(acc, lo, hi);
                }
            }
}
