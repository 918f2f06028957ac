/* int16 -> int8 at the exit of 16x8 layers: y = clamp(zy + requant(x - zx)), one thread per value. */
CUVIL_KERNEL requant_s16_s8(const int16_t *__restrict__ in, int8_t *__restrict__ out, int count, int32_t zx, int32_t zy,
                            int32_t mult, int32_t shift)
{
    const int i = cuvil_index();
    if (i >= count) return;
    out[i] = (int8_t)cuvil_requant_wide((int32_t)in[i] - zx, mult, shift, zy, -128, 127);
}
