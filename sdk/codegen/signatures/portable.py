"""Declarations of the portable kernels (sdk/templates/portable/): one per kernel, in C parameter order."""
from ..kernel_api import F, I, In, Out, W, declare

SET = "portable"

declare(SET, "activation_f32", In("in", "float"), Out("out", "float"), *I("count code"), *F("alpha lo hi"))
declare(SET, "add_f32", In("a", "float"), In("b", "float"), Out("out", "float"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *F("lo hi"))
declare(SET, "add_s8", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *I("za zb ma mb shift zy lo hi", "int32_t"))
declare(SET, "avgpool_f32", In("in", "float"), Out("out", "float"),
        *I("n h w c oh ow kh kw sh sw pt pl pb pr dh dw include_pad"))
declare(SET, "avgpool_s8", In("in", "int8_t"), Out("out", "int8_t"),
        *I("n h w c oh ow kh kw sh sw pt pl pb pr dh dw include_pad"), *I("zx zy", "int32_t"), W("mult", "int32_t"),
        W("shift", "int32_t"))
declare(SET, "concat_f32", In("in", "float"), Out("out", "float"), *I("offset outer chunk out_stride"))
declare(SET, "concat_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("offset outer chunk out_stride"),
        *I("zx zy mult shift", "int32_t"))
declare(SET, "conv2d_f32", In("in", "float"), Out("out", "float"), W("w", "float"), W("bias", "float"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl dh dw groups"), *F("lo hi"))
declare(SET, "conv2d_s16", In("in", "int16_t"), Out("out", "int16_t"), W("w", "int8_t"), W("bias", "int64_t"),
        W("mult", "int32_t"), W("shift", "int32_t"), *I("n h wd c oh ow oc kh kw sh sw pt pl dh dw groups"),
        *I("zx zy lo hi", "int32_t"))
declare(SET, "conv2d_s8", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("shift", "int32_t"), *I("n h wd c oh ow oc kh kw sh sw pt pl dh dw groups"),
        *I("zx zy lo hi", "int32_t"))
declare(SET, "convtranspose2d_f32", In("in", "float"), Out("out", "float"), W("w", "float"), W("bias", "float"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl dh dw groups"), *F("lo hi"))
declare(SET, "convtranspose2d_s8", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("shift", "int32_t"), *I("n h wd c oh ow oc kh kw sh sw pt pl dh dw groups"),
        *I("zx zy lo hi", "int32_t"))
declare(SET, "copy", In("in", "void"), Out("out", "void"), *I("nbytes"))
declare(SET, "dequantize_s8_f32", In("in", "int8_t"), Out("out", "float"), *I("count"), *F("scale"),
        *I("zp", "int32_t"))
declare(SET, "fc_f32", In("in", "float"), Out("out", "float"), W("w", "float"), W("bias", "float"), *I("rows k n"),
        *F("lo hi"))
declare(SET, "fc_s16", In("in", "int16_t"), Out("out", "int16_t"), W("w", "int8_t"), W("bias", "int64_t"),
        W("mult", "int32_t"), W("shift", "int32_t"), *I("rows k n"), *I("zx zy lo hi", "int32_t"))
declare(SET, "fc_s8", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("shift", "int32_t"), *I("rows k n"), *I("zx zy lo hi", "int32_t"))
declare(SET, "lut_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("count"), W("table", "int8_t"))
declare(SET, "maxpool_f32", In("in", "float"), Out("out", "float"), *I("n h w c oh ow kh kw sh sw pt pl pb pr dh dw"))
declare(SET, "maxpool_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("n h w c oh ow kh kw sh sw pt pl pb pr dh dw"))
declare(SET, "mul_f32", In("a", "float"), In("b", "float"), Out("out", "float"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *F("lo hi"))
declare(SET, "mul_s8", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *I("za zb mult shift zy lo hi", "int32_t"))
declare(SET, "pad_f32", In("in", "float"), Out("out", "float"), *I("i0 i1 i2 i3 o0 o1 o2 o3 b0 b1 b2 b3 mode"),
        *F("value"))
declare(SET, "pad_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("i0 i1 i2 i3 o0 o1 o2 o3 b0 b1 b2 b3 mode"),
        *I("value", "int32_t"))
declare(SET, "quantize_f32_s8", In("in", "float"), Out("out", "int8_t"), *I("count"), *F("scale"),
        *I("zp", "int32_t"))
declare(SET, "requant_s16_s8", In("in", "int16_t"), Out("out", "int8_t"), *I("count"),
        *I("zx zy mult shift", "int32_t"))
declare(SET, "requant_s8_s16", In("in", "int8_t"), Out("out", "int16_t"), *I("count"),
        *I("zx zy mult shift", "int32_t"))
declare(SET, "softmax_f32", In("in", "float"), Out("out", "float"), *I("rows cols"))
declare(SET, "softmax_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("rows cols"), W("exp_table", "int32_t"))
declare(SET, "transpose_f32", In("in", "float"), Out("out", "float"), *I("o0 o1 o2 o3 s0 s1 s2 s3"))
declare(SET, "transpose_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("o0 o1 o2 o3 s0 s1 s2 s3"))
