/* int8 softmax over rows of `cols`; output scale 1/256, zero point -128.
 * e = exp_table[max - x]; y = floor((512 e + S) / (2 S)) - 128 with S the row sum. */
static void softmax_s8(const int8_t *in, int8_t *out, int rows, int cols, const int32_t *exp_table)
{
    for (int r = 0; r < rows; r++) {
        const int8_t *x = in + (long)r * cols;
        int32_t m = -128;
        int64_t sum = 0;
        for (int i = 0; i < cols; i++) if (x[i] > m) m = x[i];
        for (int i = 0; i < cols; i++) sum += exp_table[m - x[i]];
        for (int i = 0; i < cols; i++) {
            const int64_t q = (512 * (int64_t)exp_table[m - x[i]] + sum) / (2 * sum) - 128;
            out[(long)r * cols + i] = (int8_t)(q > 127 ? 127 : q);
        }
    }
}
