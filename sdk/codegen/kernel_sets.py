"""Kernel selection: a board lists template sets (e.g. ["cortex_m_dsp", "portable"]); for
each call an op lowers to, the first set that offers a specialisation wins.

A set is a folder sdk/templates/<set>/ of C headers, one per kernel, plus a Python
`KernelSet` registered here that decides, from the node and the lowered arguments
(shapes are compile-time constants), whether it has a better kernel, and may rewrite
the arguments (re-ordered or pre-widened weights, unrolled variants). The portable set
takes everything unchanged and is always the fallback.
"""
from __future__ import annotations

from typing import Any, Callable

from ..ir import Graph, Node

Specialisation = tuple[str, list[Any]]  # (kernel name = header file stem, arguments)


class KernelSet:
    name = "portable"

    def specialise(self, kernel: str, args: list[Any], node: Node, g: Graph) -> Specialisation | None:
        """Return the kernel to call and its arguments, or None to leave the call to the next set."""
        return kernel, args


KERNEL_SETS: dict[str, KernelSet] = {"portable": KernelSet()}


def register_kernel_set(cls: type[KernelSet]) -> type[KernelSet]:
    if cls.name in KERNEL_SETS and cls.name != "portable":
        raise RuntimeError(f"kernel set {cls.name} registered twice")
    KERNEL_SETS[cls.name] = cls()
    return cls


def by_table(table: dict[str, Callable[[list[Any], Node, Graph], Specialisation | None]]):
    """Build a specialise() from {portable kernel name: function(args, node, g)}."""
    def specialise(self, kernel, args, node, g):
        rule = table.get(kernel)
        return rule(args, node, g) if rule else None
    return specialise
