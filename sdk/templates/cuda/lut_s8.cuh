/* int8 element-wise function by a 256-entry table indexed by (x + 128), one thread per value. */
CUVIL_KERNEL lut_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, int count,
                    const int8_t *__restrict__ table)
{
    const int i = cuvil_index();
    if (i >= count) return;
    out[i] = table[(int32_t)in[i] + 128];
}
