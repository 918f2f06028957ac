/* fc_s8_neon: int8 fully connected, aarch64 NEON with the dot-product extension (SDOT; plain
 * NEON without it). Same result as fc_s8 (portable), bit for bit. The raw int8 inputs are
 * multiplied (copied to the stack, zero-padded to whole 16-byte vectors) and the compiler's
 * bias, bias - zx * (sum of the output's weights), makes the sums those of (x - zx) * w
 * (exact modulo 2^32). Layout (kset_neon.py): outputs in blocks of 4, up to 8 blocks per
 * group; per group, per quad of inputs (k zero-padded to kp, a multiple of 16): the group's
 * outputs x 4 inputs, int8. With CUVIL_THREADS and threads > 1, groups go to threads. */
#include "cuvil_neon_common.h"


static inline __attribute__((always_inline)) void fc_s8_neon_group(const int8_t *x, const int8_t *wg, int kp,
                                                                   const int32_t *bias, const int32_t *mult,
                                                                   const int64_t *rq, int64x2_t zy, int8_t *dst,
                                                                   int count, int nb, int8x16_t vlo, int8x16_t vhi)
{
    int32x4_t acc[8];
#pragma GCC unroll 8
    for (int v = 0; v < nb; v++) acc[v] = vld1q_s32(bias + 4 * v);
    for (int k = 0; k < kp; k += 16) {
        const int8x16_t xv = vld1q_s8(x + k);
#define FC_S8_NEON_STEP(L)                                                                              \
    do {                                                                                               \
        _Pragma("GCC unroll 8") for (int v = 0; v < nb; v++) acc[v] =                                  \
            CUVIL_NEON_DOT_LANE(acc[v], vld1q_s8(wg + ((L) * nb + v) * 16), xv, L);                    \
    } while (0)
        FC_S8_NEON_STEP(0);
        FC_S8_NEON_STEP(1);
        FC_S8_NEON_STEP(2);
        FC_S8_NEON_STEP(3);
#undef FC_S8_NEON_STEP
        wg += 4 * 16 * nb;
    }
    for (int v = 0; v < nb; v += 4) {
        int32x4_t r[4];
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++)
            r[u] = v + u < nb ? cuvil_neon_requant4(acc[v + u < nb ? v + u : 0], vld1q_s32(mult + 4 * (v + u)),
                                                    rq + 8 * (v + u), zy)
                              : vdupq_n_s32(0);
        cuvil_neon_store_s8(dst + 4 * v, cuvil_neon_narrow16(r[0], r[1], r[2], r[3], vlo, vhi), count - 4 * v);
    }
}

struct fc_s8_neon_args {
    const int8_t *in;
    int8_t *out;
    const int8_t *w;
    const int32_t *bias;
    const int32_t *mult;
    const int64_t *rq;
    int rows, k, n, kp;
    int32_t zy, lo, hi;
};

static void fc_s8_neon_part(const void *args, int part, int parts)
{
    const struct fc_s8_neon_args *a = (const struct fc_s8_neon_args *)args;
    const int k = a->k, n = a->n, kp = a->kp;
    const int groups = (n + 31) / 32;
    const int g0 = (int)((long)groups * part / parts), g1 = (int)((long)groups * (part + 1) / parts);
    int8_t x[kp];
    const int8x16_t vlo = vdupq_n_s8((int8_t)a->lo), vhi = vdupq_n_s8((int8_t)a->hi);
    const int64x2_t zy = vdupq_n_s64(a->zy);
    for (int r = 0; r < a->rows; r++) {
        memcpy(x, a->in + (long)r * k, (size_t)k);
        memset(x + k, 0, (size_t)(kp - k));
        for (int g = g0; g < g1; g++) {
            const int j = g * 32;
            const int nb = (n - j + 3) / 4 < 8 ? (n - j + 3) / 4 : 8;
            const int8_t *wg = a->w + (long)j * kp;
            int8_t *dst = a->out + (long)r * n + j;
            const int32_t *bb = a->bias + j, *mb = a->mult + j;
            const int64_t *qb = a->rq + 2L * j;
            switch (nb) {
            case 8: fc_s8_neon_group(x, wg, kp, bb, mb, qb, zy, dst, n - j, 8, vlo, vhi); break;
            case 7: fc_s8_neon_group(x, wg, kp, bb, mb, qb, zy, dst, n - j, 7, vlo, vhi); break;
            case 6: fc_s8_neon_group(x, wg, kp, bb, mb, qb, zy, dst, n - j, 6, vlo, vhi); break;
            case 5: fc_s8_neon_group(x, wg, kp, bb, mb, qb, zy, dst, n - j, 5, vlo, vhi); break;
            case 4: fc_s8_neon_group(x, wg, kp, bb, mb, qb, zy, dst, n - j, 4, vlo, vhi); break;
            case 3: fc_s8_neon_group(x, wg, kp, bb, mb, qb, zy, dst, n - j, 3, vlo, vhi); break;
            case 2: fc_s8_neon_group(x, wg, kp, bb, mb, qb, zy, dst, n - j, 2, vlo, vhi); break;
            default: fc_s8_neon_group(x, wg, kp, bb, mb, qb, zy, dst, n - j, 1, vlo, vhi); break;
            }
        }
    }
}

static void fc_s8_neon(const int8_t *in, int8_t *out, const int8_t *w, const int32_t *bias, const int32_t *mult,
                       const int64_t *rq, int rows, int k, int n, int kp, int32_t zy, int32_t lo, int32_t hi,
                       int threads)
{
    const struct fc_s8_neon_args a = {in, out, w, bias, mult, rq, rows, k, n, kp, zy, lo, hi};
#ifdef CUVIL_THREADS
    if (threads > 1) {
        cuvil_parallel(fc_s8_neon_part, &a, threads);
        return;
    }
#endif
    (void)threads;
    fc_s8_neon_part(&a, 0, 1);
}
