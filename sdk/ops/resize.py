"""Resize and Upsample: nearest (an index remap, see movement.py), linear / bilinear, cubic.

Coordinate transformation modes: half_pixel, half_pixel_symmetric, pytorch_half_pixel,
align_corners, asymmetric, tf_crop_and_resize (constant roi, extrapolation_value); scales or
sizes as constant inputs, on every axis or on those of the `axes` attribute;
keep_aspect_ratio_policy (stretch, not_larger, not_smaller). Nearest rounding modes:
round_prefer_floor, round_prefer_ceil, floor, ceil. Coordinates, taps and weights follow the
ONNX reference implementation (onnx.reference.ops.op_resize).

Linear and cubic interpolate along the last two axes (H, W); the leading axes must keep their
size. Plain linear runs on resize_linear: per output row and column Python computes the two
source offsets and the weight of the second one; the kernel blends four values.
int8 rule: the output keeps the input's scale and zero point; the weights are rounded to
Q11 (wy + (2048 - wy) = 2048), the blend of the four int8 codes is exact in int32 (at most
2^29 in magnitude) and rounded once: (acc + 2^21) >> 22. As the weights sum to one the
zero point passes through unchanged.
Cubic (cubic_coeff_a, exclude_outside), antialias (linear and cubic: the filter stretched by
1 / scale when downscaling) and tf_crop_and_resize run on resize_taps: n taps per output row
and column (offsets and weights from Python). Its int8 rule: Q11 taps rounded so that each
row's sum is exactly 2048 (the zero point passes through), the blend exact (int32 per row,
int64 in all), rounded once as above and saturated (cubic overshoots); outputs outside a
tf_crop_and_resize crop are the code of extrapolation_value.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir import Graph, Node
from ..kernels.contract import call
from ..kernels.requant import quantize_float
from .common import Buf, Weight, optional_input, qparams_of, require
from ..kernels.dtypes import VARIANTS as VARIANT
from .movement import Remap, strides_of
from .registry import register

COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_crop_and_resize")
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
WEIGHT_BITS = 11
ONE = 1 << WEIGHT_BITS


def source_coords(out_len: int, in_len: int, scale: float, mode: str,
                  roi: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """The input coordinate of each output index (ONNX Resize, before rounding or clamping).
    As in the ONNX reference, align_corners and half_pixel_symmetric use the unrounded output
    length scale * in_len (it differs from out_len when the scales are given)."""
    x = np.arange(out_len, dtype=np.float64)
    out_f = scale * in_len
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "tf_crop_and_resize":  # roi: the crop's start and end, as fractions of in_len - 1
        span = (roi[1] - roi[0]) * (in_len - 1)
        return (np.full(out_len, span / 2) if out_f == 1 else x * span / (out_f - 1)) + roi[0] * (in_len - 1)
    if mode == "half_pixel_symmetric":
        return in_len / 2 * (1 - out_len / out_f) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_len > 1 else np.zeros(out_len)
    if mode == "align_corners":
        return x * (in_len - 1) / (out_f - 1) if out_f != 1 else np.zeros(out_len)
    return x / scale  # asymmetric


def nearest_index(coords: np.ndarray, in_len: int, mode: str) -> np.ndarray:
    if mode == "floor":
        idx = np.floor(coords)
    elif mode == "ceil":
        idx = np.ceil(coords)
    elif mode == "round_prefer_ceil":
        idx = np.floor(coords + 0.5)
    else:  # round_prefer_floor
        idx = np.ceil(coords - 0.5)
    return np.clip(idx, 0, in_len - 1).astype(np.int64)


def linear_taps(coords: np.ndarray, in_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first index, second index, weight of the second) per output index."""
    x = np.clip(coords, 0, in_len - 1)
    lo = np.floor(x).astype(np.int64)
    return lo, np.minimum(lo + 1, in_len - 1), x - lo


def window_taps(coords: np.ndarray, in_len: int, weights: Callable[[np.ndarray], np.ndarray],
                exclude_outside: bool) -> tuple[np.ndarray, np.ndarray]:
    """(indices, weights), each (out_len, n): the ONNX reference's taps for a filter of an even
    number n of taps. ratio = x - floor(x) (1 when x is whole); the taps run from
    floor(x) - n/2 + 1 (one lower when x is whole), edge-clamped; exclude_outside drops the
    taps outside the input and renormalizes."""
    lo = np.floor(coords)
    whole = coords == lo
    w = weights(np.where(whole, 1.0, coords - lo))
    n = w.shape[1]
    idx = np.where(whole, lo - n // 2, lo - n // 2 + 1).astype(np.int64)[:, None] + np.arange(n)[None, :]
    if exclude_outside:
        w = np.where((idx < 0) | (idx >= in_len), 0.0, w)
        w = w / w.sum(axis=1, keepdims=True)
    return np.clip(idx, 0, in_len - 1), w


def cubic_weights(a: float, scale: float) -> Callable[[np.ndarray], np.ndarray]:
    """Cubic convolution weights of each ratio; with scale < 1 (antialias when downscaling) the
    kernel is stretched by 1 / scale over more taps and the weights normalized."""
    start = int(np.floor(-2 / scale) + 1)

    def weights(r: np.ndarray) -> np.ndarray:
        d = np.abs(scale * (np.arange(start, 2 - start)[None, :] - r[:, None]))
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        w = np.where(d <= 1, near, np.where(d < 2, far, 0.0))
        return w / w.sum(axis=1, keepdims=True) if scale < 1 else w
    return weights


def linear_weights(scale: float) -> Callable[[np.ndarray], np.ndarray]:
    """Triangle filter weights (linear: 2 taps; antialias downscaling: stretched by 1 / scale)."""
    start = int(np.floor(-1 / scale) + 1)

    def weights(r: np.ndarray) -> np.ndarray:
        w = np.clip(1 - np.abs((np.arange(start, 2 - start)[None, :] - r[:, None]) * scale), 0, 1)
        return w / w.sum(axis=1, keepdims=True)
    return weights


def q_taps(w: np.ndarray) -> np.ndarray:
    """Q11 tap weights whose rows sum to exactly 2048 (the rounding error goes to the largest tap),
    so that a constant input, and the zero point, pass through unchanged."""
    q = np.round(w * ONE).astype(np.int64)
    big = np.argmax(np.abs(w), axis=1)
    q[np.arange(len(q)), big] += ONE - q.sum(axis=1)
    return q


class ResizeBase(Remap):
    """Shared by Resize and Upsample: the per-axis scales and output sizes, then either the
    nearest tables (Remap) or the linear kernel."""

    integer_inputs = False  # float tensors only (interpolation)

    def mode(self, node: Node) -> str:
        return str(node.attrs.get("mode", "nearest"))

    def coord_mode(self, node: Node) -> str:
        return "asymmetric"

    def nearest_mode(self, node: Node) -> str:
        return "floor"

    def scales_sizes(self, node: Node, g: Graph) -> tuple[list[float], list[int]]:
        raise NotImplementedError

    def check(self, node: Node, g: Graph) -> None:
        mode = self.mode(node)
        require(mode in ("nearest", "linear", "bilinear", "cubic"), node,
                f"mode '{mode}' is not supported (nearest, linear and cubic are)")
        coord = self.coord_mode(node)
        require(coord in COORD_MODES, node, f"coordinate_transformation_mode '{coord}' is not supported "
                                            f"({', '.join(COORD_MODES)} are)")
        require(coord != "tf_crop_and_resize" or mode != "nearest", node,
                "tf_crop_and_resize is supported in linear and cubic modes")
        require(self.nearest_mode(node) in NEAREST_MODES, node,
                f"nearest_mode '{self.nearest_mode(node)}' is not supported")
        shape = g.tensors[node.inputs[0]].shape
        require(len(shape) >= 1, node, "a scalar cannot be resized")
        if mode != "nearest":
            _, sizes = self.scales_sizes(node, g)
            require(len(shape) >= 2 and tuple(sizes[:-2]) == tuple(shape[:-2]), node,
                    f"{mode} mode resizes only the last two axes")
        super().check(node, g)

    def table_dims(self, node: Node, g: Graph) -> list[tuple[int, ...]]:
        return [tuple(self.scales_sizes(node, g)[1])]

    def rois(self, node: Node, g: Graph) -> list[tuple[float, float]]:
        """Per axis, the crop (start, end) of tf_crop_and_resize; the whole axis otherwise."""
        return [(0.0, 1.0)] * len(g.tensors[node.inputs[0]].shape)

    def uses_taps(self, node: Node) -> bool:
        """Cubic, antialias and the extrapolating tf_crop_and_resize run on the tap kernel."""
        return (self.mode(node) == "cubic" or self.coord_mode(node) == "tf_crop_and_resize"
                or bool(node.attrs.get("antialias", 0)))

    def axis_coords(self, node: Node, g: Graph) -> list[np.ndarray]:
        shape = g.tensors[node.inputs[0]].shape
        scales, sizes = self.scales_sizes(node, g)
        return [source_coords(o, i, s, self.coord_mode(node), r)
                for o, i, s, r in zip(sizes, shape, scales, self.rois(node, g))]

    def tables(self, node: Node, g: Graph) -> list[list[np.ndarray]]:
        shape = g.tensors[node.inputs[0]].shape
        strides = strides_of(shape)
        return [[nearest_index(c, d, self.nearest_mode(node)) * s
                 for c, d, s in zip(self.axis_coords(node, g), shape, strides)]]

    def linear_geometry(self, node: Node, g: Graph) -> dict:
        """Offsets and weights along H and W (an input of rank 3 has H = 1)."""
        shape = g.tensors[node.inputs[0]].shape
        coords = self.axis_coords(node, g)
        h, w = (1, shape[-1]) if len(shape) == 2 else shape[-2:]
        cy = coords[-2] if len(shape) > 2 else np.zeros(1)
        y0, y1, fy = linear_taps(cy, h)
        x0, x1, fx = linear_taps(coords[-1], w)
        return {"outer": int(np.prod(shape[:-2], dtype=np.int64)), "h": h, "w": w,
                "y0": y0 * w, "y1": y1 * w, "fy": fy, "x0": x0, "x1": x1, "fx": fx}

    def axis_taps(self, node: Node, coords: np.ndarray, in_len: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
        stretch = min(scale, 1.0) if node.attrs.get("antialias", 0) else 1.0
        weights = (cubic_weights(float(node.attrs.get("cubic_coeff_a", -0.75)), stretch)
                   if self.mode(node) == "cubic" else linear_weights(stretch))
        return window_taps(coords, in_len, weights, bool(node.attrs.get("exclude_outside", 0)))

    def taps_geometry(self, node: Node, g: Graph) -> dict:
        """Row offsets and weights (oh, taps) along H, column indices and weights (ow, taps) along W,
        and which rows and columns fall outside a tf_crop_and_resize crop (they get the fill)."""
        shape = g.tensors[node.inputs[0]].shape
        coords = self.axis_coords(node, g)
        h, w = shape[-2:]
        scales = self.scales_sizes(node, g)[0]
        ys, wy = self.axis_taps(node, coords[-2], h, scales[-2])
        xs, wx = self.axis_taps(node, coords[-1], w, scales[-1])
        crop = self.coord_mode(node) == "tf_crop_and_resize"
        return {"outer": int(np.prod(shape[:-2], dtype=np.int64)), "h": h, "w": w,
                "ys": ys * w, "wy": wy, "xs": xs, "wx": wx,
                "outy": crop & ((coords[-2] < 0) | (coords[-2] > h - 1)),
                "outx": crop & ((coords[-1] < 0) | (coords[-1] > w - 1))}

    def fill(self, node: Node, g: Graph, quantized: bool) -> float | int:
        """The value of extrapolated outputs: extrapolation_value, as a code of the output for int8."""
        value = float(node.attrs.get("extrapolation_value", 0.0))
        if not quantized:
            return value
        scale, zero_point = qparams_of(g, node.outputs[0])
        return int(quantize_float(np.float32(value), scale, zero_point))

    @staticmethod
    def blend_taps(x: np.ndarray, geo: dict, wy: np.ndarray, wx: np.ndarray) -> np.ndarray:
        """(outer, oh, ow): sum_i wy[y, i] * sum_j wx[x, j] * x[ys[y, i] + xs[x, j]] (the kernel's order)."""
        taps = x[:, geo["ys"][:, :, None, None] + geo["xs"][None, None, :, :]]  # outer, oh, ky, ow, kx
        rows = (taps * wx[None, None, None]).sum(axis=-1)
        return (rows * wy[None, :, :, None]).sum(axis=2)

    def run_taps(self, node: Node, g: Graph, x: np.ndarray) -> np.ndarray:
        geo = self.taps_geometry(node, g)
        flat = x.reshape(geo["outer"], -1)
        shape = self.infer(node, g)[0]
        outside = geo["outy"][:, None] | geo["outx"][None, :]
        if x.dtype == np.float32:
            out = self.blend_taps(flat, geo, geo["wy"].astype(np.float32), geo["wx"].astype(np.float32))
            return np.where(outside, np.float32(self.fill(node, g, False)), out).astype(np.float32).reshape(shape)
        acc = self.blend_taps(flat.astype(np.int64), geo, q_taps(geo["wy"]), q_taps(geo["wx"]))
        info = np.iinfo(x.dtype)
        out = np.clip((acc + (1 << (2 * WEIGHT_BITS - 1))) >> (2 * WEIGHT_BITS), info.min, info.max)
        out = np.where(outside, self.fill(node, g, True), out) if outside.any() else out
        return out.astype(x.dtype).reshape(shape)

    def lower_taps(self, node: Node, g: Graph):
        geo = self.taps_geometry(node, g)
        variant = VARIANT[g.tensors[node.outputs[0]].dtype]
        require(variant != "s16", node, f"{self.mode(node)} mode has no 16-bit kernel")
        if variant == "s8":
            wy, wx = q_taps(geo["wy"]), q_taps(geo["wx"])
            # keeps the int32 column sum and the int64 row sum of the kernel exact
            require(max(np.abs(wy).sum(axis=1).max(), np.abs(wx).sum(axis=1).max()) < 1 << 16, node,
                    "cubic_coeff_a is too large for the int8 kernel")
            wy, wx = Weight("wy", wy.astype(np.int32), "int32_t"), Weight("wx", wx.astype(np.int32), "int32_t")
        else:
            wy, wx = Weight("wy", geo["wy"].astype(np.float32), "float"), Weight("wx", geo["wx"].astype(np.float32), "float")
        ys, xs = geo["ys"].copy(), geo["xs"].copy()
        ys[geo["outy"], 0], xs[geo["outx"], 0] = -1, -1  # a negative first tap: the output is the fill
        return call(f"resize_taps_{variant}", in_=Buf(node.inputs[0], const=True), out=Buf(node.outputs[0]),
                    outer=geo["outer"], h=geo["h"], w=geo["w"], oh=len(ys), ow=len(xs), ky=ys.shape[1], kx=xs.shape[1],
                    ys=Weight("ys", ys.astype(np.int32), "int32_t"), wy=wy,
                    xs=Weight("xs", xs.astype(np.int32), "int32_t"), wx=wx, fill=self.fill(node, g, variant == "s8"))

    def run_float(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        if self.mode(node) == "nearest":
            return super().run_float(node, g, xs)
        if self.uses_taps(node):
            return [self.run_taps(node, g, xs[0].astype(np.float32))]
        geo = self.linear_geometry(node, g)
        x = xs[0].reshape(geo["outer"], -1).astype(np.float32)
        fy, fx = geo["fy"].astype(np.float32)[:, None], geo["fx"].astype(np.float32)[None, :]

        def at(rows, cols):
            return x[:, rows[:, None] + cols[None, :]]
        top = at(geo["y0"], geo["x0"]) * (1 - fx) + at(geo["y0"], geo["x1"]) * fx
        bottom = at(geo["y1"], geo["x0"]) * (1 - fx) + at(geo["y1"], geo["x1"]) * fx
        out = top * (1 - fy) + bottom * fy
        return [out.astype(np.float32).reshape(self.infer(node, g)[0])]

    @staticmethod
    def q_weights(frac: np.ndarray) -> np.ndarray:
        return np.round(frac * ONE).astype(np.int32)

    def run_int(self, node: Node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
        if self.mode(node) == "nearest":
            return super().run_int(node, g, xs)
        if self.uses_taps(node):
            return [self.run_taps(node, g, xs[0])]
        geo = self.linear_geometry(node, g)
        x = xs[0].reshape(geo["outer"], -1).astype(np.int64)
        wy, wx = self.q_weights(geo["fy"]).astype(np.int64)[:, None], self.q_weights(geo["fx"]).astype(np.int64)[None, :]

        def at(rows, cols):
            return x[:, rows[:, None] + cols[None, :]]
        top = at(geo["y0"], geo["x0"]) * (ONE - wx) + at(geo["y0"], geo["x1"]) * wx
        bottom = at(geo["y1"], geo["x0"]) * (ONE - wx) + at(geo["y1"], geo["x1"]) * wx
        acc = top * (ONE - wy) + bottom * wy
        out = (acc + (1 << (2 * WEIGHT_BITS - 1))) >> (2 * WEIGHT_BITS)
        return [out.astype(xs[0].dtype).reshape(self.infer(node, g)[0])]

    def lower(self, node: Node, g: Graph, precision: str):
        if self.mode(node) == "nearest":
            return super().lower(node, g, precision)
        if self.uses_taps(node):
            return self.lower_taps(node, g)
        geo = self.linear_geometry(node, g)
        variant = VARIANT[g.tensors[node.outputs[0]].dtype]
        require(variant != "s16", node, "linear mode has no 16-bit kernel")
        if variant == "s8":
            fy, fx = Weight("wy", self.q_weights(geo["fy"]), "int32_t"), Weight("wx", self.q_weights(geo["fx"]), "int32_t")
        else:
            fy, fx = Weight("wy", geo["fy"].astype(np.float32), "float"), Weight("wx", geo["fx"].astype(np.float32), "float")
        return call(f"resize_linear_{variant}", in_=Buf(node.inputs[0], const=True), out=Buf(node.outputs[0]),
                    outer=geo["outer"], h=geo["h"], w=geo["w"], oh=len(geo["y0"]), ow=len(geo["x0"]),
                    y0=Weight("y0", geo["y0"].astype(np.int32), "int32_t"),
                    y1=Weight("y1", geo["y1"].astype(np.int32), "int32_t"), wy=fy,
                    x0=Weight("x0", geo["x0"].astype(np.int32), "int32_t"),
                    x1=Weight("x1", geo["x1"].astype(np.int32), "int32_t"), wx=fx)


def sizes_from_scales(node: Node, shape: tuple[int, ...], scales: list[float]) -> list[int]:
    require(len(scales) == len(shape), node, f"{len(scales)} scales for a tensor of rank {len(shape)}")
    require(all(np.isfinite(s) and s > 0 for s in scales), node, "scales must be positive and finite")
    require(all(s < 2**31 for s in scales), node, f"scales {scales} are too large")
    sizes = [int(np.floor(d * s)) for d, s in zip(shape, scales)]
    require(min(sizes) > 0, node, f"scales {scales} give an empty output")
    return sizes


def sizes_with_policy(shape: tuple[int, ...], given: dict[int, int], policy: str) -> tuple[list[float], list[int]]:
    """Scales and sizes from the sizes input (axis -> size). not_larger / not_smaller keep the
    aspect ratio: one scale, the smallest / largest of the resized axes', and sizes rounded half
    up (ONNX reference)."""
    sizes = [given.get(a, d) for a, d in enumerate(shape)]
    scales = [o / i for o, i in zip(sizes, shape)]
    if policy == "stretch":
        return scales, sizes
    pick = min if policy == "not_larger" else max
    scale = pick(scales[a] for a in given)
    return ([scale if a in given else 1.0 for a in range(len(shape))],
            [int(scale * d + 0.5) if a in given else d for a, d in enumerate(shape)])


@register
class Resize(ResizeBase):
    op_type = "Resize"
    summary = ("nearest (4 rounding modes), linear and cubic (antialias) on the last two axes; every coordinate "
               "mode (tf_crop_and_resize: constant roi); constant scales or sizes; axes; keep_aspect_ratio_policy")

    def coord_mode(self, node: Node) -> str:
        return str(node.attrs.get("coordinate_transformation_mode", "half_pixel"))

    def nearest_mode(self, node: Node) -> str:
        return str(node.attrs.get("nearest_mode", "round_prefer_floor"))

    def check(self, node: Node, g: Graph) -> None:
        require(not node.attrs.get("antialias", 0) or self.mode(node) != "nearest", node,
                "antialias applies to linear and cubic modes, not nearest")
        policy = self.aspect_policy(node)
        require(policy in ASPECT_POLICIES, node, f"keep_aspect_ratio_policy '{policy}' is not supported "
                                                 f"({', '.join(ASPECT_POLICIES)} are)")
        super().check(node, g)
        self.rois(node, g)  # refuses a missing or misshapen roi

    @staticmethod
    def aspect_policy(node: Node) -> str:
        return str(node.attrs.get("keep_aspect_ratio_policy", "stretch"))

    def axes(self, node: Node, rank: int) -> list[int]:
        """The axes that scales, sizes and roi name (all of them without the attribute)."""
        axes = [int(a) for a in node.attrs.get("axes", range(rank))]
        require(all(-rank <= a < rank for a in axes), node, f"axes {axes} are out of range for rank {rank}")
        axes = [a % rank for a in axes]
        require(len(set(axes)) == len(axes), node, f"axes {axes} repeat an axis")
        return axes

    def rois(self, node: Node, g: Graph) -> list[tuple[float, float]]:
        rank = len(g.tensors[node.inputs[0]].shape)
        if self.coord_mode(node) != "tf_crop_and_resize":
            return super().rois(node, g)
        axes = self.axes(node, rank)
        roi = g.const(optional_input(node, 1)) if optional_input(node, 1) else None
        require(roi is not None and roi.size == 2 * len(axes), node,
                f"tf_crop_and_resize needs a constant roi of {2 * len(axes)} values")
        roi = [float(v) for v in roi.reshape(-1)]
        crops = [(0.0, 1.0)] * rank
        for k, a in enumerate(axes):
            crops[a] = (roi[k], roi[len(axes) + k])
        return crops

    def scales_sizes(self, node: Node, g: Graph) -> tuple[list[float], list[int]]:
        shape = g.tensors[node.inputs[0]].shape
        axes = self.axes(node, len(shape))
        sizes_name, scales_name = optional_input(node, 3), optional_input(node, 2)
        if sizes_name:
            given = g.const(sizes_name)
            require(given is not None, node, "sizes must be a constant")
            given = [int(s) for s in given.reshape(-1)]
            require(len(given) == len(axes) and min(given) > 0, node,
                    f"sizes {given} must be positive, one per resized axis of {shape}")
            return sizes_with_policy(shape, dict(zip(axes, given)), self.aspect_policy(node))
        scales = g.const(scales_name) if scales_name else None
        require(scales is not None and scales.size > 0, node, "scales or sizes must be a constant input")
        scales = [float(s) for s in scales.reshape(-1)]
        require(len(scales) == len(axes), node, f"{len(scales)} scales for {len(axes)} resized axes")
        full = [1.0] * len(shape)
        for a, s in zip(axes, scales):
            full[a] = s
        return full, sizes_from_scales(node, shape, full)


@register
class Upsample(ResizeBase):
    op_type = "Upsample"
    summary = "opset 9 upsampling: nearest (floor) or linear, asymmetric coordinates, constant scales"

    def mode(self, node: Node) -> str:
        return str(node.attrs.get("mode", "nearest"))

    def scales_sizes(self, node: Node, g: Graph) -> tuple[list[float], list[int]]:
        shape = g.tensors[node.inputs[0]].shape
        scales = g.const(optional_input(node, 1)) if optional_input(node, 1) else node.attrs.get("scales")
        require(scales is not None, node, "scales must be a constant")
        scales = [float(s) for s in np.asarray(scales).reshape(-1)]
        return scales, sizes_from_scales(node, shape, scales)
