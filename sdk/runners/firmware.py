"""Run firmware built for a QEMU board: samples in, outputs and instruction counts out."""
from __future__ import annotations

import numpy as np

from ..quant.requant import dequantize
from .qemu_m7 import run_firmware

SECONDS_PER_SAMPLE = 5.0


def run_on_qemu(board, info: dict, samples: list[dict[str, np.ndarray]], progress: bool) -> dict:
    names = [t["name"] for t in info["inputs"]]
    per_input = [np.stack([s[n].reshape(-1) for s in samples]).astype(np.float32) for n in names]
    timeout = 30.0 + SECONDS_PER_SAMPLE * len(samples)
    result = run_firmware(info["artifacts"]["elf"], board, per_input, timeout_s=timeout)
    int8 = info["precision"] == "int8"
    raw = result.outputs([t["size"] for t in info["outputs"]], np.int8 if int8 else np.float32)
    outputs = []
    for i in range(len(samples)):
        sample = {}
        for t, arr in zip(info["outputs"], raw):
            value = arr[i].reshape(t["shape"])
            sample[t["name"]] = dequantize(value, t["scale"], t["zero_point"]) if int8 else value
        outputs.append(sample)
    return {"outputs": outputs, "instructions": list(result.instructions), "raw": raw}
