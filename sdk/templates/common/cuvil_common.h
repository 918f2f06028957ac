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

/* q = clamp(floor(x / scale + 0.5) + zp): float32 steps, identical on every target (NaN -> -128). */
static inline int8_t cuvil_quantize(float x, float scale, int32_t zp)
{
    float v = x / scale + 0.5f;
    if (!(v >= -1024.0f)) v = -1024.0f;
    if (v > 1024.0f) v = 1024.0f;
    int32_t t = (int32_t)v;
    if ((float)t > v) t -= 1; /* floor */
    return cuvil_clamp8(t + zp, -128, 127);
}
#endif
