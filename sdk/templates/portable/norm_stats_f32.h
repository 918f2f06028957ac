/* float mean and 1 / sqrt(var + eps) of each row of [rows][n] (LayerNormalization's optional
 * Mean and InvStdDev outputs; the same sums as norm_f32). */
#include <math.h>
static void norm_stats_f32(const float *in, float *mean, float *inv_std, int rows, int n, float eps)
{
    for (long r = 0; r < rows; r++) {
        const float *x = in + r * n;
        float m = 0.0f, var = 0.0f;
        for (int j = 0; j < n; j++) m += x[j];
        m /= (float)n;
        for (int j = 0; j < n; j++) var += (x[j] - m) * (x[j] - m);
        mean[r] = m;
        inv_std[r] = 1.0f / sqrtf(var / (float)n + eps);
    }
}
