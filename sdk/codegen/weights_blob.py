"""The model's weights as one binary blob, and where it goes (`--weights`).

Every weight array that the kernel calls name is laid out once, each at a 16-byte aligned
offset that Python computes, in `src/<name>.weights`; the C code reaches array i as
`(const T *)(<NAME>_WEIGHTS_BASE + offset_i)`. Three placements:

  linked  the blob is linked into the library or firmware by `.incbin` in a named section
          (`.rodata.<name>_weights`, or the section of the <NAME>_WEIGHTS_SECTION override);
  region  the same, in the section that the board's linker script puts in a second memory
          region (board key memory.weights_region, e.g. external flash);
  file    Linux boards: the blob is `<name>.weights` beside the library, mapped read-only by
          `<name>_load_weights(path)`, which checks its size and CRC-32 (computed here).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..boards import Board
from ..errors import UsageError
from ..kernels.options import WeightPlacement

PLACEMENTS = ("linked", "region", "file")
WEIGHT_ALIGN = 16  # every array starts 16-byte aligned, as the C arrays were
MIN_BLOB_BYTES = WEIGHT_ALIGN  # a model without weights still has a blob (mmap of 0 bytes fails)


@dataclass(frozen=True)
class Blob:
    data: bytes
    offsets: list[int]  # per weight array, in the order given

    @property
    def crc32(self) -> int:
        return zlib.crc32(self.data) & 0xFFFFFFFF


def layout(arrays: list[np.ndarray]) -> Blob:
    """The arrays' bytes (little-endian, as every target is) at aligned offsets, in one blob."""
    offsets, pieces, size = [], [], 0
    for a in arrays:
        pad = -size % WEIGHT_ALIGN
        pieces.append(b"\0" * pad)
        size += pad
        offsets.append(size)
        raw = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        pieces.append(raw)
        size += len(raw)
    pieces.append(b"\0" * (max(MIN_BLOB_BYTES, size + -size % WEIGHT_ALIGN) - size))
    return Blob(b"".join(pieces), offsets)


def board_regions(board: Board) -> dict[str, dict]:
    """The board's extra memory regions (key memory.regions): name -> origin, bytes, access."""
    return {r["name"]: r for r in board.get("memory.regions", [])}


def choose_placement(board: Board, placement: str | None, region: str | None) -> WeightPlacement:
    """--weights and --weights-region, checked against what the board offers."""
    placement = placement or "linked"
    if placement not in PLACEMENTS:
        raise UsageError(f"--weights {placement!r}: expected one of {', '.join(PLACEMENTS)}")
    if placement == "file" and board.kind != "shared_library":
        raise UsageError(f"--weights file needs a Linux board (a shared library); board '{board.name}' builds "
                         f"{board.kind}: use --weights linked or region")
    if placement != "region":
        if region:
            raise UsageError(f"--weights-region {region} needs --weights region")
        return WeightPlacement(placement)
    regions = board_regions(board)
    region = region or board.get("memory.weights_region")
    if board.kind != "firmware" or not regions or not region:
        raise UsageError(f"--weights region: board '{board.name}' names no memory region for weights "
                         f"(board key memory.weights_region)")
    if region not in regions:
        raise UsageError(f"--weights-region {region}: board '{board.name}' has no such memory region "
                         f"(it has: {', '.join(regions)})")
    return WeightPlacement("region", region)


def arena_region_of(board: Board, region: str | None) -> str:
    """--arena-region: one of the board's extra memory regions that can hold data ("": the RAM)."""
    if not region or region.lower() == "ram":
        return ""
    regions = board_regions(board)
    writable = [name for name, r in regions.items() if "w" in r.get("access", "rw")]
    if region not in writable:
        raise UsageError(f"--arena-region {region}: board '{board.name}' has no writable memory region of that "
                         f"name (it has: {', '.join(['ram', *writable])})")
    return region


def write_blob(blob: Blob, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob.data)
