"""Segmented int8 tensors: one tensor whose slices along one axis each keep their own scale and
zero point (an output joined by a Concat from branches of very different ranges, quant/range_split.py).

The int8 codes of element i belong to the segment of its index along the axis,
k = (i / inner) % dim in row-major order; its real value is (q - zp[k]) * scale[k], the same
float32 steps as a per-tensor dequantization (kernels/requant.dequantize), so the generated C,
the numpy reference and the runners agree to the bit.

A manifest entry (build info "outputs") of such a tensor has "segment_axis" and "segments": a
list of {"start", "stop", "scale", "zero_point"} along that axis, covering it in order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .requant import dequantize


@dataclass
class Segment:
    start: int  # first index along the axis
    stop: int  # one past the last
    scale: float
    zero_point: int
    source: str = ""  # the Concat input it came from (reports)


@dataclass
class Segments:
    axis: int
    parts: list[Segment]

    def as_manifest(self) -> dict:
        return {"segment_axis": self.axis,
                "segments": [{"start": s.start, "stop": s.stop, "scale": s.scale, "zero_point": s.zero_point,
                              "source": s.source} for s in self.parts]}


def axis_tables(shape: tuple[int, ...] | list[int], segments: list[dict], axis: int) -> tuple[int, int, list, list]:
    """(inner, dim, scale per index along the axis, zero point per index): what the C dequantization
    loop indexes by (i / inner) % dim."""
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64)) if axis + 1 < len(shape) else 1
    dim = int(shape[axis])
    scales, zps = [0.0] * dim, [0] * dim
    for s in segments:
        for k in range(s["start"], s["stop"]):
            scales[k], zps[k] = float(s["scale"]), int(s["zero_point"])
    return inner, dim, scales, zps


def dequantize_segmented(q: np.ndarray, shape, segments: list[dict], axis: int) -> np.ndarray:
    """Int8 codes of a segmented tensor (any leading sample axes) -> float32, as the C API does."""
    value = np.asarray(q).reshape(-1, *shape)
    _, dim, scales, zps = axis_tables(shape, segments, axis)
    view = [1] * (len(shape) + 1)
    view[axis + 1] = dim
    scale = np.array(scales, dtype=np.float32).reshape(view)
    zp = np.array(zps, dtype=np.int32).reshape(view)
    out = (value.astype(np.int32) - zp).astype(np.float32) * scale
    return out.reshape(np.asarray(q).shape)


def dequantize_entry(q: np.ndarray, entry: dict) -> np.ndarray:
    """Int8 codes of a model input or output (manifest entry) -> float32: per tensor, or per segment."""
    if entry.get("segments"):
        return dequantize_segmented(q, entry["shape"], entry["segments"], entry["segment_axis"])
    return dequantize(q, entry["scale"], entry["zero_point"])
