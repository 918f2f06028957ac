"""The CUDA toolkit as the SDK finds and reads it: nvcc and its tools (cuobjdump, ptxas),
the architectures an nvcc can target, and the fat binaries nvcc writes, read back from a
built library (tests, reports). Code generation does not need any of this; the build, the
tests and the GPU check do."""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50   # header of a fat binary (what nvcc -fatbin writes)
FATBIN_SECTION = ".nv_fatbin"


def sm_number(arch: str) -> int:
    match = re.fullmatch(r"(?:sm_|compute_)?(\d+)[a-z]?", str(arch).strip())
    if not match:
        raise ValueError(f"not a CUDA architecture: {arch!r} (expected e.g. 'sm_87')")
    return int(match.group(1))


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
