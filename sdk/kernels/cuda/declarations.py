"""Declarations of the cuda kernels (sdk/templates/cuda/): one per kernel, in C parameter order.

A CUDA kernel named like a portable one has the portable kernel's parameters exactly (one
thread per output value, the same arithmetic): it is declared by reference, not restated.
The others are the CUDA set's own."""
from ..contract import DECLARATIONS, I, In, Out, W, declare
from ..portable.declarations import CPU_ONLY  # declared first: the CUDA kernels below share its signatures

SET = "cuda"

declare(SET, "conv2d_s8_dp4a", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("shift", "int32_t"), W("wsum", "int32_t"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl dh dw groups zx zy lo hi"))
declare(SET, "copy_bytes", In("in", "uint8_t"), Out("out", "uint8_t"), *I("nbytes"))
declare(SET, "dwconv2d_s8", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("shift", "int32_t"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl dh dw groups zx zy lo hi"))
declare(SET, "fc_s8_dp4a", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("shift", "int32_t"), W("wsum", "int32_t"), *I("rows k n zx zy lo hi"))

# Every portable kernel has a CUDA version with the same parameters (sdk/kernels/cuda/rules.py's rules),
# except `copy`, which runs as copy_bytes, the int4-weight ones, which run on the int8 kernels, and
# the kernels of integer and bool tensors (CPU_ONLY).
for _name, _decl in list(DECLARATIONS["portable"].items()):
    if _name != "copy" and not _name.endswith("_s8w4") and _name not in CPU_ONLY:
        declare(SET, _name, *_decl.params)
