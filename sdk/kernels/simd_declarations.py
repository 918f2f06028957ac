"""The kernels both SIMD sets (avx2, neon) have with the same parameters, named
<portable stem>_<set>: declared once here for either set (simd_rules.shared_rules gives
their rules the same way). What differs between the sets, the int8 convolutions and fully
connected layers with their weight layouts, each set declares itself."""
from .contract import F, I, In, Out, W, declare

BROADCAST = "d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"
POOL_WINDOW = "n h w c oh ow kh kw sh sw pt pl pb pr"


def declare_shared(kernel_set: str, own: tuple[str, ...] = ()) -> None:
    """Declare the SIMD kernels that `kernel_set` shares with the other SIMD set (but those
    stems in `own`, which the set declares itself with parameters of its own)."""
    def name(stem: str) -> str:
        return f"{stem}_{kernel_set}"

    if "add_s8" not in own:
        declare(kernel_set, name("add_s8"), In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"),
                *I(BROADCAST), *I("za zb ma mb shift zy lo hi", "int32_t"))
    declare(kernel_set, name("mul_s8"), In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"), *I(BROADCAST),
            *I("za zb mult shift zy lo hi", "int32_t"))
    declare(kernel_set, name("avgpool_s8"), In("in", "int8_t"), Out("out", "int8_t"), *I(POOL_WINDOW + " include_pad"),
            *I("zx zy", "int32_t"), W("mult", "int32_t"), W("shift", "int32_t"))
    declare(kernel_set, name("maxpool_s8"), In("in", "int8_t"), Out("out", "int8_t"), *I(POOL_WINDOW))
    declare(kernel_set, name("conv2d_f32"), In("in", "float"), Out("out", "float"), W("w", "float"),
            W("bias", "float"), *I("n h wd c oh ow oc kh kw sh sw pt pl band"), *F("lo hi"), *I("threads"))
    declare(kernel_set, name("dwconv2d_f32"), In("in", "float"), Out("out", "float"), W("w", "float"),
            W("bias", "float"), *I("n h wd c oh ow kh kw sh sw pt pl band"), *F("lo hi"), *I("threads"))
    declare(kernel_set, name("fc_f32"), In("in", "float"), Out("out", "float"), W("w", "float"), W("bias", "float"),
            *I("rows k n"), *F("lo hi"), *I("threads"))
    declare(kernel_set, name("softmax_s8"), In("in", "int8_t"), Out("out", "int8_t"), *I("rows cols"),
            W("exp_table", "int32_t"))
    declare(kernel_set, name("transpose_s8"), In("in", "int8_t"), Out("out", "int8_t"), *I("o0 o1 o2 o3 s0 s1 s2 s3"))
    declare(kernel_set, name("argmax_s8"), In("in", "int8_t"), Out("out", "int64_t"), *I("outer n inner code"))
