/* One input of an int8 concat: `outer` chunks of `chunk` values, rescaled to the output's
 * quantization, written `out_stride` apart from `offset`; one thread per input value. */
CUVIL_KERNEL concat_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, int offset, int outer, int chunk,
                       int out_stride, int32_t zx, int32_t zy, int32_t mult, int32_t shift)
{
    const int i = cuvil_index();
    if (i >= outer * chunk) return;
    const int o = i / chunk, k = i % chunk;
    out[o * out_stride + offset + k] = cuvil_requant((int32_t)in[i] - zx, mult, shift, zy, -128, 127);
}
