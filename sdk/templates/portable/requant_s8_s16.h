/* int8 -> int16 at the entry of 16x8 layers: y = clamp(zy + requant(x - zx)). */
static void requant_s8_s16(const int8_t *in, int16_t *out, int count, int32_t zx, int32_t zy, int32_t mult,
                           int32_t shift)
{
    for (int i = 0; i < count; i++)
        out[i] = (int16_t)cuvil_requant_wide((int32_t)in[i] - zx, mult, shift, zy, -32768, 32767);
}
