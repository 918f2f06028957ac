/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * conv2d_s8_dsp_dw3x3: depthwise 3x3 convolution, stride 1 or 2, 4 outputs per SMLAD block (a
 * 2-output tail block, a 3-output block for rows of 3) on int16 row planes, int8 (or
 * pre-widened int16) weights; layouts and constants come from
 * cuvil_sdk/kernels/cortex_m_dsp/rules.py (conv_depthwise). */
/* ---- cuvil_dsp_common (identical in every cortex_m_dsp header; the first one included wins) ---- */
#include "cuvil_dsp_common.h"
/* ---- end cuvil_dsp_common ---- */
/* ---- cuvil_dsp_dwrow (identical in every cortex_m_dsp depthwise header) ----
 * Depthwise kernels keep the input rows they need as int16 (x - zx) planes: one row of a chunk
 * of cc channels is cc planes of wp values, plane ch holding channel ch of every pixel at
 * column pl + ix (columns of the left and right padding stay 0 = zx - zx). Horizontally
 * adjacent taps of one channel are then adjacent int16 values, a pair for one SMLAD. Rows
 * live in a ring of kh slots on the stack (row iy in slot iy % kh); a padded row reads a
 * zero slot. Channels go in chunks that fit the ring, so no input is converted twice. */
#include "cuvil_dsp_dwrow.h"
/* ---- end cuvil_dsp_dwrow ---- */
/* Weight stream per channel (rules.py, dw3x3_stream):
 *   w8 (int8 weights, 5 words): per kernel row the bytes [w0 s w1 w2] (s, the requantization
 *      shift, in row 0; 0 in rows 1 and 2), then [bias] [M];
 *   w16 (pre-widened, 9 words): per kernel row the pairs [w0 w1] [w1 w2], then [bias] [M] [s].
 * Per channel the block loop gets P1 = [w0 w1] and P4 = [w1 w2] of each kernel row (w8:
 * SXTB16 gives [w0 w1] and [s w2], PKHTB [w1 w2]) in the frame below. Stride 1: with the
 * row's values x0..x5 from column ox as pairs A = [x0 x1], B = [x2 x3], C = [x4 x5], outputs
 * ox..ox+3 get A.P1 + x2*w2 (SMLAD, SMLABT B P4), x1*w0 + B.P4 (SMLATB A P1, SMLAD), B.P1 +
 * x4*w2, x3*w0 + C.P4: 8 multiplies per row for 12 MACs, each pair loaded once. Stride 2:
 * from pairs Q0..Q4 at column 2*ox, output ox+j gets Qj.P1 + Q(j+1).bottom * w2.
 * Requantization: SMMLA (hi32(acc * M) + rz), ASR s, SSAT 8: rz = 2^(s-1) + (zy << s) when
 * `fast` (no clamp beyond int8, every s <= 23: the sum stays in int32), else rz = 2^(s-1) and
 * zy is added after the shift, then the clamp. */
struct cuvil_dw3f {
    int32_t m, rz, s, step;      /* 0-12: the channel's requantization; bytes between outputs */
    int8_t *out;                 /* 16: the block's first output */
    int32_t remain;              /* 20: outputs of the channel's row not stored yet */
    int32_t bias;                /* 24 */
    uint32_t w[6];               /* 28-48: P1, P4 of kernel rows 0, 1, 2 */
    uint32_t lo4, hi4;           /* 52, 56: output clamp in every byte */
    int32_t zy;                  /* 60: output zero point */
    const int16_t *stream;       /* 64: the next channel's weights */
    int8_t *outch;               /* 68: the next channel's first output */
    int32_t ow;                  /* 72: outputs per row */
    int32_t adv;                 /* 76: bytes from a row pointer after the blocks to the next plane */
    int32_t nch;                 /* 80: channels left */
    int32_t w8;                  /* 84: 1: int8 weights, 0: pre-widened */
    int32_t zyf;                 /* 88: zy folded into rz (fast), else 0 */
    const int16_t *r0, *r1, *r2; /* 92, 96, 100: the chunk's first plane in kernel rows 0, 1, 2 */
    int32_t nrow;                /* 104: output rows per channel in this call */
    int32_t radv;                /* 108: bytes from a row pointer after a row's blocks to the next output row */
    int32_t out_row;             /* 112: bytes between output rows */
    int8_t *rowout;              /* 116: the next output row's first output */
    int32_t rows_left;           /* 120 */
};

/* Per channel: its weights into the frame (w8: widened), rz, out and remain. */
#define CUVIL_DW3_CHANNEL                     \
    "ldr r0, [r12, #64]\n\t"                  \
    "ldr r4, [r12, #84]\n\t"                  \
    "cmp r4, #0\n\t"                          \
    "beq 6f\n\t"                            \
    "ldmia r0!, {r4, r5, r6, r8, r9}\n\t"     \
    "ubfx r10, r4, #8, #8\n\t"                \
    "sxtb16 r11, r4, ror #8\n\t"              \
    "sxtb16 r4, r4\n\t"                       \
    "pkhtb r11, r11, r4, asr #16\n\t"         \
    "sxtb16 lr, r5, ror #8\n\t"               \
    "sxtb16 r5, r5\n\t"                       \
    "pkhtb lr, lr, r5, asr #16\n\t"           \
    "sxtb16 r7, r6, ror #8\n\t"               \
    "sxtb16 r6, r6\n\t"                       \
    "pkhtb r7, r7, r6, asr #16\n\t"           \
    "strd r4, r11, [r12, #28]\n\t"            \
    "strd r5, lr, [r12, #36]\n\t"             \
    "strd r6, r7, [r12, #44]\n\t"             \
    "b 7f\n\t"                                \
    "6:\n\t"                                  \
    "ldmia r0!, {r4, r5, r6, r7, r8, r9}\n\t" \
    "add r10, r12, #28\n\t"                   \
    "stmia r10, {r4, r5, r6, r7, r8, r9}\n\t" \
    "ldmia r0!, {r8, r9, r10}\n\t"            \
    "7:\n\t"                                  \
    "str r0, [r12, #64]\n\t"                  \
    "str r8, [r12, #24]\n\t"                  \
    "ldr r0, [r12, #88]\n\t"                  \
    "lsl r0, r0, r10\n\t"                     \
    "movs r4, #1\n\t"                         \
    "lsl r4, r4, r10\n\t"                     \
    "add r0, r0, r4, lsr #1\n\t"              \
    "str r9, [r12, #0]\n\t"                   \
    "strd r0, r10, [r12, #4]\n\t"             \
    "ldr r4, [r12, #68]\n\t"                  \
    "add r5, r4, #1\n\t"                      \
    "str r5, [r12, #68]\n\t"                  \
    "ldr r5, [r12, #104]\n\t"                 \
    "strd r4, r5, [r12, #116]\n\t"
/* Per output row of the channel: out and remain. */
#define CUVIL_DW3_OUTROW                      \
    "ldrd r4, r5, [r12, #112]\n\t"            \
    "add r6, r5, r4\n\t"                      \
    "str r6, [r12, #116]\n\t"                 \
    "ldr r4, [r12, #72]\n\t"                  \
    "strd r5, r4, [r12, #16]\n\t"

/* One kernel row R (a plane pointer, advanced to the next block) with its pairs at frame
 * offset W; A0-A3: the accumulate operands (the bias register in kernel row 0). */
#define CUVIL_DW3_ROW_S1(R, W, A0, A1, A2, A3)  \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "ldrd r4, r5, [r12, #" W "]\n\t"          \
    "ldr r7, [" R "]\n\t"                     \
    "smlad r8, lr, r4, " A0 "\n\t"            \
    "smlatb r9, lr, r4, " A1 "\n\t"           \
    "smlad r10, r0, r4, " A2 "\n\t"           \
    "smlatb r11, r0, r4, " A3 "\n\t"          \
    "smlabt r8, r0, r5, r8\n\t"               \
    "smlad r9, r0, r5, r9\n\t"                \
    "smlabt r10, r7, r5, r10\n\t"             \
    "smlad r11, r7, r5, r11\n\t"
#define CUVIL_DW3_ROW_S2(R, W, A0, A1, A2, A3)  \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "ldrd r4, r5, [r12, #" W "]\n\t"          \
    "smlad r8, lr, r4, " A0 "\n\t"            \
    "smlabt r8, r0, r5, r8\n\t"               \
    "smlad r9, r0, r4, " A1 "\n\t"            \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "smlabt r9, lr, r5, r9\n\t"               \
    "smlad r10, lr, r4, " A2 "\n\t"           \
    "smlabt r10, r0, r5, r10\n\t"             \
    "smlad r11, r0, r4, " A3 "\n\t"           \
    "ldr lr, [" R "]\n\t"                     \
    "smlabt r11, lr, r5, r11\n\t"
#define CUVIL_DW3_ROWS(ROW)                   \
    "ldr r6, [r12, #24]\n\t"                  \
    ROW("r1", "28", "r6", "r6", "r6", "r6")   \
    ROW("r2", "36", "r8", "r9", "r10", "r11") \
    ROW("r3", "44", "r8", "r9", "r10", "r11")

/* Requantization and stores, fast form (zy in rz, no clamp): 4 strided byte stores, fewer
 * in the channel's last block (then on to label 3, the channel's end). */
#define CUVIL_DW3_STORE_FAST(NEXT)            \
    "ldm r12, {r0, r4, r5, r6, r7, lr}\n\t"   \
    "smmla r8, r8, r0, r4\n\t"                \
    "smmla r9, r9, r0, r4\n\t"                \
    "smmla r10, r10, r0, r4\n\t"              \
    "smmla r11, r11, r0, r4\n\t"              \
    "asr r8, r8, r5\n\t"                      \
    "asr r9, r9, r5\n\t"                      \
    "asr r10, r10, r5\n\t"                    \
    "asr r11, r11, r5\n\t"                    \
    "ssat r8, #8, r8\n\t"                     \
    "ssat r9, #8, r9\n\t"                     \
    "ssat r10, #8, r10\n\t"                   \
    "ssat r11, #8, r11\n\t"                   \
    "subs lr, lr, #4\n\t"                     \
    "ble 4f\n\t"                              \
    "strb r8, [r7]\n\t"                       \
    "strb r9, [r7, r6]\n\t"                   \
    "add r7, r7, r6, lsl #1\n\t"              \
    "strb r10, [r7]\n\t"                      \
    "strb r11, [r7, r6]\n\t"                  \
    "add r7, r7, r6, lsl #1\n\t"              \
    "strd r7, lr, [r12, #16]\n\t"             \
    NEXT                                      \
    "4:\n\t"                                  \
    "adds lr, lr, #4\n\t"                     \
    "strb r8, [r7]\n\t"                       \
    "cmp lr, #2\n\t"                          \
    "blt 3f\n\t"                              \
    "strb r9, [r7, r6]\n\t"                   \
    "beq 3f\n\t"                              \
    "add r7, r7, r6, lsl #1\n\t"              \
    "strb r10, [r7]\n\t"                      \
    "cmp lr, #4\n\t"                          \
    "blt 3f\n\t"                              \
    "strb r11, [r7, r6]\n\t"
/* General form: zy added after the shift, saturated, packed, clamped to [lo, hi]. */
#define CUVIL_DW3_STORE_CLAMP(NEXT)           \
    "ldm r12, {r0, r4, r5, r6, r7, lr}\n\t"   \
    "smmla r8, r8, r0, r4\n\t"                \
    "smmla r9, r9, r0, r4\n\t"                \
    "smmla r10, r10, r0, r4\n\t"              \
    "smmla r11, r11, r0, r4\n\t"              \
    "asr r8, r8, r5\n\t"                      \
    "asr r9, r9, r5\n\t"                      \
    "asr r10, r10, r5\n\t"                    \
    "asr r11, r11, r5\n\t"                    \
    "ldr r0, [r12, #60]\n\t"                  \
    CUVIL_ASM_ZY_SAT4("r0")                   \
    "bfi r8, r9, #8, #8\n\t"                  \
    "bfi r8, r10, #16, #8\n\t"                \
    "bfi r8, r11, #24, #8\n\t"                \
    "ldrd r4, r5, [r12, #52]\n\t"             \
    "ssub8 r0, r8, r4\n\t"                    \
    "sel r8, r8, r4\n\t"                      \
    "ssub8 r0, r5, r8\n\t"                    \
    "sel r8, r8, r5\n\t"                      \
    "subs lr, lr, #4\n\t"                     \
    "ble 4f\n\t"                              \
    "strb r8, [r7]\n\t"                       \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r7, r6]\n\t"                   \
    "add r7, r7, r6, lsl #1\n\t"              \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r7]\n\t"                       \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r7, r6]\n\t"                   \
    "add r7, r7, r6, lsl #1\n\t"              \
    "strd r7, lr, [r12, #16]\n\t"             \
    NEXT                                      \
    "4:\n\t"                                  \
    "adds lr, lr, #4\n\t"                     \
    "strb r8, [r7]\n\t"                       \
    "cmp lr, #2\n\t"                          \
    "blt 3f\n\t"                              \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r7, r6]\n\t"                   \
    "beq 3f\n\t"                              \
    "add r7, r7, r6\n\t"                      \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r7, r6]\n\t"                   \
    "cmp lr, #4\n\t"                          \
    "blt 3f\n\t"                              \
    "add r7, r7, r6\n\t"                      \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r7, r6]\n\t"

/* The 2-output tail block (a row of 4k + 1 or 4k + 2 outputs, k >= 1): after a full 4-output
 * block with 1 or 2 outputs left, the last block computes 2 outputs only (the row pointers
 * advance as for a 4-output block, so the row's end adjustment is the same). */
#define CUVIL_DW3_ROW2_S1(R, W, A0, A1)       \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "ldrd r4, r5, [r12, #" W "]\n\t"          \
    "smlad r8, lr, r4, " A0 "\n\t"            \
    "smlatb r9, lr, r4, " A1 "\n\t"           \
    "smlabt r8, r0, r5, r8\n\t"               \
    "smlad r9, r0, r5, r9\n\t"
#define CUVIL_DW3_ROW2_S2(R, W, A0, A1)       \
    "ldrd lr, r0, [" R "], #16\n\t"           \
    "ldrd r4, r5, [r12, #" W "]\n\t"          \
    "ldr r10, [" R ", #-8]\n\t"               \
    "smlad r8, lr, r4, " A0 "\n\t"            \
    "smlabt r8, r0, r5, r8\n\t"               \
    "smlad r9, r0, r4, " A1 "\n\t"            \
    "smlabt r9, r10, r5, r9\n\t"
#define CUVIL_DW3_ROWS2(ROW2)                 \
    "ldr r6, [r12, #24]\n\t"                  \
    ROW2("r1", "28", "r6", "r6")              \
    ROW2("r2", "36", "r8", "r9")              \
    ROW2("r3", "44", "r8", "r9")
#define CUVIL_DW3_STORE2_FAST                 \
    "ldm r12, {r0, r4, r5, r6, r7, lr}\n\t"   \
    "smmla r8, r8, r0, r4\n\t"                \
    "smmla r9, r9, r0, r4\n\t"                \
    "asr r8, r8, r5\n\t"                      \
    "asr r9, r9, r5\n\t"                      \
    "ssat r8, #8, r8\n\t"                     \
    "ssat r9, #8, r9\n\t"                     \
    "strb r8, [r7]\n\t"                       \
    "cmp lr, #2\n\t"                          \
    "blt 3f\n\t"                              \
    "strb r9, [r7, r6]\n\t"
#define CUVIL_DW3_STORE2_CLAMP                \
    "ldm r12, {r0, r4, r5, r6, r7, lr}\n\t"   \
    "smmla r8, r8, r0, r4\n\t"                \
    "smmla r9, r9, r0, r4\n\t"                \
    "asr r8, r8, r5\n\t"                      \
    "asr r9, r9, r5\n\t"                      \
    "ldr r0, [r12, #60]\n\t"                  \
    "add r8, r8, r0\n\t"                      \
    "add r9, r9, r0\n\t"                      \
    "ssat r8, #8, r8\n\t"                     \
    "ssat r9, #8, r9\n\t"                     \
    "bfi r8, r9, #8, #8\n\t"                  \
    "ldrd r4, r5, [r12, #52]\n\t"             \
    "ssub8 r0, r8, r4\n\t"                    \
    "sel r8, r8, r4\n\t"                      \
    "ssub8 r0, r5, r8\n\t"                    \
    "sel r8, r8, r5\n\t"                      \
    "strb r8, [r7]\n\t"                       \
    "cmp lr, #2\n\t"                          \
    "blt 3f\n\t"                              \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r7, r6]\n\t"
/* After a full 4-output block: on with 4 more (more than 2 left), else the 2-output block. */
#define CUVIL_DW3_TAIL2(ROW2, STORE2)         \
    "cmp lr, #2\n\t"                          \
    "bgt 2b\n\t"                              \
    CUVIL_DW3_ROWS2(ROW2) STORE2              \
    "b 3f\n\t"

/* The 3-output block (rows of exactly 3 outputs: 3 x 3 images at stride 1, 6 x 6 at stride 2):
 * the 4-output block less the fourth output's multiplies and store; the row pointers advance
 * as for a 4-output block. */
#define CUVIL_DW3_ROW3_S1(R, W, A0, A1, A2)   \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "ldrd r4, r5, [r12, #" W "]\n\t"          \
    "ldr r7, [" R "]\n\t"                     \
    "smlad r8, lr, r4, " A0 "\n\t"            \
    "smlatb r9, lr, r4, " A1 "\n\t"           \
    "smlad r10, r0, r4, " A2 "\n\t"           \
    "smlabt r8, r0, r5, r8\n\t"               \
    "smlad r9, r0, r5, r9\n\t"                \
    "smlabt r10, r7, r5, r10\n\t"
#define CUVIL_DW3_ROW3_S2(R, W, A0, A1, A2)   \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "ldrd r4, r5, [r12, #" W "]\n\t"          \
    "smlad r8, lr, r4, " A0 "\n\t"            \
    "smlabt r8, r0, r5, r8\n\t"               \
    "smlad r9, r0, r4, " A1 "\n\t"            \
    "ldrd lr, r0, [" R "], #8\n\t"            \
    "smlabt r9, lr, r5, r9\n\t"               \
    "smlad r10, lr, r4, " A2 "\n\t"           \
    "smlabt r10, r0, r5, r10\n\t"
#define CUVIL_DW3_ROWS3(ROW3)                 \
    "ldr r6, [r12, #24]\n\t"                  \
    ROW3("r1", "28", "r6", "r6", "r6")        \
    ROW3("r2", "36", "r8", "r9", "r10")       \
    ROW3("r3", "44", "r8", "r9", "r10")
#define CUVIL_DW3_STORE3_FAST                 \
    "ldm r12, {r0, r4, r5, r6, r7}\n\t"       \
    "smmla r8, r8, r0, r4\n\t"                \
    "smmla r9, r9, r0, r4\n\t"                \
    "smmla r10, r10, r0, r4\n\t"              \
    "asr r8, r8, r5\n\t"                      \
    "asr r9, r9, r5\n\t"                      \
    "asr r10, r10, r5\n\t"                    \
    "ssat r8, #8, r8\n\t"                     \
    "ssat r9, #8, r9\n\t"                     \
    "ssat r10, #8, r10\n\t"                   \
    "strb r8, [r7]\n\t"                       \
    "strb r9, [r7, r6]\n\t"                   \
    "add r7, r7, r6, lsl #1\n\t"              \
    "strb r10, [r7]\n\t"
#define CUVIL_DW3_STORE3_CLAMP                \
    "ldm r12, {r0, r4, r5, r6, r7}\n\t"       \
    "smmla r8, r8, r0, r4\n\t"                \
    "smmla r9, r9, r0, r4\n\t"                \
    "smmla r10, r10, r0, r4\n\t"              \
    "asr r8, r8, r5\n\t"                      \
    "asr r9, r9, r5\n\t"                      \
    "asr r10, r10, r5\n\t"                    \
    "ldr r0, [r12, #60]\n\t"                  \
    "add r8, r8, r0\n\t"                      \
    "add r9, r9, r0\n\t"                      \
    "add r10, r10, r0\n\t"                    \
    "ssat r8, #8, r8\n\t"                     \
    "ssat r9, #8, r9\n\t"                     \
    "ssat r10, #8, r10\n\t"                   \
    "bfi r8, r9, #8, #8\n\t"                  \
    "bfi r8, r10, #16, #8\n\t"                \
    "ldrd r4, r5, [r12, #52]\n\t"             \
    "ssub8 r0, r8, r4\n\t"                    \
    "sel r8, r8, r4\n\t"                      \
    "ssub8 r0, r5, r8\n\t"                    \
    "sel r8, r8, r5\n\t"                      \
    "strb r8, [r7]\n\t"                       \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r7, r6]\n\t"                   \
    "add r7, r7, r6, lsl #1\n\t"              \
    "lsr r8, r8, #8\n\t"                      \
    "strb r8, [r7]\n\t"

/* One output row of every channel of the chunk: per channel its weights (CUVIL_DW3_CHANNEL),
 * then its blocks (ROWS for the three kernel rows, then STORE: blocks of 4 outputs, or the
 * 3-output block), then the row pointers on to the next channel's planes. r12 holds the frame; r7 (the Thumb frame pointer at -O0 or
 * with -fno-omit-frame-pointer, which GCC refuses as a clobber) is saved by the block. */
#define CUVIL_DW3_FN(NAME, ROWS, STORE)                                                                      \
    static void __attribute__((noinline)) NAME(struct cuvil_dw3f *f)                                         \
    {                                                                                                        \
        register struct cuvil_dw3f *fr __asm__("r0") = f;                                                    \
        __asm__ volatile("push {r7}\n\t"                                                                     \
                         "mov r12, r0\n\t"                                                                   \
                         "add r0, r12, #92\n\t"                                                              \
                         "ldm r0, {r1, r2, r3}\n\t"                                                          \
                         "1:\n\t" CUVIL_DW3_CHANNEL "5:\n\t" CUVIL_DW3_OUTROW                                \
                         "2:\n\t" ROWS STORE "3:\n\t"                                          \
                         "ldr r0, [r12, #108]\n\t"                                                           \
                         "add r1, r1, r0\n\t"                                                                \
                         "add r2, r2, r0\n\t"                                                                \
                         "add r3, r3, r0\n\t"                                                                \
                         "ldr r0, [r12, #120]\n\t"                                                           \
                         "subs r0, r0, #1\n\t"                                                               \
                         "str r0, [r12, #120]\n\t"                                                           \
                         "bne 5b\n\t"                                                                        \
                         "ldr r0, [r12, #76]\n\t"                                                            \
                         "add r1, r1, r0\n\t"                                                                \
                         "add r2, r2, r0\n\t"                                                                \
                         "add r3, r3, r0\n\t"                                                                \
                         "ldr r0, [r12, #80]\n\t"                                                            \
                         "subs r0, r0, #1\n\t"                                                               \
                         "str r0, [r12, #80]\n\t"                                                            \
                         "bne 1b\n\t"                                                                        \
                         "pop {r7}"                                                                          \
                         : "+r"(fr)                                                                          \
                         :                                                                                   \
                         : "r1", "r2", "r3", "r4", "r5", "r6", "r8", "r9", "r10", "r11", "r12", "lr", "cc",  \
                           "memory");                                                                        \
    }
#define CUVIL_DW3_LOOP "b 2b\n\t"
CUVIL_DW3_FN(cuvil_dw3x3_s1, CUVIL_DW3_ROWS(CUVIL_DW3_ROW_S1), CUVIL_DW3_STORE_FAST(CUVIL_DW3_LOOP))
CUVIL_DW3_FN(cuvil_dw3x3_s2, CUVIL_DW3_ROWS(CUVIL_DW3_ROW_S2), CUVIL_DW3_STORE_FAST(CUVIL_DW3_LOOP))
CUVIL_DW3_FN(cuvil_dw3x3_s1_clamp, CUVIL_DW3_ROWS(CUVIL_DW3_ROW_S1), CUVIL_DW3_STORE_CLAMP(CUVIL_DW3_LOOP))
CUVIL_DW3_FN(cuvil_dw3x3_s2_clamp, CUVIL_DW3_ROWS(CUVIL_DW3_ROW_S2), CUVIL_DW3_STORE_CLAMP(CUVIL_DW3_LOOP))
CUVIL_DW3_FN(cuvil_dw3x3_s1_t2, CUVIL_DW3_ROWS(CUVIL_DW3_ROW_S1),
             CUVIL_DW3_STORE_FAST(CUVIL_DW3_TAIL2(CUVIL_DW3_ROW2_S1, CUVIL_DW3_STORE2_FAST)))
CUVIL_DW3_FN(cuvil_dw3x3_s2_t2, CUVIL_DW3_ROWS(CUVIL_DW3_ROW_S2),
             CUVIL_DW3_STORE_FAST(CUVIL_DW3_TAIL2(CUVIL_DW3_ROW2_S2, CUVIL_DW3_STORE2_FAST)))
CUVIL_DW3_FN(cuvil_dw3x3_s1_clamp_t2, CUVIL_DW3_ROWS(CUVIL_DW3_ROW_S1),
             CUVIL_DW3_STORE_CLAMP(CUVIL_DW3_TAIL2(CUVIL_DW3_ROW2_S1, CUVIL_DW3_STORE2_CLAMP)))
CUVIL_DW3_FN(cuvil_dw3x3_s2_clamp_t2, CUVIL_DW3_ROWS(CUVIL_DW3_ROW_S2),
             CUVIL_DW3_STORE_CLAMP(CUVIL_DW3_TAIL2(CUVIL_DW3_ROW2_S2, CUVIL_DW3_STORE2_CLAMP)))
CUVIL_DW3_FN(cuvil_dw3x3_s1_3, CUVIL_DW3_ROWS3(CUVIL_DW3_ROW3_S1), CUVIL_DW3_STORE3_FAST)
CUVIL_DW3_FN(cuvil_dw3x3_s2_3, CUVIL_DW3_ROWS3(CUVIL_DW3_ROW3_S2), CUVIL_DW3_STORE3_FAST)
CUVIL_DW3_FN(cuvil_dw3x3_s1_clamp_3, CUVIL_DW3_ROWS3(CUVIL_DW3_ROW3_S1), CUVIL_DW3_STORE3_CLAMP)
CUVIL_DW3_FN(cuvil_dw3x3_s2_clamp_3, CUVIL_DW3_ROWS3(CUVIL_DW3_ROW3_S2), CUVIL_DW3_STORE3_CLAMP)

/* The frame of one call: the chunk's rows from `rows` (kernel rows 0-2 of the first output
 * row), nrow output rows from output row oy (of the batch-flattened walk), input rows rs bytes
 * apart from one output row to the next (0: one row per call). */
static void cuvil_dw3x3_call(const struct cuvil_dw *k, int oy, const int16_t *const *rows, int nrow, long rs)
{
    struct cuvil_dw3f f;
    const long b = oy / k->oh;
    const int32_t blocks = 8 * k->sw * ((k->ow + 3) >> 2);
    f.step = (int32_t)k->out_pix;
    f.lo4 = k->lo4;
    f.hi4 = k->hi4;
    f.zy = k->zy;
    f.stream = k->w;
    f.outch = k->out + b * k->oh * k->ow * k->c + (oy - b * k->oh) * k->out_row;
    f.ow = k->ow;
    f.nrow = nrow;
    f.radv = (int32_t)(k->sw * rs) - blocks;
    f.adv = (int32_t)(2 * k->wp - nrow * k->sw * rs);
    f.out_row = (int32_t)k->out_row;
    f.nch = k->cc;
    f.w8 = k->stream == 10;
    f.zyf = k->fast ? k->zy : 0;
    f.r0 = rows[0];
    f.r1 = rows[1];
    f.r2 = rows[2];
    /* rows of 4k + 1 or 4k + 2 outputs (k >= 1) end with a 2-output block; rows of 3 outputs
     * are one 3-output block */
    const int t2 = k->ow > 4 && (k->ow & 3) != 0 && (k->ow & 3) <= 2, o3 = k->ow == 3;
    if (k->fast) {
        if (k->sw == 1) (o3 ? cuvil_dw3x3_s1_3 : t2 ? cuvil_dw3x3_s1_t2 : cuvil_dw3x3_s1)(&f);
        else (o3 ? cuvil_dw3x3_s2_3 : t2 ? cuvil_dw3x3_s2_t2 : cuvil_dw3x3_s2)(&f);
    } else {
        if (k->sw == 1) (o3 ? cuvil_dw3x3_s1_clamp_3 : t2 ? cuvil_dw3x3_s1_clamp_t2 : cuvil_dw3x3_s1_clamp)(&f);
        else (o3 ? cuvil_dw3x3_s2_clamp_3 : t2 ? cuvil_dw3x3_s2_clamp_t2 : cuvil_dw3x3_s2_clamp)(&f);
    }
}

/* Ring mode: one output row of the chunk per call, every channel and output of the row. */
static void cuvil_dw3x3_row(const struct cuvil_dw *k, int oy, const int16_t *const *rows)
{
    cuvil_dw3x3_call(k, oy, rows, 1, 0);
}

/* Whole-image mode (a small image): every input row the chunk needs (padded rows as zero
 * slots), slot j = padded row j at ring + j * cc_max * wp, then one call per batch image for
 * every channel and output row (the channel's weights set up once). */
static void cuvil_dw3x3_full(const struct cuvil_dw *args, int cc_max)
{
    int16_t ring[CUVIL_DSP_DW_VALUES] __attribute__((aligned(8)));
    struct cuvil_dw k = *args;
    const int slots = (k.oh - 1) * k.sw + 3;
    const long rs = (long)cc_max * k.wp;
    memset(ring, 0, (size_t)(slots * rs) * sizeof ring[0]);
    for (int ch0 = 0; ch0 < args->c; ch0 += cc_max) {
        k.cc = args->c - ch0 < cc_max ? args->c - ch0 : cc_max;
        k.in = args->in + ch0;
        k.out = args->out + ch0;
        k.w = args->w + (long)ch0 * k.stream;
        for (int b = 0; b < k.n; b++) {
            const int8_t *in_b = k.in + (long)b * k.h * k.wd * k.c;
            for (int iy = 0; iy < k.h && k.pt + iy < slots; iy++) {
                cuvil_dw_row(in_b + iy * k.in_row, ring + (k.pt + iy) * rs, k.wd, k.cc, k.in_pix, k.wp, k.pl, k.nzx2,
                             k.zx);
            }
            const int16_t *rows[3] = {ring, ring + rs, ring + 2 * rs};
            cuvil_dw3x3_call(&k, b * k.oh, rows, k.oh, 2 * rs);
        }
    }
}

/* int8 depthwise 3x3 convolution, stride 1 or 2 (channel multiplier 1), NHWC, as conv2d_s8
 * bit for bit: input rows as int16 planes (cuvil_dsp_dwrow, a full zero slot for padded
 * rows), 4 outputs per SMLAD block, every channel of a row in one assembly loop.
 * `transposed`: the kernel walks the image's columns as rows (Python swapped h/wd, oh/ow,
 * pt/pl and the 3x3 weights; a narrow image then has long rows).
 * w: the stream above; s: the stride (both axes); wp: plane width (even, >= pl + wd, and
 * covering every block's reads: 4 * s * ceil(ow / 4) + 2 columns); cc: channels per chunk;
 * w8: int8 weights (5 words per channel), else pre-widened (9 words); fast: zy folded into
 * the rounding constant and no clamp (else zy added, then clamped to lo4/hi4); full: the
 * whole image of a chunk of cc channels at once ((oh - 1) * s + 3 rows of cc planes fit the
 * ring), else the ring of 3 rows and one call per output row;
 * nzx2: -zx in both 16-bit halves; lo4/hi4: clamp in every byte. */
static void conv2d_s8_dsp_dw3x3(const int8_t *in, int8_t *out, const int16_t *w, int n, int h, int wd, int c, int oh,
                                int ow, int s, int pt, int pl, int transposed, int wp, int cc, int w8, int fast, int full,
                                uint32_t nzx2, int32_t zx, int32_t zy, uint32_t lo4, uint32_t hi4)
{
    /* strides of the walked image (rows of wd pixels) in the NHWC tensor of the real one */
    const long in_row = transposed ? c : (long)wd * c, in_pix = transposed ? (long)h * c : c;
    const long out_row = transposed ? c : (long)ow * c, out_pix = transposed ? (long)oh * c : c;
    struct cuvil_dw k = {in, out, w, 0, 0, n, h, wd, c, oh, ow, 3, 3, s, s, pt, pl, wp, cc, w8 ? 10 : 18, fast,
                         in_row, in_pix, out_row, out_pix, nzx2, lo4, hi4, zx, zy};
    if (full) cuvil_dw3x3_full(&k, cc);
    else cuvil_dw_run(&k, cc, cc, cuvil_dw3x3_row);
}
