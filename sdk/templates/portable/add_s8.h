/* int8 broadcast add (4-D, per-input element strides; 0 = broadcast):
 * y = zy + (((a - za) * ma + (b - zb) * mb + 2^(shift-1)) >> shift), all in int32. */
static void add_s8(const int8_t *a, const int8_t *b, int8_t *out, int d0, int d1, int d2, int d3, int sa0, int sa1,
                   int sa2, int sa3, int sb0, int sb1, int sb2, int sb3, int32_t za, int32_t zb, int32_t ma,
                   int32_t mb, int32_t shift, int32_t zy, int32_t lo, int32_t hi)
{
    const int32_t round = (int32_t)1 << (shift - 1);
    for (int i0 = 0; i0 < d0; i0++)
        for (int i1 = 0; i1 < d1; i1++)
            for (int i2 = 0; i2 < d2; i2++)
                for (int i3 = 0; i3 < d3; i3++) {
                    const int32_t x = a[i0 * sa0 + i1 * sa1 + i2 * sa2 + i3 * sa3] - za;
                    const int32_t y = b[i0 * sb0 + i1 * sb1 + i2 * sb2 + i3 * sb3] - zb;
                    *out++ = cuvil_clamp8(((x * ma + y * mb + round) >> shift) + zy, lo, hi);
                }
}
