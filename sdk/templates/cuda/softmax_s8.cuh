/* int8 softmax over rows of `cols`, one thread per row; output scale 1/256, zero point -128.
 * e = exp_table[max - x]; y = floor((512 e + S) / (2 S)) - 128 with S the row sum (int64). */
CUVIL_KERNEL softmax_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, int rows, int cols,
                        const int32_t *__restrict__ exp_table)
{
    const int r = cuvil_index();
    if (r >= rows) return;
    const int8_t *x = in + r * cols;
    int32_t m = -128;
    int64_t sum = 0;
    for (int i = 0; i < cols; i++) if (x[i] > m) m = x[i];
    for (int i = 0; i < cols; i++) sum += exp_table[m - x[i]];
    for (int i = 0; i < cols; i++) {
        const int64_t q = (512 * (int64_t)exp_table[m - x[i]] + sum) / (2 * sum) - 128;
        out[r * cols + i] = (int8_t)(q > 127 ? 127 : q);
    }
}
