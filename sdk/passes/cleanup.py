"""Remove inference no-ops (Identity, Dropout, Cast of float to float: the frontend folds every
other Cast) and whatever nobody reads."""
from __future__ import annotations

from ..ir import Graph

NO_OPS = {"Identity", "Dropout", "Cast"}


def remove_identities(g: Graph) -> None:
    for node in [n for n in g.nodes if n.op in NO_OPS]:
        src, dst = node.inputs[0], node.outputs[0]
        if src in g.inputs and dst in g.outputs:
            continue  # a graph that maps an input straight to an output keeps one copy op
        g.nodes.remove(node)
        g.replace_uses(dst, src)
    g.remove_unused()
