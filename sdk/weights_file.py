"""The weights file of a `--weights file` build (<name>.weights beside lib<name>.so): what the
library's <name>_load_weights codes mean, and the same checks in Python for the runners that
hand the file to a harness (one line naming the file and what is wrong, ModelError, exit 3)."""
from __future__ import annotations

import zlib
from pathlib import Path

from .errors import ModelError

# <NAME>_WEIGHTS_* of the generated header (templates/common/model.h.j2)
MISSING, BAD_SIZE, BAD_CHECKSUM, MAP_FAILED = 1, 2, 3, 4
CHUNK = 1 << 20


def weights_spec(manifest: dict) -> dict | None:
    """The manifest's weights entry when the weights are a file, else None."""
    spec = manifest.get("weights") or {}
    return spec if spec.get("placement") == "file" else None


def problem(path: Path, code: int, spec: dict) -> str:
    """The one line for a weights file that <name>_load_weights refused with `code`."""
    path = Path(path)
    if code == MISSING:
        return f"weights file '{path}' is missing or unreadable (a --weights file build needs it beside the library)"
    if code == BAD_SIZE:
        size = path.stat().st_size if path.is_file() else 0
        return (f"weights file '{path}' has {size} bytes, the library expects {spec['bytes']} "
                f"(truncated, or another model's)")
    if code == BAD_CHECKSUM:
        return (f"weights file '{path}' is corrupted: its CRC-32 is {crc32_of(path):08x}, the library expects "
                f"{spec['crc32']}")
    if code == MAP_FAILED:
        return f"weights file '{path}' cannot be mapped into memory"
    return f"weights file '{path}' refused (code {code})"


def crc32_of(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            crc = zlib.crc32(chunk, crc)
    return crc & 0xFFFFFFFF


def check(path: Path, spec: dict) -> None:
    """The checks of <name>_load_weights (size, then CRC-32), for runs that do not load the
    library here (a harness under qemu-user): ModelError with the same line."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(problem(path, MISSING, spec))
    if path.stat().st_size != int(spec["bytes"]):
        raise ModelError(problem(path, BAD_SIZE, spec))
    if f"{crc32_of(path):08x}" != spec["crc32"]:
        raise ModelError(problem(path, BAD_CHECKSUM, spec))
