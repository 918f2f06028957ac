"""Rules shared by the SIMD kernel sets (avx2, neon): those that differ between the sets
only by vector width and kernel name (the kernels are named <portable stem>_<set>)."""
from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from . import int4
from .contract import Declined, KernelCall, Weight, kernel
from .kernel_sets import Answer
from .simd_layout import (PANEL_MAX_BYTES, STRIDED_SOFTMAX, channel_blocks, conv_panels, conv_tap_rows, data,
                          dense_conv_weights, fc_panels, padded, panel_band, pick, row_softmax_args, threads_for,
                          undilated_pool)

CONV_GEOMETRY = "n h wd c oh ow kh kw sh sw pt pl"
PANEL_TOO_WIDE = f"one band of input rows needs more than {PANEL_MAX_BYTES // 1024} KB of stack panel"


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def panel_elements(band: int, sh: int, span: int, rowlen: int) -> int:
    """The elements of a convolution's stack panel: the (band - 1) * sh + span input rows a
    band of output rows reads, rowlen each (KernelCall.stack: sized by the compiler)."""
    return ((band - 1) * sh + span) * rowlen


def merged_axes(dims: list[int], sa: list[int], sb: list[int]) -> tuple[list[int], list[int], list[int]]:
    """The 4-D broadcast loop's axes with each axis merged into the one inside it where that is
    contiguous in both inputs (stride = inner stride * inner size; an axis broadcast on one side
    has stride 0 there and merges with a broadcast inner axis), so that the kernels' inner rows
    are as long as they can be. Axes of size 1 drop out."""
    axes: list[tuple[int, int, int]] = []  # innermost first: (size, stride a, stride b)
    for i in [i for i in range(3, -1, -1) if dims[i] != 1]:
        if axes and sa[i] == axes[-1][1] * axes[-1][0] and sb[i] == axes[-1][2] * axes[-1][0]:
            axes[-1] = (axes[-1][0] * dims[i], axes[-1][1], axes[-1][2])
        else:
            axes.append((dims[i], sa[i], sb[i]))
    axes += [(1, 0, 0)] * (4 - len(axes))
    axes.reverse()
    return [x[0] for x in axes], [x[1] for x in axes], [x[2] for x in axes]


def broadcast_loop(a: dict[str, Any]) -> dict[str, int]:
    """A broadcasting call's loop arguments d0-d3, sa0-sa3, sb0-sb3 with its axes merged
    (merged_axes)."""
    d, sa, sb = merged_axes([a[f"d{i}"] for i in range(4)], [a[f"sa{i}"] for i in range(4)],
                            [a[f"sb{i}"] for i in range(4)])
    return {**{f"d{i}": d[i] for i in range(4)}, **{f"sa{i}": sa[i] for i in range(4)},
            **{f"sb{i}": sb[i] for i in range(4)}}


def binary_s8(kernel_set: str, op: str, c: KernelCall, node, g, options) -> Answer:
    """int8 Add / Mul with broadcasting: the same 4-D loop as the portable kernel, axes merged."""
    a = c.args
    return kernel(kernel_set, f"{op}_s8_{kernel_set}")(**{**a, **broadcast_loop(a)})


# The float variants the SIMD sets take: (numpy dtype, C type) of their tensors and main weights.
FLOAT_TYPES = {"f32": (np.float32, "float"), "f16": (np.float16, "cuvil_f16")}


def float_conv(kernel_set: str, lanes: int, c: KernelCall, node, g, options) -> Answer:
    """Float conv (fp32, or fp16 with float32 bias) (weights [ky][tap][channel] in blocks of
    16/8 channels) and depthwise (weights [block][tap][lanes]). Dilation becomes zero taps,
    other groupings a dense convolution with zero weights across groups (dense_conv_weights):
    same sums, more MACs."""
    a = c.args
    variant = c.kernel.rsplit("_", 1)[1]
    dtype, ctype = FLOAT_TYPES[variant]
    itemsize = np.dtype(dtype).itemsize
    w = data(a["w"]).astype(np.float32)  # [oc][kh][kw][c / groups]
    bias = data(a["bias"]).astype(np.float32)
    oc, ch, groups = a["oc"], a["c"], a["groups"]
    depthwise = groups == ch == oc
    w = dense_conv_weights(w, 1 if depthwise else groups, w.shape[3] if depthwise else ch, a["dh"], a["dw"])
    kh, kw = w.shape[1], w.shape[2]
    geometry = {**pick(a, "in out lo hi " + CONV_GEOMETRY), "kh": kh, "kw": kw}
    common = dict(geometry, threads=threads_for(options, a["n"] * a["oh"] * a["ow"] * oc * kh * kw * w.shape[3],
                                                  depthwise))
    cols = (a["ow"] - 1) * a["sw"] + kw
    if depthwise:
        cp = round_up(ch, lanes)
        wt = np.zeros((cp, kh * kw), dtype=np.float32)
        wt[:ch] = w.reshape(ch, kh * kw)
        packed = wt.reshape(cp // lanes, lanes, kh * kw).transpose(0, 2, 1)  # [block][tap][lanes]
        band = panel_band(a["oh"], a["sh"], kh, cols * cp * itemsize)
        if band == 0:
            return Declined(PANEL_TOO_WIDE)
        return kernel(kernel_set, f"dwconv2d_{variant}_{kernel_set}")(
            **common, w=Weight("w", packed.reshape(-1).astype(dtype), ctype),
            bias=Weight("bias", padded(bias, cp), "float"), band=band).with_stack(
            panel=panel_elements(band, a["sh"], kh, cols * cp), taps=kh * kw)
    rows, kr = conv_tap_rows(w, 1)  # [oc][kh][kw * c]
    blocks = channel_blocks(oc, 16, 8)
    packed = conv_panels(rows, blocks, 1)  # [ky][tap][channel]
    rowlen = round_up(cols * ch, lanes)  # the kernel's panel row: whole vectors
    band = panel_band(a["oh"], a["sh"], kh, rowlen * itemsize)
    if band == 0:
        return Declined(PANEL_TOO_WIDE)
    return kernel(kernel_set, f"conv2d_{variant}_{kernel_set}")(
        **common, oc=oc, w=Weight("w", packed.astype(dtype), ctype),
        bias=Weight("bias", padded(bias, sum(width for _, width in blocks)), "float"), band=band).with_stack(
        panel=panel_elements(band, a["sh"], kh, rowlen))


def float_fc(kernel_set: str, lanes: int, c: KernelCall, node, g, options) -> Answer:
    """Float fully connected (fp32, or fp16 with float32 bias), weights [k][output] in blocks of
    up to 32 outputs."""
    a = c.args
    variant = c.kernel.rsplit("_", 1)[1]
    dtype, ctype = FLOAT_TYPES[variant]
    w = data(a["w"]).astype(np.float32)  # [n][k]
    bias = data(a["bias"]).astype(np.float32)
    n, k = a["n"], a["k"]
    packed = fc_panels(w, k, lanes, 1)  # [k][output]
    return kernel(kernel_set, f"fc_{variant}_{kernel_set}")(
        **pick(a, "in out rows k n lo hi"), w=Weight("w", packed.astype(dtype), ctype),
        bias=Weight("bias", padded(bias, round_up(n, lanes)), "float"),
        threads=threads_for(options, a["rows"] * n * k))


SOFTMAX_COLS_MAX = 1 << 26  # the double division is exact while 2 * S < 2^44 (S <= cols * 2^16)


def softmax_s8(kernel_set: str, c: KernelCall, node, g, options) -> Answer:
    if c["cols"] >= SOFTMAX_COLS_MAX:
        return Declined(f"softmax rows of {SOFTMAX_COLS_MAX} or more values")
    args = row_softmax_args(c)
    if args is None:
        return Declined(STRIDED_SOFTMAX)
    return kernel(kernel_set, f"softmax_s8_{kernel_set}")(**args)


def transpose_s8(kernel_set: str, c: KernelCall, node, g, options) -> Answer:
    return kernel(kernel_set, f"transpose_s8_{kernel_set}")(**c.args)


# the running indices of positions across channel planes are bytes (the argmax_s8_<set> kernels)
ARGMAX_PLANES_MAX = 256


def argmax_rule(kernel_set: str, c: KernelCall) -> Answer:
    """An int8 ArgMax / ArgMin head (shared by the SIMD sets and cortex_m_dsp: the same parameters as
    argmax_s8): each position's values in a row (channels-last) or across channel planes, whose
    running indices are bytes (n <= 256)."""
    if c["inner"] > 1 and c["n"] > ARGMAX_PLANES_MAX:
        return Declined(f"an axis of {c['n']} values across planes (byte-wide indices hold {ARGMAX_PLANES_MAX})")
    return kernel(kernel_set, f"argmax_s8_{SUFFIX.get(kernel_set, kernel_set)}")(**c.args)


SUFFIX = {"cortex_m_dsp": "dsp"}  # a set whose kernels are named by a short suffix


def pool_s8(kernel_set: str, op: str, c: KernelCall, node, g, options) -> Answer:
    """int8 max and average pooling without dilation (the average's requantization saturates:
    no bound needed)."""
    a = undilated_pool(c.args)
    return a if isinstance(a, Declined) else kernel(kernel_set, f"{op}_s8_{kernel_set}")(**a)


def shared_rules(kernel_set: str, lanes: int) -> dict:
    """The rules both SIMD sets get from here (their kernels differ only by vector width;
    simd_declarations declares them)."""
    return {"add_s8": partial(binary_s8, kernel_set, "add"), "mul_s8": partial(binary_s8, kernel_set, "mul"),
            "softmax_s8": partial(softmax_s8, kernel_set), "transpose_s8": partial(transpose_s8, kernel_set),
            "argmax_s8": lambda c, node, g, options: argmax_rule(kernel_set, c),
            "maxpool_s8": partial(pool_s8, kernel_set, "maxpool"), "avgpool_s8": partial(pool_s8, kernel_set, "avgpool"),
            "conv2d_f32": partial(float_conv, kernel_set, lanes),
            "fc_f32": partial(float_fc, kernel_set, lanes)}


DEPTHWISE_INT8 = "the depthwise kernels read int8 (avx2) or int16 (neon) weights (a depthwise layer's weights are few)"


def int4_call(kernel_set: str, call: KernelCall) -> KernelCall:
    """The int4-weight twin of an int8 conv/fc call of the set (<family>_s8w4_<set>: the same
    arguments, its weight stream packed 16 weights per 8 bytes by int4.pack_groups)."""
    args = dict(call.args)
    args["w"] = Weight("w4", int4.pack_groups(np.asarray(args["w"].data)), "int8_t")
    if "_s8amx_" in call.kernel:  # avx2: the AMX tile variant reads int8 weights only
        twin = kernel(kernel_set, call.kernel.replace("_s8amx_", "_s8w4_"))(**args)
        twin.variant = "no amx: int4 weights (the amx variant reads int8 ones)"
        twin.stack = {k: v for k, v in call.stack.items() if not k.endswith("_amx")}  # the amx kernel's own
        return twin
    twin = kernel(kernel_set, call.kernel.replace("_s8_", "_s8w4_"))(**args)
    twin.variant, twin.stack = call.variant, dict(call.stack)
    return twin


def int4_rule(kernel_set: str, int8_rule, c: KernelCall, node, g, options) -> Answer:
    """An int4 conv or fc layer: the set's int8 rule on its values (int4.as_int8), then that
    kernel's int4 twin, which unpacks the weights in registers (templates/simd/int4.j2); a
    depthwise layer keeps the values as its kernel's int8/int16 weights (listed), and what the
    int8 rule declines goes to the portable int4 kernel (listed as a fall-back)."""
    answer = int8_rule(int4.as_int8(c), node, g, options)
    if isinstance(answer, Declined) or answer is None:
        return answer
    if answer.kernel.startswith("dwconv2d_"):
        return int4.unpacked(answer, DEPTHWISE_INT8)
    return int4_call(kernel_set, answer)


def int4_rules(kernel_set: str, conv_rule, fc_rule) -> dict:
    return {"conv2d_s8w4": partial(int4_rule, kernel_set, conv_rule), "fc_s8w4": partial(int4_rule, kernel_set, fc_rule)}


def half_rules(kernel_set: str) -> dict:
    """fp16 convolutions and fully connected layers, 8 half lanes per vector (neon)."""
    return {"conv2d_f16": partial(float_conv, kernel_set, 8), "fc_f16": partial(float_fc, kernel_set, 8)}
