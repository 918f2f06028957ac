/* int8 constant pad, 4-D: input dims i0..i3, output dims o0..o3, leading pads b0..b3. */
static void pad_s8(const int8_t *in, int8_t *out, int i0, int i1, int i2, int i3, int o0, int o1, int o2, int o3,
                   int b0, int b1, int b2, int b3, int32_t value)
{
    for (int a = 0; a < o0; a++)
        for (int b = 0; b < o1; b++)
            for (int c = 0; c < o2; c++)
                for (int d = 0; d < o3; d++) {
                    const int x = a - b0, y = b - b1, z = c - b2, t = d - b3;
                    const int inside = x >= 0 && x < i0 && y >= 0 && y < i1 && z >= 0 && z < i2 && t >= 0 && t < i3;
                    *out++ = inside ? in[((x * i1 + y) * i2 + z) * i3 + t] : (int8_t)value;
                }
}
