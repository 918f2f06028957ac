"""Fuse Relu/Clip into the Conv, Gemm, MatMul or Add that produces their input: the
activation becomes a clamp of that op's output (in int8, part of its requantization)."""
from __future__ import annotations

from collections import Counter

import numpy as np

from ..ir import Graph
from ..ops.activation import clip_bounds

FUSABLE_PRODUCERS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Add"}


def fuse_activations(g: Graph) -> None:
    """One walk over the activations with a producer map and reader counts kept up to date as
    they fuse (a linear pass: g.producer and g.consumers scan the graph each)."""
    producers = {o: n for n in reversed(g.nodes) for o in n.outputs}  # the first producer, as g.producer finds it
    readers = Counter(name for n in g.nodes for name in set(n.inputs))
    fused = set()
    for act in [n for n in g.nodes if n.op in ("Relu", "Clip")]:
        producer = producers.get(act.inputs[0])
        if producer is None or producer.op not in FUSABLE_PRODUCERS or producer.activation is not None:
            continue
        if g.tensors[act.inputs[0]].is_integer:  # a clamp of integers (ops/integer.py) stays a layer
            continue
        if readers[act.inputs[0]] != 1 or act.inputs[0] in g.outputs:
            continue
        bounds = (0.0, np.inf) if act.op == "Relu" else clip_bounds(act, g)
        producer.activation = bounds
        # the fused op now writes the activated values: give it the activation's output
        # tensor (its name and, for QDQ models, its quantization) so names keep meaning
        fused.add(id(act))
        producer.outputs[producer.outputs.index(act.inputs[0])] = act.outputs[0]
        producers[act.outputs[0]] = producer
    g.nodes = [n for n in g.nodes if id(n) not in fused]
    g.remove_unused()
