/* int8 constant pad, 4-D: input dims i0..i3, output dims o0..o3, leading pads b0..b3; one
 * thread per output value. */
CUVIL_KERNEL pad_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, int i0, int i1, int i2, int i3, int o0,
                    int o1, int o2, int o3, int b0, int b1, int b2, int b3, int value)
{
    const int i = cuvil_index();
    if (i >= o0 * o1 * o2 * o3) return;
    const int x = i / (o3 * o2 * o1) - b0, y = i / (o3 * o2) % o1 - b1, z = i / o3 % o2 - b2, t = i % o3 - b3;
    const int inside = x >= 0 && x < i0 && y >= 0 && y < i1 && z >= 0 && z < i2 && t >= 0 && t < i3;
    out[i] = inside ? in[((x * i1 + y) * i2 + z) * i3 + t] : (int8_t)value;
}
