"""Data movement: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout (aliases that
share memory), Transpose, Concat, Pad.

None of them changes values, so the int8 output keeps the input's quantization, except
Concat, which requantizes each input into the output's (calibrated) parameters.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import call
from ..kernels.dtypes import CTYPES, VARIANTS
from ..kernels.requant import clamp_int8, quantize_float, quantize_multiplier, requant
from .common import Weight, io_args, qparams_of, require, stacked_samples
from .movement import remap_call, strides_of
from .registry import OpDef, register

MAX_RANK = 4


def axes_of(node: Node, g: Graph) -> list[int] | None:
    """Squeeze/Unsqueeze axes: an attribute before opset 13, a constant input after."""
    if len(node.inputs) > 1 and node.inputs[1]:
        value = g.const(node.inputs[1])
        require(value is not None, node, "axes must be a constant")
        return [int(a) for a in value.reshape(-1)]
    return node.attrs.get("axes")


def reshape_samples(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """x as `shape`; for a shape with a leading axis of 1 (one sample), x may hold several
    samples stacked on axis 0 (the batched reference), and each keeps its own row."""
    samples = stacked_samples(x, shape)
    return x.reshape((samples,) + tuple(shape[1:])) if samples else x.reshape(shape)


class Alias(OpDef):
    """Output is the input's bytes with another shape: no code, shared memory (of any type)."""

    alias = True
    output_qparams = "same"
    integer_inputs = True

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return [g.tensors[node.inputs[0]].dtype]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [reshape_samples(xs[0], g.tensors[node.outputs[0]].shape)]

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [reshape_samples(xs[0], g.tensors[node.outputs[0]].shape)]

    def lower(self, node: Node, g: Graph, precision: str):
        return call("copy", **io_args(node), nbytes=g.tensors[node.inputs[0]].nbytes)


@register
class Reshape(Alias):
    op_type = "Reshape"
    summary = "reshape to a constant shape (0 copies a dimension, -1 is inferred)"
    defaults = {"allowzero": 0}

    def check(self, node: Node, g: Graph) -> None:
        require(len(node.inputs) > 1 and g.const(node.inputs[1]) is not None, node, "the shape must be a constant")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        src = g.tensors[node.inputs[0]].shape
        target = [int(v) for v in g.const(node.inputs[1]).reshape(-1)]
        require(min(target, default=0) >= -1 and target.count(-1) <= 1, node,
                f"shape {target} may hold one -1 and no other negative value")
        if not self.attr(node, "allowzero"):
            require(all(i < len(src) for i, v in enumerate(target) if v == 0), node,
                    f"shape {target} copies (0) a dimension that the input {src} does not have")
            target = [src[i] if v == 0 else v for i, v in enumerate(target)]
        if -1 in target:
            known = int(np.prod([v for v in target if v != -1]))
            require(known > 0 and int(np.prod(src)) % known == 0, node, f"cannot reshape {src} to {target}")
            target[target.index(-1)] = int(np.prod(src)) // known
        require(int(np.prod(target)) == int(np.prod(src)), node, f"cannot reshape {src} to {target}")
        return [tuple(target)]


@register
class Flatten(Alias):
    op_type = "Flatten"
    summary = "flatten to 2-D at `axis`"
    defaults = {"axis": 1}

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        src = g.tensors[node.inputs[0]].shape
        axis = self.attr(node, "axis")
        require(-len(src) <= axis <= len(src), node, f"axis {axis} is out of range for rank {len(src)}")
        axis = axis + len(src) if axis < 0 else axis  # ONNX: a negative axis counts from rank, not rank + 1
        return [(int(np.prod(src[:axis], dtype=np.int64)), int(np.prod(src[axis:], dtype=np.int64)))]


@register
class Squeeze(Alias):
    op_type = "Squeeze"
    summary = "remove size-1 dimensions"

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        src = g.tensors[node.inputs[0]].shape
        axes = axes_of(node, g)
        axes = [i for i, d in enumerate(src) if d == 1] if axes is None else [a % len(src) for a in axes]
        for a in axes:
            require(src[a] == 1, node, f"cannot squeeze dimension {a} of size {src[a]}")
        return [tuple(d for i, d in enumerate(src) if i not in axes)]


@register
class Unsqueeze(Alias):
    op_type = "Unsqueeze"
    summary = "insert size-1 dimensions"

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        src = list(g.tensors[node.inputs[0]].shape)
        axes = axes_of(node, g)
        require(axes is not None, node, "axes are required")
        rank = len(src) + len(axes)
        for a in sorted(x % rank for x in axes):
            src.insert(a, 1)
        return [tuple(src)]


@register
class Identity(Alias):
    op_type = "Identity"
    summary = "no-op (removed by the passes)"

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]


@register
class Dropout(Alias):
    op_type = "Dropout"
    summary = ("inference no-op (removed by the passes); its mask output is all True; training_mode must be a "
               "constant false, or true with a ratio of 0")

    def check(self, node: Node, g: Graph) -> None:
        training = g.const(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else np.array(False)
        require(training is not None, node, "training_mode must be a constant")
        if bool(np.asarray(training).reshape(-1)[0]):
            ratio = g.const(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else np.array(0.5)
            require(ratio is not None and float(np.asarray(ratio).reshape(-1)[0]) == 0.0, node,
                    "training_mode is true with a ratio above 0: it would drop values at random (export the model "
                    "in inference mode)")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [g.tensors[node.inputs[0]].shape]


def transpose_args(in_shape: tuple[int, ...], perm: list[int]) -> dict[str, int]:
    """4-D output dims o0..o3 and the input element strides s0..s3 to read them (ranks
    below 4 padded)."""
    pad = MAX_RANK - len(in_shape)
    shape = (1,) * pad + tuple(in_shape)
    perm4 = list(range(pad)) + [p + pad for p in perm]
    strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(MAX_RANK)]
    return {**{f"o{i}": shape[p] for i, p in enumerate(perm4)}, **{f"s{i}": strides[p] for i, p in enumerate(perm4)}}


@register
class Transpose(OpDef):
    op_type = "Transpose"
    summary = "permute dimensions (above 4-D as an index remap); pairs are cancelled by the layout pass"
    output_qparams = "same"
    integer_inputs = True

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return [g.tensors[node.inputs[0]].dtype]

    def perm(self, node: Node, g: Graph) -> list[int]:
        rank = len(g.tensors[node.inputs[0]].shape)
        return list(node.attrs.get("perm", list(reversed(range(rank)))))

    def check(self, node: Node, g: Graph) -> None:
        rank = len(g.tensors[node.inputs[0]].shape)
        node.attrs["perm"] = self.perm(node, g)  # explicit from here on: the layout pass composes perms
        require(sorted(self.perm(node, g)) == list(range(rank)), node, "perm is not a permutation")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        src = g.tensors[node.inputs[0]].shape
        return [tuple(src[p] for p in self.perm(node, g))]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.ascontiguousarray(xs[0].transpose(self.perm(node, g)))]

    run_int = run_float

    def lower(self, node: Node, g: Graph, precision: str):
        shape, perm = g.tensors[node.inputs[0]].shape, self.perm(node, g)
        if len(shape) > MAX_RANK:  # output axis k reads input axis perm[k] with its stride
            strides = strides_of(shape)
            return remap_call(node, g, 0, [np.arange(shape[p]) * strides[p] for p in perm])
        args = transpose_args(shape, perm)
        return call(f"transpose_{VARIANTS[g.tensors[node.outputs[0]].dtype]}", **io_args(node), **args)


@register
class Concat(OpDef):
    op_type = "Concat"
    summary = ("join along an axis (int8: each input requantized to the output's scale; an output's Concat of "
               "ranges far apart keeps each input's scale, the range split)")
    integer_inputs = True

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return [g.tensors[node.inputs[0]].dtype]

    def check(self, node: Node, g: Graph) -> None:
        require("axis" in node.attrs, node, "axis is required")
        require(not all(g.tensors[name].is_const for name in node.inputs), node,
                "every input is constant (constant folding should have removed this node)")
        ranks = {len(g.tensors[i].shape) for i in node.inputs}
        require(len(ranks) == 1, node, "inputs have different ranks")

    def axis(self, node: Node, g: Graph) -> int:
        return node.attrs["axis"] % len(g.tensors[node.inputs[0]].shape)

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        axis = self.axis(node, g)
        shapes = [g.tensors[i].shape for i in node.inputs]
        for s in shapes:
            require(s[:axis] + s[axis + 1:] == shapes[0][:axis] + shapes[0][axis + 1:], node,
                    f"shapes {shapes} differ outside axis {axis}")
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        return [tuple(out)]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.concatenate(xs, axis=self.axis(node, g))]

    def quantize(self, node: Node, g: Graph) -> None:
        sy, zy = qparams_of(g, node.outputs[0])
        if g.tensors[node.outputs[0]].segments is not None:  # range split: each input keeps its own codes
            node.q = {"zy": zy, "parts": [self.copy_part(g, name) for name in node.inputs]}
            return
        parts = []
        for name in node.inputs:
            t = g.tensors[name]
            if t.is_const:  # quantized here at the output's scale, copied through an identity requant
                data = clamp_int8(np.floor(t.data.astype(np.float64) / sy + 0.5) + zy)
                mult, shift = quantize_multiplier(1.0)
                parts.append({"zx": zy, "mult": mult, "shift": shift, "const": data})
                continue
            sx, zx = qparams_of(g, name)
            mult, shift = quantize_multiplier(sx / sy)
            parts.append({"zx": zx, "mult": mult, "shift": shift, "const": None})
        node.q = {"zy": zy, "parts": parts}

    @staticmethod
    def copy_part(g: Graph, name: str) -> dict:
        """An input copied unchanged: requantized to its own scale by the identity rule."""
        zx = qparams_of(g, name)[1]
        mult, shift = quantize_multiplier(1.0)
        return {"zx": zx, "zy": zx, "mult": mult, "shift": shift, "const": None}

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        q = node.q
        xs = [x if p["const"] is None else p["const"] for x, p in zip(xs, q["parts"])]
        ys = [clamp_int8(requant(x.astype(np.int64) - p["zx"], p["mult"], p["shift"]) + p.get("zy", q["zy"]))
              for x, p in zip(xs, q["parts"])]
        return [np.concatenate(ys, axis=self.axis(node, g))]

    def input_arg(self, node: Node, g: Graph, i: int, precision: str):
        """Input i of a kernel call: the arena tensor, or a constant emitted with the model."""
        t, out = g.tensors[node.inputs[i]], g.tensors[node.outputs[0]]
        if not t.is_const:
            return io_args(node, i)["in"]
        if out.is_integer:
            return Weight(f"in{i}", t.data.astype(out.dtype), CTYPES[out.dtype])
        if precision == "int8":
            return Weight(f"in{i}", node.q["parts"][i]["const"], "int8_t")
        return Weight(f"in{i}", t.data.astype(np.float32), "float")

    def lower(self, node: Node, g: Graph, precision: str):
        axis = self.axis(node, g)
        out_shape = g.tensors[node.outputs[0]].shape
        outer = int(np.prod(out_shape[:axis], dtype=np.int64))
        inner = int(np.prod(out_shape[axis + 1:], dtype=np.int64))
        calls, offset = [], 0
        integer = g.tensors[node.outputs[0]].dtype if g.tensors[node.outputs[0]].is_integer else ""
        for i, name in enumerate(node.inputs):
            chunk = g.tensors[name].shape[axis] * inner
            io = dict(io_args(node, i), offset=offset, outer=outer, chunk=chunk, out_stride=out_shape[axis] * inner)
            io["in"] = self.input_arg(node, g, i, precision)
            if integer == "int8":  # int8 integers: the requantizing kernel with an identity rule
                mult, shift = quantize_multiplier(1.0)
                calls.append(call("concat_s8", **io, zx=0, zy=0, mult=mult, shift=shift))
            elif integer:
                calls.append(call(f"concat_{VARIANTS[integer]}", **io))
            elif precision == "int8":
                p = node.q["parts"][i]
                calls.append(call("concat_s8", **io, zx=p["zx"], zy=p.get("zy", node.q["zy"]), mult=p["mult"], shift=p["shift"]))
            else:
                calls.append(call("concat_f32", **io))
            offset += chunk
        return calls


PAD_MODES = ["constant", "edge", "reflect", "wrap"]  # the order is the C kernels' `mode` numbers


@register
class Pad(OpDef):
    op_type = "Pad"
    summary = "padding (up to 4-D): modes constant, edge, reflect and wrap; constant pads, value and axes"
    output_qparams = "same"
    integer_inputs = True

    def dtypes(self, node: Node, g: Graph) -> list[str]:
        return [g.tensors[node.inputs[0]].dtype]

    def pads_value(self, node: Node, g: Graph) -> tuple[list[int], float]:
        if len(node.inputs) > 1 and node.inputs[1]:
            pads = g.const(node.inputs[1])
            require(pads is not None, node, "pads must be a constant")
            pads = [int(p) for p in pads]
        else:
            pads = list(node.attrs.get("pads", []))
        if len(node.inputs) > 3 and node.inputs[3]:  # opset 18: pads for the listed axes only
            pads = self.pads_of_every_axis(node, g, pads)
        value = float(node.attrs.get("value", 0.0))
        if len(node.inputs) > 2 and node.inputs[2]:
            v = g.const(node.inputs[2])
            require(v is not None, node, "the constant value must be a constant")
            value = float(v.reshape(-1)[0]) if v.size else 0.0
        return pads, value

    def pads_of_every_axis(self, node: Node, g: Graph, pads: list[int]) -> list[int]:
        axes = g.const(node.inputs[3])
        require(axes is not None, node, "axes must be a constant")
        rank = len(g.tensors[node.inputs[0]].shape)
        axes = [int(a) % rank for a in axes.reshape(-1)]
        require(len(pads) == 2 * len(axes), node, "pads must have two entries per axis")
        full = [0] * (2 * rank)
        for j, a in enumerate(axes):
            full[a], full[a + rank] = pads[j], pads[j + len(axes)]
        return full

    def check(self, node: Node, g: Graph) -> None:
        mode = node.attrs.get("mode", "constant")
        require(mode in PAD_MODES, node, f"mode '{mode}' is not supported (only {', '.join(PAD_MODES)})")
        rank = len(g.tensors[node.inputs[0]].shape)
        require(rank <= MAX_RANK, node, f"rank above {MAX_RANK} is not supported")
        pads, _ = self.pads_value(node, g)
        require(len(pads) == 2 * rank and min(pads) >= 0, node, "pads must be non-negative, two per dimension")

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        src = g.tensors[node.inputs[0]].shape
        pads, _ = self.pads_value(node, g)
        r = len(src)
        return [tuple(d + pads[i] + pads[i + r] for i, d in enumerate(src))]

    def np_pads(self, node: Node, g: Graph) -> list[tuple[int, int]]:
        pads, _ = self.pads_value(node, g)
        r = len(pads) // 2
        return [(pads[i], pads[i + r]) for i in range(r)]

    def padded(self, node: Node, g: Graph, x: np.ndarray, value) -> np.ndarray:
        mode = node.attrs.get("mode", "constant")
        if mode == "constant":
            return np.pad(x, self.np_pads(node, g), constant_values=value)
        return np.pad(x, self.np_pads(node, g), mode=mode)  # numpy's edge, reflect and wrap are ONNX's

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [self.padded(node, g, xs[0], self.pads_value(node, g)[1])]

    def quantize(self, node: Node, g: Graph) -> None:
        s, z = qparams_of(g, node.inputs[0])
        node.q = {"value": int(quantize_float(np.array([self.pads_value(node, g)[1]]), s, z)[0])}

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [self.padded(node, g, xs[0], node.q["value"])]

    def lower(self, node: Node, g: Graph, precision: str):
        src = g.tensors[node.inputs[0]].shape
        lead = MAX_RANK - len(src)
        shape4 = [1] * lead + list(src)
        before = [0] * lead + [p[0] for p in self.np_pads(node, g)]
        out4 = [1] * lead + list(g.tensors[node.outputs[0]].shape)
        geometry = {f"{key}{i}": v for key, values in (("i", shape4), ("o", out4), ("b", before))
                    for i, v in enumerate(values)}
        geometry["mode"] = PAD_MODES.index(node.attrs.get("mode", "constant"))
        out = g.tensors[node.outputs[0]]
        if out.is_integer:
            return call(f"pad_{VARIANTS[out.dtype]}", **io_args(node), **geometry, value=int(self.pads_value(node, g)[1]))
        if precision == "int8":
            return call("pad_s8", **io_args(node), **geometry, value=node.q["value"])
        return call("pad_f32", **io_args(node), **geometry, value=self.pads_value(node, g)[1])


@register
class Constant(OpDef):
    op_type = "Constant"
    summary = "a constant tensor (folded into the weights by the frontend)"

    def infer(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [tuple(node.attrs["value"].shape)]

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        return [node.attrs["value"]]
