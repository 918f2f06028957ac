/* float average pooling, NHWC, one thread per output value, same window rules as avgpool_s8. */
CUVIL_KERNEL avgpool_f32(const float *__restrict__ in, float *__restrict__ out, int n, int h, int w, int c, int oh,
                         int ow, int kh, int kw, int sh, int sw, int pt, int pl, int pb, int pr, int include_pad)
{
    const int i = cuvil_index();
    if (i >= n * oh * ow * c) return;
    const int ch = i % c, ox = i / c % ow, oy = i / (c * ow) % oh, b = i / (c * ow * oh);
    const int y0 = oy * sh - pt, x0 = ox * sw - pl;
    const int ylo = y0 < 0 ? 0 : y0, yhi = y0 + kh > h ? h : y0 + kh;
    const int xlo = x0 < 0 ? 0 : x0, xhi = x0 + kw > w ? w : x0 + kw;
    int count = (yhi - ylo) * (xhi - xlo);
    if (include_pad) {
        const int py0 = y0 < -pt ? -pt : y0, py1 = y0 + kh > h + pb ? h + pb : y0 + kh;
        const int px0 = x0 < -pl ? -pl : x0, px1 = x0 + kw > w + pr ? w + pr : x0 + kw;
        count = (py1 - py0) * (px1 - px0);
    }
    float acc = 0.0f;
    for (int iy = ylo; iy < yhi; iy++)
        for (int ix = xlo; ix < xhi; ix++) acc += in[((b * h + iy) * w + ix) * c + ch];
    out[i] = acc / (float)count;
}
