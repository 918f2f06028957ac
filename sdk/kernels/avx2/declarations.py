"""Declarations of the avx2 kernels (sdk/templates/avx2/): one per kernel, in C parameter order;
those it shares with the neon set by signature come from simd_declarations."""
from ..contract import DECLARATIONS, I, In, Out, W, declare
from ..simd_declarations import declare_shared

SET = "avx2"

declare_shared(SET)
declare(SET, "conv2d_s8_avx2", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("bias_vnni", "int32_t"), W("rq", "int64_t"), *I("n h wd c oh ow oc kh kw sh sw pt pl kr band fast"), *I("zx lo hi", "int32_t"),
        *I("threads"))
declare(SET, "dwconv2d_s8_avx2", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("rq", "int64_t"), *I("n h wd c oh ow oc kh kw sh sw dh dw pt pl dm ct band fast odd"), *I("zx lo hi", "int32_t"),
        *I("threads"))
declare(SET, "fc_s8_avx2", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("bias_vnni", "int32_t"), W("rq", "int64_t"), *I("rows k n kp fast"), *I("zx lo hi", "int32_t"), *I("threads"))
# int4 weights (kernels/int4.py, pack_groups): the int8 kernels' parameters, their weight stream packed
for _name in ("conv2d_s8_avx2", "fc_s8_avx2"):
    declare(SET, _name.replace("_s8_", "_s8w4_"), *DECLARATIONS[SET][_name].params)
# the large int8 convolutions (rules.conv_s8): the same kernel with an AMX-INT8 tile variant besides
# its avx2 and VNNI ones (conv2d_s8_avx2.h.j2 rendered with amx), the same arguments
declare(SET, "conv2d_s8amx_avx2", *DECLARATIONS[SET]["conv2d_s8_avx2"].params)
declare(SET, "fc_s8amx_avx2", *DECLARATIONS[SET]["fc_s8_avx2"].params)  # batched fc (rules.fc_amx_layout)
