/* int8 -> float at the boundary of a layer kept in float (the model-output rule). */
CUVIL_KERNEL dequantize_s8_f32(const int8_t *__restrict__ in, float *__restrict__ out, int count, float scale, int32_t zp)
{
    const int i = cuvil_index();
    if (i >= count) return;
    out[i] = (float)((int32_t)in[i] - zp) * scale;
}
