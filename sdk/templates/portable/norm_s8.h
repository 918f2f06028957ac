/* int8 normalization of [rows][n] (sdk/ops/normalization.py): with x the zero-point-corrected row,
 * S = sum x, V = n sum x^2 - S^2 (int64), c = n x - S,
 * y = quantize(((float)c * (1 / sqrtf((float)V + e2))) * gamma[i] + beta[i], 1, zy),
 * i = (row % period) * stride + column / span; gamma and beta are already divided by the output scale. */
#include <math.h>
static void norm_s8(const int8_t *in, int8_t *out, const float *gamma, const float *beta, int rows, int n, int period,
                    int stride, int span, int32_t zx, int32_t zy, float e2)
{
    for (long r = 0; r < rows; r++) {
        const int8_t *x = in + r * n;
        int8_t *y = out + r * n;
        const float *g = gamma + (r % period) * stride, *b = beta + (r % period) * stride;
        int32_t total = 0;
        int64_t squares = 0;
        for (int j = 0; j < n; j++) {
            const int32_t v = x[j] - zx;
            total += v;
            squares += v * v;
        }
        const int64_t spread = (int64_t)n * squares - (int64_t)total * total;
        const float inv = 1.0f / sqrtf((float)spread + e2);
        for (int j = 0; j < n; j++) {
            const float t = (float)((x[j] - zx) * n - total) * inv;
            y[j] = cuvil_quantize(t * g[j / span] + b[j / span], 1.0f, zy);
        }
    }
}
