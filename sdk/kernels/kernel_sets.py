"""Kernel selection: a board lists kernel sets (e.g. ["cortex_m_dsp"]); for each call an op
lowers to (a portable kernel's KernelCall), the first set whose rule takes it wins, and the
portable set takes everything else unchanged.

A set is a folder sdk/templates/<set>/ of C headers, one per kernel, and a package
sdk/kernels/<set>/: its declarations (declarations.py) and a `KernelSet` registered here
(rules.py, imported with the kernels package) whose rules decide, from the node and the
call's named arguments (shapes are compile-time constants), whether the set has a kernel
for it. A rule returns its own kernel's call (built by keyword
from its declaration; weights re-laid out, arguments rewritten), or `Declined(reason)` when
its kernel cannot reproduce the portable result; the reason is reported for the layer.
"""
from __future__ import annotations

from typing import Callable

from ..ir import Graph, Node
from .contract import Declined, KernelCall
from .options import CodegenOptions

Answer = KernelCall | list[KernelCall] | Declined | None  # None: the set has no kernel for this op at all
Rule = Callable[[KernelCall, Node, Graph, CodegenOptions], Answer]


class KernelSet:
    name = "portable"
    rules: dict[str, Rule] = {}
    extension = ".h"  # of its kernels' sources in sdk/templates/<name>/ (CUDA: .cuh)
    # False for a set whose kernels run beside the CPU on an accelerator (cuda): the CPU path
    # of a board that lists it skips it, and code generation renders the set's own project
    # output (codegen/emit.py, SET_OUTPUTS) from the same op lowering.
    cpu = True

    def specialise(self, c: KernelCall, node: Node, g: Graph, options: CodegenOptions) -> Answer:
        """This set's call(s) for the portable call `c`, Declined(reason), or None."""
        if self.name == "portable":
            return c
        rule = PLUGIN_RULES.get((self.name, c.decl.declared_name)) or self.rules.get(c.kernel)
        return rule(c, node, g, options) if rule else None


KERNEL_SETS: dict[str, KernelSet] = {"portable": KernelSet()}

# Rules that plugins add when they load (sdk/plugins.py): (set, the plugin op's portable
# kernel, by its declared name) -> the rule giving that set's kernel for the op; consulted
# before the set's own rules.
PLUGIN_RULES: dict[tuple[str, str], Rule] = {}


def register_kernel_set(cls: type[KernelSet]) -> type[KernelSet]:
    if cls.name in KERNEL_SETS and cls.name != "portable":
        raise RuntimeError(f"kernel set {cls.name} registered twice")
    KERNEL_SETS[cls.name] = cls()
    return cls
