"""Where(Less(x, c), c, x) and its mirrored forms -> Max / Min of x and the constant c.

Clip's ONNX function body (and exporters' hand-written clamps) compare a run-time x with a
constant bound and select: `Where(Less(x, c), c, x)` is max(x, c), `Where(Less(c, x), c, x)`
is min(x, c). Bool tensors exist in this compiler only as compile-time constants (see
ops/static.py), so the comparison cannot run; the rewrite leaves no bool tensor at run time.
Greater(a, b) is Less(b, a); LessOrEqual / GreaterOrEqual select the same value as the strict
forms except at x == c, where both choices are equal. Exact for floats except NaN: the
Where form passes a NaN x through, Max / Min return the constant (fmaxf / fminf); and for the
signed zeros at x == c (the two choices differ only in the sign of 0).

It runs in the frontend before shape inference (`loader.load_model`), where the comparison
would be refused: it needs only which inputs are constants, not the shapes.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node

# comparison -> True when it holds for "first input smaller than the second"
SMALLER_FIRST = {"Less": True, "LessOrEqual": True, "Greater": False, "GreaterOrEqual": False}


def float_constant(g: Graph, name: str) -> bool:
    data = g.const(name)
    return data is not None and np.issubdtype(data.dtype, np.floating)


def min_max_of(g: Graph, compare: Node, select: Node) -> tuple[str, str, str] | None:
    """(op, x, c) when `select` = Where(compare, ...) picks between a run-time x and a float
    constant c that `compare` compares; None otherwise."""
    a, b = compare.inputs
    if float_constant(g, b) and g.const(a) is None:
        x, c, x_smaller_holds = a, b, SMALLER_FIRST[compare.op]
    elif float_constant(g, a) and g.const(b) is None:
        x, c, x_smaller_holds = b, a, not SMALLER_FIRST[compare.op]
    else:
        return None
    picks = select.inputs[1:]
    if picks not in ([c, x], [x, c]):
        return None
    picks_c_when_x_smaller = (picks[0] == c) == x_smaller_holds
    return ("Max" if picks_c_when_x_smaller else "Min"), x, c


def compare_select_to_min_max(g: Graph) -> None:
    for compare in [n for n in g.nodes if n.op in SMALLER_FIRST and len(n.inputs) == 2]:
        cond = compare.outputs[0]
        users = g.consumers(cond)
        if cond in g.outputs or len(users) != 1 or users[0].op != "Where" or users[0].inputs[0] != cond:
            continue
        select = users[0]
        found = min_max_of(g, compare, select)
        if found is None:
            continue
        op, x, c = found
        # at the comparison's place: x and c exist there, and the Where's readers all come later
        g.nodes[g.nodes.index(compare)] = Node(op, select.name, [x, c], list(select.outputs))
        g.nodes.remove(select)
        g.tensors.pop(cond, None)
