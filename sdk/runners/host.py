"""Run a host-built shared library in this process, sample by sample."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .. import runtime
from .progress import Progress

TIMING_REPEATS = 20  # runs of one sample whose median is `run --json`'s time per inference
TIMING_BUDGET_S = 2.0  # fewer repeats for a model so slow that 20 would take longer


def run_host(library: Path, samples: list[dict[str, np.ndarray]], progress: bool, layers: bool = False,
             timing: bool = False, weights: str | None = None) -> dict:
    """`weights`: the weights file of a --weights file build (None: the one beside the library)."""
    outputs, dumps = [], []
    with runtime.load(library, weights=weights) as model, Progress("running", len(samples), progress) as bar:
        for feeds in samples:
            if layers:
                out, per_layer = model.run_with_layers(feeds)
                dumps.append(per_layer)
            else:
                out = model.run(feeds)
            outputs.append(out)
            bar.step()
        times = time_inference(model, samples[0]) if timing and samples and not layers else []
    return {"outputs": outputs, "instructions": None, "layers": dumps if layers else None, "times_ns": times,
            "isa": model.isa,
            "timing_note": "wall-clock time of one float call (quantize, layers, dequantize) in this process"}


def time_inference(model: runtime.Model, feeds: dict[str, np.ndarray]) -> list[int]:
    """Nanoseconds of repeated runs of one sample (after the runs above warmed the caches)."""
    times: list[int] = []
    deadline = time.perf_counter() + TIMING_BUDGET_S
    while len(times) < TIMING_REPEATS and (len(times) < 3 or time.perf_counter() < deadline):
        start = time.perf_counter_ns()
        model.run(feeds)
        times.append(time.perf_counter_ns() - start)
    return times
