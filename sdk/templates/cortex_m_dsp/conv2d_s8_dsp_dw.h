/* Cortex-M DSP (Armv7E-M) kernel set, cuvil-sdk. Generated code, do not edit.
 * conv2d_s8_dsp_dw: depthwise convolution (any kernel and stride) on int16 row planes with
 * SMLAD tap pairs; layouts and constants come from cuvil_sdk/codegen/kset_cortex_m_dsp.py. */
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
/* Weight stream per channel (kset_cortex_m_dsp.py): [bias], then kh rows of kwp/2 pairs
 * [w(kx) w(kx+1)] (kwp = kw rounded up to even: a 0 after an odd kw), then [M, rnd, s];
 * `stream` = its length in int16 values. */
static void cuvil_dw_row_general(const struct cuvil_dw *k, int oy, const int16_t *const *rows)
{
    const int pairs = (k->kw + 1) >> 1;
    int8_t *out = k->out + (long)oy * k->out_row;
    for (int ch = 0; ch < k->cc; ch++) {
        const int16_t *w = k->w + ch * k->stream;
        const int32_t bias = (int32_t)cuvil_ld32(w);
        const int16_t *q = w + 2 + 2 * k->kh * pairs;
        const int32_t m = (int32_t)cuvil_ld32(q), rnd = (int32_t)cuvil_ld32(q + 2), s = (int32_t)cuvil_ld32(q + 4);
        int8_t *o = out + ch;
        for (int ox = 0; ox < k->ow; ox++, o += k->out_pix) {
            int32_t acc = bias;
            const int16_t *wr = w + 2;
            for (int ky = 0; ky < k->kh; ky++) {
                if (rows[ky] == k->zero) {
                    wr += 2 * pairs;
                    continue;
                }
                const int16_t *x = rows[ky] + ch * k->wp + ox * k->sw;
                for (int t = 0; t < pairs; t++, x += 2, wr += 2) {
                    acc = (int32_t)cuvil_smlad(cuvil_ld32(x), cuvil_ld32(wr), (uint32_t)acc);
                }
            }
            *o = (int8_t)cuvil_clamp4((uint32_t)cuvil_rq(acc, m, rnd, s, k->zy), k->lo4, k->hi4);
        }
    }
}

/* int8 depthwise convolution (channel multiplier 1, dilation 1, any kernel, stride, pads),
 * NHWC, as conv2d_s8 bit for bit: input rows as int16 planes (cuvil_dsp_dwrow), then per
 * channel and output one SMLAD per pair of horizontal taps.
 * w: the stream above; wp: plane width (even, covering (ow-1)*sw + kwp columns and pl + wd);
 * cc: channels per chunk; nzx2: -zx in both 16-bit halves; lo4/hi4: clamp in every byte. */
static void conv2d_s8_dsp_dw(const int8_t *in, int8_t *out, const int16_t *w, int n, int h, int wd, int c, int oh,
                             int ow, int kh, int kw, int sh, int sw, int pt, int pl, int wp, int cc, int stream,
                             uint32_t nzx2, int32_t zx, int32_t zy, uint32_t lo4, uint32_t hi4)
{
    struct cuvil_dw k = {in, out, w, 0, 0, n, h, wd, c, oh, ow, kh, kw, sh, sw, pt, pl, wp, cc, stream, 0,
                         (long)wd * c, c, (long)ow * c, c, nzx2, lo4, hi4, zx, zy};
    cuvil_dw_run(&k, cc, 1, cuvil_dw_row_general);
}
