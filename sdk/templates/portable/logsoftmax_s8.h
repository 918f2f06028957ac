/* int8 log-softmax along the middle axis of [rows][cols][inner]; output scale 16/256, zero point 127.
 * S = sum of exp_table[max - x]; L = the number of the 255 thresholds that S reaches;
 * y = 127 - steps[max - x] - L, clamped (sdk/ops/softmax.py). */
static void logsoftmax_s8(const int8_t *in, int8_t *out, int rows, int cols, int inner, const int32_t *exp_table,
                          const int32_t *steps, const int64_t *thresholds)
{
    for (long r = 0; r < rows; r++)
        for (long j = 0; j < inner; j++) {
            const int8_t *x = in + r * cols * inner + j;
            int8_t *y = out + r * cols * inner + j;
            int32_t m = -128, logs = 0;
            int64_t sum = 0;
            for (long i = 0; i < cols; i++) if (x[i * inner] > m) m = x[i * inner];
            for (long i = 0; i < cols; i++) sum += exp_table[m - x[i * inner]];
            for (int k = 0; k < 255; k++) logs += sum >= thresholds[k];
            for (long i = 0; i < cols; i++) {
                const int32_t q = 127 - steps[m - x[i * inner]] - logs;
                y[i * inner] = (int8_t)(q < -128 ? -128 : q);
            }
        }
}
