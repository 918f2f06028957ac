/* int8 transpose: output dims o0..o3, input element strides s0..s3 of each output axis. */
CUVIL_KERNEL transpose_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, int o0, int o1, int o2, int o3,
                          int s0, int s1, int s2, int s3)
{
    const int i = cuvil_index();
    if (i >= o0 * o1 * o2 * o3) return;
    out[i] = in[i / (o3 * o2 * o1) * s0 + i / (o3 * o2) % o1 * s1 + i / o3 % o2 * s2 + i % o3 * s3];
}
