"""fp16 builds (--precision fp16): every run-time tensor is stored as IEEE half (2 bytes in the
arena), and each layer runs the f16 variant of its float kernels. A layer whose op has no f16
kernel is computed in fp32 between a _ToFloat of its fp16 inputs and a _ToHalf of its outputs
(its conversions are planned like any layer; consecutive fp32 layers hand float tensors to each
other directly), and the build reports it as a fallback. The
model's inputs and outputs stay float32 at the C API: the run function converts them while
copying them in and out of the arena."""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..ir import Graph, Node
from ..kernels.contract import KernelCall, Weight, declarations
from ..ops import get_op
from ..ops.common import integer_node
from .mixed import convert_node

HALF_CTYPE = "cuvil_f16"
# What the build says of a layer computed in fp32 (fallbacks in build --json, stderr, reports).
FLOAT_LAYER_REASON = "no fp16 kernel: computed in fp32 between conversions from and to fp16"


def half_twin(kernel_name: str) -> str | None:
    """The portable f16 kernel that does what the f32 kernel `kernel_name` does, if there is one."""
    if not kernel_name.endswith("_f32"):
        return None
    twin = kernel_name[:-len("_f32")] + "_f16"
    return twin if twin in declarations("portable") else None


def runs_in_half(node: Node, g: Graph) -> bool:
    """Every kernel the node's float lowering calls has an f16 twin (or is one already)."""
    calls = get_op(node.op).lower(node, g, "fp32")
    calls = calls if isinstance(calls, list) else [calls]
    return all(c.kernel.endswith("_f16") or half_twin(c.kernel) for c in calls)


def half_call(c: KernelCall, node: Node) -> KernelCall:
    """The f16 twin of a float call: the same arguments, with the constants that the twin takes
    as half (its `w`, a constant operand) rounded to fp16. A call without a twin is kept: the
    lowering then checks its float buffers against the fp16 tensors and names the kernel."""
    twin = half_twin(c.kernel)
    if twin is None:
        return c
    decl = declarations("portable")[twin]
    args = {p.name: to_half_weight(c.args[p.name], node) if p.ctype == HALF_CTYPE else c.args[p.name]
            for p in decl.params}
    return decl(**{f"{k}_" if k == "in" else k: v for k, v in args.items()})


def to_half_weight(arg, node: Node):
    if not isinstance(arg, Weight):
        return arg
    values = np.asarray(arg.data, np.float32)
    with np.errstate(over="ignore"):
        half = values.astype(np.float16)
    if np.any(np.isinf(half) & np.isfinite(values)):
        raise ModelError(f"node '{node.name}' ({node.op}): a constant is beyond the fp16 range (|x| > 65504); "
                         f"build it with --precision fp32")
    return Weight(arg.hint, half, HALF_CTYPE)


def to_half(g: Graph) -> list[str]:
    """Make the graph fp16 in place; returns the layers computed in fp32."""
    float_nodes = [n for n in g.nodes if not get_op(n.op).alias and not integer_node(n, g) and not runs_in_half(n, g)]
    for t in g.tensors.values():
        if not t.is_const and t.dtype == "float32":
            t.dtype = "float16"
    widened: dict[str, str] = {}  # an fp16 tensor -> its float copy, shared by the layers that read it
    for node in float_nodes:
        node.precision = "fp32"
        for i, name in enumerate(node.inputs):
            t = g.tensors.get(name) if name else None
            if t is None or t.is_const or t.is_integer:  # integer and bool tensors are the same in fp16 builds
                continue
            producer = g.producer(name)
            if producer is not None and producer.op == "_ToHalf":  # float already upstream: no fp16 round trip
                node.inputs[i] = producer.inputs[0]
                continue
            if name not in widened:
                widened[name] = convert_node(g, node, name, "_ToFloat", "float32", before=True)
            node.inputs[i] = widened[name]
        for j, name in enumerate(node.outputs):
            if not name or name not in g.tensors or g.tensors[name].is_const or g.tensors[name].is_integer:
                continue
            if not g.consumers(name) and name not in g.outputs:  # the layer's own scratch (LSTM, GRU)
                g.tensors[name].dtype = "float32"
                continue
            node.outputs[j] = convert_node(g, node, name, "_ToHalf", "float32", before=False)
    g.remove_unused()  # a _ToHalf whose only readers now read its float input
    return [n.name for n in float_nodes]
