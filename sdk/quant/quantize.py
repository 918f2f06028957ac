"""Turn a float graph into an int8 graph: choose every activation's quantization
(calibrated, imported from QDQ, or imposed by the op), then let each op compute its
integer constants."""
from __future__ import annotations

import copy

import numpy as np

from ..errors import ModelError, UsageError
from ..ir import Graph, QParams
from ..kernels.requant import RequantRangeError
from ..ops import get_op
from ..ops.common import integer_node
from .calibrate import RangeObserver
from .int16 import widen_layers
from .mixed import keep_in_float
from .range_split import DEFAULT_FACTOR, Split, split_outputs
from .weight_bits import mark_int4


def asymmetric(low: float, high: float) -> QParams:
    """int8 parameters covering [low, high] and always 0 (so padding and ReLU are exact)."""
    low, high = min(0.0, low), max(0.0, high)
    scale = (high - low) / 255.0
    if scale <= 0.0 or not np.isfinite(scale):
        scale = 1.0 / 255.0
    zero_point = int(np.clip(np.round(-128.0 - low / scale), -128, 127))
    return QParams(np.array(scale, dtype=np.float32), np.array(zero_point, dtype=np.int32))


def quantizable(t) -> bool:
    """A float activation (integer and bool tensors are never quantized)."""
    return t.dtype == "float32"


def needs_calibration(g: Graph) -> list[str]:
    """Activation tensors that neither a QDQ import nor their op gives parameters to."""
    missing = [name for name in g.inputs if g.tensors[name].q is None and quantizable(g.tensors[name])]
    for node in g.nodes:
        op = get_op(node.op)
        if op.qparams_rule(node, g) == "same" or op.fixed_qparams(node, g) is not None:
            continue
        missing += [o for o in node.outputs if o and g.tensors[o].q is None and quantizable(g.tensors[o])]
    return missing


def assign_qparams(g: Graph, observer: RangeObserver | None) -> None:
    def from_observer(name: str) -> QParams:
        if observer is None:
            raise UsageError(f"tensor '{name}' has no quantization scale: give calibration data with --calib")
        return asymmetric(*observer.range(name))

    for name in g.inputs:
        if g.tensors[name].q is None and quantizable(g.tensors[name]):
            g.tensors[name].q = from_observer(name)
    for node in g.nodes:
        op = get_op(node.op)
        fixed = op.fixed_qparams(node, g)
        for out in node.outputs:
            t = g.tensors[out] if out else None
            if t is None or not quantizable(t):  # integers (an ArgMax's indices) stay as they are
                continue
            if fixed is not None:
                t.q = fixed
            elif op.qparams_rule(node, g) == "same":
                t.q = copy.deepcopy(g.tensors[node.inputs[0]].q)
            elif t.q is None:
                t.q = from_observer(out)


def quantize_graph(g: Graph, observer: RangeObserver | None, keep_float: set[str] = frozenset(),
                   int16: set[str] = frozenset(), int4: set[str] = frozenset(),
                   int16_inputs: set[str] = frozenset(), int16_states: set[str] = frozenset(),
                   range_split: float | None = DEFAULT_FACTOR) -> list[Split]:
    """Quantize every node: int8, except those named in keep_float (float between
    conversions, per-layer fallback) and in int16 (16x8 layers); those named in int4 get int4
    weights (quant/weight_bits.py). The model inputs in int16_inputs are int16 themselves
    (--input-precision NAME=int16: their first layers are among int16, or recurrent layers
    taking them as state), and so are the recurrent state outputs in int16_states. Outputs joined
    from ranges more than `range_split` apart keep per-input scales (quant/range_split.py; None:
    never); returns those splits."""
    assign_qparams(g, observer)
    if observer is not None:
        for t in g.activations():
            t.channel_mean = observer.channel_mean(t.name)
    float_tensors = keep_in_float(g, set(keep_float)) if keep_float else set()
    widen = int16 or int16_inputs or int16_states
    wide_tensors = widen_layers(g, set(int16), observer, set(int16_inputs), set(int16_states)) if widen else set()
    if int4:
        mark_int4(g, set(int4))
    splits = split_outputs(g, range_split)
    for node in g.nodes:
        if node.precision != "fp32" and not integer_node(node, g):
            quantize_node(node, g)
    for t in g.activations():
        if t.is_integer:  # integer and bool tensors pass through unquantized
            continue
        t.dtype = "float32" if t.name in float_tensors else "int16" if t.name in wide_tensors else "int8"
    return splits


def quantize_node(node, g: Graph) -> None:
    """The op's integer constants; scales it cannot represent reject the model, naming the layer."""
    try:
        get_op(node.op).quantize(node, g)
    except RequantRangeError as exc:
        raise ModelError(f"layer '{node.name}' ({node.op}): {exc}: its weights or scales cannot be represented "
                         f"in int8 arithmetic") from None
