/* int8 depthwise convolution (one input channel per group, any channel multiplier), NHWC,
 * weights [oc][kh][kw][1]. One thread per output value; neighbouring threads take
 * neighbouring channels, so the loads of a warp are contiguous. Same result as conv2d_s8. */
CUVIL_KERNEL dwconv2d_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, const int8_t *__restrict__ w,
                         const int32_t *__restrict__ bias, const int32_t *__restrict__ mult,
                         const int32_t *__restrict__ shift, int n, int h, int wd, int c, int oh, int ow, int oc,
                         int kh, int kw, int sh, int sw, int pt, int pl, int dh, int dw, int groups, int zx, int zy,
                         int lo, int hi)
{
    const int i = cuvil_index();
    if (i >= n * oh * ow * oc) return;
    const int o = i % oc;
    int r = i / oc;
    const int ox = r % ow;
    r /= ow;
    const int oy = r % oh;
    const int b = r / oh;
    const int g = o / (oc / groups);
    (void)c;
    int32_t acc = bias[o];
    for (int ky = 0; ky < kh; ky++) {
        const int iy = oy * sh - pt + ky * dh;
        if (iy < 0 || iy >= h) continue;
        for (int kx = 0; kx < kw; kx++) {
            const int ix = ox * sw - pl + kx * dw;
            if (ix < 0 || ix >= wd) continue;
            acc += ((int32_t)in[((b * h + iy) * wd + ix) * groups + g] - zx) * w[(o * kh + ky) * kw + kx];
        }
    }
    out[i] = cuvil_requant(acc, mult[o], shift[o], zy, lo, hi);
}
