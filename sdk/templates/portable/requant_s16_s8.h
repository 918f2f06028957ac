/* int16 -> int8 at the exit of 16x8 layers: y = clamp(zy + requant(x - zx)). */
static void requant_s16_s8(const int16_t *in, int8_t *out, int count, int32_t zx, int32_t zy, int32_t mult,
                           int32_t shift)
{
    for (int i = 0; i < count; i++)
        out[i] = (int8_t)cuvil_requant_wide((int32_t)in[i] - zx, mult, shift, zy, -128, 127);
}
