"""Remove inference no-ops (Identity, Dropout, a Cast to the type its input has) and whatever
nobody reads."""
from __future__ import annotations

from ..ir import Graph

NO_OPS = {"Identity", "Dropout", "Cast"}


def remove_identities(g: Graph) -> None:
    for node in [n for n in g.nodes if n.op in NO_OPS]:
        src, dst = node.inputs[0], node.outputs[0]
        if g.tensors[src].dtype != g.tensors[dst].dtype:
            continue  # a Cast that converts
        if src in g.inputs and dst in g.outputs:
            continue  # a graph that maps an input straight to an output keeps one copy op
        g.nodes.remove(node)
        g.replace_uses(dst, src)
    g.remove_unused()
