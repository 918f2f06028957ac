"""The float reference over many samples at once: samples stacked on axis 0 run through each
layer in one call (one im2col and matmul per convolution for the whole batch, not one per
sample), and every activation is dropped as soon as no later layer reads it.

A graph qualifies when every activation has a leading axis of 1 (the model's batch of one)
and no layer reads across that axis (`OpDef.mixes_samples`); each layer's result is then
checked to have the batch's leading axis, so an op that folds the samples together is caught
(`NotBatchable`) instead of giving wrong values. Callers fall back to one sample at a time.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from ..errors import CuvilError
from ..ir import Graph
from ..ops import get_op
from .interpreter import float_step_checked, run_float

# Bytes of float64 working values per sample in the largest layer, times the samples of a
# batch, stay under this: bounds the memory of a batched run (im2col copies are bounded apart).
BATCH_BYTES = 1 << 24


class NotBatchable(Exception):
    """A layer's result lost the sample axis: the graph must run one sample at a time."""


def batchable(g: Graph) -> bool:
    """Every activation has a leading axis of 1 and no layer reads across it."""
    for t in g.tensors.values():
        if not t.is_const and (not t.shape or t.shape[0] != 1):
            return False
    return not any(get_op(n.op).mixes_samples(n, g) for n in g.nodes)


def batch_size(g: Graph, samples: int) -> int:
    """Samples per batch: as many as BATCH_BYTES allows for the largest activation in float64."""
    largest = max((t.size for t in g.tensors.values() if not t.is_const), default=1)
    return max(1, min(samples, BATCH_BYTES // (8 * largest)))


def stack(samples: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {name: np.concatenate([s[name] for s in samples], axis=0) for name in samples[0]}


def batches(samples: list[dict[str, np.ndarray]], size: int) -> Iterator[list[dict[str, np.ndarray]]]:
    for start in range(0, len(samples), size):
        yield samples[start:start + size]


def last_readers(g: Graph) -> dict[str, int]:
    """For each tensor, the index of the last node that reads it."""
    last: dict[str, int] = {}
    for k, node in enumerate(g.nodes):
        for name in node.inputs:
            if name:
                last[name] = k
    return last


def layer_on_batch(node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
    """One layer on the batch. A numpy error here (a constant operand that does not broadcast
    against the sample axis, say) means the layer needs its samples one at a time; errors of
    the SDK (a non-finite output) are the model's and stand."""
    try:
        return float_step_checked(node, g, xs)
    except CuvilError:
        raise
    except Exception as exc:
        raise NotBatchable(f"layer '{node.name}' ({node.op}) does not run on stacked samples: {exc}") from exc


def run_float_batched(g: Graph, feeds: dict[str, np.ndarray], visit: Callable[[str, np.ndarray], None]) -> None:
    """Run N stacked samples (feeds with a leading axis of N) through the float reference,
    refusing non-finite layer outputs as run_float_checked does. `visit(name, value)` sees
    every activation (inputs first, then each layer's outputs in order, as run_float_checked
    lists them) while it is alive; nothing is kept after its last reader."""
    n = next(iter(feeds.values())).shape[0]
    last = last_readers(g)
    values: dict[str, np.ndarray] = {}
    for name, value in feeds.items():
        visit(name, value)
        values[name] = value
    for k, node in enumerate(g.nodes):
        xs = [values[i] if i in values else g.tensors[i].data for i in node.inputs if i]
        for name, value in zip(node.outputs, layer_on_batch(node, g, xs)):
            value = np.asarray(value)
            if value.shape != (n,) + tuple(g.tensors[name].shape[1:]):
                raise NotBatchable(f"layer '{node.name}' ({node.op}) gave {value.shape} for {n} samples")
            visit(name, value)
            values[name] = value
        for name in set(node.inputs) | set(node.outputs):
            if name in values and last.get(name, -1) <= k and name not in g.outputs:
                del values[name]


def run_float_samples(g: Graph, samples: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """The graph's outputs for each sample: in batches where the graph allows, else one by one."""
    if batchable(g) and samples:
        try:
            return [per_sample for batch in batches(samples, batch_size(g, len(samples)))
                    for per_sample in outputs_of_batch(g, batch)]
        except NotBatchable:
            pass
    return [run_float(g, feeds) for feeds in samples]


def outputs_of_batch(g: Graph, batch: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    outputs: dict[str, np.ndarray] = {}

    def keep_outputs(name: str, value: np.ndarray) -> None:
        if name in g.outputs:
            outputs[name] = value
    run_float_batched(g, stack(batch), keep_outputs)
    return [{name: value[i:i + 1] for name, value in outputs.items()} for i in range(len(batch))]
