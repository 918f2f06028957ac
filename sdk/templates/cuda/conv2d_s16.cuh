/* 16x8 2-D convolution (int16 activations, int8 weights, int64 accumulator), NHWC, weights
 * [oc][kh][kw][c/groups]: one thread per output value, the portable conv2d_s16's arithmetic. */
CUVIL_KERNEL conv2d_s16(const int16_t *__restrict__ in, int16_t *__restrict__ out, const int8_t *__restrict__ w,
                        const int64_t *__restrict__ bias, const int32_t *__restrict__ mult,
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
    int64_t acc = bias[o];
    for (int ky = 0; ky < kh; ky++) {
        const int iy = oy * sh - pt + ky * dh;
        if (iy < 0 || iy >= h) continue;
        for (int kx = 0; kx < kw; kx++) {
            const int ix = ox * sw - pl + kx * dw;
            if (ix < 0 || ix >= wd) continue;
            const int16_t *px = in + ((b * h + iy) * wd + ix) * c + g * icg;
            const int8_t *pw = w + ((o * kh + ky) * kw + kx) * icg;
            for (int k = 0; k < icg; k++) acc += (int64_t)((int32_t)px[k] - zx) * pw[k];
        }
    }
    out[i] = (int16_t)cuvil_requant_wide(acc, mult[o], shift[o], zy, lo, hi);
}
