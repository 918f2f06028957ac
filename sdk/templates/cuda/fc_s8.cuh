/* int8 fully connected (GEMM with constant weights [n][k]): one thread per output value
 * out[r][j] = requant(bias[j] + sum_k (in[r][k] - zx) * w[j][k]), index r * n + j. */
CUVIL_KERNEL fc_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, const int8_t *__restrict__ w,
                   const int32_t *__restrict__ bias, const int32_t *__restrict__ mult,
                   const int32_t *__restrict__ shift, int rows, int k, int n, int32_t zx, int32_t zy, int32_t lo, int32_t hi)
{
    const int i = cuvil_index();
    if (i >= rows * n) return;
    const int j = i % n, r = i / n;
    const int8_t *x = in + r * k;
    const int8_t *wj = w + j * k;
    int32_t acc = bias[j];
    for (int t = 0; t < k; t++) acc += ((int32_t)x[t] - zx) * wj[t];
    out[i] = cuvil_requant(acc, mult[j], shift[j], zy, lo, hi);
}
