"""Declarations of the neon kernels (sdk/templates/neon/): one per kernel, in C parameter order;
those it shares with the avx2 set by signature come from simd_declarations."""
from ..contract import DECLARATIONS, F, I, In, Out, W, declare
from ..simd_declarations import BROADCAST, declare_shared

SET = "neon"

declare_shared(SET, own=("add_s8",))
# add: the zero points and rounding folded into c0 (mod 2^32), each multiplier split as
# 64 * mh + ml (ml < 64: an int8 factor; mh < 2^15: an int16 lane) by rules.add_s8
declare(SET, "add_s8_neon", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"), *I(BROADCAST),
        *I("ma mb mah mal mbh mbl c0 shift zy lo hi", "int32_t"))
declare(SET, "conv2d_s8_neon", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("rq", "int64_t"), W("rs", "int32_t"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl kq band wide rq32 direct"),
        *I("zx zy lo hi", "int32_t"), *I("threads"))
declare(SET, "dwconv2d_s8_neon", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int16_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("rq", "int64_t"), W("rs", "int32_t"),
        *I("n h wd c oh ow oc kh kw sh sw dh dw pt pl dm ct band wide rq32 dot"),
        *I("zx zy lo hi", "int32_t"), *I("threads"))
declare(SET, "fc_s8_neon", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("rq", "int64_t"), *I("rows k n kp wide"), *I("zy lo hi", "int32_t"), *I("threads"))
# fp16 (FEAT_FP16, vfmaq_f16): half tensors and weights, float32 bias
declare(SET, "conv2d_f16_neon", In("in", "cuvil_f16"), Out("out", "cuvil_f16"), W("w", "cuvil_f16"), W("bias", "float"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl band"), *F("lo hi"), *I("threads"))
declare(SET, "dwconv2d_f16_neon", In("in", "cuvil_f16"), Out("out", "cuvil_f16"), W("w", "cuvil_f16"),
        W("bias", "float"), *I("n h wd c oh ow kh kw sh sw pt pl band"), *F("lo hi"), *I("threads"))
declare(SET, "fc_f16_neon", In("in", "cuvil_f16"), Out("out", "cuvil_f16"), W("w", "cuvil_f16"), W("bias", "float"),
        *I("rows k n"), *F("lo hi"), *I("threads"))
# int4 weights (kernels/int4.py, pack_groups): the int8 kernels' parameters, their weight stream packed
for _name in ("conv2d_s8_neon", "fc_s8_neon"):
    declare(SET, _name.replace("_s8_", "_s8w4_"), *DECLARATIONS[SET][_name].params)
