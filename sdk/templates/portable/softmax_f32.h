/* float softmax over rows of `cols`. */
#include <math.h>
static void softmax_f32(const float *in, float *out, int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        const float *x = in + (long)r * cols;
        float m = x[0], sum = 0.0f;
        for (int i = 1; i < cols; i++) if (x[i] > m) m = x[i];
        for (int i = 0; i < cols; i++) { out[(long)r * cols + i] = expf(x[i] - m); sum += out[(long)r * cols + i]; }
        for (int i = 0; i < cols; i++) out[(long)r * cols + i] /= sum;
    }
}
