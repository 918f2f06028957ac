/* int8 2-D convolution, NHWC activations, weights [oc][kh][kw][c/groups], any group count.
 * One thread per output value, index ((b * oh + oy) * ow + ox) * oc + o; the arithmetic of
 * the portable conv2d_s8: acc = bias + sum over valid taps of (x - zx) * w, then requant. */
CUVIL_KERNEL conv2d_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, const int8_t *__restrict__ w,
                       const int32_t *__restrict__ bias, const int32_t *__restrict__ mult,
                       const int32_t *__restrict__ shift, int n, int h, int wd, int c, int oh, int ow, int oc, int kh,
                       int kw, int sh, int sw, int pt, int pl, int dh, int dw, int groups, int zx, int zy, int lo,
                       int hi)
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
    int32_t acc = bias[o];
    for (int ky = 0; ky < kh; ky++) {
        const int iy = oy * sh - pt + ky * dh;
        if (iy < 0 || iy >= h) continue;
        for (int kx = 0; kx < kw; kx++) {
            const int ix = ox * sw - pl + kx * dw;
            if (ix < 0 || ix >= wd) continue;
            const int8_t *px = in + ((b * h + iy) * wd + ix) * c + g * icg;
            const int8_t *pw = w + ((o * kh + ky) * kw + kx) * icg;
            for (int k = 0; k < icg; k++) acc += ((int32_t)px[k] - zx) * pw[k];
        }
    }
    out[i] = cuvil_requant(acc, mult[o], shift[o], zy, lo, hi);
}
