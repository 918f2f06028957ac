/* float -> fp16 after a layer computed in fp32 inside an fp16 build (round to nearest even). */
static void convert_f32_f16(const float *in, cuvil_f16 *out, int count)
{
    for (int i = 0; i < count; i++) out[i] = (cuvil_f16)in[i];
}
