/* float -> fp16 after a layer computed in fp32 inside an fp16 build (round to nearest even), one thread per value. */
CUVIL_KERNEL convert_f32_f16(const float *__restrict__ in, cuvil_f16 *__restrict__ out, int count)
{
    const int i = cuvil_index();
    if (i >= count) return;
    out[i] = in[i];
}
