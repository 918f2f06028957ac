"""CUDA backend of the CUDA boards (jetson): lowering, rendering and the fatbin tools.

Python decides everything, the templates only render (DESIGN 6):

- Each node is lowered by its op exactly as for the CPU (`op.lower`: a portable kernel name
  and its arguments); a rule of CUDA_RULES turns every such call into one kernel launch:
  the CUDA function (a file sdk/templates/cuda/<function>.cuh), its arguments (tensors at
  their arena offsets, weights at their offsets in one weight block, ints, floats) and the
  number of threads. The launch geometry is computed here: `block` threads per block and
  ceil(threads / block) blocks (every kernel checks its bound).
- Device memory is planned statically like the arena: one device buffer of the arena's size
  with every tensor at the same offset, and one buffer for all the weights (uploaded once at
  init). Inputs are copied in and outputs out at their arena offsets.
- Rendered into the generated project (`src/`): <name>_kernels.cu (the device code),
  <name>_cuda.c (the host side: the CUDA driver API resolved at run time with dlopen, the
  launch table, the fallback to the CPU path), <name>_cuda_weights.c (the weight block) and
  <name>_backend.h (`<name>_backend()`), plus cuda.json, which the board's SConscript reads
  to run nvcc (SASS for each `cuda_arch` of the board plus PTX) and embed the fatbin in the
  library's `.nv_fatbin` section, where cuobjdump and the driver find it.

int8 kernels reproduce the portable ones bit for bit (DESIGN 4.4); the dp4a variants are
chosen only where every 4-byte load is aligned.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..boards import Board
from ..errors import ModelError
from ..ir import Graph, Node
from ..ops import get_op
from ..ops.common import Buf, Weight
from ..planner import ArenaPlan
from .lowering import TEMPLATES, c_float

CUDA_TEMPLATES = TEMPLATES / "cuda"
BLOCK = 128                 # threads per block for every launch
MAX_GRID = 2**31 - 1        # gridDim.x limit
WEIGHT_ALIGN = 16           # every weight starts 16-byte aligned in the device weight block
FATBIN_MAGIC = 0xBA55ED50   # header of a fat binary (what nvcc -fatbin writes)
FATBIN_SECTION = ".nv_fatbin"
BYTES_PER_LINE = 32


# --- kernel signatures (parsed from the templates: one source of truth) --------------------
@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "ptr", "int" or "float"
    ctype: str  # the C declaration, e.g. "const int8_t *__restrict__"


SIGNATURE = re.compile(r"CUVIL_KERNEL\s+(\w+)\s*\(([^)]*)\)", re.S)


def kernel_names() -> list[str]:
    """Every CUDA kernel there is a template for."""
    return sorted(p.stem for p in CUDA_TEMPLATES.glob("*.cuh") if p.stem != "cuvil_cuda")


def signature(function: str) -> list[Param]:
    """The parameters of a kernel, read from its template."""
    path = CUDA_TEMPLATES / f"{function}.cuh"
    match = SIGNATURE.search(path.read_text())
    if not match or match.group(1) != function:
        raise RuntimeError(f"{path} does not define the kernel {function}")
    params = []
    for decl in " ".join(match.group(2).split()).split(","):
        decl = decl.strip()
        name = re.findall(r"\w+", decl)[-1]
        ctype = decl[: decl.rfind(name)].strip()
        kind = "ptr" if "*" in ctype else ("float" if ctype.split()[-1] == "float" else "int")
        params.append(Param(name, kind, ctype))
    return params


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


def _prod(values) -> int:
    return int(np.prod([int(v) for v in values], dtype=np.int64))


def _weight_data(arg) -> np.ndarray:
    return np.asarray(arg.data)


Rule = Callable[[str, list[Any], Node, Graph], "list[Launch]"]


def _conv(kernel: str, args: list[Any], node: Node, g: Graph) -> list[Launch]:
    base = 4 if kernel == "conv2d_f32" else 6  # the dimensions follow the weights (int: w, bias, mult, shift)
    n, h, wd, c, oh, ow, oc, kh, kw = (int(a) for a in args[base:base + 9])
    groups = int(args[base + 15])
    threads = n * oh * ow * oc
    if kernel != "conv2d_s8":  # conv2d_f32, conv2d_s16: one kernel each
        return [Launch(kernel, args, threads)]
    icg = c // groups
    if icg == 1:
        return [Launch("dwconv2d_s8", args, threads)]
    if icg % 4 == 0:
        w = _weight_data(args[2]).astype(np.int64).reshape(oc, kh * kw, icg)
        wsum = Weight("wsum", w.sum(axis=2).astype(np.int32), "int32_t")
        return [Launch("conv2d_s8_dp4a", args[:6] + [wsum] + args[6:], threads)]
    return [Launch("conv2d_s8", args, threads)]


def _fc(kernel: str, args: list[Any], node: Node, g: Graph) -> list[Launch]:
    rows, k, n = (int(a) for a in args[4:7]) if kernel == "fc_f32" else (int(a) for a in args[6:9])
    if kernel == "fc_s8" and k % 4 == 0:
        w = _weight_data(args[2]).astype(np.int64).reshape(n, k)
        wsum = Weight("wsum", w.sum(axis=1).astype(np.int32), "int32_t")
        return [Launch("fc_s8_dp4a", args[:6] + [wsum] + args[6:], rows * n)]
    return [Launch(kernel, args, rows * n)]


def _binary(kernel: str, args: list[Any], node: Node, g: Graph) -> list[Launch]:
    return [Launch(kernel, args, _prod(args[3:7]))]


def _pool(kernel: str, args: list[Any], node: Node, g: Graph) -> list[Launch]:
    n, _, _, c, oh, ow = (int(a) for a in args[2:8])
    return [Launch(kernel, args, n * oh * ow * c)]


def _count(index: int) -> Rule:
    def rule(kernel, args, node, g):
        return [Launch(kernel, args, int(args[index]))]
    return rule


def _rows(kernel: str, args: list[Any], node: Node, g: Graph) -> list[Launch]:
    return [Launch(kernel, args, int(args[2]))]


def _concat(kernel: str, args: list[Any], node: Node, g: Graph) -> list[Launch]:
    return [Launch(kernel, args, int(args[3]) * int(args[4]))]


def _pad(kernel: str, args: list[Any], node: Node, g: Graph) -> list[Launch]:
    return [Launch(kernel, args, _prod(args[6:10]))]


def _transpose(kernel: str, args: list[Any], node: Node, g: Graph) -> list[Launch]:
    return [Launch(kernel, args, _prod(args[2:6]))]


def _copy(kernel: str, args: list[Any], node: Node, g: Graph) -> list[Launch]:
    src, dst, nbytes = args
    if isinstance(src, Buf) and isinstance(dst, Buf) and src.tensor == dst.tensor:
        return []
    return [Launch("copy_bytes", args, int(nbytes))]


# portable kernel name -> rule; a kernel absent here has no CUDA version
CUDA_RULES: dict[str, Rule] = {
    "conv2d_s8": _conv, "conv2d_f32": _conv, "conv2d_s16": _conv,
    "fc_s8": _fc, "fc_f32": _fc, "fc_s16": _fc,
    "add_s8": _binary, "add_f32": _binary, "mul_s8": _binary, "mul_f32": _binary,
    "maxpool_s8": _pool, "maxpool_f32": _pool, "avgpool_s8": _pool, "avgpool_f32": _pool,
    "lut_s8": _count(2), "activation_f32": _count(2),
    "quantize_f32_s8": _count(2), "dequantize_s8_f32": _count(2),
    "requant_s16_s8": _count(2), "requant_s8_s16": _count(2),
    "softmax_s8": _rows, "softmax_f32": _rows,
    "concat_s8": _concat, "concat_f32": _concat,
    "pad_s8": _pad, "pad_f32": _pad,
    "transpose_s8": _transpose, "transpose_f32": _transpose,
    "copy": _copy,
}


@dataclass
class CudaLowered:
    launches: list[Launch] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)  # kernels used, in first-use order
    unsupported: list[str] = field(default_factory=list)  # "node (kernel)" without a CUDA kernel


def lower_cuda(g: Graph, precision: str, block: int = BLOCK) -> CudaLowered:
    """Every node's calls as CUDA launches (same op lowering as the CPU path)."""
    out = CudaLowered()
    for index, node in enumerate(g.nodes):
        op = get_op(node.op)
        if op.alias:
            continue
        lowered = op.lower(node, g, node.attrs.get("precision", precision))  # a layer kept in float: its own
        calls = [lowered] if isinstance(lowered[0], str) else lowered
        for kernel, args in calls:
            rule = CUDA_RULES.get(kernel)
            if rule is None:
                out.unsupported.append(f"{node.name} ({kernel})")
                continue
            for launch in rule(kernel, list(args), node, g):
                check_arguments(launch)
                launch.layer = index
                launch.grid, launch.block = geometry(launch.threads, block)
                out.launches.append(launch)
                if launch.function not in out.functions:
                    out.functions.append(launch.function)
    return out


def check_arguments(launch: Launch) -> None:
    """The arguments fit the kernel's parameters (count and kind)."""
    params = signature(launch.function)
    if len(params) != len(launch.args):
        raise RuntimeError(f"{launch.function}: {len(launch.args)} arguments for {len(params)} parameters")
    for p, a in zip(params, launch.args):
        is_ptr = isinstance(a, (Buf, Weight))
        if (p.kind == "ptr") != is_ptr:
            raise RuntimeError(f"{launch.function}: argument {p.name} is {a!r}, expected a {p.kind}")


# --- device memory: the weight block and the argument table ---------------------------------
@dataclass
class WeightBlock:
    data: bytearray = field(default_factory=bytearray)
    offsets: dict[int, int] = field(default_factory=dict)  # id(Weight) -> offset

    def place(self, w: Weight) -> int:
        if id(w) not in self.offsets:
            dtype = {"int8_t": "i1", "uint8_t": "u1", "int16_t": "<i2", "int32_t": "<i4", "int64_t": "<i8",
                     "float": "<f4"}[w.ctype]
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
def sm_number(arch: str) -> int:
    match = re.fullmatch(r"(?:sm_|compute_)?(\d+)[a-z]?", str(arch).strip())
    if not match:
        raise ValueError(f"not a CUDA architecture: {arch!r} (expected e.g. 'sm_87')")
    return int(match.group(1))


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


def find_nvcc() -> str | None:
    """nvcc: $NVCC, else on PATH, else in $CUDA_HOME/bin, $CUDA_PATH/bin or /usr/local/cuda/bin."""
    if os.environ.get("NVCC") and Path(os.environ["NVCC"]).is_file():
        return os.environ["NVCC"]
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "nvcc").is_file():
            return str(Path(root) / "bin" / "nvcc")
    return None


def find_cuda_tool(tool: str) -> str | None:
    """A CUDA tool (cuobjdump, ptxas) beside nvcc, on PATH, or from the pip package
    nvidia-cuda-<tool> (its binary lies in nvidia/cu*/bin)."""
    nvcc = find_nvcc()
    candidates = [shutil.which(tool)]
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent / tool))
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            candidates.append(str(Path(root) / "bin" / tool))
    try:
        import nvidia  # namespace package of NVIDIA's pip wheels
        for base in getattr(nvidia, "__path__", []):
            candidates += [str(p) for p in sorted(Path(base).glob(f"*/bin/{tool}"))]
    except ImportError:
        pass
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


def nvcc_arches(nvcc: str) -> set[str]:
    """The sm_XX this nvcc can compile for (nvcc --list-gpu-code)."""
    result = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True)
    return set(result.stdout.split()) if result.returncode == 0 else set()


# --- rendering ------------------------------------------------------------------------------
def environment():
    from .emit import environment as c_environment
    return c_environment()


def render_kernels(name: str, functions: list[str], header: str = "") -> str:
    """The device source: the shared definitions and the kernels `functions`."""
    return environment().get_template("cuda/model.cu.j2").render(name=name, functions=functions, header=header)


def byte_lines(data: bytes) -> list[str]:
    return [", ".join(f"0x{b:02x}" for b in data[i:i + BYTES_PER_LINE]) for i in range(0, len(data), BYTES_PER_LINE)] \
        or ["0"]


def generate_cuda(g: Graph, plan: ArenaPlan, board: Board, precision: str, prefix: str, out_dir: Path,
                  info: dict) -> dict:
    """Render the CUDA sources of a model into out_dir; returns what to add to the manifest
    ("sources" extended with the host-side C files, and "cuda")."""
    sass, ptx = board_arches(board)
    lowered = lower_cuda(g, precision)
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
        "weight_lines": byte_lines(bytes(block.data)),
    }
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


# --- reading a fat binary back (tests, reports) ---------------------------------------------
@dataclass(frozen=True)
class FatbinEntry:
    kind: str  # "sass" (an ELF cubin) or "ptx"
    arch: str  # "sm_87" for SASS, "compute_87" for PTX
    size: int


def parse_fatbin(data: bytes) -> list[FatbinEntry]:
    """The entries of one or more concatenated fat binaries (nvcc's format: a 16-byte header
    with magic 0xBA55ED50 and the payload size, then entries with kind 1 = PTX, 2 = ELF
    and the architecture number at byte 28 of each entry header)."""
    entries, pos = [], 0
    while pos + 16 <= len(data):
        magic, _version, header, size = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            break
        p, end = pos + header, pos + header + size
        while p + 32 <= end:
            kind, _v, entry_header, payload = struct.unpack_from("<HHIQ", data, p)
            arch = struct.unpack_from("<I", data, p + 28)[0]
            if kind == 1:
                entries.append(FatbinEntry("ptx", f"compute_{arch}", payload))
            elif kind == 2:
                entries.append(FatbinEntry("sass", f"sm_{arch}", payload))
            p += entry_header + payload
        pos = end + (-end % 8)
    return entries


def elf_section(path: Path, section: str) -> bytes | None:
    """The bytes of a named section of a 64-bit little-endian ELF file (None if absent)."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError(f"{path} is not a 64-bit ELF file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx]
    for name_off, _type, _flags, _addr, offset, size in headers:
        start = names[4] + name_off
        if data[start:data.index(b"\0", start)].decode() == section:
            return data[offset:offset + size]
    return None


def embedded_device_code(path: Path) -> list[FatbinEntry]:
    """The SASS and PTX entries embedded in a library's .nv_fatbin section."""
    section = elf_section(path, FATBIN_SECTION)
    return parse_fatbin(section) if section else []
