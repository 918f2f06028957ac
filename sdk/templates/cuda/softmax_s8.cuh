/* int8 softmax along the middle axis of [rows][cols][inner], one thread per (row, inner) line;
 * output scale 1/256, zero point -128. e = exp_table[max - x]; y = floor((512 e + S) / (2 S)) - 128
 * with S the sum along the axis (int64). */
CUVIL_KERNEL softmax_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, int rows, int cols, int inner,
                        const int32_t *__restrict__ exp_table)
{
    const int t = cuvil_index();
    if (t >= rows * inner) return;
    const int8_t *x = in + (t / inner) * cols * inner + t % inner;
    int8_t *y = out + (t / inner) * cols * inner + t % inner;
    int32_t m = -128;
    int64_t sum = 0;
    for (int i = 0; i < cols; i++) if (x[i * inner] > m) m = x[i * inner];
    for (int i = 0; i < cols; i++) sum += exp_table[m - x[i * inner]];
    for (int i = 0; i < cols; i++) {
        const int64_t q = (512 * (int64_t)exp_table[m - x[i * inner]] + sum) / (2 * sum) - 128;
        y[i * inner] = (int8_t)(q > 127 ? 127 : q);
    }
}
