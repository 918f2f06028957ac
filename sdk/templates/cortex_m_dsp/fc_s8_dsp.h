/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * fc_s8_dsp: fully connected with an int16 input column and 1x4 SMLAD blocks; layouts and
 * constants come from cuvil_sdk/kernels/cortex_m_dsp/rules.py (quad_streams). */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
#define CUVIL_DSP_FC_WORDS 1024 /* input column (stack): 4 KiB, K' <= 2048 */
/* Layout (made at compile time by rules.py): the input row becomes a column of K' int16 values
 * (x - zx; each 4 input bytes as [b0 b2][b1 b3]; K' = k rounded up to 8), and the weights one
 * flash stream per 4 outputs (o0..o3), 32-bit aligned. Per group of 4 column slots s0..s3:
 *   int16 weights (w8 = 0): [s0 s1][s2 s3] of o0, of o1, of o2, of o3 (int16 pairs)     8 words
 *   int8 weights (w8 = 1), two outputs (A, B) = (o0, o1), (o2, o3) per 16-bit lane:
 *     [v(s0) v(s1)][v(s2) v(s3)] of (o0, o1), of (o2, o3), v = 256 wA + (wB + 128)      4 words
 *     so the high byte of a lane is wA and its low byte wB + 128 (0..255). SMLAD of a column
 *     pair with the raw word sums 256 wA x + (wB + 128) x (T), SMLAD with its SXTB16 ROR 8
 *     sums wA x (A): B = T - 256 A - 128 sum(x) modulo 2^32, the int32 sum exactly (the
 *     portable kernel's wrapping accumulator), at 3 instructions per 4 MACs instead of 4.
 *   The stream of one quad:
 *     [bias o0, o1, o2, o3] (w8: [b0, b1 + 256 b0, b2, b3 + 256 b2] modulo 2^32)         4 words
 *     K'/4 groups as above                                                      2K' (w8: K') bytes
 *     [M, rnd, s] of o0, o1, o2, o3   (cuvil_rq)                                        12 words
 * outputs padded to a multiple of 4 with zero rows. */
struct cuvil_fc {
    const uint32_t *col; /* 0: the input row as int16 */
    int32_t n8m1;        /* 4: K' / 8 - 1 (its low bit picks where the K16 loop is entered) */
    int8_t *out;         /* 8: output o0 of the next quad */
    int32_t zy;          /* 12: output zero point */
    uint32_t lo4, hi4;   /* 16, 20: output clamp in every byte */
    const int16_t *end;  /* 24: stream end of the quads the block runs */
    const int16_t *w;    /* 28: stream position */
    int32_t zx;          /* 32: input zero point (the on-the-fly path's tail) */
    int32_t w8;          /* 36: 1: int8 weights in pairs of outputs, 0: int16 */
    int32_t n8;          /* 40: K' / 8 (the C paths) */
    uint32_t s128;       /* 44: 128 * sum(x - zx) over the column (w8) */
};

/* Per 4 column values, int16 weights: LDRD of the column, 2 LDM of 4 outputs' pairs, 8 SMLAD
 * (11 instructions per 16 MACs). */
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
/* One output pair's word W against column pair X: T += X.W, then A += X.(high bytes of W). */
#define CUVIL_FC_PAIR_W8(X, W, A, T)          \
    "smlad " T ", " X ", " W ", " T "\n\t"    \
    "sxtb16 " W ", " W ", ror #8\n\t"         \
    "smlad " A ", " X ", " W ", " A "\n\t"
/* Per 4 column values, int8 weights in output pairs: LDRD of the column, one LDM of 4 words,
 * 4 SXTB16, 8 SMLAD (14 instructions per 16 MACs). Accumulators: r8 A of o0, r9 T of o1,
 * r10 A of o2, r11 T of o3. */
#define CUVIL_FC_K4_W8                        \
    "ldrd lr, r0, [r3], #8\n\t"               \
    "ldmia r1!, {r4, r5, r6, r7}\n\t"         \
    CUVIL_FC_PAIR_W8("lr", "r4", "r8", "r9")  \
    CUVIL_FC_PAIR_W8("r0", "r5", "r8", "r9")  \
    CUVIL_FC_PAIR_W8("lr", "r6", "r10", "r11") \
    CUVIL_FC_PAIR_W8("r0", "r7", "r10", "r11")
/* w8: o1 = T - 256 A(o0) - 128 sum(x), o3 likewise (r0 free after the K loop). */
#define CUVIL_FC_FIX_W8                       \
    "ldr r0, [r2, #44]\n\t"                   \
    "sub r9, r9, r8, lsl #8\n\t"              \
    "sub r11, r11, r10, lsl #8\n\t"           \
    "sub r9, r9, r0\n\t"                      \
    "sub r11, r11, r0\n\t"
#define CUVIL_FC_K8(K4) K4 K4

/* Every quad of outputs from f->w to f->end: bias, 1x4 SMLAD blocks over K' (16 values per
 * iteration, the loop entered half way when K'/8 is odd: the count K'/8 - 1 halved, its low
 * bit in the carry), requantization (+ zy), clamp and one 32-bit store per quad, all in
 * registers. The block needs 14 registers; r7 (the Thumb frame pointer at -O0 or with
 * -fno-omit-frame-pointer, which GCC refuses as a clobber) is saved by the block itself. */
#define CUVIL_FC_QUADS(K4, FIX)               \
    "push {r7}\n\t"                           \
    "2:\n\t"                                  \
    "ldmia r1!, {r8, r9, r10, r11}\n\t"       \
    "ldrd r3, r12, [r2, #0]\n\t"              \
    "lsrs r12, r12, #1\n\t"                   \
    "bcc 3f\n\t"                              \
    "1:\n\t"                                  \
    CUVIL_FC_K8(K4)                           \
    "3:\n\t"                                  \
    CUVIL_FC_K8(K4)                           \
    "subs r12, r12, #1\n\t"                   \
    "bpl 1b\n\t"                              \
    FIX                                       \
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
    CUVIL_ASM_ZY_SAT4("r12")                  \
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

CUVIL_ASM_STREAM_FN(cuvil_fc_quads, struct cuvil_fc, CUVIL_FC_QUADS(CUVIL_FC_K4_W16, ""))
CUVIL_ASM_STREAM_FN(cuvil_fc_quads_w8, struct cuvil_fc, CUVIL_FC_QUADS(CUVIL_FC_K4_W8, CUVIL_FC_FIX_W8))

/* The low bytes of both lanes of an int8-pair word less 128: wB of each lane as int16 lanes. */
static inline uint32_t cuvil_fc_low_w(uint32_t v)
{
    return (((v & 0xFFu) - 128u) & 0xFFFFu) | ((((v >> 16) & 0xFFu) - 128u) << 16);
}

/* The quad's bias as four int32 sums (w8 streams hold b1 + 256 b0 and b3 + 256 b2). */
static void cuvil_fc_bias(const int16_t *w, int w8, int32_t *a)
{
    for (int i = 0; i < 4; i++) a[i] = (int32_t)cuvil_ld32(w + 2 * i);
    if (w8) {
        a[1] = (int32_t)((uint32_t)a[1] - ((uint32_t)a[0] << 8));
        a[3] = (int32_t)((uint32_t)a[3] - ((uint32_t)a[2] << 8));
    }
}

/* One group of 4 column slots (x01: slots 0, 1; x23: slots 2, 3) for the quad's 4 outputs, in
 * C: a[i] += the group's products of output i. Returns the next group. */
static const int16_t *cuvil_fc_group(const int16_t *w, int w8, uint32_t x01, uint32_t x23, int32_t *a)
{
    if (!w8) {
        for (int i = 0; i < 4; i++, w += 4)
            a[i] = (int32_t)cuvil_smlad(x23, cuvil_ld32(w + 2), cuvil_smlad(x01, cuvil_ld32(w), (uint32_t)a[i]));
        return w;
    }
    for (int p = 0; p < 2; p++, w += 4) {
        const uint32_t v0 = cuvil_ld32(w), v1 = cuvil_ld32(w + 2);
        a[2 * p] = (int32_t)cuvil_smlad(x23, cuvil_sxtb16_r8(v1), cuvil_smlad(x01, cuvil_sxtb16_r8(v0),
                                                                                (uint32_t)a[2 * p]));
        a[2 * p + 1] = (int32_t)cuvil_smlad(x23, cuvil_fc_low_w(v1), cuvil_smlad(x01, cuvil_fc_low_w(v0),
                                                                                  (uint32_t)a[2 * p + 1]));
    }
    return w;
}

/* The quad's requantization (stream at w: [M, rnd, s] x 4), clamp and `count` stores. */
static void cuvil_fc_store(const struct cuvil_fc *f, const int16_t *w, const int32_t *a, int count)
{
    int32_t y[4];
    for (int i = 0; i < 4; i++, w += 6) y[i] = cuvil_rq(a[i], (int32_t)cuvil_ld32(w), (int32_t)cuvil_ld32(w + 2),
                                                      (int32_t)cuvil_ld32(w + 4), f->zy);
    const uint32_t v = cuvil_clamp4(cuvil_pack4(y[0], y[1], y[2], y[3]), f->lo4, f->hi4);
    for (int i = 0; i < count; i++) f->out[i] = (int8_t)(v >> (8 * i));
}

/* One quad in C (stores `count` outputs): every quad of a layer with a requantization shift
 * below 33. Returns the next quad. */
static const int16_t *cuvil_fc_quad_c(const struct cuvil_fc *f, const int16_t *w, int count)
{
    int32_t a[4];
    cuvil_fc_bias(w, f->w8, a);
    w += 8;
    const uint32_t *px = f->col;
    for (int k = 0; k < 2 * f->n8; k++, px += 2) w = cuvil_fc_group(w, f->w8, px[0], px[1], a);
    cuvil_fc_store(f, w, a, count);
    return w + 24;
}

/* One quad of a row too long for the column buffer: the input bytes are widened on the fly
 * (4 per load, [b0 b2] [b1 b3] as in the column), so K has no limit. */
static const int16_t *cuvil_fc_quad_direct(const struct cuvil_fc *f, const int8_t *in, int k, const int16_t *w,
                                           int count, uint32_t nzx2)
{
    int32_t a[4];
    cuvil_fc_bias(w, f->w8, a);
    w += 8;
    const int kw = k & ~3;
    for (int j = 0; j < kw; j += 4) {
        const uint32_t v = cuvil_ld32(in + j);
        w = cuvil_fc_group(w, f->w8, cuvil_sxtab16(nzx2, v), cuvil_sxtab16_r8(nzx2, v), a);
    }
    const int rest = f->n8 * 8 - kw; /* 4 or 8 values: the 1-3 last inputs in order, then zeros */
    if (rest > 0) {
        uint32_t x[4] = {0u, 0u, 0u, 0u}; /* the column's pairs for these values */
        for (int j = kw; j < k; j++) {
            const int p = j - kw;
            x[p >> 1] |= ((uint32_t)(in[j] - f->zx) & 0xFFFFu) << (16 * (p & 1));
        }
        for (int r = 0; r < rest >> 1; r += 2) w = cuvil_fc_group(w, f->w8, x[r], x[r + 1], a);
    }
    cuvil_fc_store(f, w, a, count);
    return w + 24;
}

/* The quads of the stream from f->w to f->end through the assembly block. */
static void cuvil_fc_quads_any(struct cuvil_fc *f)
{
    if (f->w8) cuvil_fc_quads_w8(f);
    else cuvil_fc_quads(f);
}

/* int8 fully connected, as fc_s8 bit for bit: each input row becomes an int16 column (x - zx)
 * on the stack (and, w8, 128 times its sum), then cuvil_fc_quads over the weight stream (see
 * above), a last partial quad through the same block into a word on the stack (its `n & 3`
 * bytes then copied); in C throughout when fastq is 0 (a requantization shift below 33), and
 * widening on the fly when K' passes the column (2 * CUVIL_DSP_FC_WORDS). w8: int8 weights in
 * output pairs (else int16) in the stream. kp: K' (k rounded up to 8); nzx2: -zx in both 16-bit
 * halves; lo4/hi4: the output clamp in every byte. */
static void fc_s8_dsp(const int8_t *in, int8_t *out, const int16_t *w, int rows, int k, int n, int kp, int fastq,
                      int w8, uint32_t nzx2, int32_t zx, int32_t zy, uint32_t lo4, uint32_t hi4)
{
    uint32_t col[CUVIL_DSP_FC_WORDS] __attribute__((aligned(8)));
    const int nw = k >> 2, tail = k & 3, full = n >> 2, quads = (n + 3) >> 2, rest = n & 3;
    const int direct = kp > 2 * CUVIL_DSP_FC_WORDS;
    const long qw = (long)(w8 ? 2 : 4) * kp + 32; /* int16 slots per quad */
    struct cuvil_fc f = {col, (kp >> 3) - 1, out, zy, lo4, hi4, w + full * qw, w, zx, w8, kp >> 3, 0u};
    if (!direct)
        for (int i = (k + 1) >> 1; i < (kp >> 1); i++) col[i] = 0u;
    for (int r = 0; r < rows; r++, in += k) {
        f.out = out + (long)r * n;
        f.w = w;
        if (direct) {
            for (int j = 0; j < quads; j++, f.out += 4)
                f.w = cuvil_fc_quad_direct(&f, in, k, f.w, j < full ? 4 : rest, nzx2);
            continue;
        }
        const int8_t *src = in;
        uint32_t *o = col, sum = 0u;
        for (int i = 0; i < nw; i++, src += 4, o += 2) {
            const uint32_t v = cuvil_ld32(src);
            o[0] = cuvil_sxtab16(nzx2, v);
            o[1] = cuvil_sxtab16_r8(nzx2, v);
            if (w8) sum = cuvil_smlad(o[0], 0x00010001u, cuvil_smlad(o[1], 0x00010001u, sum));
        }
        if (tail) {
            const int32_t e1 = tail > 1 ? src[1] - zx : 0, e2 = tail > 2 ? src[2] - zx : 0;
            o[0] = ((uint32_t)(src[0] - zx) & 0xFFFFu) | ((uint32_t)e1 << 16);
            if (tail == 3) o[1] = (uint32_t)e2 & 0xFFFFu;
            sum += (uint32_t)(src[0] - zx + e1 + e2);
        }
        f.s128 = sum << 7;
        if (!fastq) {
            for (int j = 0; j < full; j++, f.out += 4) f.w = cuvil_fc_quad_c(&f, f.w, 4);
            if (rest) cuvil_fc_quad_c(&f, f.w, rest);
            continue;
        }
        if (full > 0) {
            f.end = w + full * qw;
            cuvil_fc_quads_any(&f);
        }
        if (rest) {
            uint32_t last = 0u;
            int8_t *dst = f.out;
            f.out = (int8_t *)&last;
            f.end = f.w + qw;
            cuvil_fc_quads_any(&f);
            memcpy(dst, &last, (size_t)rest);
        }
    }
}
