/* fp16 -> float before a layer computed in fp32 inside an fp16 build (exact), one thread per value. */
CUVIL_KERNEL convert_f16_f32(const cuvil_f16 *__restrict__ in, float *__restrict__ out, int count)
{
    const int i = cuvil_index();
    if (i >= count) return;
    out[i] = (float)in[i];
}
