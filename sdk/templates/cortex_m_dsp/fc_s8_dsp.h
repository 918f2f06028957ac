/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * fc_s8_dsp: fully connected with an int16 input column and 1x4 SMLAD blocks; layouts and
 * constants come from cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
#define CUVIL_DSP_FC_WORDS 1024 /* input column (stack): 4 KiB, K' <= 2048 */
/* Layout (made at compile time by kset_cortex_m_dsp.py): the input row becomes a column of K'
 * int16 values (x - zx; each 4 input bytes as [b0 b2][b1 b3]; K' = k rounded up to 8), and the
 * weights one flash stream per 4 outputs (o0..o3), 32-bit aligned:
 *     [bias o0, o1, o2, o3]                                                   4 words
 *     K'/4 groups of [4 int16 weights of o0][of o1][of o2][of o3]             2K' words
 *       (int8 weights, w8: [4 int8 of o0][of o1][of o2][of o3]                 K' words)
 *     [M, rnd, s] of o0, o1, o2, o3   (cuvil_rq)                               12 words
 * outputs padded to a multiple of 4 with zero rows. */
struct cuvil_fc {
    const uint32_t *col; /* 0: the input row as int16 */
    int32_t n8;          /* 4: K' / 8 */
    int8_t *out;         /* 8: output o0 of the next quad */
    int32_t zy;          /* 12: output zero point */
    uint32_t lo4, hi4;   /* 16, 20: output clamp in every byte */
    const int16_t *end;  /* 24: stream end of the full quads */
    const int16_t *w;    /* 28: stream position */
    int32_t zx;          /* 32: input zero point (the on-the-fly path's tail) */
    int32_t w8;          /* 36: 1: int8 weights (CUVIL_FC_K8_W8), 0: int16 */
};

/* Per 4 column values, int16 weights: LDRD of the column, 2 LDM of 4 outputs' pairs, 8 SMLAD. */
#define CUVIL_FC_K4_W16                       \
    "ldrd lr, r0, [r3], #8\n\t"               \
    "ldmia r1!, {r4, r5, r6, r7}\n\t"         \
    "smlad r8, lr, r4, r8\n\t"                \
    "smlad r8, r0, r5, r8\n\t"                \
    "smlad r9, lr, r6, r9\n\t"                \
    "smlad r9, r0, r7, r9\n\t"                \
    "ldmia r1!, {r4, r5, r6, r7}\n\t"         \
    "smlad r10, lr, r4, r10\n\t"              \
    "smlad r10, r0, r5, r10\n\t"              \
    "smlad r11, lr, r6, r11\n\t"              \
    "smlad r11, r0, r7, r11\n\t"
#define CUVIL_FC_K8_W16 CUVIL_FC_K4_W16 CUVIL_FC_K4_W16
/* Two outputs' 4 int8 weights (LDRD), widened by SXTB16 / SXTB16 ROR 8, into accumulators A, B. */
#define CUVIL_FC_TWO_W8(A, B)                 \
    "ldrd r4, r5, [r1], #8\n\t"               \
    "sxtb16 r6, r4\n\t"                       \
    "sxtb16 r4, r4, ror #8\n\t"               \
    "sxtb16 r7, r5\n\t"                       \
    "sxtb16 r5, r5, ror #8\n\t"               \
    "smlad " A ", lr, r6, " A "\n\t"          \
    "smlad " A ", r0, r4, " A "\n\t"          \
    "smlad " B ", lr, r7, " B "\n\t"          \
    "smlad " B ", r0, r5, " B "\n\t"
#define CUVIL_FC_K4_W8                        \
    "ldrd lr, r0, [r3], #8\n\t"               \
    CUVIL_FC_TWO_W8("r8", "r9")               \
    CUVIL_FC_TWO_W8("r10", "r11")
#define CUVIL_FC_K8_W8 CUVIL_FC_K4_W8 CUVIL_FC_K4_W8

/* Every full quad of outputs: bias, 1x4 SMLAD blocks over K' (8 values per iteration),
 * requantization (+ zy), clamp and one 32-bit store per quad, all in registers. The block
 * needs 14 registers; r7 (the Thumb frame pointer at -O0 or with -fno-omit-frame-pointer,
 * which GCC refuses as a clobber) is saved by the block itself. */
#define CUVIL_FC_QUADS(K8)                    \
    "push {r7}\n\t"                           \
    "2:\n\t"                                  \
    "ldmia r1!, {r8, r9, r10, r11}\n\t"       \
    "ldrd r3, r12, [r2, #0]\n\t"              \
    "1:\n\t"                                  \
    K8                                        \
    "subs r12, r12, #1\n\t"                   \
    "bne 1b\n\t"                              \
    "ldr r12, [r2, #12]\n\t"                  \
    "ldmia r1!, {r0, r3, r4, r5, r6, r7}\n\t" \
    "smmla r8, r8, r0, r3\n\t"                \
    "smmla r9, r9, r5, r6\n\t"                \
    "asr r8, r8, r4\n\t"                      \
    "asr r9, r9, r7\n\t"                      \
    "ldmia r1!, {r0, r3, r4, r5, r6, r7}\n\t" \
    "smmla r10, r10, r0, r3\n\t"              \
    "smmla r11, r11, r5, r6\n\t"              \
    "asr r10, r10, r4\n\t"                    \
    "asr r11, r11, r7\n\t"                    \
    CUVIL_ASM_ZY_SAT4("r12")               \
    "bfi r8, r9, #8, #8\n\t"                  \
    "bfi r8, r10, #16, #8\n\t"                \
    "bfi r8, r11, #24, #8\n\t"                \
    "ldrd r0, r3, [r2, #16]\n\t"              \
    "ssub8 r4, r8, r0\n\t"                    \
    "sel r8, r8, r0\n\t"                      \
    "ssub8 r4, r3, r8\n\t"                    \
    "sel r8, r8, r3\n\t"                      \
    "ldr r0, [r2, #8]\n\t"                    \
    "str r8, [r0], #4\n\t"                    \
    "str r0, [r2, #8]\n\t"                    \
    "ldr r0, [r2, #24]\n\t"                   \
    "cmp r1, r0\n\t"                          \
    "bne 2b\n\t"                              \
    "pop {r7}"

CUVIL_ASM_STREAM_FN(cuvil_fc_quads, struct cuvil_fc, CUVIL_FC_QUADS(CUVIL_FC_K8_W16))
CUVIL_ASM_STREAM_FN(cuvil_fc_quads_w8, struct cuvil_fc, CUVIL_FC_QUADS(CUVIL_FC_K8_W8))

/* The quad's requantization (stream at w: [M, rnd, s] x 4), clamp and `count` stores. */
static void cuvil_fc_store(const struct cuvil_fc *f, const int16_t *w, const int32_t *a, int count)
{
    int32_t y[4];
    for (int i = 0; i < 4; i++, w += 6) y[i] = cuvil_rq(a[i], (int32_t)cuvil_ld32(w), (int32_t)cuvil_ld32(w + 2),
                                                      (int32_t)cuvil_ld32(w + 4), f->zy);
    const uint32_t v = cuvil_clamp4(cuvil_pack4(y[0], y[1], y[2], y[3]), f->lo4, f->hi4);
    for (int i = 0; i < count; i++) f->out[i] = (int8_t)(v >> (8 * i));
}

/* One quad in C (stores `count` outputs): the last of an output count that is not a multiple of
 * 4, or every quad of a layer with a requantization shift below 33. Returns the next quad. */
static const int16_t *cuvil_fc_quad_c(const struct cuvil_fc *f, const int16_t *w, int count)
{
    int32_t a[4];
    for (int i = 0; i < 4; i++, w += 2) a[i] = (int32_t)cuvil_ld32(w);
    const uint32_t *px = f->col;
    const int step = f->w8 ? 2 : 4; /* int16 slots per output per 4 values */
    for (int k = 0; k < 2 * f->n8; k++, px += 2) {
        for (int i = 0; i < 4; i++, w += step) {
            uint32_t lo, hi;
            cuvil_w4(w, f->w8, &lo, &hi);
            a[i] = (int32_t)cuvil_smlad(px[1], hi, cuvil_smlad(px[0], lo, (uint32_t)a[i]));
        }
    }
    cuvil_fc_store(f, w, a, count);
    return w + 24;
}

/* One quad of a row too long for the column buffer: the input bytes are widened on the fly
 * (4 per load, [b0 b2] [b1 b3] as in the column), so K has no limit. */
static const int16_t *cuvil_fc_quad_direct(const struct cuvil_fc *f, const int8_t *in, int k, const int16_t *w,
                                           int count, uint32_t nzx2)
{
    int32_t a[4];
    for (int i = 0; i < 4; i++, w += 2) a[i] = (int32_t)cuvil_ld32(w);
    const int kw = k & ~3, step = f->w8 ? 2 : 4;
    for (int j = 0; j < kw; j += 4) {
        const uint32_t v = cuvil_ld32(in + j), x02 = cuvil_sxtab16(nzx2, v), x13 = cuvil_sxtab16_r8(nzx2, v);
        for (int i = 0; i < 4; i++, w += step) {
            uint32_t lo, hi;
            cuvil_w4(w, f->w8, &lo, &hi);
            a[i] = (int32_t)cuvil_smlad(x13, hi, cuvil_smlad(x02, lo, (uint32_t)a[i]));
        }
    }
    const int rest = f->n8 * 8 - kw; /* 4 or 8 values: the 1-3 last inputs in order, then zeros */
    if (rest > 0) {
        uint32_t x[4] = {0u, 0u, 0u, 0u}; /* the column's pairs for these values */
        for (int j = kw; j < k; j++) {
            const int p = j - kw;
            x[p >> 1] |= ((uint32_t)(in[j] - f->zx) & 0xFFFFu) << (16 * (p & 1));
        }
        for (int r = 0; r < rest >> 1; r += 2)
            for (int i = 0; i < 4; i++, w += step) {
                uint32_t lo, hi;
                cuvil_w4(w, f->w8, &lo, &hi);
                a[i] = (int32_t)cuvil_smlad(x[r + 1], hi, cuvil_smlad(x[r], lo, (uint32_t)a[i]));
            }
    }
    cuvil_fc_store(f, w, a, count);
    return w + 24;
}

/* int8 fully connected, as fc_s8 bit for bit: each input row becomes an int16 column (x - zx)
 * on the stack, then cuvil_fc_quads over the weight stream (see above), a last partial quad in C;
 * in C throughout when fastq is 0 (a requantization shift below 33), and widening on the fly
 * when K' passes the column (2 * CUVIL_DSP_FC_WORDS). w8: int8 weights (else int16) in the stream.
 * kp: K' (k rounded up to 8); nzx2: -zx in both 16-bit halves; lo4/hi4: the output clamp in
 * every byte. */
static void fc_s8_dsp(const int8_t *in, int8_t *out, const int16_t *w, int rows, int k, int n, int kp, int fastq,
                      int w8, uint32_t nzx2, int32_t zx, int32_t zy, uint32_t lo4, uint32_t hi4)
{
    uint32_t col[CUVIL_DSP_FC_WORDS] __attribute__((aligned(8)));
    const int nw = k >> 2, tail = k & 3, full = n >> 2, quads = (n + 3) >> 2;
    const int direct = kp > 2 * CUVIL_DSP_FC_WORDS;
    struct cuvil_fc f = {col, kp >> 3, out, zy, lo4, hi4, w + (long)full * ((w8 ? 2 : 4) * kp + 32), w, zx, w8};
    if (!direct)
        for (int i = (k + 1) >> 1; i < (kp >> 1); i++) col[i] = 0u;
    for (int r = 0; r < rows; r++, in += k) {
        f.out = out + (long)r * n;
        f.w = w;
        if (direct) {
            for (int j = 0; j < quads; j++, f.out += 4)
                f.w = cuvil_fc_quad_direct(&f, in, k, f.w, j < full ? 4 : n & 3, nzx2);
            continue;
        }
        const int8_t *src = in;
        uint32_t *o = col;
        for (int i = 0; i < nw; i++, src += 4, o += 2) {
            const uint32_t v = cuvil_ld32(src);
            o[0] = cuvil_sxtab16(nzx2, v);
            o[1] = cuvil_sxtab16_r8(nzx2, v);
        }
        if (tail) {
            const int32_t e1 = tail > 1 ? src[1] - zx : 0;
            o[0] = ((uint32_t)(src[0] - zx) & 0xFFFFu) | ((uint32_t)e1 << 16);
            if (tail == 3) o[1] = (uint32_t)(src[2] - zx) & 0xFFFFu;
        }
        if (full > 0 && fastq) {
            if (w8) cuvil_fc_quads_w8(&f);
            else cuvil_fc_quads(&f);
        } else {
            for (int j = 0; j < full; j++, f.out += 4) f.w = cuvil_fc_quad_c(&f, f.w, 4);
        }
        if (n & 3) cuvil_fc_quad_c(&f, f.w, n & 3);
    }
}
