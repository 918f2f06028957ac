/* float max pooling, NHWC; padded positions are skipped. */
static void maxpool_f32(const float *in, float *out, int n, int h, int w, int c, int oh, int ow, int kh, int kw,
                        int sh, int sw, int pt, int pl, int pb, int pr)
{
    (void)pb; (void)pr;
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++)
                for (int ch = 0; ch < c; ch++) {
                    float m = -3.4e38f;
                    for (int ky = 0; ky < kh; ky++) {
                        const int iy = oy * sh - pt + ky;
                        if (iy < 0 || iy >= h) continue;
                        for (int kx = 0; kx < kw; kx++) {
                            const int ix = ox * sw - pl + kx;
                            if (ix < 0 || ix >= w) continue;
                            const float v = in[(((long)b * h + iy) * w + ix) * c + ch];
                            if (v > m) m = v;
                        }
                    }
                    out[(((long)b * oh + oy) * ow + ox) * c + ch] = m;
                }
}
