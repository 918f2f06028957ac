"""Run the IR with numpy: `run_float` (float32 values; calibration and float checks) and
`run_int` (int8 activations, exact integer rules: what every C kernel must equal)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import ModelError
from ..ir import Graph
from ..kernels.requant import dequantize, quantize_float
from ..kernels.segments import dequantize_entry
from ..ops import get_op
from ..ops.common import integer_node


def _run(g: Graph, feeds: dict[str, np.ndarray], step: Callable, keep_all: bool) -> dict[str, np.ndarray]:
    values = dict(feeds)
    for node in g.nodes:
        xs = [values[i] if i in values else g.tensors[i].data for i in node.inputs if i]
        for name, value in zip(node.outputs, step(node, xs)):
            values[name] = value
    if keep_all:
        return values
    return {name: values[name] for name in g.outputs}


def run_float(g: Graph, feeds: dict[str, np.ndarray], keep_all: bool = False) -> dict[str, np.ndarray]:
    return _run(g, feeds, lambda node, xs: get_op(node.op).run_float(node, g, xs), keep_all)


def run_float_checked(g: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every float value (keep_all), refusing the model, with the layer's name, when a layer's
    weights take its value out of float32's range on finite inputs."""
    return _run(g, feeds, lambda node, xs: float_step_checked(node, g, xs), True)


def float_step_checked(node, g: Graph, xs: list[np.ndarray]) -> list[np.ndarray]:
    """One layer of run_float_checked."""
    # Overflow inside an op may be harmless (exp(-x) of a large x in Sigmoid gives 0), so
    # numpy's flags are not the test: the layer's result is, right below.
    with np.errstate(over="ignore", invalid="ignore"):
        values = get_op(node.op).run_float(node, g, xs)
    for name, value in zip(node.outputs, values):
        if out_of_range(node, g, np.asarray(value)):
            raise ModelError(f"layer '{node.name}' ({node.op}): its output '{name}' is not finite (NaN or Inf) "
                             f"on the calibration data: its weights take it out of float32's range")
    return values


def out_of_range(node, g: Graph, value: np.ndarray) -> bool:
    """NaN anywhere, or an infinity from a layer with constant (weight) inputs. Other layers may
    give -inf on purpose (a max-pooling window that lies wholly in the padding)."""
    if value.dtype.kind != "f":
        return False
    if np.isnan(value).any():
        return True
    weighted = any(i and g.tensors[i].is_const for i in node.inputs)
    return weighted and not np.isfinite(value).all()


def run_int(g: Graph, feeds: dict[str, np.ndarray], keep_all: bool = False) -> dict[str, np.ndarray]:
    """Feeds and results are int8 arrays of a quantized graph (layers kept in float run in float;
    integer and bool tensors are their own values, and layers of them only run their one rule)."""
    def step(node, xs):
        op = get_op(node.op)
        exact = node.precision == "fp32" or integer_node(node, g)
        return op.run_float(node, g, xs) if exact else op.run_int(node, g, xs)
    return _run(g, feeds, step, keep_all)


def run_quantized_model(g: Graph, feeds: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """Inputs -> (raw outputs, outputs), exactly as the C API: float inputs quantized (to int8,
    or int16 for an int16 input), int8 outputs dequantized; integer and bool inputs and outputs,
    and float ones an int8 build keeps in float, as they are."""
    def quantized(name: str) -> bool:
        return g.tensors[name].q is not None
    q_feeds = {name: quantize_float(x, *g.tensors[name].q.scalar(), g.tensors[name].dtype) if quantized(name) else x
               for name, x in feeds.items()}
    q_out = run_int(g, q_feeds)
    return q_out, {name: dequantize_tensor(g, name, v) if quantized(name) else v for name, v in q_out.items()}


def dequantize_tensor(g: Graph, name: str, q: np.ndarray) -> np.ndarray:
    """A quantized tensor's codes -> float32 as the C API does: per tensor, or per segment (a range-split
    output, quant/range_split.py)."""
    t = g.tensors[name]
    if t.segments is not None:
        return dequantize_entry(q, {"shape": list(t.shape), **t.segments.as_manifest()})
    return dequantize(q, *t.q.scalar())
