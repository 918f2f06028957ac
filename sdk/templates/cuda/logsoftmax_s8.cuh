/* int8 log-softmax along the middle axis of [rows][cols][inner], one thread per (row, inner) line
 * (the portable kernel's integer rule); output scale 16/256, zero point 127. */
CUVIL_KERNEL logsoftmax_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, int rows, int cols, int inner,
                           const int32_t *__restrict__ exp_table, const int32_t *__restrict__ steps,
                           const int64_t *__restrict__ thresholds)
{
    const int t = cuvil_index();
    if (t >= rows * inner) return;
    const int8_t *x = in + (t / inner) * cols * inner + t % inner;
    int8_t *y = out + (t / inner) * cols * inner + t % inner;
    int32_t m = -128, logs = 0;
    int64_t sum = 0;
    for (int i = 0; i < cols; i++) if (x[i * inner] > m) m = x[i * inner];
    for (int i = 0; i < cols; i++) sum += exp_table[m - x[i * inner]];
    for (int k = 0; k < 255; k++) logs += sum >= thresholds[k];
    for (int i = 0; i < cols; i++) {
        const int32_t q = 127 - steps[m - x[i * inner]] - logs;
        y[i * inner] = (int8_t)(q < -128 ? -128 : q);
    }
}
