/* int8 average pooling, NHWC, one thread per output value: the sum of (x - zx) over the
 * valid window, requantized by the multiplier of that window's element count (the count
 * includes the padding when asked), as the portable avgpool_s8. */
CUVIL_KERNEL avgpool_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, int n, int h, int w, int c, int oh,
                        int ow, int kh, int kw, int sh, int sw, int pt, int pl, int pb, int pr, int include_pad,
                        int zx, int zy, const int32_t *__restrict__ mult, const int32_t *__restrict__ shift)
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
    int32_t acc = 0;
    for (int iy = ylo; iy < yhi; iy++)
        for (int ix = xlo; ix < xhi; ix++) acc += in[((b * h + iy) * w + ix) * c + ch] - zx;
    out[i] = cuvil_requant(acc, mult[count], shift[count], zy, -128, 127);
}
