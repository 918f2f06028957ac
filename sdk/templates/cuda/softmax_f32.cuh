/* float softmax (as_log = 0) or log-softmax (as_log = 1) along the middle axis of [rows][cols][inner],
 * one thread per (row, inner) line (the portable kernel's order). */
CUVIL_KERNEL softmax_f32(const float *__restrict__ in, float *__restrict__ out, int rows, int cols, int inner,
                         int as_log)
{
    const int t = cuvil_index();
    if (t >= rows * inner) return;
    const float *x = in + (t / inner) * cols * inner + t % inner;
    float *y = out + (t / inner) * cols * inner + t % inner;
    float m = x[0], sum = 0.0f;
    for (int i = 1; i < cols; i++) if (x[i * inner] > m) m = x[i * inner];
    for (int i = 0; i < cols; i++) { y[i * inner] = expf(x[i * inner] - m); sum += y[i * inner]; }
    if (as_log) {
        const float shift = m + logf(sum);
        for (int i = 0; i < cols; i++) y[i * inner] = x[i * inner] - shift;
    } else {
        for (int i = 0; i < cols; i++) y[i * inner] /= sum;
    }
}
