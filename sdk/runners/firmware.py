"""Run firmware built for a QEMU board: samples in, outputs and instruction counts out."""
from __future__ import annotations

import numpy as np

from .protocol import decode_outputs, output_dtype, per_input_arrays
from .qemu_m7 import run_firmware

SECONDS_PER_SAMPLE = 5.0


def run_on_qemu(board, info: dict, samples: list[dict[str, np.ndarray]], progress: bool) -> dict:
    per_input = per_input_arrays(info, samples)
    timeout = 30.0 + SECONDS_PER_SAMPLE * len(samples)
    result = run_firmware(info["artifacts"]["elf"], board, per_input, timeout_s=timeout)
    raw = result.outputs([t["size"] for t in info["outputs"]], output_dtype(info))
    return {"outputs": decode_outputs(info, raw, len(samples)), "instructions": list(result.instructions),
            "raw": raw}
