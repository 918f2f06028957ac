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
CTYPES = {"int8": "int8_t", "int16": "int16_t", "float32": "float", "int32": "int32_t"}


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
    out_offset: int = 0  # the layer's output in the arena, for debug dumps
    out_bytes: int = 0


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
            out.layers.append(layer_row(index, node, g, plan, "(alias)", 0, 0))
            continue
        lowered = op.lower(node, g, node.attrs.get("precision", precision))
        calls = [lowered] if isinstance(lowered[0], str) else lowered
        chosen = []
        weights_before = len(out.weights)
        for kernel, args in calls:
            kernel, args, header = select_kernel(kernel, args, node, g, board)
            out.kernel_files.setdefault(kernel, header)
            chosen.append(kernel)
            rendered = [render_arg(a, g, plan, out, namer, f"{prefix}_l{index}") for a in args]
            out.calls.append(Call(kernel, rendered, index, ends_layer=False))
        out.calls[-1].ends_layer = True
        out.calls[-1].out_offset = plan.offsets[node.outputs[0]]
        out.calls[-1].out_bytes = g.tensors[node.outputs[0]].nbytes
        weight_bytes = sum(w.nbytes for w in out.weights[weights_before:])
        out.layers.append(layer_row(index, node, g, plan, chosen[0], len(calls), weight_bytes))
        # the same weights in the portable layout (int8 for int8 layers), before a kernel set
        # re-laid them out (the Cortex-M DSP set widens them to int16): reports show both
        out.layers[-1]["portable_weight_bytes"] = sum(np.asarray(a.data).nbytes for _, args in calls
                                                      for a in args if isinstance(a, Weight))
    return out


def layer_row(index: int, node, g: Graph, plan: ArenaPlan, kernel: str, calls: int, weight_bytes: int) -> dict:
    """What reports and profiles say about one layer."""
    out = g.tensors[node.outputs[0]]
    origin = out.origin or (out.name, list(range(len(out.shape))))
    return {"index": index, "name": node.name, "op": node.op, "kernel": kernel, "calls": calls,
            "macs": get_op(node.op).macs(node, g), "weight_bytes": weight_bytes, "output": out.name,
            "output_shape": list(out.shape), "output_dtype": out.dtype, "activation_bytes": out.nbytes,
            "arena_offset": plan.offsets.get(out.name), "onnx_tensor": origin[0], "onnx_perm": origin[1],
            "scale": out.q.scalar()[0] if out.q is not None else None,
            "zero_point": out.q.scalar()[1] if out.q is not None else None}


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
