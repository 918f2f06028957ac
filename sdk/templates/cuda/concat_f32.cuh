/* One input of a float concat: `outer` chunks of `chunk` values written `out_stride` apart. */
CUVIL_KERNEL concat_f32(const float *__restrict__ in, float *__restrict__ out, int offset, int outer, int chunk,
                        int out_stride)
{
    const int i = cuvil_index();
    if (i >= outer * chunk) return;
    out[(i / chunk) * out_stride + offset + i % chunk] = in[i];
}
