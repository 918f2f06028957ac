/* cuvil-sdk CUDA kernels: what every kernel shares. Generated code, do not edit.
 *
 * One thread per output value: index = blockIdx.x * blockDim.x + threadIdx.x, launched on a
 * 1-D grid of ceil(total / block) blocks computed in Python (cuvil_sdk/codegen/cuda.py), so
 * every kernel starts with a bound check. No shared memory and no barriers: the threads of
 * a launch never talk to each other, which is also what lets the same source run on the CPU.
 *
 * The same source compiles with nvcc (device code, extern "C" names looked up with
 * cuModuleGetFunction) and, with CUVIL_CUDA_EMULATION defined, as plain C for the CPU
 * emulation of the driver API that tests the CUDA backend where no GPU is present
 * (cuvil_sdk/codegen/cuda_emulator.py).
 *
 * int8 arithmetic is the portable kernels' exactly (docs/internals.md, numerics): int32 accumulation, the
 * 64-bit requantization below, the int32 Add rule, tables for the rest. */
#include <stdint.h>
#include <math.h>

#ifdef CUVIL_CUDA_EMULATION
#include <string.h>
typedef struct { unsigned int x, y, z; } cuvil_dim3;
extern cuvil_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define CUVIL_KERNEL static void
#define CUVIL_DEVICE static inline
/* __dp4a(a, b, c): c + the sum of the products of the four signed bytes of a and b. */
static inline int __dp4a(int a, int b, int c)
{
    for (int k = 0; k < 4; k++) c += (int)(int8_t)(uint8_t)((uint32_t)a >> (8 * k)) * (int)(int8_t)(uint8_t)((uint32_t)b >> (8 * k));
    return c;
}
CUVIL_DEVICE int cuvil_load4(const int8_t *p)
{
    int v;
    memcpy(&v, p, sizeof v);
    return v;
}
#else
#define CUVIL_KERNEL extern "C" __global__ void
#define CUVIL_DEVICE __device__ __forceinline__
/* Four int8 values at a 4-byte aligned address (Python only picks the dp4a kernels when
 * every such address is aligned: channel counts multiple of 4, 16-byte aligned buffers). */
CUVIL_DEVICE int cuvil_load4(const int8_t *p)
{
    return *(const int *)p;
}
#endif

/* fp16 tensors and weights (--precision fp16): IEEE half storage, float32 arithmetic, as the
 * portable f16 kernels (cuvil_common.h). On the device a half wrapped so that it converts to
 * float and back (round to nearest even) and has no arithmetic of its own: the f32 kernels'
 * expressions compute in float on it unchanged. The CPU emulation uses the compiler's half. */
#ifdef CUVIL_CUDA_EMULATION
#if defined(__ARM_FP16_FORMAT_IEEE) || defined(__aarch64__)
typedef __fp16 cuvil_f16;
#else
typedef _Float16 cuvil_f16;
#endif
#else
#include <cuda_fp16.h>
struct cuvil_f16 {
    __half h;
    cuvil_f16() = default;
    __device__ cuvil_f16(float f) : h(__float2half_rn(f)) {}
    __device__ operator float() const { return __half2float(h); }
};
#endif

CUVIL_DEVICE int cuvil_index(void)
{
    return (int)(blockIdx.x * blockDim.x + threadIdx.x);
}

/* y = clamp(zp + ((acc * mult + 2^(shift-1)) >> shift), lo, hi) in 64-bit arithmetic: the one
 * rounding rule (cuvil_sdk/quant/requant.py, cuvil_requant in cuvil_common.h). */
CUVIL_DEVICE int8_t cuvil_requant(int32_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi)
{
    int64_t v = (((int64_t)acc * mult + ((int64_t)1 << (shift - 1))) >> shift) + zp;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return (int8_t)v;
}

/* The same rule on a 64-bit accumulator (16x8 layers: int16 activations, 15-bit multipliers). */
CUVIL_DEVICE int32_t cuvil_requant_wide(int64_t acc, int32_t mult, int32_t shift, int32_t zp, int32_t lo, int32_t hi)
{
    int64_t v = ((acc * mult + ((int64_t)1 << (shift - 1))) >> shift) + zp;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return (int32_t)v;
}

CUVIL_DEVICE int8_t cuvil_clamp8(int32_t v, int32_t lo, int32_t hi)
{
    return (int8_t)(v < lo ? lo : (v > hi ? hi : v));
}

CUVIL_DEVICE float cuvil_clampf(float v, float lo, float hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* q = clamp(floor(x / scale + 0.5) + zp): IEEE float32 steps (no fast math, no FMA), as on the CPU. */
CUVIL_DEVICE int8_t cuvil_quantize(float x, float scale, int32_t zp)
{
    float v = x / scale + 0.5f;
    if (!(v >= -1024.0f)) v = -1024.0f;
    if (v > 1024.0f) v = 1024.0f;
    int32_t t = (int32_t)v;
    if ((float)t > v) t -= 1;
    return cuvil_clamp8(t + zp, -128, 127);
}
