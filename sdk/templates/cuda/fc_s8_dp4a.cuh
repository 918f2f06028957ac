/* int8 fully connected with __dp4a, for k a multiple of 4 (aligned rows): as fc_s8, with
 * sum_k (x - zx) * w = dp4a(x, w) - zx * wsum[j], wsum[j] the row's weight sum (Python). */
CUVIL_KERNEL fc_s8_dp4a(const int8_t *__restrict__ in, int8_t *__restrict__ out, const int8_t *__restrict__ w,
                        const int32_t *__restrict__ bias, const int32_t *__restrict__ mult,
                        const int32_t *__restrict__ shift, const int32_t *__restrict__ wsum, int rows, int k, int n,
                        int zx, int zy, int lo, int hi)
{
    const int i = cuvil_index();
    if (i >= rows * n) return;
    const int j = i % n, r = i / n;
    const int8_t *x = in + r * k;
    const int8_t *wj = w + j * k;
    int32_t dot = 0;
    for (int t = 0; t < k; t += 4) dot = __dp4a(cuvil_load4(x + t), cuvil_load4(wj + t), dot);
    out[i] = cuvil_requant(bias[j] + dot - zx * wsum[j], mult[j], shift[j], zy, lo, hi);
}
