/* int8 element-wise function by a 256-entry table indexed by (x + 128). */
static void lut_s8(const int8_t *in, int8_t *out, int count, const int8_t *table)
{
    for (int i = 0; i < count; i++) out[i] = table[(int32_t)in[i] + 128];
}
