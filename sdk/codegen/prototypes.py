"""Reading a kernel's C prototype back from its source, to check it against the kernel's
declaration (kernels/contract.py): the header is the fifth place a parameter list could drift,
so it is read, never trusted."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..kernels.contract import KernelDecl

PROTOTYPE = r"(?:static\s+(?:inline\s+)?(void|int)|CUVIL_KERNEL)\s+{name}\s*\(([^)]*)\)"
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


@dataclass(frozen=True)
class CParam:
    name: str
    ctype: str  # the element type of a pointer, else the scalar type
    pointer: bool
    const: bool  # a pointer to const


def parse_prototype(source: str, name: str) -> list[CParam] | None:
    """The parameters of the kernel function `name` defined in C/CUDA `source`, or None."""
    parsed = parse_function(source, name)
    return None if parsed is None else parsed[1]


def parse_function(source: str, name: str) -> tuple[str, list[CParam]] | None:
    """(return type, parameters) of the kernel function `name` in C/CUDA `source`, or None
    (CUDA kernels return void)."""
    match = re.search(PROTOTYPE.format(name=re.escape(name)), COMMENT.sub(" ", source))
    if match is None:
        return None
    params = []
    for decl in " ".join(match.group(2).split()).split(","):
        words = re.findall(r"\w+|\*", decl)
        pointer = "*" in words
        const = pointer and "const" in words[:words.index("*")]
        types = [w for w in words[:-1] if w not in ("const", "*", "restrict", "__restrict__", "__restrict")]
        params.append(CParam(words[-1], " ".join(types), pointer, const))
    return match.group(1) or "void", params


def mismatches(decl: KernelDecl, params: list[CParam]) -> list[str]:
    """How the C prototype differs from the declaration (empty when they agree)."""
    problems = []
    if len(params) != len(decl.params):
        problems.append(f"{len(params)} C parameters, {len(decl.params)} declared")
    for i, (p, c) in enumerate(zip(decl.params, params)):
        where = f"parameter {i + 1}"
        if p.name != c.name:
            problems.append(f"{where}: C name {c.name}, declared {p.name}")
        if p.pointer != c.pointer:
            problems.append(f"{where} ({p.name}): {'a pointer' if c.pointer else 'a scalar'} in C, declared {p.kind}")
        elif p.pointer and (p.kind != "output") != c.const:
            problems.append(f"{where} ({p.name}): {'const' if c.const else 'writable'} in C, declared {p.kind}")
        if p.ctype != c.ctype:
            problems.append(f"{where} ({p.name}): C type {c.ctype}, declared {p.ctype}")
    return problems
