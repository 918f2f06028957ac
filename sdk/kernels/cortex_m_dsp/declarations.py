"""Declarations of the cortex_m_dsp kernels (sdk/templates/cortex_m_dsp/): one per kernel, in C parameter order."""
from ..contract import I, In, Out, W, declare

SET = "cortex_m_dsp"

declare(SET, "add_s8_dsp", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *I("ma mb", "int32_t"), *I("c0", "uint32_t"),
        *I("shift zy", "int32_t"), *I("lo4 hi4", "uint32_t"),
        in_place=[("out", "a"), ("out", "b")])  # add_s8_dsp.h reads each word before writing it
declare(SET, "avgpool_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"),
        *I("n h w c oh ow kh kw sh sw pt pl pb pr include_pad"), *I("zx zy", "int32_t"), W("mult", "int32_t"),
        W("shift", "int32_t"))
declare(SET, "conv2d_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int16_t"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl dh dw groups seg kp fastq tile px concat zyfold w8"), *I("nzx2", "uint32_t"), *I("zx zy", "int32_t"),
        *I("lo4 hi4", "uint32_t"))
declare(SET, "conv2d_s8_dsp_dw", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int16_t"),
        *I("n h wd c oh ow kh kw sh sw pt pl wp cc stream"), *I("nzx2", "uint32_t"), *I("zx zy", "int32_t"),
        *I("lo4 hi4", "uint32_t"))
declare(SET, "conv2d_s8_dsp_dw3x3", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int16_t"),
        *I("n h wd c oh ow s pt pl transposed wp cc w8 fast full"), *I("nzx2", "uint32_t"), *I("zx zy", "int32_t"),
        *I("lo4 hi4", "uint32_t"))
declare(SET, "fc_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int16_t"), *I("rows k n kp fastq w8"),
        *I("nzx2", "uint32_t"), *I("zx zy", "int32_t"), *I("lo4 hi4", "uint32_t"))
declare(SET, "maxpool_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"), *I("n h w c oh ow kh kw sh sw pt pl"))
declare(SET, "argmax_s8_dsp", In("in", "int8_t"), Out("out", "int64_t"), *I("outer n inner code"))
declare(SET, "softmax_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"), *I("rows cols"), W("exp_table", "int32_t"),
        *I("wide"))
declare(SET, "transpose_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"), *I("o0 o1 o2 o3 s0 s1 s2 s3"))
