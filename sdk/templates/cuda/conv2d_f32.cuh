/* float 2-D convolution, NHWC activations, weights [oc][kh][kw][c/groups]. One thread per
 * output value, summing in the portable kernel's order (built without FMA contraction). */
CUVIL_KERNEL conv2d_f32(const float *__restrict__ in, float *__restrict__ out, const float *__restrict__ w,
                        const float *__restrict__ bias, int n, int h, int wd, int c, int oh, int ow, int oc, int kh,
                        int kw, int sh, int sw, int pt, int pl, int dh, int dw, int groups, float lo, float hi)
{
    const int i = cuvil_index();
    if (i >= n * oh * ow * oc) return;
    const int o = i % oc;
    int r = i / oc;
    const int ox = r % ow;
    r /= ow;
    const int oy = r % oh;
    const int b = r / oh;
    const int icg = c / groups, g = o / (oc / groups);
    float acc = bias[o];
    for (int ky = 0; ky < kh; ky++) {
        const int iy = oy * sh - pt + ky * dh;
        if (iy < 0 || iy >= h) continue;
        for (int kx = 0; kx < kw; kx++) {
            const int ix = ox * sw - pl + kx * dw;
            if (ix < 0 || ix >= wd) continue;
            const float *px = in + ((b * h + iy) * wd + ix) * c + g * icg;
            const float *pw = w + ((o * kh + ky) * kw + kx) * icg;
            for (int k = 0; k < icg; k++) acc += px[k] * pw[k];
        }
    }
    out[i] = cuvil_clampf(acc, lo, hi);
}
