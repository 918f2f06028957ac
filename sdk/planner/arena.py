"""Liveness-based arena planning: greedy placement in the best of a few orders.

A buffer lives from the node that writes it to the last node that reads it (graph
inputs from the start, as the C API copies them in; graph outputs to the end, as it copies
them out). Alias ops (Reshape, Flatten, ...)
share their input's buffer, which then lives as long as any alias is read. In place: a
node's output takes the buffer of one of its inputs when the selected kernel's overlap rule
allows it (`in_place`: output tensor -> candidate inputs, from KernelDecl.in_place), the input
has the output's bytes and nothing after this node reads that buffer (graph outputs live to
the end, so they are never written over). Buffers are placed at the lowest offset that
overlaps no placed buffer whose lifetime overlaps theirs, in the best of a few orders
(placement_orders: largest first, as TFLite Micro's greedy planner, and three others).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph
from ..ops import get_op

ALIGN = 16


@dataclass
class ArenaPlan:
    size: int
    offsets: dict[str, int]  # tensor name -> byte offset
    buffers: list[dict] = field(default_factory=list)  # for reports: name, offset, size, first, last


def align(n: int, to: int = ALIGN) -> int:
    return (n + to - 1) // to * to


def buffer_roots(g: Graph) -> dict[str, str]:
    """Map every activation to the tensor whose buffer it uses (itself unless an alias)."""
    root = {name: name for name in g.inputs}
    for node in g.nodes:
        for out in node.outputs:
            src = node.inputs[0] if node.inputs else ""
            root[out] = root[src] if get_op(node.op).alias and src in root else out
    return root


def lifetimes(g: Graph, root: dict[str, str]) -> dict[str, list[int]]:
    life: dict[str, list[int]] = {}
    end = len(g.nodes)
    for name in g.inputs:
        life[name] = [-1, -1]
    for step, node in enumerate(g.nodes):
        for name in node.inputs:
            if name in root:
                life[root[name]][1] = max(life[root[name]][1], step)
        for out in node.outputs:
            r = root[out]
            life.setdefault(r, [step, step])
            life[r][1] = max(life[r][1], step)
    # graph outputs are copied out after the last node; graph inputs are copied into the arena
    # before the first, so their buffer is free once its last reader ran
    for name in g.outputs:
        life[root[name]][1] = end
    return life


def merge_in_place(g: Graph, root: dict[str, str], life: dict[str, list[int]],
                   in_place: dict[str, list[str]]) -> None:
    """Give each in-place output its input's buffer where that is safe (see the module's
    docstring); root and life are updated as the nodes are walked in order, so a buffer handed
    on lives on to its last reader."""
    for step, node in enumerate(g.nodes):
        for out in node.outputs:
            if root.get(out) != out or out not in life:
                continue
            for inp in in_place.get(out, []):
                r = root.get(inp)
                others = {root.get(t) for t in node.inputs if t != inp}
                if r is None or r == out or r in others or life[r][1] != step:
                    continue
                if not (g.tensors[inp].nbytes == g.tensors[r].nbytes == g.tensors[out].nbytes):
                    continue
                for t, rt in root.items():
                    if rt == out:
                        root[t] = r
                life[r][1] = max(life[r][1], life.pop(out)[1])
                break


Placement = list[tuple[int, int, int, int, str]]  # offset, size, first, last, name


def placement_orders(sizes: dict[str, int], life: dict[str, list[int]]) -> list[list[str]]:
    """Orders to place buffers in: largest first (the classic greedy-by-size), then three others
    that win on some graphs (by birth, by lifetime length, by size x lifetime). Each is cheap, and
    the planner keeps the smallest arena; ties keep the earlier order, so plans stay stable."""
    keys = [lambda r: (-sizes[r], life[r][0], r),
            lambda r: (life[r][0], -sizes[r], r),
            lambda r: (-(life[r][1] - life[r][0]), -sizes[r], r),
            lambda r: (-sizes[r] * (life[r][1] - life[r][0] + 1), r)]
    return [sorted(life, key=k) for k in keys]


def place(order: list[str], sizes: dict[str, int], life: dict[str, list[int]]) -> Placement:
    """Each buffer in turn at the lowest offset that overlaps no placed buffer alive with it."""
    placed: Placement = []
    for name in order:
        first, last = life[name]
        offset = 0
        for o, s, f, l, _ in sorted(p for p in placed if not (p[3] < first or p[2] > last)):
            if offset + sizes[name] <= o:
                break
            offset = max(offset, o + s)
        placed.append((offset, sizes[name], first, last, name))
    return placed


def plan_arena(g: Graph, in_place: dict[str, list[str]] | None = None) -> ArenaPlan:
    root = buffer_roots(g)
    life = lifetimes(g, root)
    if in_place:
        merge_in_place(g, root, life, in_place)
    sizes = {r: align(g.tensors[r].nbytes) for r in life}
    placed = min((place(order, sizes, life) for order in placement_orders(sizes, life)),
                 key=lambda p: max((o + s for o, s, *_ in p), default=0))  # the first of equal ones
    offsets = {name: dict((p[4], p[0]) for p in placed)[r] for name, r in root.items()}
    size = max((o + s for o, s, *_ in placed), default=0)
    buffers = [{"tensor": n, "offset": o, "bytes": s, "first": f, "last": l} for o, s, f, l, n in sorted(placed)]
    return ArenaPlan(size=align(size), offsets=offsets, buffers=buffers)
