"""The harness file protocol shared by every board run under QEMU (docs/internals.md,
"Firmware harness protocol"): samples in as input.bin, outputs back from output.bin.

- input.bin: uint32 little-endian sample count N, then N samples; a sample is every input
  in order, float32, in the model's declared layout.
- output.bin: N samples; a sample is every output in order, int8 for int8 builds and
  float32 for float builds.

The Cortex-M7 firmware runner (runners/firmware.py) and the qemu-aarch64 runner
(runners/linux_qemu.py) both use these helpers; `info` is the manifest of the build.
"""
from __future__ import annotations

import struct
from typing import Sequence

import numpy as np

from ..errors import TargetError
from ..kernels.requant import dequantize


def per_input_arrays(info: dict, samples: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
    """One float32 (N, size) array per model input, in model order."""
    names = [t["name"] for t in info["inputs"]]
    return [np.stack([s[n].reshape(-1) for s in samples]).astype(np.float32) for n in names]


def encode_inputs(inputs: Sequence[np.ndarray]) -> bytes:
    """input.bin from one float array per model input, each with a leading sample axis N."""
    arrays = [np.ascontiguousarray(a, dtype="<f4") for a in inputs]
    count = len(arrays[0]) if arrays else 0
    if any(len(a) != count for a in arrays):
        raise ValueError("every input needs the same number of samples")
    flat = [a.reshape(count, -1) for a in arrays]
    body = np.concatenate(flat, axis=1).tobytes() if flat else b""
    return struct.pack("<I", count) + body


def output_dtype(info: dict) -> np.dtype:
    return np.dtype(np.int8 if info["precision"] == "int8" else "<f4")


def split_outputs(data: bytes, samples: int, sizes: Sequence[int], dtype) -> list[np.ndarray]:
    """Split output.bin into one (samples, size) array per model output."""
    dtype = np.dtype(dtype).newbyteorder("<")
    per_sample = sum(sizes)
    if len(data) != samples * per_sample * dtype.itemsize:
        raise TargetError(f"output.bin has {len(data)} bytes, expected {samples} samples "
                          f"x {per_sample} values x {dtype.itemsize} bytes")
    flat = np.frombuffer(data, dtype=dtype).reshape(samples, per_sample)
    bounds = np.cumsum([0, *sizes])
    return [flat[:, a:b].copy() for a, b in zip(bounds[:-1], bounds[1:])]


def decode_outputs(info: dict, raw: Sequence[np.ndarray], samples: int) -> list[dict[str, np.ndarray]]:
    """Per sample, {output name: float array shaped as the output}. int8 outputs are
    dequantized with the output's scale and zero point exactly as the generated C does."""
    int8 = info["precision"] == "int8"
    outputs = []
    for i in range(samples):
        sample = {}
        for t, arr in zip(info["outputs"], raw):
            value = arr[i].reshape(t["shape"])
            sample[t["name"]] = dequantize(value, t["scale"], t["zero_point"]) if int8 else value
        outputs.append(sample)
    return outputs
