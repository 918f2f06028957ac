/* float activations by code: 0 Relu, 1 Clip, 2 LeakyRelu, 3 Sigmoid, 4 HardSwish, 5 Tanh.
 * One thread per value; expf/tanhf are CUDA's (within 2 ulp of the host's libm). */
CUVIL_KERNEL activation_f32(const float *__restrict__ in, float *__restrict__ out, int count, int code, float alpha,
                            float lo, float hi)
{
    const int i = cuvil_index();
    if (i >= count) return;
    const float x = in[i];
    float y;
    switch (code) {
    case 0: y = x > 0.0f ? x : 0.0f; break;
    case 1: y = cuvil_clampf(x, lo, hi); break;
    case 2: y = x >= 0.0f ? x : x * alpha; break;
    case 3: y = 1.0f / (1.0f + expf(-x)); break;
    case 4: y = x * cuvil_clampf(x / 6.0f + 0.5f, 0.0f, 1.0f); break;
    default: y = tanhf(x); break;
    }
    out[i] = y;
}
