/* One input of a float concat: `outer` chunks of `chunk` values written `out_stride` apart. */
static void concat_f32(const float *in, float *out, int offset, int outer, int chunk, int out_stride)
{
    for (int o = 0; o < outer; o++)
        for (int i = 0; i < chunk; i++) out[(long)o * out_stride + offset + i] = in[(long)o * chunk + i];
}
