/* float average pooling, NHWC, same window rules as avgpool_s8. */
static void avgpool_f32(const float *in, float *out, int n, int h, int w, int c, int oh, int ow, int kh, int kw,
                        int sh, int sw, int pt, int pl, int pb, int pr, int include_pad)
{
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                const int y0 = oy * sh - pt, x0 = ox * sw - pl;
                const int ylo = y0 < 0 ? 0 : y0, yhi = y0 + kh > h ? h : y0 + kh;
                const int xlo = x0 < 0 ? 0 : x0, xhi = x0 + kw > w ? w : x0 + kw;
                int count = (yhi - ylo) * (xhi - xlo);
                if (include_pad) {
                    const int py0 = y0 < -pt ? -pt : y0, py1 = y0 + kh > h + pb ? h + pb : y0 + kh;
                    const int px0 = x0 < -pl ? -pl : x0, px1 = x0 + kw > w + pr ? w + pr : x0 + kw;
                    count = (py1 - py0) * (px1 - px0);
                }
                for (int ch = 0; ch < c; ch++) {
                    float acc = 0.0f;
                    for (int iy = ylo; iy < yhi; iy++)
                        for (int ix = xlo; ix < xhi; ix++) acc += in[(((long)b * h + iy) * w + ix) * c + ch];
                    out[(((long)b * oh + oy) * ow + ox) * c + ch] = acc / (float)count;
                }
            }
}
