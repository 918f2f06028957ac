"""A stand-in libcuda.so.1 that runs the CUDA kernels on the CPU, for tests without a GPU.

`build_emulator(folder)` renders sdk/templates/cuda/emulator.c.j2 with every kernel of
sdk/templates/cuda (compiled as C: the templates are written so that they are also valid
C when CUVIL_CUDA_EMULATION is defined) and compiles it into folder/libcuda.so.1. A CUDA
build of a model (a jetson library under qemu-aarch64 with cc="aarch64-linux-gnu-gcc", or
an x86-64 library with the CUDA backend) then takes its GPU path when started with
CUVIL_LIBCUDA=folder/libcuda.so.1: the host side, the launch table, the fat binary check
and the kernels all run, one emulated thread after another, and the outputs can be compared
bit for bit with the numpy reference. The emulation's own checks are listed in the template.
"""
from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from ..errors import ToolError
from ..kernels.contract import Param, declarations
from .cuda import kernel_names, render_kernels
from .kernel_files import environment

LIBRARY = "libcuda.so.1"


def emulator_source() -> str:
    kernels = []
    for name in kernel_names():
        params = declarations("cuda")[name].params
        kernels.append({"name": name, "kinds": "".join("p" if p.pointer else p.kind[0] for p in params),
                        "casts": [c_cast(p) for p in params]})
    source = render_kernels("emulator", kernel_names(), "the CPU emulation (every kernel)")
    return environment().get_template("cuda/emulator.c.j2").render(kernels=kernels, kernels_source=source)


def c_cast(p: Param) -> str:
    """The C type an argument is read as (the kernel's parameter type)."""
    if p.kind == "output":
        return f"{p.ctype} *"
    return f"const {p.ctype} *" if p.pointer else p.ctype


def build_emulator(folder: Path, cc: str = "gcc") -> Path:
    """Compile the emulation into folder/libcuda.so.1 (kept when its source is unchanged)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    source = emulator_source()
    stamp = hashlib.sha1((cc + source).encode()).hexdigest()
    lib, c_file, stamp_file = folder / LIBRARY, folder / "cuda_emulator.c", folder / "cuda_emulator.stamp"
    if lib.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        return lib
    c_file.write_text(source)
    cmd = [cc, "-O2", "-std=c99", "-fPIC", "-shared", "-ffp-contract=off", "-Wall", "-Wno-unused-function",
           "-o", str(lib), str(c_file), "-lm"]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise ToolError(f"building the CUDA emulation failed: {(result.stderr or result.stdout).strip()[:500]}")
    stamp_file.write_text(stamp)
    return lib
