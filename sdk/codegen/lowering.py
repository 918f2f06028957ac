"""Kernel selection and argument lowering: each node becomes kernel calls with every
argument already a C expression; weights become named constant arrays."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..boards import Board
from ..errors import ModelError
from ..ir import Graph
from ..ops import get_op
from ..ops.common import Buf, Weight
from ..planner import ArenaPlan
from .kernel_sets import KERNEL_SETS
from .kernel_sets_loader import load_all
from .sanitize import Namer

TEMPLATES = __import__("pathlib").Path(__file__).resolve().parent.parent / "templates"
CTYPES = {"int8": "int8_t", "float32": "float", "int32": "int32_t"}


@dataclass
class WeightArray:
    name: str
    ctype: str
    values: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)


@dataclass
class Call:
    kernel: str
    args: list[str]
    layer: int
    ends_layer: bool = True  # the last call of its layer: where a profiling mark goes


@dataclass
class Lowered:
    calls: list[Call] = field(default_factory=list)
    weights: list[WeightArray] = field(default_factory=list)
    kernel_files: dict[str, str] = field(default_factory=dict)  # kernel -> "set/kernel.h"
    layers: list[dict] = field(default_factory=list)


def c_float(value: float) -> str:
    """An exact C float literal (hex floats are exact and locale-free)."""
    return float(np.float32(value)).hex() + "f"


def select_kernel(kernel: str, args: list, node, g: Graph, board: Board) -> tuple[str, list, str]:
    """(kernel, arguments, "set/kernel.h") from the board's first kernel set that takes the call."""
    load_all()
    for set_name in list(board.kernels) + ["portable"]:
        chosen = KERNEL_SETS[set_name].specialise(kernel, args, node, g)
        if chosen is not None and (TEMPLATES / set_name / f"{chosen[0]}.h").is_file():
            return chosen[0], chosen[1], f"{set_name}/{chosen[0]}.h"
    raise ModelError(f"no kernel '{kernel}' for board '{board.name}'")


def lower_graph(g: Graph, plan: ArenaPlan, board: Board, precision: str, prefix: str) -> Lowered:
    out = Lowered()
    namer = Namer()
    for index, node in enumerate(g.nodes):
        op = get_op(node.op)
        if op.alias:
            out.layers.append({"index": index, "name": node.name, "op": node.op, "kernel": "(alias)", "calls": 0})
            continue
        lowered = op.lower(node, g, precision)
        calls = [lowered] if isinstance(lowered[0], str) else lowered
        chosen = []
        for kernel, args in calls:
            kernel, args, header = select_kernel(kernel, args, node, g, board)
            out.kernel_files.setdefault(kernel, header)
            chosen.append(kernel)
            rendered = [render_arg(a, g, plan, out, namer, f"{prefix}_l{index}") for a in args]
            out.calls.append(Call(kernel, rendered, index, ends_layer=False))
        out.calls[-1].ends_layer = True
        out.layers.append({"index": index, "name": node.name, "op": node.op, "kernel": chosen[0],
                           "calls": len(calls)})
    return out


def render_arg(arg, g: Graph, plan: ArenaPlan, out: Lowered, namer: Namer, hint: str) -> str:
    if isinstance(arg, Buf):
        ctype = CTYPES[g.tensors[arg.tensor].dtype]
        qual = "const " if arg.const else ""
        return f"({qual}{ctype} *)(arena + {plan.offsets[arg.tensor]})"
    if isinstance(arg, Weight):
        name = namer(f"{hint}_{arg.hint}")
        out.weights.append(WeightArray(name, arg.ctype, np.ascontiguousarray(arg.data).reshape(-1)))
        return name
    if isinstance(arg, (bool, int, np.integer)):
        return str(int(arg))
    if isinstance(arg, (float, np.floating)):
        return c_float(float(arg))
    raise TypeError(f"cannot lower argument {arg!r}")
