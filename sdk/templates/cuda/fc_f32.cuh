/* float fully connected: out[r][j] = bias[j] + sum_k in[r][k] * w[j][k], one thread per output. */
CUVIL_KERNEL fc_f32(const float *__restrict__ in, float *__restrict__ out, const float *__restrict__ w,
                    const float *__restrict__ bias, int rows, int k, int n, float lo, float hi)
{
    const int i = cuvil_index();
    if (i >= rows * n) return;
    const int j = i % n, r = i / n;
    float acc = bias[j];
    for (int t = 0; t < k; t++) acc += in[r * k + t] * w[j * k + t];
    out[i] = cuvil_clampf(acc, lo, hi);
}
