/* float fully connected: out[r][j] = bias[j] + sum_k in[r][k] * w[j][k]. */
static void fc_f32(const float *in, float *out, const float *w, const float *bias, int rows, int k, int n, float lo,
                   float hi)
{
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < n; j++) {
            float acc = bias[j];
            for (int i = 0; i < k; i++) acc += in[(long)r * k + i] * w[(long)j * k + i];
            out[(long)r * n + j] = cuvil_clampf(acc, lo, hi);
        }
}
