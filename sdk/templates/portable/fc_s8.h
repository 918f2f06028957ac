/* int8 fully connected: out[r][j] = requant(bias[j] + sum_k (in[r][k] - zx) * w[j][k]). */
static void fc_s8(const int8_t *in, int8_t *out, const int8_t *w, const int32_t *bias, const int32_t *mult,
                  const int32_t *shift, int rows, int k, int n, int32_t zx, int32_t zy, int32_t lo, int32_t hi)
{
    for (int r = 0; r < rows; r++) {
        const int8_t *x = in + (long)r * k;
        for (int j = 0; j < n; j++) {
            const int8_t *wj = w + (long)j * k;
            int32_t acc = bias[j];
            for (int i = 0; i < k; i++) acc += ((int32_t)x[i] - zx) * wj[i];
            out[(long)r * n + j] = cuvil_requant(acc, mult[j], shift[j], zy, lo, hi);
        }
    }
}
