/* float -> int8 at the boundary of a layer kept in float (the model-input rule, IEEE steps). */
CUVIL_KERNEL quantize_f32_s8(const float *__restrict__ in, int8_t *__restrict__ out, int count, float scale, int32_t zp)
{
    const int i = cuvil_index();
    if (i >= count) return;
    out[i] = cuvil_quantize(in[i], scale, zp);
}
