"""Declarations of the avx2 kernels (sdk/templates/avx2/): one per kernel, in C parameter order."""
from ..contract import F, I, In, Out, W, declare

SET = "avx2"

declare(SET, "add_s8_avx2", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *I("za zb ma mb shift zy lo hi", "int32_t"))
declare(SET, "mul_s8_avx2", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *I("za zb mult shift zy lo hi", "int32_t"))
declare(SET, "avgpool_s8_avx2", In("in", "int8_t"), Out("out", "int8_t"),
        *I("n h w c oh ow kh kw sh sw pt pl pb pr include_pad"), *I("zx zy", "int32_t"), W("mult", "int32_t"),
        W("shift", "int32_t"))
declare(SET, "conv2d_f32_avx2", In("in", "float"), Out("out", "float"), W("w", "float"), W("bias", "float"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl band"), *F("lo hi"), *I("threads"))
declare(SET, "conv2d_s8_avx2", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("bias_vnni", "int32_t"), W("rq", "int64_t"), *I("n h wd c oh ow oc kh kw sh sw pt pl kr band fast"), *I("zx lo hi", "int32_t"),
        *I("threads"))
declare(SET, "dwconv2d_f32_avx2", In("in", "float"), Out("out", "float"), W("w", "float"), W("bias", "float"),
        *I("n h wd c oh ow kh kw sh sw pt pl band"), *F("lo hi"), *I("threads"))
declare(SET, "dwconv2d_s8_avx2", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("bias_vnni", "int32_t"), W("rq", "int64_t"), *I("n h wd c oh ow oc kh kw sh sw dh dw pt pl dm ct band fast"), *I("zx lo hi", "int32_t"),
        *I("threads"))
declare(SET, "fc_f32_avx2", In("in", "float"), Out("out", "float"), W("w", "float"), W("bias", "float"),
        *I("rows k n"), *F("lo hi"), *I("threads"))
declare(SET, "fc_s8_avx2", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("bias_vnni", "int32_t"), W("rq", "int64_t"), *I("rows k n kp fast"), *I("zx lo hi", "int32_t"), *I("threads"))
declare(SET, "maxpool_s8_avx2", In("in", "int8_t"), Out("out", "int8_t"), *I("n h w c oh ow kh kw sh sw pt pl pb pr"))
declare(SET, "transpose_s8_avx2", In("in", "int8_t"), Out("out", "int8_t"), *I("o0 o1 o2 o3 s0 s1 s2 s3"))
declare(SET, "softmax_s8_avx2", In("in", "int8_t"), Out("out", "int8_t"), *I("rows cols"), W("exp_table", "int32_t"))
