"""The `cuda` kernel set (sdk/templates/cuda/*.cuh), one more set under the same mechanism
as the CPU sets: each rule takes a portable call and returns the CUDA kernel call(s) that
replace it, with the number of threads each launch needs (`launch_threads`); the launch
geometry (blocks of BLOCK threads, ceiling division) is computed from that by the CUDA
lowering (codegen/cuda.py). A kernel without a rule here has no CUDA version, and the model
then runs on the CPU path (the build says which layers).

int8 kernels reproduce the portable ones bit for bit; the dp4a variants are chosen only
where every 4-byte load is aligned (channels per group, or K, a multiple of 4).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..contract import Buf, KernelCall, Weight, kernel
from ..int4 import as_int8, unpacked
from ..kernel_sets import Answer, KernelSet, register_kernel_set

SET = "cuda"


def launch(name: str, args: dict, threads: int) -> KernelCall:
    c = kernel(SET, name)(**args)
    c.launch_threads = int(threads)
    return c


def _prod(values) -> int:
    return int(np.prod([int(v) for v in values], dtype=np.int64))


def conv(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    threads = a["n"] * a["oh"] * a["ow"] * a["oc"]
    if c.kernel != "conv2d_s8":  # conv2d_f32, conv2d_s16, convtranspose2d_*: one kernel each
        return launch(c.kernel, a, threads)
    icg = a["c"] // a["groups"]
    if icg == 1:
        return launch("dwconv2d_s8", a, threads)
    if icg % 4 == 0:
        w = np.asarray(a["w"].data).astype(np.int64).reshape(a["oc"], a["kh"] * a["kw"], icg)
        return launch("conv2d_s8_dp4a", dict(a, wsum=Weight("wsum", w.sum(axis=2).astype(np.int32), "int32_t")),
                      threads)
    return launch("conv2d_s8", a, threads)


def fc(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    if c.kernel == "fc_s8" and a["k"] % 4 == 0:
        w = np.asarray(a["w"].data).astype(np.int64).reshape(a["n"], a["k"])
        return launch("fc_s8_dp4a", dict(a, wsum=Weight("wsum", w.sum(axis=1).astype(np.int32), "int32_t")),
                      a["rows"] * a["n"])
    return launch(c.kernel, a, a["rows"] * a["n"])




def int4_weights(rule):
    """An int4-weight layer (conv2d_s8w4, fc_s8w4) on the int8 kernel of `rule`, its weights stored
    as int8 bytes (there is no CUDA kernel that unpacks int4 weights; the build lists the layer)."""
    def take(c: KernelCall, node, g, options) -> Answer:
        return unpacked(rule(as_int8(c), node, g, options), "the CUDA kernels read int8 weights")
    return take


def matmul(c: KernelCall, node, g, options) -> Answer:
    return launch(c.kernel, c.args, c["batch"] * c["m"] * c["n"])


def pool(c: KernelCall, node, g, options) -> Answer:
    a = c.args
    return launch(c.kernel, a, a["n"] * a["oh"] * a["ow"] * a["c"])


def per(field: str) -> Callable[..., Answer]:
    """One thread per `field` (an argument: count, rows)."""
    def rule(c: KernelCall, node, g, options) -> Answer:
        return launch(c.kernel, c.args, c.args[field])
    return rule


def reduction(c: KernelCall, node, g, options) -> Answer:
    """One thread per output value of a [d0][d1][d2][d3] reduction (r_k = 1: axis k reduced)."""
    return launch(c.kernel, c.args, _prod(1 if c[f"r{i}"] else c[f"d{i}"] for i in range(4)))


def lines(c: KernelCall, node, g, options) -> Answer:
    """One thread per line along the axis of a [rows][cols][inner] tensor (softmax)."""
    return launch(c.kernel, c.args, c["rows"] * c["inner"])


def concat(c: KernelCall, node, g, options) -> Answer:
    return launch(c.kernel, c.args, c["outer"] * c["chunk"])


def per_4d(prefix: str) -> Callable[..., Answer]:
    """One thread per element of the 4-D shape `prefix`0..3 (d: broadcast output, o: output)."""
    def rule(c: KernelCall, node, g, options) -> Answer:
        return launch(c.kernel, c.args, _prod(c.args[f"{prefix}{i}"] for i in range(4)))
    return rule


def copy(c: KernelCall, node, g, options) -> Answer:
    src, dst = c["in"], c["out"]
    if isinstance(src, Buf) and src.tensor == dst.tensor:
        return []  # a copy onto itself: nothing to launch
    return launch("copy_bytes", c.args, c["nbytes"])


def resize(c: KernelCall, node, g, options) -> Answer:
    return launch(c.kernel, c.args, c["outer"] * c["oh"] * c["ow"])


FLOAT_RULES = {
        "conv2d_s8": conv, "conv2d_f32": conv, "conv2d_s16": conv,
        "convtranspose2d_s8": conv, "convtranspose2d_f32": conv,
        "fc_s8": fc, "fc_f32": fc, "fc_s16": fc,
        "conv2d_s8w4": int4_weights(conv), "fc_s8w4": int4_weights(fc),
        "matmul_s8": matmul, "matmul_f32": matmul,
        "lstm_s8": per("batch"), "lstm_s8_s16state": per("batch"), "lstm_f32": per("batch"), "gru_s8": per("batch"), "gru_f32": per("batch"),
        "add_s8": per_4d("d"), "add_f32": per_4d("d"), "mul_s8": per_4d("d"), "mul_f32": per_4d("d"),
        "maxpool_s8": pool, "maxpool_f32": pool, "avgpool_s8": pool, "avgpool_f32": pool,
        "lut_s8": per("count"), "activation_f32": per("count"),
        "quantize_f32_s8": per("count"), "dequantize_s8_f32": per("count"),
        "requant_s16_s8": per("count"), "requant_s8_s16": per("count"),
        "softmax_s8": lines, "softmax_f32": lines, "logsoftmax_s8": lines,
        "concat_s8": concat, "concat_f32": concat,
        "pad_s8": per_4d("o"), "pad_f32": per_4d("o"),
        "transpose_s8": per_4d("o"), "transpose_f32": per_4d("o"),
        "copy": copy,
        "remap_s8": per_4d("o"), "remap_s16": per_4d("o"), "remap_f32": per_4d("o"),
        "resize_linear_s8": resize, "resize_linear_f32": resize, "resize_taps_s8": resize, "resize_taps_f32": resize,
        "where_s8": per_4d("d"), "where_f32": per_4d("d"),
        "binary_f32": per_4d("d"), "div_s8": per_4d("d"), "lut2_s8": per_4d("d"), "minmax_s8": per_4d("d"),
        "prelu_s8": per_4d("d"),
        "reduce_f32": reduction, "reduce_s8": reduction, "norm_f32": per("rows"), "norm_s8": per("rows"),
        "norm_stats_f32": per("rows"),
    }


def with_half(rules: dict) -> dict:
    """The rules, and for each float kernel the same rule for its f16 twin (one thread per
    output value as in fp32; the kernels differ only in storage), plus the fp16 conversions."""
    half = {name[:-len("_f32")] + "_f16": rule for name, rule in rules.items() if name.endswith("_f32")}
    return {**rules, **half, "convert_f32_f16": per("count"), "convert_f16_f32": per("count")}


@register_kernel_set
class Cuda(KernelSet):
    name = SET
    rules = with_half(FLOAT_RULES)
    extension = ".cuh"
    cpu = False  # device code of its own: codegen/cuda.py renders it beside the CPU path
