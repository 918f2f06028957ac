"""Run a host-built shared library in this process, sample by sample."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import runtime
from .progress import Progress


def run_host(library: Path, samples: list[dict[str, np.ndarray]], progress: bool) -> dict:
    outputs = []
    with runtime.load(library) as model, Progress("running", len(samples), progress) as bar:
        for feeds in samples:
            outputs.append(model(feeds))
            bar.step()
    return {"outputs": outputs, "instructions": None}
