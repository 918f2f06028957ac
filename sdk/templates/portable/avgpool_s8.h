/* int8 average pooling, NHWC: sum of (x - zx) over the valid window, requantized by the
 * multiplier for that window's element count (count includes the padding when asked). */
static void avgpool_s8(const int8_t *in, int8_t *out, int n, int h, int w, int c, int oh, int ow, int kh, int kw,
                       int sh, int sw, int pt, int pl, int pb, int pr, int include_pad, int32_t zx, int32_t zy,
                       const int32_t *mult, const int32_t *shift)
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
                    int32_t acc = 0;
                    for (int iy = ylo; iy < yhi; iy++)
                        for (int ix = xlo; ix < xhi; ix++)
                            acc += in[(((long)b * h + iy) * w + ix) * c + ch] - zx;
                    out[(((long)b * oh + oy) * ow + ox) * c + ch] =
                        cuvil_requant(acc, mult[count], shift[count], zy, -128, 127);
                }
            }
}
