"""Liveness-based arena planning: greedy placement in the best of a few orders.

A buffer lives from the node that writes it to the last node that reads it (graph
inputs from the start, as the C API copies them in; graph outputs to the end, as it copies
them out). Alias ops (Reshape, Flatten, ...)
share their input's buffer, which then lives as long as any alias is read. In place: a
node's output takes the buffer of one of its inputs when the selected kernel's overlap rule
allows it (`in_place`: output tensor -> candidate inputs, from KernelDecl.in_place), the input
has the output's bytes and nothing after this node reads that buffer (graph outputs live to
the end, so they are never written over). Overlapping: a node's output may lie partly over
an input that nothing after the node reads, at the distance the kernel's overlap rule gives
(`overlaps`: output tensor -> (input, Overlap), from KernelDecl.overlap; kernels/overlap.py):
the input's buffer starts exactly `gap` bytes (rounded up to the alignment and the rule's
modulus; at least 0) after the output's, or the two do not meet. Buffers are placed at the lowest offset
that overlaps no placed buffer whose lifetime overlaps theirs (but for such a pair), in the
best of a few orders (placement_orders: largest first, as TFLite Micro's greedy planner, and
three others).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..ir import Graph
from ..kernels.overlap import Overlap
from ..ops import get_op

ALIGN = 16


@dataclass
class Sharing:
    """What the chosen kernels let the planner share: `in_place` (output -> inputs whose very
    buffer it may take, KernelDecl.in_place) and `overlaps` (output -> (input, Overlap),
    KernelDecl.overlap)."""
    in_place: dict[str, list[str]] = field(default_factory=dict)
    overlaps: dict[str, list[tuple[str, Overlap]]] = field(default_factory=dict)
    # graph input -> the tensor the C API's copy-in writes it to (the output of a Transpose it
    # alone feeds, done while copying: codegen/emit.py input_copies); that input needs no buffer
    copied_in: dict[str, str] = field(default_factory=dict)


@dataclass
class ArenaPlan:
    size: int
    offsets: dict[str, int]  # tensor name -> byte offset
    buffers: list[dict] = field(default_factory=list)  # for reports: name, offset, size, first, last
    copied_in: dict[str, str] = field(default_factory=dict)  # Sharing.copied_in: its inputs' offsets are the targets'
    # the overlaps placed: output buffer, input buffer, the input's distance above the output
    overlaps: list[dict] = field(default_factory=list)


def align(n: int, to: int = ALIGN) -> int:
    return (n + to - 1) // to * to


def buffer_roots(g: Graph, copied_in: dict[str, str] | None = None) -> tuple[dict[str, str], dict[str, int]]:
    """Map every activation to the tensor whose buffer it uses (itself unless an alias or a view;
    a graph input copied in elsewhere: the tensor it is copied into), and each to its byte
    offset in that buffer (views, and aliases of views)."""
    copied_in = copied_in or {}
    root = {name: copied_in.get(name, name) for name in g.inputs}
    at = {name: 0 for name in g.inputs}

    def place(name: str) -> None:
        """A view under its base's root (a base no node writes whole, a band-written output,
        is its own root)."""
        if name in root:
            return
        view = g.tensors[name].view
        if view is None:
            root[name], at[name] = name, 0
            return
        place(view[0])
        root[name], at[name] = root[view[0]], at[view[0]] + view[1]

    for node in g.nodes:
        for name in node.inputs:
            if name in g.tensors and g.tensors[name].view is not None:
                place(name)
        for out in node.outputs:
            src = node.inputs[0] if node.inputs else ""
            if g.tensors[out].view is not None:
                place(out)
            elif get_op(node.op).alias and src in root:
                root[out], at[out] = root[src], at[src]
            else:
                root[out], at[out] = out, 0
    return root, at


def lifetimes(g: Graph, root: dict[str, str]) -> dict[str, list[int]]:
    life: dict[str, list[int]] = {}
    end = len(g.nodes)
    for name in g.inputs:
        life[root[name]] = [-1, -1]
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
Partners = dict[tuple[str, str], int]  # (output root, input root) -> the input's exact distance above the output


def overlap_partners(g: Graph, root: dict[str, str], at: dict[str, int], life: dict[str, list[int]],
                     overlaps: dict[str, list[tuple[str, Overlap]]]) -> Partners:
    """(output buffer, input buffer) -> distance, for each allowed overlap whose input buffer
    dies at the node that writes the output (read by nothing later, not a graph output) and is
    read by that node through this input only. The distance is the rule's gap rounded up to a
    multiple of the alignment and the modulus (offsets are multiples of ALIGN), and 0 (the very
    same start) where the gap allows that: the closest the two can lie. An input that is a view
    `at` bytes into its buffer moves the buffer that much lower (the bytes before the view are
    dead too: nothing after the node reads the buffer)."""
    partners: Partners = {}
    for step, node in enumerate(g.nodes):
        for out in node.outputs:
            r_out = root.get(out)
            if r_out != out or r_out not in life or life[r_out][0] != step:
                continue
            for inp, allowed in overlaps.get(out, []):
                r_in = root.get(inp)
                others = {root.get(t) for t in node.inputs if t != inp}
                if r_in is None or r_in == r_out or r_in in others or life[r_in][1] != step:
                    continue
                unit = math.lcm(ALIGN, allowed.modulus)
                partners[(r_out, r_in)] = -(-(max(0, allowed.gap) - at[inp]) // unit) * unit
    return partners


def allowed_at(offset: int, size: int, name: str, others: Placement, partners: Partners) -> bool:
    """Whether a buffer fits at offset beside the placed buffers alive with it: apart from
    each, or exactly at its overlap distance from a partner."""
    for o, s, _, _, other in others:
        if offset + size <= o or o + s <= offset:
            continue
        if partners.get((name, other)) == o - offset or partners.get((other, name)) == offset - o:
            continue
        return False
    return True


SHUFFLED_ORDERS = 48  # random orders tried besides the heuristic ones (overlap partners need them)


def placement_orders(sizes: dict[str, int], life: dict[str, list[int]], shuffled: int = 0) -> list[list[str]]:
    """Orders to place buffers in: largest first (the classic greedy-by-size), then others that
    win on some graphs (by birth, by lifetime length, by size x lifetime, by death, latest
    first), then `shuffled` random ones from a fixed seed: an output placed before the input it
    may overlap finds that input's place free at their distance, which no single rule orders for
    every graph. Each is cheap, and the planner keeps the smallest arena; ties keep the earlier
    order, so plans are the same from run to run."""
    keys = [lambda r: (-sizes[r], life[r][0], r),
            lambda r: (life[r][0], -sizes[r], r),
            lambda r: (-(life[r][1] - life[r][0]), -sizes[r], r),
            lambda r: (-sizes[r] * (life[r][1] - life[r][0] + 1), r),
            lambda r: (-life[r][1], -sizes[r], r)]
    orders = [sorted(life, key=k) for k in keys]
    rng = np.random.default_rng(0)
    return orders + [[orders[0][i] for i in rng.permutation(len(life))] for _ in range(shuffled)]


def shifts(name: str, partners: Partners) -> dict[str, int]:
    """The buffers `name` may overlap, each with its offset relative to `name`'s."""
    rel = {}
    for (out, inp), d in partners.items():
        if out == name:
            rel[inp] = d
        elif inp == name:
            rel[out] = -d
    return rel


def alive_with(placed: Placement, first: int, last: int) -> Placement:
    return [p for p in placed if not (p[3] < first or p[2] > last)]


def place(order: list[str], sizes: dict[str, int], life: dict[str, list[int]],
          partners: Partners | None = None, pairs: bool = True) -> Placement:
    """Each buffer in turn at the lowest offset that overlaps no placed buffer alive with it
    (but its overlap partners, at their distance). A buffer whose partner is not placed yet
    takes, where it can, an offset that leaves the partner's place free as well (else the
    pair would rarely meet: the first of two placed takes the lowest spot, the other finds
    its exact point taken). Candidates: 0, the ends of the buffers alive with it or with the
    waiting partner (shifted), and the placed partners' points. `pairs=False`: the lowest
    offset alone (it wins on some graphs)."""
    partners = partners or {}
    placed: Placement = []
    for name in order:
        first, last = life[name]
        alive = alive_with(placed, first, last)
        rel = shifts(name, partners)
        done = {p[4]: p[0] for p in placed}
        waiting = {other: d for other, d in rel.items() if other not in done and pairs}
        candidates = {0} | {o + s for o, s, *_ in alive} | {done[o] - d for o, d in rel.items() if o in done}
        for other, d in waiting.items():
            candidates |= {o + s - d for o, s, *_ in alive_with(placed, *life[other])}
        fits = sorted(c for c in candidates if c >= 0 and allowed_at(c, sizes[name], name, alive, partners))
        both = [c for c in fits if all(c + d >= 0 and allowed_at(c + d, sizes[other], other,
                                                                 alive_with(placed, *life[other]), partners)
                                       for other, d in waiting.items())]
        offset = (both or fits)[0]
        placed.append((offset, sizes[name], first, last, name))
    return placed


def extent(placed: Placement) -> int:
    return max((o + s for o, s, *_ in placed), default=0)


def compact(placed: Placement, partners: Partners, rounds: int = 4) -> Placement:
    """Let buffers fall: each in turn, from the one reaching highest, moves to the lowest offset
    it may take among the others (their ends, its partners' points), until none moves. The
    greedy placement leaves holes where a pair of overlap partners met only late."""
    placed = list(placed)
    for _ in range(rounds):
        moved = False
        for item in sorted(placed, key=lambda p: -(p[0] + p[1])):
            i = placed.index(item)
            o, size, first, last, name = item
            others = alive_with(placed[:i] + placed[i + 1:], first, last)
            rel = shifts(name, partners)
            at = {p[4]: p[0] for p in others}
            candidates = {0} | {q + s for q, s, *_ in others} | {at[x] - d for x, d in rel.items() if x in at}
            lower = [c for c in candidates if 0 <= c < o and allowed_at(c, size, name, others, partners)]
            if lower:
                placed[i] = (min(lower), size, first, last, name)
                moved = True
        if not moved:
            break
    return placed


def climb(order: list[str], sizes: dict[str, int], life: dict[str, list[int]], partners: Partners,
          steps: int) -> tuple[list[str], bool]:
    """Hill-climb the placement order: swap two buffers (a fixed seed), keep the swap when the
    arena is no larger. Overlap partners make the greedy placement depend on the order in ways
    no single rule captures (ResNet-8 in 8 row bands: 28,448 B by the heuristic orders, 26,656 B
    after 600 swaps, the bytes alive at its busiest step)."""
    rng = np.random.default_rng(0)

    def size_of(o: list[str]) -> tuple[int, bool]:
        return min((extent(place(o, sizes, life, partners, pairs)), not pairs) for pairs in (False, True))

    current, (size, plain) = list(order), size_of(order)
    for _ in range(steps):
        i, j = rng.integers(0, len(current), 2)
        trial = list(current)
        trial[i], trial[j] = trial[j], trial[i]
        trial_size, trial_plain = size_of(trial)
        if trial_size <= size:
            current, size, plain = trial, trial_size, trial_plain
    return current, not plain


def plan_arena(g: Graph, sharing: Sharing | None = None, search: int = 0) -> ArenaPlan:
    """The arena plan; `search`: swaps of the placement order tried beyond the heuristic orders
    where overlap partners exist (climb)."""
    sharing = sharing or Sharing()
    root, at = buffer_roots(g, sharing.copied_in)
    life = lifetimes(g, root)
    if sharing.in_place:
        merge_in_place(g, root, life, sharing.in_place)
    partners = overlap_partners(g, root, at, life, sharing.overlaps)
    sizes = {r: align(g.tensors[r].nbytes) for r in life}
    orders = placement_orders(sizes, life, SHUFFLED_ORDERS if partners else 0)
    best = min(((order, pairs) for order in orders for pairs in (False, True)),
               key=lambda op: extent(place(op[0], sizes, life, partners, op[1])))  # the first of equal ones
    if partners and search:
        best = climb(best[0], sizes, life, partners, search)
    placed = compact(place(best[0], sizes, life, partners, best[1]), partners) if partners else \
        place(best[0], sizes, life, partners, best[1])
    placed_at = {p[4]: p[0] for p in placed}
    offsets = {name: placed_at[r] + at[name] for name, r in root.items()}
    size = max((o + s for o, s, *_ in placed), default=0)
    buffers = [{"tensor": n, "offset": o, "bytes": s, "first": f, "last": l} for o, s, f, l, n in sorted(placed)]
    start = {name: o for o, _s, _f, _l, name in placed}
    overlaps = [{"output": out, "input": inp, "distance": d} for (out, inp), d in sorted(partners.items())
                if start[inp] - start[out] == d and -sizes[inp] < d < sizes[out]]
    return ArenaPlan(size=align(size), offsets=offsets, buffers=buffers, copied_in=dict(sharing.copied_in),
                     overlaps=overlaps)
