"""Shared pieces of the serial-flashing tests: the board, fast timeouts, images, a runner."""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from cuvil_sdk.boards import Board, get_board
from cuvil_sdk.flash.an3155 import Timeouts
from cuvil_sdk.flash.command import flash_command
from cuvil_sdk.flash.image import FlashGeometry
from cuvil_sdk.flash.simulator import Simulator

BOARD_NAME = "nucleo-f767zi"
FLASH_START = 0x08000000

# For tests that wait out a fault on purpose: every retry still takes well under a second.
FAST = Timeouts(init=0.15, byte=0.3, write=0.3, erase_per_sector=0.5, mass_erase=1.0, quiet=0.02)
# For tests where no timeout should expire: room for a loaded two-core CI machine.
# `init` stays short because resuming a session waits it out once or twice by design.
STEADY = Timeouts(init=0.3, byte=2.0, write=2.0, erase_per_sector=2.0, mass_erase=5.0, quiet=0.02)


def board() -> Board:
    return get_board(BOARD_NAME)


def geometry() -> FlashGeometry:
    return FlashGeometry.from_board(board())


def image_bytes(size: int, seed: int = 7) -> bytes:
    """Deterministic pseudo-random firmware bytes (no run of 0xFF hides a lost write)."""
    return random.Random(seed).randbytes(size)


def write_bin(directory: Path, size: int, seed: int = 7, name: str = "app.bin") -> Path:
    path = directory / name
    path.write_bytes(image_bytes(size, seed))
    return path


def write_hex(path: Path, segments: list[tuple[int, bytes]]) -> Path:
    """An Intel HEX file with extended linear address records and 16-byte data records."""
    def record(kind: int, offset: int, data: bytes) -> str:
        body = bytes([len(data)]) + offset.to_bytes(2, "big") + bytes([kind]) + data
        return ":" + (body + bytes([-sum(body) & 0xFF])).hex().upper()

    lines, upper = [], None
    for address, data in segments:
        for i in range(0, len(data), 16):
            at = address + i
            if at >> 16 != upper:
                upper = at >> 16
                lines.append(record(0x04, 0, upper.to_bytes(2, "big")))
            lines.append(record(0x00, at & 0xFFFF, data[i:i + 16]))
    lines.append(record(0x01, 0, b""))
    path.write_text("\n".join(lines) + "\n")
    return path


def flash(sim: Simulator, firmware: Path, **options: Any) -> dict[str, Any]:
    """flash_command against a simulator, quiet, with test timeouts (STEADY unless given)."""
    options = {"progress": False, "json_out": True, "timeouts": STEADY, "retries": 2, **options}
    return flash_command(board(), sim.port, 115200, firmware, **options)
