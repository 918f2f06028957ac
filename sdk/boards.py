"""Boards are data: each targets/<family>/board*.toml describes where a model runs.

Every key a board file may hold is declared once, with its type, in sdk/board_schema.py;
a file is checked against it when it is loaded, so a misspelt key stops the command (exit 2)
instead of reading a default."""
from __future__ import annotations

try:  # Python 3.11+; tomli is the same parser for 3.10 (a dependency there only)
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from .board_schema import check as check_board_file
from .errors import UsageError
from .paths import PACKAGE_DIR

TARGETS_DIR = PACKAGE_DIR / "targets"


@dataclass(frozen=True)
class Board:
    name: str
    family_dir: Path
    description: str
    kind: str  # "firmware" or "shared_library"
    profiles: tuple[str, ...]
    kernels: tuple[str, ...]  # template sets, most specific first
    flash_bytes: int
    ram_bytes: int
    data: dict[str, Any] = field(repr=False)

    def get(self, dotted: str, default: Any = None) -> Any:
        """A value from the board file by dotted path, e.g. 'toolchain.prefix'."""
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
            "profiles": list(self.profiles),
            "kernels": list(self.kernels),
            "flash_bytes": self.flash_bytes,
            "ram_bytes": self.ram_bytes,
            "runs_on": self.get("run.how", ""),
            # further memory regions (--weights region, --arena-region): name, origin, bytes, access
            "memory_regions": [{k: r[k] for k in ("name", "origin", "bytes", "access") if k in r}
                               for r in self.get("memory.regions", [])],
            "weights_region": self.get("memory.weights_region"),
        }


def load_board_file(path: Path) -> Board:
    """A board file, checked against the schema: UsageError (exit 2) naming the file and the
    key for an unknown key or a value of the wrong type, or for TOML it cannot parse."""
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"board file {path} is not valid TOML: {exc}") from None
    check_board_file(path, data)
    data["_file"] = path.name
    memory = data.get("memory", {})
    return Board(
        name=data["name"],
        family_dir=path.parent,
        description=data.get("description", ""),
        kind=data["kind"],
        profiles=tuple(data.get("profiles", [])),
        kernels=tuple(data.get("kernels", ["portable"])),
        flash_bytes=int(memory.get("flash_bytes", 0)),
        ram_bytes=int(memory.get("ram_bytes", 0)),
        data=data,
    )


def all_boards() -> dict[str, Board]:
    boards = [load_board_file(p) for p in sorted(TARGETS_DIR.glob("*/board*.toml"))]
    return {b.name: b for b in boards}


def get_board(name: str) -> Board:
    boards = all_boards()
    if name not in boards:
        raise UsageError(f"unknown board '{name}' (known: {', '.join(sorted(boards))})")
    return boards[name]


def linker_context(board: Board) -> dict[str, Any]:
    """The linker script's values, all from the board file's [memory] table."""
    return {
        "board_name": board.name,
        "flash_origin": int(board.get("memory.flash_origin", 0)),
        "flash_bytes": board.flash_bytes,
        "ram_origin": int(board.get("memory.ram_origin", 0)),
        "ram_bytes": board.ram_bytes,
        "stack_bytes": int(board.get("memory.stack_bytes")),
        "regions": [{"name": r["name"], "NAME": r["name"].upper(), "origin": int(r["origin"]), "bytes": int(r["bytes"]),
                     "attributes": "rw" if "w" in r.get("access", "rw") else "r",
                     "description": r.get("description", r["name"])} for r in board.get("memory.regions", [])],
    }


def include_folders(board: Board) -> list[Path]:
    """Where the board's firmware templates are found: its own folder, then the folders of
    `firmware.include_folders` (a family whose linker script and harness it shares)."""
    return [board.family_dir] + [(board.family_dir / p).resolve() for p in board.get("firmware.include_folders", [])]


def instructions_per_tick(board: Board) -> Fraction:
    """Guest instructions per SysTick tick under -icount shift=0 (one instruction per ns): 40 on a
    25 MHz processor clock, 50 on 20 MHz, 125/4 on 32 MHz (board key firmware.instructions_per_tick)."""
    return Fraction(str(board.get("firmware.instructions_per_tick", 1)))


def serial_harness_board(board: Board) -> Board:
    """The board building its serial test harness (firmware.serial_harness_template) instead of
    its own harness: what `run`/`validate` with --port or --place flash and talk to."""
    template = board.get("firmware.serial_harness_template")
    if not template:
        able = sorted(b.name for b in all_boards().values() if b.get("firmware.serial_harness_template"))
        raise UsageError(f"board '{board.name}' has no serial test harness (--port/--place work on: "
                         f"{', '.join(able)})")
    data = dict(board.data)
    data["firmware"] = {**board.data["firmware"], "harness_template": template}
    return replace(board, data=data)
