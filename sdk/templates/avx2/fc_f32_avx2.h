/* fc_f32_avx2: float fully connected, x86-64 AVX2 + FMA. The same sums as fc_f32 (portable)
 * with fused multiply-adds (float rounding may differ). Layout (kset_avx2.py): outputs in
 * blocks of 8, blocks in groups of up to 4; per group, per input k: the group's outputs.
 * With CUVIL_THREADS and threads > 1, the groups are split over threads. */
#include "cuvil_avx2_common.h"

static inline __attribute__((always_inline)) void fc_f32_avx2_group(const float *x, const float *wg, int k,
                                                                    const float *bias, float *dst, int count, int nb,
                                                                    __m256 vlo, __m256 vhi)
{
    __m256 acc[4];
#pragma GCC unroll 4
    for (int v = 0; v < nb; v++) acc[v] = _mm256_loadu_ps(bias + 8 * v);
    for (int i = 0; i < k; i++, wg += 8 * nb) {
        const __m256 xb = _mm256_broadcast_ss(x + i);
#pragma GCC unroll 4
        for (int v = 0; v < nb; v++) acc[v] = _mm256_fmadd_ps(xb, _mm256_loadu_ps(wg + 8 * v), acc[v]);
    }
#pragma GCC unroll 4
    for (int v = 0; v < nb; v++) {
        cuvil_avx2_store_f32(dst + 8 * v, cuvil_avx2_clampf(acc[v], vlo, vhi), count - 8 * v);
    }
}

struct fc_f32_avx2_args {
    const float *in;
    float *out;
    const float *w;
    const float *bias;
    int rows, k, n;
    float lo, hi;
};

static void fc_f32_avx2_part(const void *args, int part, int parts)
{
    const struct fc_f32_avx2_args *a = (const struct fc_f32_avx2_args *)args;
    const int k = a->k, n = a->n;
    const int groups = (n + 31) / 32;
    const int g0 = (int)((long)groups * part / parts), g1 = (int)((long)groups * (part + 1) / parts);
    const __m256 vlo = _mm256_set1_ps(a->lo), vhi = _mm256_set1_ps(a->hi);
    for (int r = 0; r < a->rows; r++) {
        const float *x = a->in + (long)r * k;
        for (int g = g0; g < g1; g++) {
            const int j = g * 32;
            const int nb = (n - j + 7) / 8 < 4 ? (n - j + 7) / 8 : 4;
            const float *wg = a->w + (long)j * k;
            float *dst = a->out + (long)r * n + j;
            switch (nb) {
            case 4: fc_f32_avx2_group(x, wg, k, a->bias + j, dst, n - j, 4, vlo, vhi); break;
            case 3: fc_f32_avx2_group(x, wg, k, a->bias + j, dst, n - j, 3, vlo, vhi); break;
            case 2: fc_f32_avx2_group(x, wg, k, a->bias + j, dst, n - j, 2, vlo, vhi); break;
            default: fc_f32_avx2_group(x, wg, k, a->bias + j, dst, n - j, 1, vlo, vhi); break;
            }
        }
    }
}

static void fc_f32_avx2(const float *in, float *out, const float *w, const float *bias, int rows, int k, int n,
                        float lo, float hi, int threads)
{
    const struct fc_f32_avx2_args a = {in, out, w, bias, rows, k, n, lo, hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(fc_f32_avx2_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    fc_f32_avx2_part(&a, 0, 1);
}
