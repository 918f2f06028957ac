/* 16x8 fully connected (int16 activations, int8 weights, int64 accumulator): out[r][j] = requant(bias[j] + sum_k (in[r][k] - zx) * w[j][k]). */
static void fc_s16(const int16_t *in, int16_t *out, const int8_t *w, const int64_t *bias, const int32_t *mult,
                  const int32_t *shift, int rows, int k, int n, int32_t zx, int32_t zy, int32_t lo, int32_t hi)
{
    for (int r = 0; r < rows; r++) {
        const int16_t *x = in + (long)r * k;
        for (int j = 0; j < n; j++) {
            const int8_t *wj = w + (long)j * k;
            int64_t acc = bias[j];
            for (int i = 0; i < k; i++) acc += (int64_t)((int32_t)x[i] - zx) * wj[i];
            out[(long)r * n + j] = (int16_t)cuvil_requant_wide(acc, mult[j], shift[j], zy, lo, hi);
        }
    }
}
