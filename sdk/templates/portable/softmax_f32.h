/* float softmax (as_log = 0) or log-softmax (as_log = 1) along the middle axis of [rows][cols][inner]. */
#include <math.h>
static void softmax_f32(const float *in, float *out, int rows, int cols, int inner, int as_log)
{
    for (long r = 0; r < rows; r++)
        for (long j = 0; j < inner; j++) {
            const float *x = in + r * cols * inner + j;
            float *y = out + r * cols * inner + j;
            float m = x[0], sum = 0.0f;
            for (long i = 1; i < cols; i++) if (x[i * inner] > m) m = x[i * inner];
            for (long i = 0; i < cols; i++) { y[i * inner] = expf(x[i * inner] - m); sum += y[i * inner]; }
            if (as_log) {
                const float shift = m + logf(sum);
                for (long i = 0; i < cols; i++) y[i * inner] = x[i * inner] - shift;
            } else {
                for (long i = 0; i < cols; i++) y[i * inner] /= sum;
            }
        }
}
