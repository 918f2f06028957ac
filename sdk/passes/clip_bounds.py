"""Clip with a bound computed at run time -> Max and Min of x and the bound tensors.

torchaudio's AmplitudeToDB(top_db=...) exports `Clip(x_db, ReduceMax(x_db) - top_db, )`: a min
that depends on the input. Clip's kernels (and its int8 table) need constant bounds, but Max
and Min take two run-time operands with numpy broadcasting in float and int8 (ops/binary_math.py),
so Clip(x, lo, hi) becomes Min(Max(x, lo), hi), each part only where its bound is given. This is
ONNX's Clip exactly, min > max included (every value becomes max), NaN apart (fmaxf returns the
other operand). Clips whose bounds are constants, or will be once shape inference folds what
they are computed from (constants and shapes), are left as they are (a table in int8, a clamp
fused into the layer before them).

It runs in the frontend before shape inference (`loader.load_model`), where Clip's check would
refuse the run-time bound; it needs only which inputs are constants.
"""
from __future__ import annotations

from ..ir import Graph, Node
from ..ops import REGISTRY


def reads_input_values(g: Graph, name: str) -> bool:
    """Whether tensor `name` depends on the values of a model input. A bound computed from
    constants or from shapes only (Shape, Size) is folded to a constant by shape inference,
    and the Clip then keeps its fused clamp and int8 table."""
    seen, todo = set(), [name]
    while todo:
        t = todo.pop()
        if t in g.inputs:
            return True
        node = g.producer(t) if t and t not in seen else None
        seen.add(t)
        op = REGISTRY.get(node.op) if node is not None else None
        if node is not None and not getattr(op, "reads_shape_only", False):
            todo.extend(node.inputs)
    return False


def clip_bounds_to_min_max(g: Graph) -> None:
    for clip in [n for n in g.nodes if n.op == "Clip"]:
        lo, hi = (list(clip.inputs[1:3]) + ["", ""])[:2]
        if not any(b and reads_input_values(g, b) for b in (lo, hi)):
            continue
        steps = [(op, bound) for op, bound in (("Max", lo), ("Min", hi)) if bound]
        at = g.nodes.index(clip)
        source, nodes = clip.inputs[0], []
        for k, (op, bound) in enumerate(steps):
            last = k == len(steps) - 1
            # the last step keeps the Clip's name and output: reports and users know it by them
            out = clip.outputs[0] if last else g.add_tensor(f"{clip.name}_{op.lower()}", ())
            nodes.append(Node(op, clip.name if last else f"{clip.name}/{op.lower()}", [source, bound], [out]))
            source = out
        g.nodes[at:at + 1] = nodes
