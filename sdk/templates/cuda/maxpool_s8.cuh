/* int8 max pooling, NHWC, one thread per output value; padded positions are skipped and a
 * window that is all padding gives -128 (as the portable kernel). */
CUVIL_KERNEL maxpool_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, int n, int h, int w, int c, int oh,
                        int ow, int kh, int kw, int sh, int sw, int pt, int pl, int pb, int pr)
{
    const int i = cuvil_index();
    if (i >= n * oh * ow * c) return;
    const int ch = i % c, ox = i / c % ow, oy = i / (c * ow) % oh, b = i / (c * ow * oh);
    (void)pb;
    (void)pr;
    int32_t m = -128;
    for (int ky = 0; ky < kh; ky++) {
        const int iy = oy * sh - pt + ky;
        if (iy < 0 || iy >= h) continue;
        for (int kx = 0; kx < kw; kx++) {
            const int ix = ox * sw - pl + kx;
            if (ix < 0 || ix >= w) continue;
            const int32_t v = in[((b * h + iy) * w + ix) * c + ch];
            if (v > m) m = v;
        }
    }
    out[i] = (int8_t)m;
}
