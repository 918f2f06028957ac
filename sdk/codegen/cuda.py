"""CUDA backend of the CUDA boards (jetson): lowering to launches and rendering.

Python decides everything, the templates only render:

- Each node is lowered by its op exactly as for the CPU (a checked portable KernelCall), and
  the `cuda` kernel set (sdk/kernels/cuda/rules.py) turns every such call into kernel launches: the CUDA
  function (a file sdk/templates/cuda/<function>.cuh, declared in kernels/cuda/declarations.py), its
  arguments (tensors at their arena offsets, weights at their offsets in one weight block,
  ints, floats) and the number of threads. The launch geometry is computed here: `block`
  threads per block and ceil(threads / block) blocks (every kernel checks its bound).
- Device memory is planned statically like the arena: one device buffer of the arena's size
  with every tensor at the same offset, and one buffer for all the weights (uploaded once at
  init). Inputs are copied in and outputs out at their arena offsets.
- Rendered into the generated project (`src/`): <name>_kernels.cu (the device code),
  <name>_cuda.c (the host side: the CUDA driver API resolved at run time with dlopen, the
  launch table, the fallback to the CPU path), <name>_cuda_weights.c (the weight block) and
  <name>_backend.h (`<name>_backend()`), plus cuda.json, which the board's SConscript reads
  to run nvcc (SASS for each `cuda_arch` of the board plus PTX) and embed the fatbin in the
  library's `.nv_fatbin` section, where cuobjdump and the driver find it.

int8 kernels reproduce the portable ones bit for bit; finding nvcc and reading fat binaries
back are in sdk/cuda_tools.py, outside code generation.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..boards import Board
from ..cuda_tools import sm_number
from ..errors import ModelError
from ..ir import Graph
from ..kernels.contract import Buf, Weight, declarations
from ..kernels.options import CodegenOptions
from ..planner import ArenaPlan
from .kernel_files import environment, kernel_source
from .lowering import c_float, layer_calls

BLOCK = 128                 # threads per block for every launch
MAX_GRID = 2**31 - 1        # gridDim.x limit
WEIGHT_ALIGN = 16           # every weight starts 16-byte aligned in the device weight block


# --- lowering -------------------------------------------------------------------------------
@dataclass
class Launch:
    function: str
    args: list[Any]  # Buf | Weight | int | float, in the kernel's parameter order
    threads: int
    layer: int = -1
    grid: int = 0
    block: int = BLOCK
    first: int = 0  # index of its first argument in the argument table


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def geometry(threads: int, block: int = BLOCK) -> tuple[int, int]:
    """(blocks, threads per block) covering `threads` threads: ceil(threads / block) blocks."""
    if threads <= 0:
        raise ValueError("a launch needs at least one thread")
    grid = ceil_div(threads, block)
    if grid > MAX_GRID:
        raise ModelError(f"a kernel launch of {threads} threads exceeds the CUDA grid limit")
    return grid, block


@dataclass
class CudaLowered:
    launches: list[Launch] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)  # kernels used, in first-use order
    unsupported: list[str] = field(default_factory=list)  # "node (kernel)" without a CUDA kernel


def lower_cuda(g: Graph, options: CodegenOptions, block: int = BLOCK) -> CudaLowered:
    """Every node's calls through the `cuda` kernel set (sdk/kernels/cuda/rules.py), as launches: the
    same op lowering and selection as the CPU path, with only the cuda set offered."""
    out = CudaLowered()
    for index, node, _portable, calls in layer_calls(g, ["cuda"], options, []):
        for c in calls or []:
            if c.decl.kernel_set != "cuda":
                out.unsupported.append(f"{node.name} ({c.kernel})")
                continue
            grid, size = geometry(c.launch_threads, block)
            out.launches.append(Launch(c.kernel, c.ordered(), c.launch_threads, index, grid, size))
            if c.kernel not in out.functions:
                out.functions.append(c.kernel)
    return out


def kernel_names() -> list[str]:
    """Every CUDA kernel there is (declared in kernels/cuda/declarations.py, a template each)."""
    return sorted(declarations("cuda"))


# --- device memory: the weight block and the argument table ---------------------------------
@dataclass
class WeightBlock:
    data: bytearray = field(default_factory=bytearray)
    offsets: dict[int, int] = field(default_factory=dict)  # id(Weight) -> offset

    def place(self, w: Weight) -> int:
        if id(w) not in self.offsets:
            dtype = {"int8_t": "i1", "uint8_t": "u1", "int16_t": "<i2", "int32_t": "<i4", "int64_t": "<i8",
                     "float": "<f4", "cuvil_f16": "<f2", "bool": "?"}[w.ctype]
            raw = np.ascontiguousarray(np.asarray(w.data).reshape(-1).astype(dtype))
            self.data += bytes(-len(self.data) % WEIGHT_ALIGN)
            self.offsets[id(w)] = len(self.data)
            self.data += raw.tobytes()
        return self.offsets[id(w)]


ARG_ARENA, ARG_WEIGHTS, ARG_INT, ARG_FLOAT = range(4)


def argument_table(launches: list[Launch], plan: ArenaPlan, block: WeightBlock) -> list[dict]:
    """One entry per kernel argument: {kind, value (offset or int), f (C float literal)}."""
    table = []
    for launch in launches:
        launch.first = len(table)
        for a in launch.args:
            if isinstance(a, Buf):
                table.append({"kind": ARG_ARENA, "value": plan.offsets[a.tensor], "f": "0.0f"})
            elif isinstance(a, Weight):
                table.append({"kind": ARG_WEIGHTS, "value": block.place(a), "f": "0.0f"})
            elif isinstance(a, (bool, int, np.integer)):
                table.append({"kind": ARG_INT, "value": int(a), "f": "0.0f"})
            elif isinstance(a, (float, np.floating)):
                table.append({"kind": ARG_FLOAT, "value": 0, "f": c_float(float(a))})
            else:
                raise TypeError(f"cannot pass {a!r} to a CUDA kernel")
    return table


# --- the board's architectures --------------------------------------------------------------
def board_arches(board: Board) -> tuple[list[str], str]:
    """(SASS architectures, PTX architecture) from the board file: `cuda_arch` is one name
    or a list ("sm_87"); `cuda_ptx` defaults to the lowest of them ("compute_87")."""
    value = board.get("cuda_arch")
    arches = [value] if isinstance(value, str) else list(value or [])
    if not arches:
        raise ValueError(f"board '{board.name}' has no cuda_arch")
    sass = [f"sm_{sm_number(a)}" for a in arches]
    ptx = board.get("cuda_ptx") or f"compute_{min(sm_number(a) for a in arches)}"
    return sass, f"compute_{sm_number(ptx)}"


def nvcc_flags(sass: list[str], ptx: str) -> list[str]:
    """nvcc flags for a fatbin with SASS for each architecture plus PTX (IEEE float: no FMA
    contraction, exact division and square root, so fp32 stays close to the CPU's)."""
    flags = ["-fatbin", "-O3", "--fmad=false", "-prec-div=true", "-prec-sqrt=true", "-ftz=false"]
    for arch in sass:
        flags.append(f"-gencode=arch=compute_{sm_number(arch)},code={arch}")
    flags.append(f"-gencode=arch={ptx},code={ptx}")
    return flags


# --- rendering ------------------------------------------------------------------------------
def render_kernels(name: str, functions: list[str], header: str = "") -> str:
    """The device source: the shared definitions and the kernels `functions`."""
    sources = [kernel_source("cuda", f).rstrip("\n") for f in functions]
    return environment().get_template("cuda/model.cu.j2").render(name=name, sources=sources, header=header)


def generate_cuda(g: Graph, plan: ArenaPlan, board: Board, options: CodegenOptions, prefix: str, out_dir: Path,
                  info: dict) -> dict:
    """Render the CUDA sources of a model into out_dir; returns what to add to the manifest
    ("sources" extended with the host-side C files, and "cuda")."""
    sass, ptx = board_arches(board)
    lowered = lower_cuda(g, options)
    src = Path(out_dir) / "src"
    block = WeightBlock()
    table = argument_table(lowered.launches, plan, block)
    io = {kind: [{"name": n, "offset": plan.offsets[n], "bytes": g.tensors[n].nbytes} for n in names]
          for kind, names in (("inputs", g.inputs), ("outputs", g.outputs))}
    functions = lowered.functions
    context = {
        "name": prefix, "NAME": prefix.upper(), "sass": sass, "ptx": ptx, "block": BLOCK,
        "functions": functions, "launches": lowered.launches, "args": table,
        "inputs": io["inputs"], "outputs": io["outputs"], "weight_bytes": len(block.data),
        "unsupported_text": re.sub(r"[^0-9A-Za-z_ .,()-]", "_", ", ".join(lowered.unsupported))[:160],
        "enabled": not lowered.unsupported,
        "device_blob_bytes": max(len(block.data), WEIGHT_ALIGN),
    }
    # the block as binary data beside its .c (which .incbin's it), at least one aligned unit
    (src / f"{prefix}_cuda.weights").write_bytes(bytes(block.data) + bytes(max(0, WEIGHT_ALIGN - len(block.data))))
    env = environment()
    (src / f"{prefix}_kernels.cu").write_text(render_kernels(prefix, functions, f'model "{prefix}"'))
    for template, target in (("cuda/host.c.j2", f"{prefix}_cuda.c"), ("cuda/backend.h.j2", f"{prefix}_backend.h"),
                             ("cuda/weights.c.j2", f"{prefix}_cuda_weights.c")):
        (src / target).write_text(env.get_template(template).render(context))
    spec = {"name": prefix, "source": f"src/{prefix}_kernels.cu", "sass": sass, "ptx": ptx,
            "nvcc_flags": nvcc_flags(sass, ptx), "fatbin_symbol": f"{prefix}_cuda_fatbin",
            "hook_define": f"{prefix.upper()}_LAYERS_HOOK",
            "cpu_sconscript": board.get("cuda_cpu_sconscript", "../rpi5/SConscript"),
            "enabled": not lowered.unsupported}
    (Path(out_dir) / "cuda.json").write_text(json.dumps(spec, indent=2))
    summary = {"sass": sass, "ptx": ptx, "kernels": functions, "launches": len(lowered.launches),
               "block": BLOCK, "device_weight_bytes": len(block.data), "device_arena_bytes": plan.size}
    if lowered.unsupported:
        summary["disabled"] = "no CUDA kernel for " + ", ".join(lowered.unsupported)
    return {"sources": info["sources"] + [f"src/{prefix}_cuda.c", f"src/{prefix}_cuda_weights.c"], "cuda": summary}
