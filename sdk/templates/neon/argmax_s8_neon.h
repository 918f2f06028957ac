/* argmax_s8_neon: ArgMax / ArgMin of int8 codes along the middle axis of [outer][n][inner], to int64
 * indices, aarch64 NEON; the same result as argmax_s8 (portable), bit for bit. code bit 0: ArgMin;
 * bit 1: the last of equal values, else the first.
 * - inner > 1 (a head over the channel planes of NCHW): 16 positions per vector, a running best and
 *   its byte-wide indices, both selected (BSL) where the channel's value is better (strictly, for
 *   the first of equal values; or not worse, for the last). Byte indices hold n <= 256 (the rule
 *   declines more). Positions beyond a multiple of 16 one by one.
 * - inner == 1 (channels-last: each position's n values in a row): the best value by a byte max
 *   (min) over 16 values at a time and SMAXV (SMINV), then its first (last) index by a scan. */
#include "cuvil_neon_common.h"

static inline uint8x16_t argmax_s8_neon_pick(int8x16_t best, int8x16_t v, int code)
{
    /* the lanes where v replaces best */
    switch (code & 3) {
    case 0: return vcgtq_s8(v, best);
    case 2: return vcgeq_s8(v, best);
    case 1: return vcltq_s8(v, best);
    default: return vcleq_s8(v, best);
    }
}

static inline int32_t argmax_s8_neon_row(const int8_t *x, int n, int code)
{
    const int minimum = code & 1, n16 = n & ~15;
    int8x16_t m = vdupq_n_s8(minimum ? 127 : -128);
    for (int j = 0; j < n16; j += 16) m = minimum ? vminq_s8(m, vld1q_s8(x + j)) : vmaxq_s8(m, vld1q_s8(x + j));
    int32_t best = minimum ? vminvq_s8(m) : vmaxvq_s8(m);
    for (int j = n16; j < n; j++) best = minimum ? (x[j] < best ? x[j] : best) : (x[j] > best ? x[j] : best);
    if (code & 2) {
        for (int j = n - 1; j > 0; j--)
            if (x[j] == best) return j;
        return 0;
    }
    for (int j = 0; j < n; j++)
        if (x[j] == best) return j;
    return 0;
}

static void argmax_s8_neon(const int8_t *in, int64_t *out, int outer, int n, int inner, int code)
{
    for (int o = 0; o < outer; o++) {
        const int8_t *x = in + (long)o * n * inner;
        int64_t *y = out + (long)o * inner;
        if (inner == 1) {
            y[0] = argmax_s8_neon_row(x, n, code);
            continue;
        }
        int i = 0;
        for (; i + 16 <= inner; i += 16) {
            int8x16_t best = vld1q_s8(x + i);
            uint8x16_t idx = vdupq_n_u8(0);
            for (int j = 1; j < n; j++) {
                const int8x16_t v = vld1q_s8(x + (long)j * inner + i);
                const uint8x16_t take = argmax_s8_neon_pick(best, v, code);
                best = vbslq_s8(take, v, best);
                idx = vbslq_u8(take, vdupq_n_u8((uint8_t)j), idx);
            }
            uint8_t lanes[16];
            vst1q_u8(lanes, idx);
            for (int k = 0; k < 16; k++) y[i + k] = lanes[k];
        }
        for (; i < inner; i++) { /* the last positions one by one, as argmax_s8 */
            int32_t best = x[i], at = 0;
            for (int j = 1; j < n; j++) {
                const int32_t e = x[(long)j * inner + i];
                const int better = (code & 1) ? ((code & 2) ? e <= best : e < best) : ((code & 2) ? e >= best : e > best);
                if (better) {
                    best = e;
                    at = j;
                }
            }
            y[i] = at;
        }
    }
}
