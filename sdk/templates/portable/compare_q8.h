/* Comparison of two int8 activations to bool, 4-D broadcast, by code (sdk/ops/compare.py
 * COMPARE_CODES: 0 ==, 1 >, 2 <, 3 >=, 4 <=): of their dequantized values, each
 * (float)(q - z) * s in float32 (correctly rounded: the same on every target). */
#include <stdbool.h>
static inline bool compare_q8_op(float x, float y, int code)
{
    switch (code) {
    case 0: return x == y;
    case 1: return x > y;
    case 2: return x < y;
    case 3: return x >= y;
    default: return x <= y;
    }
}

static void compare_q8(const int8_t *a, const int8_t *b, bool *out, int d0, int d1, int d2, int d3, int sa0, int sa1,
                       int sa2, int sa3, int sb0, int sb1, int sb2, int sb3, int32_t za, int32_t zb, float sa, float sb,
                       int code)
{
    for (int i0 = 0; i0 < d0; i0++)
        for (int i1 = 0; i1 < d1; i1++)
            for (int i2 = 0; i2 < d2; i2++)
                for (int i3 = 0; i3 < d3; i3++) {
                    const float x = (float)((int32_t)a[i0 * sa0 + i1 * sa1 + i2 * sa2 + i3 * sa3] - za) * sa;
                    const float y = (float)((int32_t)b[i0 * sb0 + i1 * sb1 + i2 * sb2 + i3 * sb3] - zb) * sb;
                    *out++ = compare_q8_op(x, y, code);
                }
}
