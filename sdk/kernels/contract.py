"""The typed kernel interface: one declaration per C kernel, calls built by keyword.

Every kernel of every set (sdk/templates/<set>/<kernel>.h, CUDA's .cuh) is declared once,
in sdk/kernels/<set>/declarations.py, as its name and its ordered parameters, each with a
kind and a C type:

    input   a const pointer to a tensor: an arena buffer (Buf) or a constant (Weight)
    output  a pointer into the arena (Buf)
    weight  a const array emitted with the model (Weight) of exactly that C type
    int     an integer constant (C type int, int32_t, uint32_t, ...)
    float   a float constant

Ops build calls by keyword (`call("conv2d_s8", x=..., zy=...)`), kernel-set rules read
named fields (`c["zx"]`) and build their own calls the same way, and every call is checked
when it is built: a missing, extra or mistyped argument is an internal error naming the
kernel and parameter (the lowering adds the op and node), never a silent fall-back. The
C prototypes are checked against these declarations by tests/test_kernel_headers.py.

Parameter names are the C names. Where a C name is a Python keyword (`in`), pass it with a
trailing underscore (`in_=...`).
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from .overlap import Overlap


class Buf:
    """A C argument that points into the arena at a tensor's planned offset."""

    def __init__(self, tensor: str, const: bool = False) -> None:
        self.tensor = tensor
        self.const = const


class Weight:
    """A C argument that is a constant array, emitted into the weights file."""

    def __init__(self, hint: str, data: np.ndarray, ctype: str) -> None:
        self.hint = hint
        self.data = data
        self.ctype = ctype



KINDS = ("input", "output", "weight", "int", "float")


class KernelInterfaceError(RuntimeError):
    """A call that does not match its kernel's declaration: a bug in an op or a rule."""


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # one of KINDS
    ctype: str  # element type of pointers, the C type of scalars

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise KernelInterfaceError(f"parameter {self.name}: unknown kind {self.kind!r}")

    @property
    def pointer(self) -> bool:
        return self.kind in ("input", "output", "weight")


def In(name: str, ctype: str) -> Param:  # noqa: N802 (reads like the declaration it is)
    return Param(name, "input", ctype)


def Out(name: str, ctype: str) -> Param:  # noqa: N802
    return Param(name, "output", ctype)


def W(name: str, ctype: str) -> Param:  # noqa: N802
    return Param(name, "weight", ctype)


def I(names: str, ctype: str = "int") -> list[Param]:  # noqa: E743, N802
    """Integer parameters, space separated, all of one C type."""
    return [Param(n, "int", ctype) for n in names.split()]


def F(names: str) -> list[Param]:  # noqa: N802
    return [Param(n, "float", "float") for n in names.split()]


@dataclass(frozen=True)
class KernelDecl:
    kernel_set: str
    name: str
    params: tuple[Param, ...]
    # a plugin kernel rendered per attribute signature (sdk/plugins.py): the name it is declared
    # under, which its rules are registered by; `name` is that plus the signature's digest
    template: str = ""
    # the kernel's overlap rule: (output, input) parameter pairs where the output may be the
    # very buffer of that input (the same start, the same bytes: the kernel reads each element
    # before it writes the output at its place). The planner puts such an output over such an
    # input when the input is read by nothing later (planner/arena.py).
    in_place: tuple[tuple[str, str], ...] = ()
    # overlapping (kernels/overlap.py): (output, input, rule) where the output may lie over
    # that input's buffer at the distance rule(call) allows (an Overlap, or None: not this call)
    overlap: tuple[tuple[str, str, Callable[["KernelCall"], Overlap | None]], ...] = ()
    # "void", or "int" for a kernel that checks its run-time indices: it returns 0, or non-zero
    # when an index is out of range (it then read and wrote nothing outside its tensors), and
    # the model's run function returns <NAME>_ERR_INDEX (templates/common/model.c.j2)
    returns: str = "void"

    @property
    def checked(self) -> bool:
        return self.returns == "int"

    @property
    def declared_name(self) -> str:
        return self.template or self.name

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def __call__(self, **kwargs: Any) -> "KernelCall":
        """A checked call: every parameter by name, each of the declared kind."""
        args = {k[:-1] if k.endswith("_") and keyword.iskeyword(k[:-1]) else k: v for k, v in kwargs.items()}
        names = [p.name for p in self.params]
        missing = [n for n in names if n not in args]
        extra = [n for n in args if n not in names]
        if missing or extra:
            raise KernelInterfaceError(f"kernel {self.name}: " + "; ".join(
                part for part in (f"missing {', '.join(missing)}" if missing else "",
                                  f"no parameter {', '.join(extra)}" if extra else "") if part))
        checked = {p.name: check_argument(self, p, args[p.name]) for p in self.params}
        return KernelCall(self, checked)


def check_argument(decl: KernelDecl, p: Param, value: Any) -> Any:
    """The value as the call keeps it (numpy integers become int), or KernelInterfaceError."""
    def wrong(expected: str) -> KernelInterfaceError:
        return KernelInterfaceError(f"kernel {decl.name}: {p.name} must be {expected}, got {value!r}")
    if p.kind == "input":
        if isinstance(value, Weight) and value.ctype != p.ctype:
            raise wrong(f"{p.ctype} data (a constant of {value.ctype})")
        if not isinstance(value, (Buf, Weight)):
            raise wrong("a tensor (arena buffer or constant)")
    elif p.kind == "output":
        if not isinstance(value, Buf) or value.const:
            raise wrong("a writable arena buffer")
    elif p.kind == "weight":
        if not isinstance(value, Weight):
            raise wrong(f"a constant {p.ctype} array")
        if value.ctype != p.ctype:
            raise wrong(f"a {p.ctype} array (got {value.ctype})")
    elif p.kind == "int":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise wrong("an integer")
        return int(value)
    elif p.kind == "float":
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise wrong("a number")
        return float(value)
    return value


@dataclass
class KernelCall:
    """A kernel and its arguments by name, in a checked state (see KernelDecl.__call__)."""

    decl: KernelDecl
    args: dict[str, Any]
    # set by a rule that splits the work (CUDA: threads of the launch)
    launch_threads: int = 0
    # set by a rule that picks among a kernel's variants (tile shape, loop order, weight
    # layout), e.g. "4x2 w8": the report and the per-layer profile name it beside the kernel
    variant: str = ""
    # set by a rule whose kernel keeps arrays on the stack (a SIMD panel of input rows): the
    # elements each array needs for this call, by name. ISO C99 and C++ have no variable-length
    # arrays, so the model sizes each one for the largest of its calls (Lowered.stack_arrays).
    stack: dict[str, int] = field(default_factory=dict)
    # set by a rule that takes an int4 layer (a portable *_s8w4 call) with a kernel that reads
    # int8 weights: why the int4 values are stored unpacked (kernels/int4.py); "" when packed
    int8_storage: str = ""
    # compile-time features of the kernel's source this call needs (e.g. "w4": the int4 paths of
    # conv2d_s8_dsp): the source is rendered with those present in the model's calls only, so a
    # build without them gets the kernel's source as it was (codegen/kernel_files.py)
    features: frozenset[str] = frozenset()

    def with_stack(self, **elements: int) -> "KernelCall":
        self.stack = {name: int(n) for name, n in elements.items()}
        return self

    @property
    def kernel(self) -> str:
        return self.decl.name

    def __getitem__(self, name: str) -> Any:
        return self.args[name]

    def ordered(self) -> list[Any]:
        """The arguments in the C parameter order."""
        return [self.args[p.name] for p in self.decl.params]

    def in_place_tensors(self) -> list[tuple[str, str]]:
        """(output tensor, input tensor) pairs the kernel's overlap rule lets share a buffer."""
        pairs = []
        for out, inp in self.decl.in_place:
            o, i = self.args[out], self.args[inp]
            if isinstance(o, Buf) and isinstance(i, Buf):
                pairs.append((o.tensor, i.tensor))
        return pairs

    def overlap_tensors(self) -> list[tuple[str, str, Overlap]]:
        """(output tensor, input tensor, Overlap) where the kernel's overlap rule allows this
        call's output over that input (KernelDecl.overlap)."""
        found = []
        for out, inp, rule in self.decl.overlap:
            o, i = self.args[out], self.args[inp]
            allowed = rule(self) if isinstance(o, Buf) and isinstance(i, Buf) else None
            if allowed is not None:
                found.append((o.tensor, i.tensor, allowed))
        return found


@dataclass(frozen=True)
class Declined:
    """A kernel set's answer when its kernel cannot take a call: the reason is what the
    build output and the report say about the layer."""

    reason: str


DECLARATIONS: dict[str, dict[str, KernelDecl]] = {}


def declare(kernel_set: str, name: str, *params: Param | Iterable[Param],
            in_place: Iterable[tuple[str, str]] = (),
            overlap: Iterable[tuple[str, str, Callable[[KernelCall], Overlap | None]]] = (),
            returns: str = "void") -> KernelDecl:
    """Declare a kernel: its parameters in C order; in_place: (output, input) parameter pairs
    where the output may be that input's own buffer (see KernelDecl.in_place); overlap:
    (output, input, rule) where it may lie partly over it (see KernelDecl.overlap); returns: "int"
    for a kernel that checks run-time indices (see KernelDecl.returns)."""
    if returns not in ("void", "int"):
        raise KernelInterfaceError(f"kernel {name}: returns {returns!r}, expected void or int")
    flat: list[Param] = []
    for p in params:
        flat.extend([p] if isinstance(p, Param) else list(p))
    seen = [p.name for p in flat]
    if len(set(seen)) != len(seen):
        raise KernelInterfaceError(f"kernel {name}: a parameter is declared twice")
    kinds = {p.name: p.kind for p in flat}
    pairs = tuple((str(o), str(i)) for o, i in in_place)
    overlaps = tuple((str(o), str(i), rule) for o, i, rule in overlap)
    for o, i in pairs + tuple((o, i) for o, i, _ in overlaps):
        if kinds.get(o) != "output" or kinds.get(i) != "input":
            raise KernelInterfaceError(f"kernel {name}: in_place/overlap ({o}, {i}) must name an output and an input")
    decls = DECLARATIONS.setdefault(kernel_set, {})
    if name in decls:
        raise KernelInterfaceError(f"kernel {name} of set {kernel_set} declared twice")
    decls[name] = KernelDecl(kernel_set, name, tuple(flat), in_place=pairs, overlap=overlaps, returns=returns)
    return decls[name]


def declarations(kernel_set: str) -> dict[str, KernelDecl]:
    """The kernels of a set by name (importing the kernels package declared every set)."""
    return DECLARATIONS.get(kernel_set, {})


def kernel(kernel_set: str, name: str) -> KernelDecl:
    decls = declarations(kernel_set)
    if name not in decls:
        raise KernelInterfaceError(f"no kernel {name} is declared in set {kernel_set}")
    return decls[name]


def call(name: str, **kwargs: Any) -> KernelCall:
    """A checked call of a portable kernel (what ops lower to)."""
    return kernel("portable", name)(**kwargs)
