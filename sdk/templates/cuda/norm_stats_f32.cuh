/* float mean and 1 / sqrt(var + eps) of each row of [rows][n], one thread per row (the
 * portable norm_stats_f32's order). */
CUVIL_KERNEL norm_stats_f32(const float *__restrict__ in, float *__restrict__ mean, float *__restrict__ inv_std,
                            int rows, int n, float eps)
{
    const int r = cuvil_index();
    if (r >= rows) return;
    const float *x = in + (long)r * n;
    float m = 0.0f, var = 0.0f;
    for (int j = 0; j < n; j++) m += x[j];
    m /= (float)n;
    for (int j = 0; j < n; j++) var += (x[j] - m) * (x[j] - m);
    mean[r] = m;
    inv_std[r] = 1.0f / sqrtf(var / (float)n + eps);
}
