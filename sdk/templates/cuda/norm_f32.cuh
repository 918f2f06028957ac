/* float normalization of [rows][n], one thread per row (the portable norm_f32's order). */
CUVIL_KERNEL norm_f32(const float *__restrict__ in, float *__restrict__ out, const float *__restrict__ gamma,
                      const float *__restrict__ beta, int rows, int n, int period, int stride, int span, float eps)
{
    const int r = cuvil_index();
    if (r >= rows) return;
    const float *x = in + (long)r * n;
    float *y = out + (long)r * n;
    const float *g = gamma + (r % period) * stride, *b = beta + (r % period) * stride;
    float mean = 0.0f, var = 0.0f;
    for (int j = 0; j < n; j++) mean += x[j];
    mean /= (float)n;
    for (int j = 0; j < n; j++) var += (x[j] - mean) * (x[j] - mean);
    const float inv = 1.0f / sqrtf(var / (float)n + eps);
    for (int j = 0; j < n; j++) y[j] = (x[j] - mean) * inv * g[j / span] + b[j / span];
}
