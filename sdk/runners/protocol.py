"""The harness file protocol shared by every board run under QEMU (docs/internals.md,
"Firmware harness protocol"): samples in as input.bin, outputs back from output.bin.

- input.bin: uint32 little-endian sample count N, then N samples; a sample is every input
  in order, float32 (an integer or bool input: its own type), in the model's declared layout.
- output.bin: N samples; a sample is every output in order, int8 for int8 builds (int16 for
  an int16 state output) and float32 for float builds (an integer or bool output, or a float
  one an int8 build keeps in float: its own type).

A harness whose model returns an error prints "ERROR harness: the model returned error <rc>";
`model_error` turns the code of an index out of range into the runtime's ModelError.

The Cortex-M7 firmware runner (runners/firmware.py) and the qemu-aarch64 runner
(runners/linux_qemu.py) both use these helpers; `info` is the manifest of the build.
"""
from __future__ import annotations

import re
import struct
from typing import Sequence

import numpy as np

from ..errors import CuvilError, ModelError, TargetError
from ..kernels.segments import dequantize_entry

ERR_INDEX = 17  # <NAME>_ERR_INDEX (templates/common/model.h.j2)


def is_integer(t: dict) -> bool:
    """A manifest entry of an integer or bool tensor (never quantized: no scale)."""
    return t["scale"] is None


def input_dtypes(info: dict) -> list[np.dtype]:
    """Each input's type in input.bin: float32, or an integer input's own (little-endian)."""
    return [np.dtype(t["dtype"] if is_integer(t) else "<f4").newbyteorder("<") for t in info["inputs"]]


def output_dtypes(info: dict) -> list[np.dtype]:
    """Each output's type in output.bin: int8 (int8 builds; int16 for a state output paired with
    an int16 input: the manifest's dtype) or float32, an integer output's own."""
    int8 = info["precision"] == "int8"
    return [np.dtype(t["dtype"] if is_integer(t) or int8 else "<f4").newbyteorder("<") for t in info["outputs"]]


def per_input_arrays(info: dict, samples: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
    """One (N, size) array per model input, in model order, of its type in input.bin."""
    names = [t["name"] for t in info["inputs"]]
    return [np.stack([s[n].reshape(-1) for s in samples]).astype(dtype)
            for n, dtype in zip(names, input_dtypes(info))]


def encode_inputs(inputs: Sequence[np.ndarray]) -> bytes:
    """input.bin from one array per model input, each with a leading sample axis N: float
    arrays as float32, integer and bool ones in their own type, little-endian."""
    arrays = [np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<") if a.dtype.kind in "biu" else "<f4")
              for a in map(np.asarray, inputs)]
    count = len(arrays[0]) if arrays else 0
    if any(len(a) != count for a in arrays):
        raise ValueError("every input needs the same number of samples")
    flat = [a.reshape(count, -1).view(np.uint8) for a in arrays]  # each sample's bytes, input after input
    body = np.concatenate(flat, axis=1).tobytes() if flat else b""
    return struct.pack("<I", count) + body


def split_outputs(data: bytes, samples: int, sizes: Sequence[int], dtype) -> list[np.ndarray]:
    """Split output.bin into one (samples, size) array per model output; `dtype` is one type, or
    a list of one per output."""
    dtypes = [np.dtype(d).newbyteorder("<") for d in (dtype if isinstance(dtype, (list, tuple)) else
                                                     [dtype] * len(sizes))]
    per_sample = sum(n * d.itemsize for n, d in zip(sizes, dtypes))
    if len(data) != samples * per_sample:
        raise TargetError(f"output.bin has {len(data)} bytes, expected {samples} samples x {per_sample} bytes")
    rows = np.frombuffer(data, dtype=np.uint8).reshape(samples, per_sample)
    out, at = [], 0
    for n, d in zip(sizes, dtypes):
        out.append(np.ascontiguousarray(rows[:, at:at + n * d.itemsize]).view(d).reshape(samples, n).copy())
        at += n * d.itemsize
    return out


def decode_outputs(info: dict, raw: Sequence[np.ndarray], samples: int) -> list[dict[str, np.ndarray]]:
    """Per sample, {output name: array shaped as the output}. int8 outputs are dequantized with
    the output's scale and zero point (or its segments') exactly as the generated C does; integer and bool outputs
    are as they are."""
    int8 = info["precision"] == "int8"
    outputs = []
    for i in range(samples):
        sample = {}
        for t, arr in zip(info["outputs"], raw):
            value = arr[i].reshape(t["shape"])
            sample[t["name"]] = dequantize_entry(value, t) if int8 and not is_integer(t) else value
        outputs.append(sample)
    return outputs


def model_error(line: str, where: str) -> CuvilError | None:
    """The error of a harness line "... the model returned error <rc> (sample <s>)": an index
    out of range is the data's (ModelError, as the Python runtime says); None for other lines."""
    m = re.search(r"the model returned error (\d+) \(sample (\d+)\)", line)
    if m is None:
        return None
    code, sample = int(m.group(1)), int(m.group(2))
    if code == ERR_INDEX:
        return ModelError(f"{where}: sample {sample}: an index input is out of range (a Gather, GatherElements, "
                          f"GatherND or ScatterElements index outside its axis; the model returned error {code} and "
                          f"read nothing outside its tensors)")
    return TargetError(f"{where}: sample {sample}: the model returned error {code}")
