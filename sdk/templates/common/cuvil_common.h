/* cuvil-sdk common definitions: the one rounding rule (see cuvil_sdk/quant/requant.py).
 * Generated code, do not edit. */
#ifndef CUVIL_COMMON_H
#define CUVIL_COMMON_H
#include <stdint.h>

/* y = clamp(zp + ((acc * mult + 2^(shift-1)) >> shift), lo, hi), in 64-bit arithmetic.
 * The right shift of a negative int64 is arithmetic on every compiler we support. */
static inline int8_t cuvil_requant(int32_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi)
{
    int64_t v = (((int64_t)acc * mult + ((int64_t)1 << (shift - 1))) >> shift) + zp;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return (int8_t)v;
}

static inline int8_t cuvil_clamp8(int32_t v, int32_t lo, int32_t hi)
{
    return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}

static inline float cuvil_clampf(float v, float lo, float hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}
#endif
