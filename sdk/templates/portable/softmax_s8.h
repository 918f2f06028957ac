/* int8 softmax along the middle axis of [rows][cols][inner]; output scale 1/256, zero point -128.
 * e = exp_table[max - x]; y = floor((512 e + S) / (2 S)) - 128 with S the sum along the axis. */
static void softmax_s8(const int8_t *in, int8_t *out, int rows, int cols, int inner, const int32_t *exp_table)
{
    for (long r = 0; r < rows; r++)
        for (long j = 0; j < inner; j++) {
            const int8_t *x = in + r * cols * inner + j;
            int8_t *y = out + r * cols * inner + j;
            int32_t m = -128;
            int64_t sum = 0;
            for (long i = 0; i < cols; i++) if (x[i * inner] > m) m = x[i * inner];
            for (long i = 0; i < cols; i++) sum += exp_table[m - x[i * inner]];
            for (long i = 0; i < cols; i++) {
                const int64_t q = (512 * (int64_t)exp_table[m - x[i * inner]] + sum) / (2 * sum) - 128;
                y[i * inner] = (int8_t)(q > 127 ? 127 : q);
            }
        }
}
