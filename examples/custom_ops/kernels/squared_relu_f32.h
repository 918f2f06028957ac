/* com.example::SquaredRelu, fp32: out = alpha * max(x, 0)^2. Plain C99; the prototype must
   match the declaration in squared_relu.py (names, order, const pointers, C types). */
static void squared_relu_f32(const float *in, float *out, int count, float alpha)
{
    for (int i = 0; i < count; i++) {
        const float x = in[i] > 0.0f ? in[i] : 0.0f;
        out[i] = alpha * (x * x);
    }
}
