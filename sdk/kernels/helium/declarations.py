"""Declarations of the helium kernels (sdk/templates/helium/): one per kernel, in C parameter order."""
from ..contract import I, In, Out, W, declare

SET = "helium"

declare(SET, "conv2d_s8_mve", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("rq", "int32_t"), *I("n h wd c oh ow oc kh kw sh sw pt pl dh dw groups kp aligned fastq"),
        *I("zx zy lo hi", "int32_t"))
declare(SET, "conv2d_s8_mve_dw", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int32_t"), W("bias", "int32_t"),
        W("rq", "int32_t"), *I("n h wd c oh ow kh kw sh sw pt pl dh dw wp ring fastq"), *I("zx zy lo hi", "int32_t"))
declare(SET, "fc_s8_mve", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("rq", "int32_t"), *I("rows k n fastq"), *I("zy lo hi", "int32_t"))
declare(SET, "maxpool_s8_mve", In("in", "int8_t"), Out("out", "int8_t"), *I("n h w c oh ow kh kw sh sw pt pl"))
declare(SET, "avgpool_s8_mve", In("in", "int8_t"), Out("out", "int8_t"),
        *I("n h w c oh ow kh kw sh sw pt pl pb pr include_pad"), *I("zx zy", "int32_t"), W("mult", "int32_t"),
        W("shift", "int32_t"))
declare(SET, "add_s8_mve", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *I("ma mb", "int32_t"), *I("c0", "uint32_t"),
        *I("shift zy lo hi", "int32_t"),
        in_place=[("out", "a"), ("out", "b")])  # add_s8_mve.h reads each vector before writing it
declare(SET, "softmax_s8_mve", In("in", "int8_t"), Out("out", "int8_t"), *I("rows cols"), W("exp_table", "int32_t"),
        *I("wide"))
declare(SET, "transpose_s8_mve", In("in", "int8_t"), Out("out", "int8_t"), *I("o0 o1 o2 o3 s0 s1 s2 s3 axis lanes"))
