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
from ..kernels.requant import quantize_float
from ..reference import dequantize_tensor, run_int, run_quantized_model
from ..reference.batched import run_float_samples
from .calibrate import RangeObserver
from .int16 import candidates as int16_candidates
from .quantize import quantize_graph, quantize_node
from .range_split import DEFAULT_FACTOR
from .weight_bits import AUTO_COSINE_DROP, int4_candidates, weight_count

EVAL_SAMPLES = 16
# choose_int4_scales measures once per int4 layer (MobileNetV1-0.25: 29 runs of the integer reference):
# on fewer samples than the other choices
SCALE_SAMPLES = 8


def candidates(g: Graph, mode: str) -> list[str]:
    """Layers that requantize (data movement gains nothing); int16 applies to weighted layers."""
    if mode == "int16":
        return int16_candidates(g)
    return [n.name for n in g.nodes if not get_op(n.op).alias and get_op(n.op).output_qparams == "calibrated"]


def score(g_float: Graph, observer: RangeObserver, samples: list[dict], wanted: list[dict],
          keep_float: set[str] = frozenset(), int16: set[str] = frozenset(), int4: set[str] = frozenset(),
          range_split: float | None = DEFAULT_FACTOR) -> float:
    """Mean cosine of the quantized model's outputs with the float model's (`wanted`, per sample),
    with those layers in float, 16x8 and with int4 weights."""
    g = copy.deepcopy(g_float)
    quantize_graph(g, observer, keep_float=keep_float, int16=int16, int4=int4, range_split=range_split)
    cosines = []
    for feeds, want in zip(samples, wanted):
        got = run_quantized_model(g, feeds)[1]
        for name in g_float.outputs:
            a, b = got[name].ravel().astype(np.float64), want[name].ravel().astype(np.float64)
            cosines.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)))
    return float(np.mean(cosines))


def choose_layers(g_float: Graph, observer: RangeObserver, samples: list[dict], target: float,
                  mode: str = "float", range_split: float | None = DEFAULT_FACTOR) -> tuple[list[str], float, float]:
    """(layers kept in higher precision, score reached, int8-only score); mode is
    "float" (per-layer float fallback) or "int16" (16x8 layers)."""
    samples = samples[:EVAL_SAMPLES]
    wanted = run_float_samples(g_float, samples)  # the float model's outputs: once, not per score
    def scored(keep: set[str]) -> float:
        return score(g_float, observer, samples, wanted, range_split=range_split,
                     **{"int16" if mode == "int16" else "keep_float": keep})

    base = scored(set())
    if base >= target:
        return [], base, base
    gains = sorted(((scored({name}), name) for name in candidates(g_float, mode)), reverse=True)
    kept: list[str] = []
    reached = base
    for _, name in gains:
        kept.append(name)
        reached = scored(set(kept))
        if reached >= target:
            break
    return kept, reached, base


def choose_int4(g_float: Graph, observer: RangeObserver, samples: list[dict], target: float | None,
                keep_float: set[str], int16: set[str],
                range_split: float | None = DEFAULT_FACTOR) -> tuple[list[str], float, float, float]:
    """`--weight-bits auto`: (int4 layers, cosine reached, all-int8 cosine, target). The layers in
    keep_float / int16 (chosen for --accuracy-target before) stay as they are."""
    samples = samples[:EVAL_SAMPLES]
    wanted = run_float_samples(g_float, samples)
    probe = copy.deepcopy(g_float)
    for node in probe.nodes:  # candidates as the quantized graph will have them (float/int16 layers excluded)
        node.precision = "fp32" if node.name in keep_float else "int16" if node.name in int16 else node.precision
    eligible = int4_candidates(probe)

    def cosine(int4: set[str]) -> float:
        return score(g_float, observer, samples, wanted, keep_float=keep_float, int16=int16, int4=int4,
                     range_split=range_split)

    base = cosine(set())
    goal = target if target is not None else base - AUTO_COSINE_DROP
    alone = {name: base - cosine({name}) for name in eligible}
    order = sorted(eligible, key=lambda name: alone[name] / max(weight_count(g_float, name), 1))
    chosen: set[str] = set()
    reached = base
    for name in order:
        trial = cosine(chosen | {name})
        if trial >= goal:
            chosen.add(name)
            reached = trial
    return [n for n in eligible if n in chosen], reached, base, goal


def weight_axis(node, g: Graph) -> int:
    """The output-channel axis of a layer's stored weight, as its int8 rule quantizes it."""
    op = get_op(node.op)
    return op.out_axis(node) if hasattr(op, "out_axis") else 0


def choose_int4_scales(g_float: Graph, observer: RangeObserver, samples: list[dict] | None, names: list[str],
                       keep_float: set[str] = frozenset(), int16: set[str] = frozenset(),
                       range_split: float | None = DEFAULT_FACTOR) -> list[str]:
    """The int4 layers' scale rule, measured: with every named layer int4, each in turn (model
    order) takes the least-squares clipped scales (ops/conv.py, int4_clip_scales) in
    Node.int4_scale when the model's cosine to the float model on the calibration data (as
    --accuracy-target measures it) rises with them, else keeps max|w| / 7. Clipping helps a
    layer of many bell-shaped weights and hurts one whose few large weights are its signal (a
    classifier), which the weights alone do not tell. Each trial re-quantizes that layer alone and
    re-runs only the layers downstream of it (IntRuns). Returns the layers that clip; nothing
    without calibration data (max|w| / 7 everywhere)."""
    from ..ops.conv import int4_clip_scales
    if not samples or not names:
        return []
    samples = samples[:SCALE_SAMPLES]
    wanted = run_float_samples(g_float, samples)
    g = copy.deepcopy(g_float)
    quantize_graph(g, observer, keep_float=keep_float, int16=int16, int4=set(names), range_split=range_split)
    runs = IntRuns(g, samples)
    reached = runs.cosine(g_float.outputs, wanted)
    clipping = []
    originals = {n.name: n for n in g_float.nodes}
    for index, node in [(i, n) for i, n in enumerate(g.nodes) if n.name in set(names)]:
        kept_q = node.q
        node.int4_scale = int4_clip_scales(g.const(node.inputs[1]), weight_axis(node, g))
        quantize_node(node, g)
        trial = runs.rerun_from(index)
        cosine = trial.cosine(g_float.outputs, wanted)
        if cosine > reached:
            reached, runs = cosine, trial
            originals[node.name].int4_scale = node.int4_scale
            clipping.append(node.name)
        else:
            node.q, node.int4_scale = kept_q, None
    return clipping


class IntRuns:
    """Every value of a quantized graph's integer run on some samples (float inputs quantized as
    the C API does), re-run from one layer on when that layer's constants change."""

    def __init__(self, g: Graph, samples: list[dict], values: list[dict] | None = None) -> None:
        self.g = g
        if values is None:
            values = [run_int(g, {name: quantize_float(x, *g.tensors[name].q.scalar()) for name, x in feeds.items()},
                              keep_all=True) for feeds in samples]
        self.values = values

    def rerun_from(self, index: int) -> "IntRuns":
        """New runs in which layer `index` and every layer reading its results, directly or not,
        are computed again (the others' values shared)."""
        changed = set(self.g.nodes[index].outputs)
        redo = [index]
        for i in range(index + 1, len(self.g.nodes)):
            if any(name in changed for name in self.g.nodes[i].inputs):
                changed.update(self.g.nodes[i].outputs)
                redo.append(i)
        fresh = []
        for values in self.values:
            values = dict(values)
            for i in redo:
                node = self.g.nodes[i]
                xs = [values[name] if name in values else self.g.tensors[name].data for name in node.inputs if name]
                op = get_op(node.op)
                outs = op.run_float(node, self.g, xs) if node.precision == "fp32" else op.run_int(node, self.g, xs)
                values.update(zip(node.outputs, outs))
            fresh.append(values)
        return IntRuns(self.g, [], fresh)

    def cosine(self, outputs: list[str], wanted: list[dict]) -> float:
        """Mean cosine of the dequantized outputs with the float model's (as `score`)."""
        cosines = []
        for values, want in zip(self.values, wanted):
            for name in outputs:
                got = dequantize_tensor(self.g, name, values[name])
                a, b = got.ravel().astype(np.float64), want[name].ravel().astype(np.float64)
                cosines.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)))
        return float(np.mean(cosines))
