"""Choose the layers to keep in higher precision (float, or int16 activations) so that the
int8 model meets an accuracy target.

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
from ..reference import run_quantized_model
from ..reference.batched import run_float_samples
from .calibrate import RangeObserver
from .int16 import candidates as int16_candidates
from .quantize import quantize_graph

EVAL_SAMPLES = 16


def candidates(g: Graph, mode: str) -> list[str]:
    """Layers that requantize (data movement gains nothing); int16 applies to weighted layers."""
    if mode == "int16":
        return int16_candidates(g)
    return [n.name for n in g.nodes if not get_op(n.op).alias and get_op(n.op).output_qparams == "calibrated"]


def score(g_float: Graph, observer: RangeObserver, samples: list[dict], keep: set[str], mode: str,
          wanted: list[dict]) -> float:
    """Mean cosine of the quantized model's outputs with the float model's (`wanted`, per sample)."""
    g = copy.deepcopy(g_float)
    if mode == "int16":
        quantize_graph(g, observer, int16=keep)
    else:
        quantize_graph(g, observer, keep_float=keep)
    cosines = []
    for feeds, want in zip(samples, wanted):
        got = run_quantized_model(g, feeds)[1]
        for name in g_float.outputs:
            a, b = got[name].ravel().astype(np.float64), want[name].ravel().astype(np.float64)
            cosines.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)))
    return float(np.mean(cosines))


def choose_layers(g_float: Graph, observer: RangeObserver, samples: list[dict], target: float,
                  mode: str = "float") -> tuple[list[str], float, float]:
    """(layers kept in higher precision, score reached, int8-only score); mode is
    "float" (per-layer float fallback) or "int16" (16x8 layers)."""
    samples = samples[:EVAL_SAMPLES]
    wanted = run_float_samples(g_float, samples)  # the float model's outputs: once, not per score
    base = score(g_float, observer, samples, set(), mode, wanted)
    if base >= target:
        return [], base, base
    gains = sorted(((score(g_float, observer, samples, {name}, mode, wanted), name)
                    for name in candidates(g_float, mode)), reverse=True)
    kept: list[str] = []
    reached = base
    for _, name in gains:
        kept.append(name)
        reached = score(g_float, observer, samples, set(kept), mode, wanted)
        if reached >= target:
            break
    return kept, reached, base
