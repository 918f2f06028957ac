/* int8 broadcast multiply: y = requant((a - za) * (b - zb)). */
static void mul_s8(const int8_t *a, const int8_t *b, int8_t *out, int d0, int d1, int d2, int d3, int sa0, int sa1,
                   int sa2, int sa3, int sb0, int sb1, int sb2, int sb3, int32_t za, int32_t zb, int32_t mult,
                   int32_t shift, int32_t zy, int32_t lo, int32_t hi)
{
    for (int i0 = 0; i0 < d0; i0++)
        for (int i1 = 0; i1 < d1; i1++)
            for (int i2 = 0; i2 < d2; i2++)
                for (int i3 = 0; i3 < d3; i3++) {
                    const int32_t x = a[i0 * sa0 + i1 * sa1 + i2 * sa2 + i3 * sa3] - za;
                    const int32_t y = b[i0 * sb0 + i1 * sb1 + i2 * sb2 + i3 * sb3] - zb;
                    *out++ = cuvil_requant(x * y, mult, shift, zy, lo, hi);
                }
}
