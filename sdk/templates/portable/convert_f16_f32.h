/* fp16 -> float before a layer computed in fp32 inside an fp16 build (exact). */
static void convert_f16_f32(const cuvil_f16 *in, float *out, int count)
{
    for (int i = 0; i < count; i++) out[i] = (float)in[i];
}
