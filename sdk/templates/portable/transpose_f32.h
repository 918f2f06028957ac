/* float transpose: output dims o0..o3, input element strides s0..s3 of each output axis. */
static void transpose_f32(const float *in, float *out, int o0, int o1, int o2, int o3, int s0, int s1, int s2, int s3)
{
    for (int a = 0; a < o0; a++)
        for (int b = 0; b < o1; b++)
            for (int c = 0; c < o2; c++)
                for (int d = 0; d < o3; d++) *out++ = in[a * s0 + b * s1 + c * s2 + d * s3];
}
