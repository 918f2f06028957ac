/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * conv2d_s8_dsp_dw3x3: depthwise 3x3 convolution, stride 1 or 2, 4 outputs per SMLAD block on
 * int16 row planes; layouts and constants come from cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
/* ---- cuvil_dsp_dwrow (identical in every cortex_m_dsp depthwise header) ----
 * Depthwise kernels keep the input rows they need as int16 (x - zx) planes: one row of a chunk
 * of cc channels is cc planes of wp values, plane ch holding channel ch of every pixel at
 * column pl + ix (columns of the left and right padding stay 0 = zx - zx). Horizontally
 * adjacent taps of one channel are then adjacent int16 values, a pair for one SMLAD. Rows
 * live in a ring of kh slots on the stack (row iy in slot iy % kh); a padded row reads a
 * zero plane. Channels go in chunks that fit the ring, so no input is converted twice. */
#include "cuvil_dsp_dwrow.h"
/* ---- end cuvil_dsp_dwrow ---- */
/* Weight stream per channel (kset_cortex_m_dsp.py), 19 words:
 *   [bias x 4] then per kernel row [w0 w1] [w2 0] [0 w0] [w1 w2] (int16 pairs), then [M, rnd, s].
 * Stride 1: with the row's values x0..x5 from column ox as pairs [x0 x1] [x2 x3] [x4 x5],
 * outputs ox..ox+3 are [x0 x1].[w0 w1] + [x2 x3].[w2 0], [x0 x1].[0 w0] + [x2 x3].[w1 w2], and
 * the same from [x2 x3] [x4 x5]: 8 SMLAD per row for 12 MACs, each pair loaded once.
 * Stride 2: from pairs P0..P4 at column 2*ox, output ox+j is P(j).[w0 w1] + P(j+1).[w2 0]. */
struct cuvil_dw3 {
    const int16_t *r0, *r1, *r2; /* 0, 4, 8: the channel's plane in kernel rows 0, 1, 2 */
    const int16_t *w;            /* 12: the channel's stream */
    int8_t *out;                 /* 16: the first output of the row */
    int32_t step;                /* 20: bytes between horizontally adjacent outputs */
    uint32_t lo4, hi4;           /* 24, 28: output clamp in every byte */
    int32_t count;               /* 32: outputs in the row (the last block stores 1-4) */
    int32_t zy;                  /* 36: output zero point */
};

#define CUVIL_DW3_ROW_S1(R)                   \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "ldmia r12!, {r4, r5, r6, r7}\n\t"        \
    "smlad r8, lr, r4, r8\n\t"                \
    "smlad r8, r0, r5, r8\n\t"                \
    "smlad r9, lr, r6, r9\n\t"                \
    "smlad r9, r0, r7, r9\n\t"                \
    "smlad r10, r0, r4, r10\n\t"              \
    "smlad r11, r0, r6, r11\n\t"              \
    "ldr lr, [" R "]\n\t"                     \
    "smlad r10, lr, r5, r10\n\t"              \
    "smlad r11, lr, r7, r11\n\t"
#define CUVIL_DW3_ROW_S2(R)                   \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "ldmia r12!, {r4, r5, r6, r7}\n\t"        \
    "smlad r8, lr, r4, r8\n\t"                \
    "smlad r8, r0, r5, r8\n\t"                \
    "smlad r9, r0, r4, r9\n\t"                \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "smlad r9, lr, r5, r9\n\t"                \
    "smlad r10, lr, r4, r10\n\t"              \
    "smlad r10, r0, r5, r10\n\t"              \
    "smlad r11, r0, r4, r11\n\t"              \
    "ldr lr, [" R "]\n\t"                     \
    "smlad r11, lr, r5, r11\n\t"
/* The block loop: bias, three kernel rows (ROW), requantization, clamp, then 4 strided byte
 * stores (fewer in the last block). Registers: r8-r11 outputs, r1/r3/r2 the rows, r12 stream.
 * The block saves r7 itself (the Thumb frame pointer at -O0 or with -fno-omit-frame-pointer,
 * which GCC refuses as a clobber) together with d (r2 becomes a row), read back from [sp]. */
#define CUVIL_DW3_BLOCKS(ROW)                 \
    "push {r2, r7}\n\t"                       \
    "ldr r12, [r2, #12]\n\t"                  \
    "ldr r1, [r2, #0]\n\t"                    \
    "ldr r3, [r2, #4]\n\t"                    \
    "ldr r2, [r2, #8]\n\t"                    \
    "2:\n\t"                                  \
    "ldmia r12!, {r8, r9, r10, r11}\n\t"      \
    ROW("r1") ROW("r3") ROW("r2")             \
    "ldmia r12, {r4, r5, r6}\n\t"             \
    "sub r12, r12, #64\n\t"                   \
    "ldr r0, [sp]\n\t"                        \
    "ldr r0, [r0, #36]\n\t"                   \
    "smmla r8, r8, r4, r5\n\t"                \
    "smmla r9, r9, r4, r5\n\t"                \
    "smmla r10, r10, r4, r5\n\t"              \
    "smmla r11, r11, r4, r5\n\t"              \
    "asr r8, r8, r6\n\t"                      \
    "asr r9, r9, r6\n\t"                      \
    "asr r10, r10, r6\n\t"                    \
    "asr r11, r11, r6\n\t"                    \
    CUVIL_ASM_ZY_SAT4("r0")               \
    "bfi r8, r9, #8, #8\n\t"                  \
    "bfi r8, r10, #16, #8\n\t"                \
    "bfi r8, r11, #24, #8\n\t"                \
    "ldr r4, [sp]\n\t"                        \
    "ldrd r5, r6, [r4, #24]\n\t"              \
    "ssub8 r7, r8, r5\n\t"                    \
    "sel r8, r8, r5\n\t"                      \
    "ssub8 r7, r6, r8\n\t"                    \
    "sel r8, r8, r6\n\t"                      \
    "ldrd r5, r6, [r4, #16]\n\t"              \
    "ldr r7, [r4, #32]\n\t"                   \
    "strb r8, [r5]\n\t"                       \
    "cmp r7, #4\n\t"                          \
    "blt 4f\n\t"                              \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r5, r6]\n\t"                   \
    "add r5, r5, r6, lsl #1\n\t"              \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r5]\n\t"                       \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r5, r6]\n\t"                   \
    "add r5, r5, r6, lsl #1\n\t"              \
    "str r5, [r4, #16]\n\t"                   \
    "subs r7, r7, #4\n\t"                     \
    "str r7, [r4, #32]\n\t"                   \
    "bne 2b\n\t"                              \
    "b 5f\n\t"                                \
    "4:\n\t"                                  \
    "cmp r7, #1\n\t"                          \
    "beq 5f\n\t"                              \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r5, r6]\n\t"                   \
    "cmp r7, #2\n\t"                          \
    "beq 5f\n\t"                              \
    "add r5, r5, r6\n\t"                      \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r5, r6]\n\t"                   \
    "5:\n\t"                                  \
    "pop {r2, r7}"

/* count outputs of one channel in one output row, stride 1 or 2, 4 per block in registers. */
static void __attribute__((noinline)) cuvil_dw3x3_s1(struct cuvil_dw3 *d)
{
    register struct cuvil_dw3 *dr __asm__("r2") = d;
    __asm__ volatile(CUVIL_DW3_BLOCKS(CUVIL_DW3_ROW_S1)
                     : "+r"(dr)
                     :
                     : "r0", "r1", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory");
}

static void __attribute__((noinline)) cuvil_dw3x3_s2(struct cuvil_dw3 *d)
{
    register struct cuvil_dw3 *dr __asm__("r2") = d;
    __asm__ volatile(CUVIL_DW3_BLOCKS(CUVIL_DW3_ROW_S2)
                     : "+r"(dr)
                     :
                     : "r0", "r1", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "r12", "lr", "cc", "memory");
}

/* One output row of the chunk: per channel, one call for the whole row. */
static void cuvil_dw3x3_row(const struct cuvil_dw *k, int oy, const int16_t *const *rows)
{
    struct cuvil_dw3 d;
    d.step = (int32_t)k->out_pix;
    d.lo4 = k->lo4;
    d.hi4 = k->hi4;
    d.zy = k->zy;
    const long b = oy / k->oh;
    int8_t *out = k->out + b * k->oh * k->ow * k->c + (oy - b * k->oh) * k->out_row;
    for (int ch = 0; ch < k->cc; ch++) {
        const long off = (long)ch * k->wp;
        d.r0 = rows[0] == k->zero ? k->zero : rows[0] + off;
        d.r1 = rows[1] == k->zero ? k->zero : rows[1] + off;
        d.r2 = rows[2] == k->zero ? k->zero : rows[2] + off;
        d.w = k->w + ch * 38;
        d.out = out + ch;
        d.count = k->ow;
        if (k->sw == 1) cuvil_dw3x3_s1(&d);
        else cuvil_dw3x3_s2(&d);
    }
}

/* int8 depthwise 3x3 convolution, stride 1 or 2 (channel multiplier 1), NHWC, as conv2d_s8
 * bit for bit: input rows as int16 planes (cuvil_dsp_dwrow), 4 outputs per SMLAD block.
 * `transposed`: the kernel walks the image's columns as rows (Python swapped h/wd, oh/ow,
 * pt/pl and the 3x3 weights; a narrow image then has long rows).
 * w: the stream above; s: the stride (both axes); wp: plane width (even, >= pl + wd, and
 * covering every block's reads: 4 * s * ceil(ow / 4) + 2 columns); cc: channels per chunk;
 * nzx2: -zx in both 16-bit halves; lo4/hi4: clamp in every byte. */
static void conv2d_s8_dsp_dw3x3(const int8_t *in, int8_t *out, const int16_t *w, int n, int h, int wd, int c, int oh,
                                int ow, int s, int pt, int pl, int transposed, int wp, int cc, uint32_t nzx2,
                                int32_t zx, int32_t zy, uint32_t lo4, uint32_t hi4)
{
    /* strides of the walked image (rows of wd pixels) in the NHWC tensor of the real one */
    const long in_row = transposed ? c : (long)wd * c, in_pix = transposed ? (long)h * c : c;
    const long out_row = transposed ? c : (long)ow * c, out_pix = transposed ? (long)oh * c : c;
    struct cuvil_dw k = {in, out, w, 0, 0, n, h, wd, c, oh, ow, 3, 3, s, s, pt, pl, wp, cc, 38,
                         in_row, in_pix, out_row, out_pix, nzx2, lo4, hi4, zx, zy};
    cuvil_dw_run(&k, cc, cuvil_dw3x3_row);
}
