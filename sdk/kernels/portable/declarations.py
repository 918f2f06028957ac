"""Declarations of the portable kernels (sdk/templates/portable/): one per kernel, in C parameter order."""
from ..contract import DECLARATIONS, F, I, In, Out, W, declare

SET = "portable"

declare(SET, "activation_f32", In("in", "float"), Out("out", "float"), *I("count code"), *F("alpha beta lo hi"))
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
# int4 weights packed two per byte, the low nibble first, in the int8 kernel's order (kernels/int4.py)
declare(SET, "conv2d_s8w4", In("in", "int8_t"), Out("out", "int8_t"), W("w", "uint8_t"), W("bias", "int32_t"),
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
declare(SET, "fc_s8w4", In("in", "int8_t"), Out("out", "int8_t"), W("w", "uint8_t"), W("bias", "int32_t"),
        W("mult", "int32_t"), W("shift", "int32_t"), *I("rows k n"), *I("zx zy lo hi", "int32_t"))
declare(SET, "lut_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("count"), W("table", "int8_t"))
declare(SET, "matmul_f32", In("a", "float"), In("b", "float"), Out("out", "float"), W("a_off", "int32_t"),
        W("b_off", "int32_t"), *I("batch m k n"), *F("lo hi"))
declare(SET, "matmul_s8", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"), W("a_off", "int32_t"),
        W("b_off", "int32_t"), *I("batch m k n"), *I("za zb mult shift zy lo hi", "int32_t"))
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
declare(SET, "softmax_f32", In("in", "float"), Out("out", "float"), *I("rows cols inner as_log"))
declare(SET, "softmax_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("rows cols inner"),
        W("exp_table", "int32_t"))
declare(SET, "transpose_f32", In("in", "float"), Out("out", "float"), *I("o0 o1 o2 o3 s0 s1 s2 s3"))
declare(SET, "transpose_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("o0 o1 o2 o3 s0 s1 s2 s3"))

# LSTM / GRU (ops/recurrent.py): one call per direction over the whole sequence; the state
# lives in `scratch` (a tensor of its own in the arena). Geometry: element strides of X (t, b),
# of Y (t, b) after the direction's offset, of Y_h / Y_c and the initial states (b) after theirs.
RNN_GEOMETRY = "seq batch input hidden reverse xst xsb yoff yst ysb hoff hsb"
RNN_S8_TABLES = (W("sig_table", "int16_t"), W("tanh_table", "int16_t"))
RNN_S8_ROWS = (W("w", "int8_t"), W("r", "int8_t"), W("bx", "int32_t"), W("bh", "int32_t"), W("x_mult", "int32_t"),
               W("x_shift", "int32_t"), W("h_mult", "int32_t"), W("h_shift", "int32_t"))
RNN_F32_ROWS = (W("w", "float"), W("r", "float"), W("wb", "float"), W("rb", "float"))
declare(SET, "lstm_s8", In("in", "int8_t"), Out("y", "int8_t"), Out("yh", "int8_t"), Out("yc", "int8_t"),
        Out("scratch", "void"), *RNN_S8_ROWS, In("h0", "int8_t"), In("c0", "int8_t"), *RNN_S8_TABLES,
        *I(RNN_GEOMETRY), *I("zx y_mult y_shift y_zp yh_mult yh_shift yh_zp yc_mult yc_shift yc_zp cell_bits", "int32_t"),
        *I("h0_zp h0_mult h0_shift c0_zp c0_mult c0_shift", "int32_t"))
# the same with h0, c0, Y_h and Y_c in int16 (--input-precision h=int16 c=int16: a state fed back each chunk)
declare(SET, "lstm_s8_s16state", In("in", "int8_t"), Out("y", "int8_t"), Out("yh", "int16_t"), Out("yc", "int16_t"),
        Out("scratch", "void"), *RNN_S8_ROWS, In("h0", "int16_t"), In("c0", "int16_t"), *RNN_S8_TABLES,
        *I(RNN_GEOMETRY), *I("zx y_mult y_shift y_zp yh_mult yh_shift yh_zp yc_mult yc_shift yc_zp cell_bits", "int32_t"),
        *I("h0_zp h0_mult h0_shift c0_zp c0_mult c0_shift", "int32_t"))
declare(SET, "gru_s8", In("in", "int8_t"), Out("y", "int8_t"), Out("yh", "int8_t"), Out("scratch", "void"),
        *RNN_S8_ROWS, In("h0", "int8_t"), *RNN_S8_TABLES, *I(RNN_GEOMETRY),
        *I("zx y_mult y_shift y_zp yh_mult yh_shift yh_zp linear_before_reset h0_zp h0_mult h0_shift", "int32_t"))
declare(SET, "lstm_f32", In("in", "float"), Out("y", "float"), Out("yh", "float"), Out("yc", "float"),
        Out("scratch", "void"), *RNN_F32_ROWS, In("h0", "float"), In("c0", "float"), *I(RNN_GEOMETRY))
declare(SET, "gru_f32", In("in", "float"), Out("y", "float"), Out("yh", "float"), Out("scratch", "void"),
        *RNN_F32_ROWS, In("h0", "float"), *I(RNN_GEOMETRY), *I("linear_before_reset"))
# Element-wise math, reductions and normalization (sdk/ops/elementwise.py, reduce.py, normalization.py).
BROADCAST = "d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"
declare(SET, "binary_f32", In("a", "float"), In("b", "float"), Out("out", "float"), *I(BROADCAST), *I("code"),
        *F("lo hi"))
declare(SET, "div_s8", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"), *I(BROADCAST),
        *I("za zb", "int32_t"), *F("scale"), *I("zy lo hi", "int32_t"))
declare(SET, "lut2_s8", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"), *I(BROADCAST),
        *I("za zb", "int32_t"), W("table", "int8_t"))
declare(SET, "minmax_s8", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"), *I(BROADCAST),
        *I("za zb ma shifta mb shiftb zy code lo hi", "int32_t"))
declare(SET, "prelu_s8", In("a", "int8_t"), In("b", "int8_t"), Out("out", "int8_t"), *I(BROADCAST),
        *I("za zb mpos spos mneg sneg zy lo hi", "int32_t"))
declare(SET, "logsoftmax_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("rows cols inner"),
        W("exp_table", "int32_t"), W("steps", "int32_t"), W("thresholds", "int64_t"))
declare(SET, "reduce_f32", In("in", "float"), Out("out", "float"), *I("d0 d1 d2 d3 r0 r1 r2 r3 code count"))
declare(SET, "reduce_s8", In("in", "int8_t"), Out("out", "int8_t"), *I("d0 d1 d2 d3 r0 r1 r2 r3 code"),
        *I("zx mult shift zy", "int32_t"), *F("scale"))
declare(SET, "norm_f32", In("in", "float"), Out("out", "float"), W("gamma", "float"), W("beta", "float"),
        *I("rows n period stride span"), *F("eps"))
declare(SET, "norm_s8", In("in", "int8_t"), Out("out", "int8_t"), W("gamma", "float"), W("beta", "float"),
        *I("rows n period stride span"), *I("zx zy", "int32_t"), *F("e2"))
declare(SET, "norm_stats_f32", In("in", "float"), Out("mean_out", "float"), Out("inv_std", "float"), *I("rows n"),
        *F("eps"))
for _variant, _t in (("s8", "int8_t"), ("s16", "int16_t"), ("f32", "float")):
    declare(SET, f"remap_{_variant}", In("in", _t), Out("out", _t), *I("o0 o1 o2 o3"), W("t0", "int32_t"),
            W("t1", "int32_t"), W("t2", "int32_t"), W("t3", "int32_t"))
for _variant, _t, _wt in (("s8", "int8_t", "int32_t"), ("f32", "float", "float")):
    declare(SET, f"resize_linear_{_variant}", In("in", _t), Out("out", _t), *I("outer h w oh ow"),
            W("y0", "int32_t"), W("y1", "int32_t"), W("wy", _wt), W("x0", "int32_t"), W("x1", "int32_t"),
            W("wx", _wt))
    declare(SET, f"resize_taps_{_variant}", In("in", _t), Out("out", _t), *I("outer h w oh ow ky kx"),
            W("ys", "int32_t"), W("wy", _wt), W("xs", "int32_t"), W("wx", _wt),
            *(I("fill", "int32_t") if _variant == "s8" else F("fill")))
for _variant, _t in (("s8", "int8_t"), ("f32", "float")):
    declare(SET, f"where_{_variant}", In("a", _t), In("b", _t), Out("out", _t),
            *I("d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3"), In("cond", "bool"), *I("sc0 sc1 sc2 sc3"),
            *(I("za ma sha zb mb shb zy", "int32_t") if _variant == "s8" else []))

# fp16 (--precision fp16): the f16 variant of each float family has the f32 kernel's parameters
# with half tensors and half main weights `w` (the other constants stay as they are: float bias,
# int32 tables). Conversions at the boundary of a layer computed in fp32 inside an fp16 build.
HALF_FAMILIES = ("activation", "add", "avgpool", "binary", "concat", "conv2d", "convtranspose2d", "fc", "matmul",
                 "maxpool", "mul", "pad", "remap", "resize_linear", "resize_taps", "transpose", "where")
HALF = "cuvil_f16"


def _half_param(p):
    halved = p.ctype == "float" and (p.kind in ("input", "output") or (p.kind == "weight" and p.name == "w"))
    return type(p)(p.name, p.kind, HALF) if halved else p


for _family in HALF_FAMILIES:
    declare(SET, f"{_family}_f16", *[_half_param(p) for p in DECLARATIONS[SET][f"{_family}_f32"].params])
declare(SET, "convert_f32_f16", In("in", "float"), Out("out", HALF), *I("count"))
declare(SET, "convert_f16_f32", In("in", HALF), Out("out", "float"), *I("count"))

# Integer and bool tensors at run time (sdk/ops/cast.py, compare.py, index.py, gather.py, integer.py):
# every variant by its tensors' C type (kernels/dtypes.py). These run on the CPU only: the cuda set
# has none of them (a model that uses one runs its layers on the CPU path).
_before = set(DECLARATIONS[SET])
INT_TYPES = {"b8": "bool", "u8": "uint8_t", "s8": "int8_t", "s16": "int16_t", "s32": "int32_t", "s64": "int64_t"}
ALL_TYPES = {"f32": "float", **INT_TYPES}
INDEX_TYPES = {"s32": "int32_t", "s64": "int64_t"}
# data movement of integer tensors on the families above (s8 and s16 exist: the same C types)
for _variant in ("b8", "u8", "s32", "s64"):
    _t = INT_TYPES[_variant]
    declare(SET, f"remap_{_variant}", In("in", _t), Out("out", _t), *I("o0 o1 o2 o3"), W("t0", "int32_t"),
            W("t1", "int32_t"), W("t2", "int32_t"), W("t3", "int32_t"))
    declare(SET, f"concat_{_variant}", In("in", _t), Out("out", _t), *I("offset outer chunk out_stride"))
for _variant in ("b8", "u8", "s16", "s32", "s64"):
    _t = INT_TYPES[_variant]
    declare(SET, f"transpose_{_variant}", In("in", _t), Out("out", _t), *I("o0 o1 o2 o3 s0 s1 s2 s3"))
    declare(SET, f"pad_{_variant}", In("in", _t), Out("out", _t), *I("i0 i1 i2 i3 o0 o1 o2 o3 b0 b1 b2 b3 mode"),
            *I("value", "int64_t"))
    declare(SET, f"where_{_variant}", In("a", _t), In("b", _t), Out("out", _t), *I(BROADCAST), In("cond", "bool"),
            *I("sc0 sc1 sc2 sc3"))
# Cast (ONNX's rules: float to integer truncates toward zero and saturates, NaN gives 0; integers
# wrap; anything to bool is x != 0)
for _a, _ta in ALL_TYPES.items():
    for _b, _tb in ALL_TYPES.items():
        declare(SET, f"cast_{_a}_{_b}", In("in", _ta), Out("out", _tb), *I("count"))
# comparisons and logic to bool; integer arithmetic and functions (exact, wrapping)
for _variant, _t in ALL_TYPES.items():
    declare(SET, f"compare_{_variant}", In("a", _t), In("b", _t), Out("out", "bool"), *I(BROADCAST), *I("code"))
declare(SET, "compare_q8", In("a", "int8_t"), In("b", "int8_t"), Out("out", "bool"), *I(BROADCAST),
        *I("za zb", "int32_t"), *F("sa sb"), *I("code"))
declare(SET, "logic_b8", In("a", "bool"), In("b", "bool"), Out("out", "bool"), *I(BROADCAST), *I("code"))
for _variant, _t in INT_TYPES.items():
    if _variant != "b8":
        declare(SET, f"int_binary_{_variant}", In("a", _t), In("b", _t), Out("out", _t), *I(BROADCAST), *I("code"))
    declare(SET, f"int_unary_{_variant}", In("in", _t), Out("out", _t), *I("count code"), *I("lo hi", "int64_t"))
    declare(SET, f"reduce_int_{_variant}", In("in", _t), Out("out", _t), *I("d0 d1 d2 d3 r0 r1 r2 r3 code"))
    if _variant != "s8":  # lut_s8 (int8 codes to int8) exists
        declare(SET, f"lut_{_variant}", In("in", "int8_t"), Out("out", _t), *I("count"), W("table", _t))
    declare(SET, f"quantize_{_variant}_s8", In("in", _t), Out("out", "int8_t"), *I("count"), *F("scale"),
            *I("zp", "int32_t"))
# ArgMax / ArgMin and TopK (int64 indices; int8 codes for int8 layers: s8)
for _variant, _t in ALL_TYPES.items():
    if _variant != "b8":
        declare(SET, f"argmax_{_variant}", In("in", _t), Out("out", "int64_t"), *I("outer n inner code"))
        declare(SET, f"topk_{_variant}", In("in", _t), Out("values", _t), Out("indices", "int64_t"),
                *I("outer n inner k largest"))
# Gather, GatherElements, GatherND, ScatterElements with run-time indices: each index is checked
# (negative ones count from the end); one out of range makes the kernel return 1 at once
for _variant, _t in ALL_TYPES.items():
    for _iv, _it in INDEX_TYPES.items():
        declare(SET, f"gather_{_variant}_{_iv}", In("data", _t), In("indices", _it), Out("out", _t),
                *I("outer n inner count"), returns="int")
        declare(SET, f"gather_elements_{_variant}_{_iv}", In("data", _t), In("indices", _it), Out("out", _t),
                *I("d0 d1 d2 d3 s0 s1 s2 s3 axis n"), returns="int")
        declare(SET, f"gather_nd_{_variant}_{_iv}", In("data", _t), In("indices", _it), Out("out", _t),
                *I("batches tuples k inner batch_stride"), W("dims", "int32_t"), W("strides", "int32_t"),
                returns="int")
        declare(SET, f"scatter_elements_{_variant}_{_iv}", In("data", _t), In("indices", _it), In("updates", _t),
                Out("out", _t), *I("d0 d1 d2 d3 s0 s1 s2 s3 axis n count reduction"), returns="int")
# OneHot (indices out of range give a row of `off`, as ONNX says: not an error)
for _variant in ("f32", "s8", "s32", "s64"):
    for _iv in ("f32", "s32", "s64"):
        declare(SET, f"onehot_{_variant}_{_iv}", In("indices", ALL_TYPES[_iv]), Out("out", ALL_TYPES[_variant]),
                W("values", ALL_TYPES[_variant]), *I("outer depth inner"))
CPU_ONLY = frozenset(DECLARATIONS[SET]) - _before
