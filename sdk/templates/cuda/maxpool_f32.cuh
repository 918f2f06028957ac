/* float max pooling, NHWC, one thread per output value; padded positions are skipped. */
CUVIL_KERNEL maxpool_f32(const float *__restrict__ in, float *__restrict__ out, int n, int h, int w, int c, int oh,
                         int ow, int kh, int kw, int sh, int sw, int pt, int pl, int pb, int pr)
{
    const int i = cuvil_index();
    if (i >= n * oh * ow * c) return;
    const int ch = i % c, ox = i / c % ow, oy = i / (c * ow) % oh, b = i / (c * ow * oh);
    (void)pb;
    (void)pr;
    float m = -3.4e38f;
    for (int ky = 0; ky < kh; ky++) {
        const int iy = oy * sh - pt + ky;
        if (iy < 0 || iy >= h) continue;
        for (int kx = 0; kx < kw; kx++) {
            const int ix = ox * sw - pl + kx;
            if (ix < 0 || ix >= w) continue;
            const float v = in[((b * h + iy) * w + ix) * c + ch];
            if (v > m) m = v;
        }
    }
    out[i] = m;
}
