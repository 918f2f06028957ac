"""Choose the layers to keep in higher precision (float, or int16 activations) so that the
int8 model meets an accuracy target.

The score is what `validate` judges (validate_segments.py): the lowest, over every output and
every Concat segment of an output (the boxes and the scores of a detector's head apart), of the
mean cosine similarity between the quantized model's (dequantized) outputs and the float model's,
on calibration samples, computed with the numpy reference (bit-identical to the targets). One
big output cannot hide a small one. Each candidate layer is scored alone in float; then layers
are added, most helpful first, until the target is met. Every step prints a line on stderr; at
the time bound (--accuracy-time) the search stops with the best set it has scored.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..ir import Graph
from ..ops import get_op
from ..kernels.requant import quantize_float
from ..reference import dequantize_tensor, run_int, run_quantized_model
from ..reference.batched import run_float_samples
from .calibrate import RangeObserver
from .int16 import candidates as int16_candidates
from .quantize import quantize_graph, quantize_node
from .range_split import DEFAULT_FACTOR, concat_layout
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


def mean_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Per sample (leading axis), then the mean."""
    a, b = a.reshape(len(a), -1).astype(np.float64), b.reshape(len(b), -1).astype(np.float64)
    return float(((a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-30)).mean())


def judge(g_float: Graph, got: list[dict], wanted: list[dict]) -> float:
    """The lowest mean cosine over every output and every Concat segment of an output."""
    worst = np.inf
    for name in g_float.outputs:
        a, b = np.stack([r[name] for r in got]), np.stack([r[name] for r in wanted]).reshape(-1, *got[0][name].shape)
        worst = min(worst, mean_cosine(a, b))
        layout = concat_layout(g_float, name)
        for start, stop, _ in layout.bounds if layout is not None else []:
            where = [slice(None)] * a.ndim
            where[layout.axis + 1] = slice(start, stop)
            worst = min(worst, mean_cosine(a[tuple(where)], b[tuple(where)]))
    return float(worst)


def score(g_float: Graph, observer: RangeObserver, samples: list[dict], wanted: list[dict],
          keep_float: set[str] = frozenset(), int16: set[str] = frozenset(), int4: set[str] = frozenset(),
          range_split: float | None = DEFAULT_FACTOR) -> float:
    """The judged cosine (`judge`) of the quantized model's outputs with the float model's
    (`wanted`, per sample), with those layers in float, 16x8 and with int4 weights."""
    g = copy.deepcopy(g_float)
    quantize_graph(g, observer, keep_float=keep_float, int16=int16, int4=int4, range_split=range_split)
    return judge(g_float, [run_quantized_model(g, feeds)[1] for feeds in samples], wanted)


@dataclass
class Search:
    """What --accuracy-target's search has scored: every step on stderr, the best set, the bound."""
    target: float
    steps: int
    time_limit: float | None
    say: Callable[[str], None] | None = None
    done: int = 0
    best: tuple[float, list[str]] = (-np.inf, [])
    started: float = field(default_factory=time.monotonic)

    def scored(self, what: str, keep: list[str], value: float) -> None:
        self.done += 1
        if value > self.best[0] or (value == self.best[0] and len(keep) < len(self.best[1])):
            self.best = (value, list(keep))
        if self.say is not None:
            self.say(f"accuracy target {self.target}: step {self.done}/{self.steps}: {what}: {value:.5f} (best "
                     f"{self.best[0]:.5f}; {time.monotonic() - self.started:.1f} s)")

    def out_of_time(self) -> bool:
        return self.time_limit is not None and time.monotonic() - self.started > self.time_limit


def choose_layers(g_float: Graph, observer: RangeObserver, samples: list[dict], target: float,
                  mode: str = "float", range_split: float | None = DEFAULT_FACTOR,
                  say: Callable[[str], None] | None = None,
                  time_limit: float | None = None) -> tuple[list[str], float, float, bool]:
    """(layers kept in higher precision, score reached, int8-only score, stopped at the time bound);
    mode is "float" (per-layer float fallback) or "int16" (16x8 layers). `say` gets a line per step."""
    samples = samples[:EVAL_SAMPLES]
    wanted = run_float_samples(g_float, samples)  # the float model's outputs: once, not per score
    names = candidates(g_float, mode)
    search = Search(target, 1 + 2 * len(names), time_limit, say)
    what = "in float" if mode == "float" else "as int16"

    def scored(keep: list[str], label: str) -> float:
        value = score(g_float, observer, samples, wanted, range_split=range_split,
                      **{"int16" if mode == "int16" else "keep_float": set(keep)})
        search.scored(label, keep, value)
        return value

    base = scored([], "int8 only")
    if base >= target:
        return [], base, base, False
    gains = []
    for name in names:
        if search.out_of_time():
            return search.best[1], search.best[0], base, True
        gains.append((scored([name], f"{name} alone {what}"), name))
    kept: list[str] = []
    reached = base
    for _, name in sorted(gains, reverse=True):
        if search.out_of_time():
            return search.best[1], search.best[0], base, True
        kept.append(name)
        reached = scored(kept, f"{len(kept)} layer(s) {what}, adding {name}")
        if reached >= target:
            return kept, reached, base, False
    return search.best[1], search.best[0], base, False


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
        got = [{name: dequantize_tensor(self.g, name, values[name]) for name in outputs} for values in self.values]
        return judge(self.g, got, wanted)
