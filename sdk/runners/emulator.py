"""The emulator command line of a board, in one place: the runners (qemu-system-arm for the
Cortex-M7 firmware, qemu-user for the aarch64 Linux builds) and the QEMU bootloader of
`cuvil-sdk flash` all take theirs from the board file, a list with {name} placeholders."""
from __future__ import annotations

import shutil

from ..boards import Board
from ..errors import ToolError


def board_command(board: Board, key: str, **values: str) -> list[str]:
    """The board's command line at `key` (e.g. run.command) with each {name} replaced by
    values[name]; ToolError when the board has none or its program is not installed (naming
    the Debian package, run.debian_package), so a missing QEMU says how to get it."""
    template = board.get(key)
    if not template:
        raise ToolError(f"board '{board.name}' has no {key}")
    command = [str(part) for part in template]
    for name, value in values.items():
        command = [part.replace("{" + name + "}", value) for part in command]
    if shutil.which(command[0]) is None:
        package = board.get("run.debian_package", command[0])
        raise ToolError(f"{command[0]} not found: install the Debian package {package}")
    return command
