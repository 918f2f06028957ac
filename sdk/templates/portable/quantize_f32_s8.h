/* float -> int8 at the boundary of a layer kept in float (the model-input rule). */
static void quantize_f32_s8(const float *in, int8_t *out, int count, float scale, int32_t zp)
{
    for (int i = 0; i < count; i++) out[i] = cuvil_quantize(in[i], scale, zp);
}
