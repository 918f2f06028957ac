"""Rules shared by the SIMD kernel sets (avx2, neon): the portable kernels' argument lists,
and the rules that differ between the sets only by vector width and kernel name."""
from __future__ import annotations

from functools import partial

import numpy as np

from ..ops.common import Weight
from ..ops.elementwise import broadcast_strides
from .simd_layout import band_rows, channel_blocks, conv_tap_rows, data, padded, threads_for, unpack

PANEL_BYTES = 48 * 1024  # stack budget of a kernel's input panel (per thread)

CONV_ARGS = "x y w bias mult shift n h wd c oh ow oc kh kw sh sw pt pl dh dw groups zx zy lo hi"
CONV_F32_ARGS = "x y w bias n h wd c oh ow oc kh kw sh sw pt pl dh dw groups lo hi"
FC_ARGS = "x y w bias mult shift rows k n zx zy lo hi"
FC_F32_ARGS = "x y w bias rows k n lo hi"
MAXPOOL_ARGS = "x y n h w c oh ow kh kw sh sw pt pl pb pr"
AVGPOOL_ARGS = "x y n h w c oh ow kh kw sh sw pt pl pb pr include_pad zx zy mult shift"
ADD_ARGS = "a b y d0 d1 d2 d3 sa0 sa1 sa2 sa3 sb0 sb1 sb2 sb3 za zb ma mb shift zy lo hi"


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def dense_add(kernel: str, args, node, g):
    """Same-shape int8 add (the portable kernel keeps broadcasting)."""
    a = unpack(args, ADD_ARGS)
    if a is None:
        return None
    dims = [a[f"d{i}"] for i in range(4)]
    dense = broadcast_strides(tuple(dims), tuple(dims))
    if [a[f"sa{i}"] for i in range(4)] != dense or [a[f"sb{i}"] for i in range(4)] != dense:
        return None
    return kernel, [a["a"], a["b"], a["y"], int(np.prod(dims)), a["za"], a["zb"], a["ma"], a["mb"], a["shift"],
                    a["zy"], a["lo"], a["hi"]]


def float_conv(suffix: str, lanes: int, args, node, g):
    """fp32 conv (weights [ky][tap][channel] in blocks of 16/8 channels) and depthwise
    (weights [block][tap][lanes]); no dilation, no other grouping."""
    a = unpack(args, CONV_F32_ARGS)
    if a is None or a["dh"] != 1 or a["dw"] != 1:
        return None
    w = data(a["w"]).astype(np.float32)  # [oc][kh][kw][c / groups]
    bias = data(a["bias"]).astype(np.float32)
    oc, kh, kw, c = a["oc"], a["kh"], a["kw"], a["c"]
    threads = threads_for(g, a["n"] * a["oh"] * a["ow"] * oc * kh * kw * (c // a["groups"]))
    geometry = [a["n"], a["h"], a["wd"], c, a["oh"], a["ow"]]
    window = [kh, kw, a["sh"], a["sw"], a["pt"], a["pl"]]
    if a["groups"] != 1:
        if not a["groups"] == c == oc:
            return None
        cp = round_up(c, lanes)
        wt = np.zeros((cp, kh * kw), dtype=np.float32)
        wt[:c] = w.reshape(c, kh * kw)
        packed = wt.reshape(cp // lanes, lanes, kh * kw).transpose(0, 2, 1)  # [block][tap][lanes]
        band = band_rows(a["oh"], a["sh"], kh, ((a["ow"] - 1) * a["sw"] + kw) * cp * 4, PANEL_BYTES)
        if band == 0:
            return None
        return f"dwconv2d_f32_{suffix}", [
            a["x"], a["y"], Weight("w", packed.reshape(-1), "float"), Weight("bias", padded(bias, cp), "float"),
            *geometry, *window, band, a["lo"], a["hi"], threads]
    rows, kr = conv_tap_rows(w, 1)  # [oc][kh][kw * c]
    blocks = channel_blocks(oc, 16, 8)
    packed = []
    for o, width in blocks:
        block = np.zeros((width, kh, kr), dtype=np.float32)
        block[:min(width, oc - o)] = rows[o:o + width]
        packed.append(block.transpose(1, 2, 0).reshape(-1))  # [ky][tap][channel]
    band = band_rows(a["oh"], a["sh"], kh, round_up(((a["ow"] - 1) * a["sw"] + kw) * c, lanes) * 4, PANEL_BYTES)
    if band == 0:
        return None
    return f"conv2d_f32_{suffix}", [
        a["x"], a["y"], Weight("w", np.concatenate(packed), "float"),
        Weight("bias", padded(bias, sum(width for _, width in blocks)), "float"),
        *geometry, oc, *window, band, a["lo"], a["hi"], threads]


def float_fc(suffix: str, lanes: int, args, node, g):
    """fp32 fully connected, weights [k][output] in blocks of up to 32 outputs."""
    a = unpack(args, FC_F32_ARGS)
    if a is None:
        return None
    w = data(a["w"]).astype(np.float32)  # [n][k]
    bias = data(a["bias"]).astype(np.float32)
    n, k = a["n"], a["k"]
    packed = []
    for j in range(0, n, 32):
        width = min(32, round_up(n - j, lanes))
        block = np.zeros((width, k), dtype=np.float32)
        block[:min(width, n - j)] = w[j:j + width]
        packed.append(block.T.reshape(-1))  # [k][output]
    return f"fc_f32_{suffix}", [
        a["x"], a["y"], Weight("w", np.concatenate(packed), "float"),
        Weight("bias", padded(bias, round_up(n, lanes)), "float"), a["rows"], k, n, a["lo"], a["hi"],
        threads_for(g, a["rows"] * n * k)]


def shared_rules(suffix: str, lanes: int) -> dict:
    """The by_table entries both SIMD sets get from here."""
    return {"add_s8": partial(dense_add, f"add_s8_{suffix}"), "conv2d_f32": partial(float_conv, suffix, lanes),
            "fc_f32": partial(float_fc, suffix, lanes)}
