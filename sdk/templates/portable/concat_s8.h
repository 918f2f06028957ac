/* One input of an int8 concat: `outer` chunks of `chunk` values, rescaled to the output's
 * quantization, written `out_stride` apart starting at `offset`. */
static void concat_s8(const int8_t *in, int8_t *out, int offset, int outer, int chunk, int out_stride, int32_t zx,
                      int32_t zy, int32_t mult, int32_t shift)
{
    for (int o = 0; o < outer; o++)
        for (int i = 0; i < chunk; i++)
            out[(long)o * out_stride + offset + i] =
                cuvil_requant((int32_t)in[(long)o * chunk + i] - zx, mult, shift, zy, -128, 127);
}
