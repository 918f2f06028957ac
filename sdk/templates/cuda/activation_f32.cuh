/* float activations by code (sdk/ops/activation.py ACT_CODES): 0 Relu, 1 Clip, 2 LeakyRelu, 3 Sigmoid,
 * 4 HardSwish, 5 Tanh, 6 Sqrt, 7 Exp, 8 Log, 9 Erf, 10 Neg, 11 Abs, 12 Reciprocal, 13 HardSigmoid,
 * 14 Elu, 15 Selu (beta = gamma), 16 Softplus, 17 Gelu, 18 Gelu (tanh approximation), 19 Mish.
 * One thread per value; expf/tanhf are CUDA's (within 2 ulp of the host's libm). */
CUVIL_KERNEL activation_f32(const float *__restrict__ in, float *__restrict__ out, int count, int code, float alpha,
                            float beta, float lo, float hi)
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
    case 5: y = tanhf(x); break;
    case 6: y = sqrtf(x); break;
    case 7: y = expf(x); break;
    case 8: y = logf(x); break;
    case 9: y = erff(x); break;
    case 10: y = -x; break;
    case 11: y = fabsf(x); break;
    case 12: y = 1.0f / x; break;
    case 13: y = cuvil_clampf(alpha * x + beta, 0.0f, 1.0f); break;
    case 14: y = x >= 0.0f ? x : alpha * expm1f(x); break;
    case 15: y = beta * (x > 0.0f ? x : alpha * expm1f(x)); break;
    case 16: y = fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x))); break;
    case 17: y = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); break;
    case 18: y = 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x))); break;
    default: y = x * tanhf(fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)))); break;
    }
    out[i] = y;
}
