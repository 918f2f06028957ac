"""Declarations of the neon kernels (sdk/templates/neon/): one per kernel, in C parameter order."""
from ..contract import F, I, In, Out, W, declare

SET = "neon"

declare(SET, "add_s8_neon", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *I("za zb ma mb shift zy lo hi", "int32_t"))
declare(SET, "mul_s8_neon", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *I("za zb mult shift zy lo hi", "int32_t"))
declare(SET, "avgpool_s8_neon", In("in", "int8_t"), Out("out", "int8_t"),
        *I("n h w c oh ow kh kw sh sw pt pl pb pr include_pad"), *I("zx zy", "int32_t"), W("mult", "int32_t"),
        W("shift", "int32_t"))
declare(SET, "conv2d_f32_neon", In("in", "float"), Out("out", "float"), W("w", "float"), W("bias", "float"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl band"), *F("lo hi"), *I("threads"))
declare(SET, "conv2d_s8_neon", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("rq", "int64_t"), *I("n h wd c oh ow oc kh kw sh sw pt pl kq band wide"),
        *I("zx zy lo hi", "int32_t"), *I("threads"))
declare(SET, "dwconv2d_f32_neon", In("in", "float"), Out("out", "float"), W("w", "float"), W("bias", "float"),
        *I("n h wd c oh ow kh kw sh sw pt pl band"), *F("lo hi"), *I("threads"))
declare(SET, "dwconv2d_s8_neon", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int16_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("rq", "int64_t"), *I("n h wd c oh ow oc kh kw sh sw dh dw pt pl dm ct band wide"),
        *I("zx zy lo hi", "int32_t"), *I("threads"))
declare(SET, "fc_f32_neon", In("in", "float"), Out("out", "float"), W("w", "float"), W("bias", "float"),
        *I("rows k n"), *F("lo hi"), *I("threads"))
declare(SET, "fc_s8_neon", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("rq", "int64_t"), *I("rows k n kp wide"), *I("zy lo hi", "int32_t"), *I("threads"))
declare(SET, "maxpool_s8_neon", In("in", "int8_t"), Out("out", "int8_t"), *I("n h w c oh ow kh kw sh sw pt pl pb pr"))
declare(SET, "softmax_s8_neon", In("in", "int8_t"), Out("out", "int8_t"), *I("rows cols"), W("exp_table", "int32_t"))
declare(SET, "transpose_s8_neon", In("in", "int8_t"), Out("out", "int8_t"), *I("o0 o1 o2 o3 s0 s1 s2 s3"))
# fp16 (FEAT_FP16, vfmaq_f16): half tensors and weights, float32 bias
declare(SET, "conv2d_f16_neon", In("in", "cuvil_f16"), Out("out", "cuvil_f16"), W("w", "cuvil_f16"), W("bias", "float"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl band"), *F("lo hi"), *I("threads"))
declare(SET, "dwconv2d_f16_neon", In("in", "cuvil_f16"), Out("out", "cuvil_f16"), W("w", "cuvil_f16"),
        W("bias", "float"), *I("n h wd c oh ow kh kw sh sw pt pl band"), *F("lo hi"), *I("threads"))
declare(SET, "fc_f16_neon", In("in", "cuvil_f16"), Out("out", "cuvil_f16"), W("w", "cuvil_f16"), W("bias", "float"),
        *I("rows k n"), *F("lo hi"), *I("threads"))
