/* fc_f32_neon: float fully connected, aarch64 NEON. The same sums as fc_f32 (portable) with
 * fused multiply-adds (float rounding may differ). Layout (kset_neon.py): outputs in blocks of
 * 4, up to 8 blocks per group; per group, per input k: the group's outputs. With CUVIL_THREADS
 * and threads > 1, the groups are split over threads. */
#include "cuvil_neon_common.h"


static inline __attribute__((always_inline)) void fc_f32_neon_group(const float *x, const float *wg, int k,
                                                                    const float *bias, float *dst, int count, int nb,
                                                                    float32x4_t vlo, float32x4_t vhi)
{
    float32x4_t acc[8];
#pragma GCC unroll 8
    for (int v = 0; v < nb; v++) acc[v] = vld1q_f32(bias + 4 * v);
    for (int i = 0; i < k; i++, wg += 4 * nb) {
        const float xi = x[i];
#pragma GCC unroll 8
        for (int v = 0; v < nb; v++) acc[v] = vfmaq_n_f32(acc[v], vld1q_f32(wg + 4 * v), xi);
    }
#pragma GCC unroll 8
    for (int v = 0; v < nb; v++) cuvil_neon_store_f32(dst + 4 * v, cuvil_neon_clampf(acc[v], vlo, vhi), count - 4 * v);
}

struct fc_f32_neon_args {
    const float *in;
    float *out;
    const float *w;
    const float *bias;
    int rows, k, n;
    float lo, hi;
};

static void fc_f32_neon_part(const void *args, int part, int parts)
{
    const struct fc_f32_neon_args *a = (const struct fc_f32_neon_args *)args;
    const int k = a->k, n = a->n;
    const int groups = (n + 31) / 32;
    const int g0 = (int)((long)groups * part / parts), g1 = (int)((long)groups * (part + 1) / parts);
    const float32x4_t vlo = vdupq_n_f32(a->lo), vhi = vdupq_n_f32(a->hi);
    for (int r = 0; r < a->rows; r++) {
        const float *x = a->in + (long)r * k;
        for (int g = g0; g < g1; g++) {
            const int j = g * 32;
            const int nb = (n - j + 3) / 4 < 8 ? (n - j + 3) / 4 : 8;
            const float *wg = a->w + (long)j * k;
            float *dst = a->out + (long)r * n + j;
            switch (nb) {
            case 8: fc_f32_neon_group(x, wg, k, a->bias + j, dst, n - j, 8, vlo, vhi); break;
            case 7: fc_f32_neon_group(x, wg, k, a->bias + j, dst, n - j, 7, vlo, vhi); break;
            case 6: fc_f32_neon_group(x, wg, k, a->bias + j, dst, n - j, 6, vlo, vhi); break;
            case 5: fc_f32_neon_group(x, wg, k, a->bias + j, dst, n - j, 5, vlo, vhi); break;
            case 4: fc_f32_neon_group(x, wg, k, a->bias + j, dst, n - j, 4, vlo, vhi); break;
            case 3: fc_f32_neon_group(x, wg, k, a->bias + j, dst, n - j, 3, vlo, vhi); break;
            case 2: fc_f32_neon_group(x, wg, k, a->bias + j, dst, n - j, 2, vlo, vhi); break;
            default: fc_f32_neon_group(x, wg, k, a->bias + j, dst, n - j, 1, vlo, vhi); break;
            }
        }
    }
}

static void fc_f32_neon(const float *in, float *out, const float *w, const float *bias, int rows, int k, int n,
                        float lo, float hi, int threads)
{
    const struct fc_f32_neon_args a = {in, out, w, bias, rows, k, n, lo, hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(fc_f32_neon_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    fc_f32_neon_part(&a, 0, 1);
}
