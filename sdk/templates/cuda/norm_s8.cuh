/* int8 normalization of [rows][n], one thread per row: the portable norm_s8's rule (integer sums,
 * IEEE float32 sqrt and division: nvcc -prec-sqrt=true -prec-div=true --fmad=false). */
CUVIL_KERNEL norm_s8(const int8_t *__restrict__ in, int8_t *__restrict__ out, const float *__restrict__ gamma,
                     const float *__restrict__ beta, int rows, int n, int period, int stride, int span, int32_t zx,
                     int32_t zy, float e2)
{
    const int r = cuvil_index();
    if (r >= rows) return;
    const int8_t *x = in + (long)r * n;
    int8_t *y = out + (long)r * n;
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
