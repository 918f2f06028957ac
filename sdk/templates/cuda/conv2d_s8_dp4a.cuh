/* int8 2-D convolution with __dp4a, for channels per group a multiple of 4 (Python checks it,
 * so every 4-byte load is aligned). Same thread layout and result as conv2d_s8:
 *   sum over a tap of (x - zx) * w  =  dp4a(x, w) - zx * wsum[o][ky][kx]
 * where wsum (computed in Python) is that tap's weight sum; only valid taps count. */
CUVIL_KERNEL conv2d_s8_dp4a(const int8_t *__restrict__ in, int8_t *__restrict__ out, const int8_t *__restrict__ w,
                            const int32_t *__restrict__ bias, const int32_t *__restrict__ mult,
                            const int32_t *__restrict__ shift, const int32_t *__restrict__ wsum, int n, int h, int wd,
                            int c, int oh, int ow, int oc, int kh, int kw, int sh, int sw, int pt, int pl, int dh,
                            int dw, int groups, int zx, int zy, int lo, int hi)
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
            int32_t dot = 0;
            for (int k = 0; k < icg; k += 4) dot = __dp4a(cuvil_load4(px + k), cuvil_load4(pw + k), dot);
            acc += dot - zx * wsum[(o * kh + ky) * kw + kx];
        }
    }
    out[i] = cuvil_requant(acc, mult[o], shift[o], zy, lo, hi);
}
