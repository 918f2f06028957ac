/* int8 -> float at the boundary of a layer kept in float (the model-output rule). */
static void dequantize_s8_f32(const int8_t *in, float *out, int count, float scale, int32_t zp)
{
    for (int i = 0; i < count; i++) out[i] = (float)((int32_t)in[i] - zp) * scale;
}
