/* bool And, Or, Xor, 4-D broadcast, by code (sdk/ops/compare.py LOGIC_CODES): 0 and, 1 or, 2 xor. */
#include <stdbool.h>
static void logic_b8(const bool *a, const bool *b, bool *out, int d0, int d1, int d2, int d3, int sa0, int sa1, int sa2,
                     int sa3, int sb0, int sb1, int sb2, int sb3, int code)
{
    for (int i0 = 0; i0 < d0; i0++)
        for (int i1 = 0; i1 < d1; i1++)
            for (int i2 = 0; i2 < d2; i2++)
                for (int i3 = 0; i3 < d3; i3++) {
                    const bool x = a[i0 * sa0 + i1 * sa1 + i2 * sa2 + i3 * sa3];
                    const bool y = b[i0 * sb0 + i1 * sb1 + i2 * sb2 + i3 * sb3];
                    *out++ = code == 0 ? (x && y) : code == 1 ? (x || y) : (x != y);
                }
}
