"""Choose the layers to keep in float so that the int8 model meets an accuracy target.

The score is the mean cosine similarity between the quantized model's (dequantized)
outputs and the float model's, on calibration samples, computed with the numpy
reference (bit-identical to the targets). Each candidate layer is scored alone in float;
then layers are added, most helpful first, until the target is met.
"""
from __future__ import annotations

import copy

import numpy as np

from ..ir import Graph
from ..ops import get_op
from ..reference import run_float, run_quantized_model
from .calibrate import RangeObserver
from .quantize import quantize_graph

EVAL_SAMPLES = 16


def candidates(g: Graph) -> list[str]:
    """Layers that requantize (data movement gains nothing from float)."""
    return [n.name for n in g.nodes if not get_op(n.op).alias and get_op(n.op).output_qparams == "calibrated"]


def score(g_float: Graph, observer: RangeObserver, samples: list[dict], keep: set[str]) -> float:
    g = copy.deepcopy(g_float)
    quantize_graph(g, observer, keep)
    cosines = []
    for feeds in samples:
        want = run_float(g_float, feeds)
        got = run_quantized_model(g, feeds)[1]
        for name in g_float.outputs:
            a, b = got[name].ravel().astype(np.float64), want[name].ravel().astype(np.float64)
            cosines.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)))
    return float(np.mean(cosines))


def choose_float_layers(g_float: Graph, observer: RangeObserver, samples: list[dict],
                        target: float) -> tuple[list[str], float, float]:
    """(layers kept in float, score reached, int8-only score)."""
    samples = samples[:EVAL_SAMPLES]
    base = score(g_float, observer, samples, set())
    if base >= target:
        return [], base, base
    gains = sorted(((score(g_float, observer, samples, {name}), name) for name in candidates(g_float)), reverse=True)
    kept: list[str] = []
    reached = base
    for _, name in gains:
        kept.append(name)
        reached = score(g_float, observer, samples, set(kept))
        if reached >= target:
            break
    return kept, reached, base
