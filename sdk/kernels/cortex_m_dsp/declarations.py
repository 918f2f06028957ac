"""Declarations of the cortex_m_dsp kernels (sdk/templates/cortex_m_dsp/): one per kernel, in C parameter order."""
from ..contract import I, In, KernelCall, Out, W, declare
from ..overlap import Overlap, raster_gap, row_gap

SET = "cortex_m_dsp"


def conv_overlap(c: KernelCall) -> Overlap | None:
    """conv2d_s8_dsp walks output pixels in raster order, copying a tile's windows into its
    column before writing the tile (the K-tiled path reads a pixel's window again per block of
    channels, after writing the block before: the rule counts a pixel's own window as still
    read); groups go one after another over the whole image, and images too: no overlap then."""
    if c["groups"] != 1 or c["n"] != 1:
        return None
    return Overlap(raster_gap(c["h"], c["wd"], c["c"], c["oh"], c["ow"], c["oc"], c["sh"], c["sw"], c["pt"], c["pl"]))


def depthwise_overlap(c: KernelCall) -> Overlap | None:
    """The depthwise kernels (cuvil_dsp_dwrow.h) go over the channels in chunks of cc, each over
    the whole image: with several chunks the distance must be whole pixels (channel j is then
    written only over channel j). Within a chunk the whole-image mode (`full`) widens every
    input row before the first output (any distance), the ring mode walks output rows in order,
    each after its input rows are in the ring (row_gap); a transposed ring walk (image columns
    as rows) and batches give no guarantee."""
    if c["n"] != 1:
        return None
    modulus = c["c"] if c["cc"] < c["c"] else 1
    if c.args.get("full", 0):
        return Overlap(-c["h"] * c["wd"] * c["c"], modulus)
    if c.args.get("transposed", 0):
        return None
    sh = c["s"] if "s" in c.args else c["sh"]
    return Overlap(row_gap(c["h"], c["wd"], c["c"], c["oh"], c["ow"], sh, c["pt"]), modulus)


declare(SET, "add_s8_dsp", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"),
        *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), *I("ma mb", "int32_t"), *I("c0", "uint32_t"),
        *I("shift zy", "int32_t"), *I("lo4 hi4", "uint32_t"),
        in_place=[("out", "a"), ("out", "b")])  # add_s8_dsp.h reads each word before writing it
declare(SET, "avgpool_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"),
        *I("n h w c oh ow kh kw sh sw pt pl pb pr include_pad"), *I("zx zy", "int32_t"), W("mult", "int32_t"),
        W("shift", "int32_t"))
declare(SET, "conv2d_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int16_t"),
        *I("n h wd c oh ow oc kh kw sh sw pt pl dh dw groups seg kp fastq tile px concat zyfold w8"), *I("nzx2", "uint32_t"), *I("zx zy", "int32_t"),
        *I("lo4 hi4", "uint32_t"), overlap=[("out", "in", conv_overlap)])
declare(SET, "conv2d_s8_dsp_dw", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int16_t"),
        *I("n h wd c oh ow kh kw sh sw pt pl wp cc stream"), *I("nzx2", "uint32_t"), *I("zx zy", "int32_t"),
        *I("lo4 hi4", "uint32_t"), overlap=[("out", "in", depthwise_overlap)])
declare(SET, "conv2d_s8_dsp_dw3x3", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int16_t"),
        *I("n h wd c oh ow s pt pl transposed wp cc w8 fast full"), *I("nzx2", "uint32_t"), *I("zx zy", "int32_t"),
        *I("lo4 hi4", "uint32_t"), overlap=[("out", "in", depthwise_overlap)])
declare(SET, "fc_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"), W("w", "int16_t"), *I("rows k n kp fastq w8"),
        *I("nzx2", "uint32_t"), *I("zx zy", "int32_t"), *I("lo4 hi4", "uint32_t"))
declare(SET, "maxpool_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"), *I("n h w c oh ow kh kw sh sw pt pl"))
declare(SET, "argmax_s8_dsp", In("in", "int8_t"), Out("out", "int64_t"), *I("outer n inner code"))
declare(SET, "softmax_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"), *I("rows cols"), W("exp_table", "int32_t"),
        *I("wide"))
declare(SET, "transpose_s8_dsp", In("in", "int8_t"), Out("out", "int8_t"), *I("o0 o1 o2 o3 s0 s1 s2 s3"))
