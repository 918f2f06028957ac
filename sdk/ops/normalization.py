"""Normalization.

BatchNormalization (inference form): the passes fold it into the Conv before it or, when
there is none, turn it into a depthwise 1x1 Conv, so it has no kernel of its own.

LayerNormalization (any axis), InstanceNormalization and GroupNormalization (opset 18: scale
and bias per group; opset 21: per channel) share one kernel pair, norm_f32 / norm_s8: the
input as [rows][n], each row normalized by its own statistics.

int8 rule (identical on every IEEE target: integer sums, then only correctly rounded float32
operations, evaluated in a fixed order with no contraction): with x the zero-point-corrected
inputs of a row, S = sum(x), V = n * sum(x^2) - S^2 (int64, exact) and c = n * x - S (int32),
    y = quantize(((float)c * (1 / sqrtf((float)V + e2))) * g + b, 1, zy)
where e2 = float32(eps * n^2 / sx^2), g = float32(gamma / sy), b = float32(beta / sy): the
normalized value c / sqrt(V + e2) is exactly (x - mean) / sqrt(var + eps) in real numbers.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import call
from ..kernels.requant import quantize_float
from .common import Buf, Weight, const_input, io_args, optional_input, qparams_of, require
from .registry import OpDef, register


def bn_affine(scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray,
              eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (a, b) such that BatchNormalization(x) = a * x + b."""
    a = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    return a, bias.astype(np.float64) - mean.astype(np.float64) * a


@register
class BatchNormalization(OpDef):
    op_type = "BatchNormalization"
    summary = "inference batch norm with constant statistics (folded into Conv)"
    defaults = {"epsilon": 1e-5}

    def check(self, node: Node, g: Graph) -> None:
        for i in range(1, 5):
            require(g.const(node.inputs[i]) is not None, node, "scale, bias, mean and var must be constants")
        require(not int(node.attrs.get("training_mode", 0)), node,
                "training_mode = 1 normalizes with the batch's statistics and updates the running ones (training): "
                "export the model in inference mode")
        require(len([o for o in node.outputs if o]) == 1, node, "training outputs are not supported")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def params(self, node: Node, g: Graph) -> tuple[np.ndarray, np.ndarray]:
        return bn_affine(*(g.const(node.inputs[i]) for i in range(1, 5)), self.attr(node, "epsilon"))

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        a, b = self.params(node, g)
        x = xs[0]
        shape = [1] * x.ndim
        shape[-1 if node.channels_last else 1] = -1
        return [(x * a.reshape(shape) + b.reshape(shape)).astype(np.float32)]


# --- LayerNormalization, InstanceNormalization, GroupNormalization ------------------------------
class RowNorm(OpDef):
    """Normalization over rows: the input as [rows][n], each row normalized by its own mean
    and variance, then scaled and shifted by gamma[idx], beta[idx] with
    idx = (row % period) * stride + column / span (see `geometry`)."""

    defaults = {"epsilon": 1e-5}
    int8_rule = ("integer sums; float32 steps that are correctly rounded (sqrt, division), "
                 "then the boundary's quantization")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]

    def geometry(self, node: Node, g: Graph) -> dict[str, int]:
        raise NotImplementedError

    def affine(self, node: Node, g: Graph) -> tuple[np.ndarray, np.ndarray]:
        """gamma and beta as the kernel indexes them (float64)."""
        raise NotImplementedError

    def macs(self, node: Node, g: Graph) -> int:
        return 2 * g.tensors[node.inputs[0]].size

    def float_rows(self, node: Node, g: Graph, x: np.ndarray) -> np.ndarray:
        geo = self.geometry(node, g)
        rows = x.astype(np.float64).reshape(geo["rows"], geo["n"])
        mean = rows.mean(axis=1, keepdims=True)
        var = ((rows - mean) ** 2).mean(axis=1, keepdims=True)
        gamma, beta = self.affine(node, g)
        idx = affine_index(geo)
        y = (rows - mean) / np.sqrt(var + float(self.attr(node, "epsilon"))) * gamma[idx] + beta[idx]
        return y.reshape(x.shape).astype(np.float32)

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [self.float_rows(node, g, xs[0])]

    def quantize(self, node: Node, g: Graph) -> None:
        geo = self.geometry(node, g)
        n = geo["n"]
        require(n * 255 * 2 < 2**31, node, f"rows of {n} values are too long for the int8 rule")
        sx, zx = qparams_of(g, node.inputs[0])
        sy, zy = qparams_of(g, node.outputs[0])
        gamma, beta = self.affine(node, g)
        node.q = {"zx": zx, "zy": zy, "e2": float(np.float32(float(self.attr(node, "epsilon")) * n * n / (sx * sx))),
                  "gamma": (gamma / sy).astype(np.float32), "beta": (beta / sy).astype(np.float32)}

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        geo, q = self.geometry(node, g), node.q
        x = xs[0].astype(np.int64).reshape(geo["rows"], geo["n"]) - q["zx"]
        n = geo["n"]
        total = x.sum(axis=1, keepdims=True)
        spread = n * (x * x).sum(axis=1, keepdims=True) - total * total
        inv = np.float32(1.0) / np.sqrt(spread.astype(np.float32) + np.float32(q["e2"]))
        idx = affine_index(geo)
        t = (x * n - total).astype(np.int32).astype(np.float32) * inv
        t = t * q["gamma"][idx] + q["beta"][idx]
        return [quantize_float(t, 1.0, q["zy"]).reshape(xs[0].shape)]

    def lower(self, node: Node, g: Graph, precision: str):
        geo = self.geometry(node, g)
        if precision == "int8":
            q = node.q
            return call("norm_s8", **io_args(node), gamma=Weight("gamma", q["gamma"], "float"),
                        beta=Weight("beta", q["beta"], "float"), **geo, zx=q["zx"], zy=q["zy"], e2=q["e2"])
        gamma, beta = self.affine(node, g)
        return call("norm_f32", **io_args(node), gamma=Weight("gamma", gamma.astype(np.float32), "float"),
                    beta=Weight("beta", beta.astype(np.float32), "float"), **geo,
                    eps=float(self.attr(node, "epsilon")))


def affine_index(geo: dict[str, int]) -> np.ndarray:
    """[rows][n] indices into gamma/beta: (row % period) * stride + column // span."""
    rows = np.arange(geo["rows"])[:, None]
    cols = np.arange(geo["n"])[None, :]
    return (rows % geo["period"]) * geo["stride"] + cols // geo["span"]


@register
class LayerNormalization(RowNorm):
    op_type = "LayerNormalization"
    summary = ("normalization over the axes from `axis` on, with scale and optional bias; the Mean and "
               "InvStdDev outputs in float builds")
    defaults = {"epsilon": 1e-5, "axis": -1}

    def has_stats(self, node: Node) -> bool:
        """The optional Mean and InvStdDev outputs are used (both or neither)."""
        return any(node.outputs[1:3])

    def axis(self, node: Node, g: Graph) -> int:
        rank = len(g.tensors[node.inputs[0]].shape)
        return self.attr(node, "axis") % rank

    def check(self, node: Node, g: Graph) -> None:
        rank = len(g.tensors[node.inputs[0]].shape)
        require(-rank <= self.attr(node, "axis") < rank, node, f"axis {self.attr(node, 'axis')} is out of range")
        const_input(g, node, 1, "the scale")
        if optional_input(node, 2):
            const_input(g, node, 2, "the bias")
        if self.has_stats(node):
            require(len(node.outputs) == 3 and all(node.outputs), node,
                    "the Mean and InvStdDev outputs are supported together only")
        inner = g.tensors[node.inputs[0]].shape[self.axis(node, g):]
        for index in (1, 2):
            if optional_input(node, index):
                shape = g.tensors[node.inputs[index]].shape
                require(tuple(np.broadcast_shapes(shape, inner)) == tuple(inner), node,
                        f"scale/bias of shape {list(shape)} does not broadcast to {list(inner)}")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        shape = g.tensors[node.inputs[0]].shape
        if not self.has_stats(node):
            return [shape]
        axis = self.axis(node, g)
        stats = tuple(shape[:axis]) + (1,) * (len(shape) - axis)
        return [shape, stats, stats]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        y = self.float_rows(node, g, xs[0])
        if not self.has_stats(node):
            return [y]
        geo = self.geometry(node, g)
        rows = xs[0].astype(np.float64).reshape(geo["rows"], geo["n"])
        stats = self.infer(node, g)[1]
        inv = 1.0 / np.sqrt(rows.var(axis=1) + float(self.attr(node, "epsilon")))
        return [y, rows.mean(axis=1).reshape(stats).astype(np.float32), inv.reshape(stats).astype(np.float32)]

    def quantize(self, node: Node, g: Graph) -> None:
        require(not self.has_stats(node), node, "the Mean and InvStdDev outputs have no int8 rule: build it with "
                "--precision fp32")
        super().quantize(node, g)

    def lower(self, node: Node, g: Graph, precision: str):
        call_y = super().lower(node, g, precision)
        if not self.has_stats(node):
            return call_y
        geo = self.geometry(node, g)
        return [call_y, call("norm_stats_f32", in_=Buf(node.inputs[0], const=True), mean_out=Buf(node.outputs[1]),
                             inv_std=Buf(node.outputs[2]), rows=geo["rows"], n=geo["n"],
                             eps=float(self.attr(node, "epsilon")))]

    def geometry(self, node: Node, g: Graph) -> dict[str, int]:
        shape = g.tensors[node.inputs[0]].shape
        axis = self.axis(node, g)
        n = int(np.prod(shape[axis:]))
        return {"rows": int(np.prod(shape[:axis])), "n": n, "period": 1, "stride": 0, "span": 1}

    def affine(self, node: Node, g: Graph) -> tuple[np.ndarray, np.ndarray]:
        inner = g.tensors[node.inputs[0]].shape[self.axis(node, g):]
        gamma = np.broadcast_to(g.const(node.inputs[1]).astype(np.float64), inner).reshape(-1)
        bias = g.const(node.inputs[2]) if optional_input(node, 2) else np.zeros(1)
        return gamma, np.broadcast_to(bias.astype(np.float64), inner).reshape(-1)


class ChannelNorm(RowNorm):
    """Instance and group normalization of an [N][C][spatial...] tensor."""

    def groups(self, node: Node, g: Graph) -> int:
        raise NotImplementedError

    def check(self, node: Node, g: Graph) -> None:
        shape = g.tensors[node.inputs[0]].shape
        require(len(shape) >= 2, node, "the input needs a channel axis (rank 2 or more)")
        const_input(g, node, 1, "the scale")
        const_input(g, node, 2, "the bias")
        groups = self.groups(node, g)
        require(groups > 0 and shape[1] % groups == 0, node,
                f"{shape[1]} channels do not split into {groups} groups")
        for index in (1, 2):
            size = g.tensors[node.inputs[index]].size
            require(size in (shape[1], groups), node,
                    f"scale/bias of {size} values: expected one per channel ({shape[1]}) or per group ({groups})")

    def geometry(self, node: Node, g: Graph) -> dict[str, int]:
        shape = g.tensors[node.inputs[0]].shape
        groups, channels = self.groups(node, g), shape[1]
        spatial = int(np.prod(shape[2:]))
        return {"rows": shape[0] * groups, "n": channels // groups * spatial, "period": groups,
                "stride": channels // groups, "span": spatial}

    def affine(self, node: Node, g: Graph) -> tuple[np.ndarray, np.ndarray]:
        channels = g.tensors[node.inputs[0]].shape[1]
        out = []
        for index in (1, 2):
            data = g.const(node.inputs[index]).astype(np.float64).reshape(-1)
            out.append(data if data.size == channels else np.repeat(data, channels // data.size))
        return out[0], out[1]


@register
class InstanceNormalization(ChannelNorm):
    op_type = "InstanceNormalization"
    summary = "per-instance, per-channel normalization with per-channel scale and bias"

    def groups(self, node: Node, g: Graph) -> int:
        return g.tensors[node.inputs[0]].shape[1]


@register
class GroupNormalization(ChannelNorm):
    op_type = "GroupNormalization"
    summary = "normalization over channel groups; scale/bias per group (opset 18) or per channel (opset 21)"

    def groups(self, node: Node, g: Graph) -> int:
        return int(node.attrs.get("num_groups", 0))
