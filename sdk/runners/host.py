"""Run a host-built shared library in this process, sample by sample."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import runtime
from .progress import Progress


def run_host(library: Path, samples: list[dict[str, np.ndarray]], progress: bool, layers: bool = False) -> dict:
    outputs, dumps = [], []
    with runtime.load(library) as model, Progress("running", len(samples), progress) as bar:
        for feeds in samples:
            if layers:
                out, per_layer = model.run_with_layers(feeds)
                dumps.append(per_layer)
            else:
                out = model(feeds)
            outputs.append(out)
            bar.step()
    return {"outputs": outputs, "instructions": None, "layers": dumps if layers else None}
