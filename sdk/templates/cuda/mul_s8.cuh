/* int8 broadcast multiply, 4-D, per-input element strides: y = requant((a - za) * (b - zb)). */
CUVIL_KERNEL mul_s8(const int8_t *__restrict__ a, const int8_t *__restrict__ b, int8_t *__restrict__ out, int d0,
                    int d1, int d2, int d3, int sa0, int sa1, int sa2, int sa3, int sb0, int sb1, int sb2, int sb3,
                    int za, int zb, int mult, int shift, int zy, int lo, int hi)
{
    const int i = cuvil_index();
    if (i >= d0 * d1 * d2 * d3) return;
    const int i3 = i % d3, i2 = i / d3 % d2, i1 = i / (d3 * d2) % d1, i0 = i / (d3 * d2 * d1);
    const int32_t x = a[i0 * sa0 + i1 * sa1 + i2 * sa2 + i3 * sa3] - za;
    const int32_t y = b[i0 * sb0 + i1 * sb1 + i2 * sb2 + i3 * sb3] - zb;
    out[i] = cuvil_requant(x * y, mult, shift, zy, lo, hi);
}
