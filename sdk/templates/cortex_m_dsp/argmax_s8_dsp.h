/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * argmax_s8_dsp: ArgMax / ArgMin of int8 codes, as argmax_s8 bit for bit. */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
/* The index of the largest (code bit 0: smallest) of the n int8 values along the middle axis of
 * [outer][n][inner], to int64; code bit 1: the last of equal values, else the first.
 * - inner > 1 (a head over the channel planes of NCHW): 4 positions per word, a running best of 4
 *   int8 lanes and its 4 byte-wide indices, both updated by one SSUB8 and two SELs per channel: the
 *   GE flags of SSUB8 (best - v >= 0, or v - best) pick, per lane, which of the two to keep, so a
 *   tie keeps the first index (or takes the last) exactly as the portable loop. Byte indices hold
 *   n <= 256 (the rule declines more). Positions beyond a multiple of 4 one by one.
 * - inner == 1 (channels-last: each position's n values in a row): the best value by SSUB8 + SEL
 *   over 4 values a word, then its first (last) index by a scan. */
static inline void argmax_s8_dsp_planes(const int8_t *x, int64_t *out, int n, int inner, int i, int code)
{
    uint32_t best = cuvil_ld32(x + i), idx = 0u, t;
    for (int j = 1; j < n; j++) {
        const uint32_t v = cuvil_ld32(x + (long)j * inner + i), jj = (uint32_t)j * 0x01010101u;
        switch (code & 3) {
        case 0: /* max, first: keep best where best >= v */
            __asm__("ssub8 %[t], %[best], %[v]\n\tsel %[best], %[best], %[v]\n\tsel %[idx], %[idx], %[jj]"
                    : [best] "+r"(best), [idx] "+r"(idx), [t] "=&r"(t) : [v] "r"(v), [jj] "r"(jj) : "cc");
            break;
        case 2: /* max, last: take v where v >= best */
            __asm__("ssub8 %[t], %[v], %[best]\n\tsel %[best], %[v], %[best]\n\tsel %[idx], %[jj], %[idx]"
                    : [best] "+r"(best), [idx] "+r"(idx), [t] "=&r"(t) : [v] "r"(v), [jj] "r"(jj) : "cc");
            break;
        case 1: /* min, first: keep best where v >= best */
            __asm__("ssub8 %[t], %[v], %[best]\n\tsel %[best], %[best], %[v]\n\tsel %[idx], %[idx], %[jj]"
                    : [best] "+r"(best), [idx] "+r"(idx), [t] "=&r"(t) : [v] "r"(v), [jj] "r"(jj) : "cc");
            break;
        default: /* min, last: take v where best >= v */
            __asm__("ssub8 %[t], %[best], %[v]\n\tsel %[best], %[v], %[best]\n\tsel %[idx], %[jj], %[idx]"
                    : [best] "+r"(best), [idx] "+r"(idx), [t] "=&r"(t) : [v] "r"(v), [jj] "r"(jj) : "cc");
            break;
        }
    }
    for (int k = 0; k < 4; k++) out[i + k] = (int64_t)((idx >> (8 * k)) & 0xFFu);
}

static inline int32_t argmax_s8_dsp_row(const int8_t *x, int n, int code)
{
    const int minimum = code & 1;
    uint32_t m = minimum ? 0x7F7F7F7Fu : 0x80808080u, t;
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        const uint32_t v = cuvil_ld32(x + j);
        if (minimum)
            __asm__("ssub8 %[t], %[v], %[m]\n\tsel %[m], %[m], %[v]" : [m] "+r"(m), [t] "=&r"(t) : [v] "r"(v) : "cc");
        else
            __asm__("ssub8 %[t], %[v], %[m]\n\tsel %[m], %[v], %[m]" : [m] "+r"(m), [t] "=&r"(t) : [v] "r"(v) : "cc");
    }
    int32_t best = (int8_t)m;
    for (int k = 1; k < 4; k++) {
        const int32_t lane = (int8_t)(m >> (8 * k));
        best = minimum ? (lane < best ? lane : best) : (lane > best ? lane : best);
    }
    for (; j < n; j++) best = minimum ? (x[j] < best ? x[j] : best) : (x[j] > best ? x[j] : best);
    if (code & 2) {
        for (int k = n - 1; k > 0; k--)
            if (x[k] == best) return k;
        return 0;
    }
    for (int k = 0; k < n; k++)
        if (x[k] == best) return k;
    return 0;
}

static void argmax_s8_dsp(const int8_t *in, int64_t *out, int outer, int n, int inner, int code)
{
    for (int o = 0; o < outer; o++) {
        const int8_t *x = in + (long)o * n * inner;
        int64_t *y = out + (long)o * inner;
        if (inner == 1) {
            y[0] = argmax_s8_dsp_row(x, n, code);
            continue;
        }
        int i = 0;
        for (; i + 4 <= inner; i += 4) argmax_s8_dsp_planes(x, y, n, inner, i, code);
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
