/* float normalization of [rows][n] (LayerNormalization, InstanceNormalization, GroupNormalization):
 * y = (x - mean) / sqrt(var + eps) * gamma[i] + beta[i], i = (row % period) * stride + column / span. */
#include <math.h>
static void norm_f32(const float *in, float *out, const float *gamma, const float *beta, int rows, int n, int period,
                     int stride, int span, float eps)
{
    for (long r = 0; r < rows; r++) {
        const float *x = in + r * n;
        float *y = out + r * n;
        const float *g = gamma + (r % period) * stride, *b = beta + (r % period) * stride;
        float mean = 0.0f, var = 0.0f;
        for (int j = 0; j < n; j++) mean += x[j];
        mean /= (float)n;
        for (int j = 0; j < n; j++) var += (x[j] - mean) * (x[j] - mean);
        const float inv = 1.0f / sqrtf(var / (float)n + eps);
        for (int j = 0; j < n; j++) y[j] = (x[j] - mean) * inv * g[j / span] + b[j / span];
    }
}
