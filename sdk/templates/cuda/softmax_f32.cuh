/* float softmax over rows of `cols`, one thread per row (the portable kernel's order). */
CUVIL_KERNEL softmax_f32(const float *__restrict__ in, float *__restrict__ out, int rows, int cols)
{
    const int r = cuvil_index();
    if (r >= rows) return;
    const float *x = in + r * cols;
    float *y = out + r * cols;
    float m = x[0], sum = 0.0f;
    for (int i = 1; i < cols; i++) if (x[i] > m) m = x[i];
    for (int i = 0; i < cols; i++) { y[i] = expf(x[i] - m); sum += y[i]; }
    for (int i = 0; i < cols; i++) y[i] /= sum;
}
