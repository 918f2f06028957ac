/* Helium (Armv8.1-M MVE) kernel set, cuvil-sdk. Generated code, do not edit.
 * fc_s8_mve: int8 fully connected layer, 1 row x 4 outputs per VMLADAVA loop; weights and
 * constants laid out by cuvil_sdk/kernels/helium/rules.py. */
#include "cuvil_mve_common.h"

/* acc[0..3] += the dot products of x[0..k) with the 4 outputs' weights (per 16 values of K', 16
 * of each output in turn, zero past k). A tail-predicated loop (DLSTP/LETP): the last pass
 * loads and sums only the k % 16 values left, so nothing past x + k is read. Per 16 values: 5
 * loads, 4 VMLADAVA and LETP, 10 instructions for 64 multiply-adds. */
struct cuvil_mve_quad {
    const int8_t *x;
    const int8_t *w;
    int32_t k;
    int32_t acc[4];
};

static void __attribute__((noinline)) cuvil_mve_quad(struct cuvil_mve_quad *q)
{
    register struct cuvil_mve_quad *qr __asm__("r0") = q;
    __asm__ volatile(
        "push {r0}\n\t"
        "ldrd r1, r3, [r0]\n\t"
        "ldr r5, [r0, #8]\n\t"
        "add r0, r0, #12\n\t"
        "ldm r0, {r0, r2, r4, r6}\n\t"
        "dlstp.8 lr, r5\n"
        "1:\n\t"
        "vldrb.8 q0, [r1], #16\n\t"
        "vldrb.8 q2, [r3, #16]\n\t"
        "vldrb.8 q3, [r3, #32]\n\t"
        "vldrb.8 q4, [r3, #48]\n\t"
        "vldrb.8 q1, [r3], #64\n\t"
        "vmladava.s8 r0, q0, q1\n\t"
        "vmladava.s8 r2, q0, q2\n\t"
        "vmladava.s8 r4, q0, q3\n\t"
        "vmladava.s8 r6, q0, q4\n\t"
        "letp lr, 1b\n\t"
        "pop {r1}\n\t"
        "add r1, r1, #12\n\t"
        "stm r1, {r0, r2, r4, r6}"
        : "+r"(qr)
        :
        : "r1", "r2", "r3", "r4", "r5", "r6", "lr", "q0", "q1", "q2", "q3", "q4", "memory", "cc");
}

/* int8 fully connected, as fc_s8 bit for bit: out[r][j] = requant(bias'[j] + sum_i x[r][i] *
 * w[j][i]) with bias' = bias - zx * sum(w) (rules.py: the raw sum plus bias' is the portable
 * int32 accumulator modulo 2^32). rq: per 4 outputs (rules.quad_requant), their M, then 32 - S
 * (fastq: cuvil_mve_rqv) or S (the 64-bit rule). */
static void fc_s8_mve(const int8_t *in, int8_t *out, const int8_t *w, const int32_t *bias, const int32_t *rq,
                      int rows, int k, int n, int fastq, int32_t zy, int32_t lo, int32_t hi)
{
    const int kp = (k + 15) & ~15;
    struct cuvil_mve_quad q;
    for (int r = 0; r < rows; r++, in += k, out += n) {
        for (int j = 0; j < n; j += 4) {
            q.x = in;
            q.w = w + (long)j * kp;
            q.k = k;
            vst1q_s32(q.acc, vld1q_s32(bias + j));
            cuvil_mve_quad(&q);
            const int32x4_t acc = vld1q_s32(q.acc), m = vld1q_s32(rq + 2 * j), s = vld1q_s32(rq + 2 * j + 4);
            const int32x4_t y = fastq ? cuvil_mve_rqv(acc, m, s, zy, lo, hi) : cuvil_mve_rq64(acc, m, s, zy, lo, hi);
            cuvil_mve_store4(out + j, y, n - j);
        }
    }
}
