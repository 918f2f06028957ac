"""Build a generated project with SCons, run as a separate process (never imported)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from .boards import Board
from .codegen.plugin_lines import user_locations
from .errors import ToolError
from .paths import PACKAGE_DIR

SCONSTRUCT = PACKAGE_DIR / "SConstruct"


def required_tools(board: Board) -> list[tuple[str, str]]:
    """(executable, Debian package) pairs the board's build needs."""
    tools = board.get("toolchain.requires", [])
    cc = board.get("toolchain.cc")
    if cc:
        tools = [[cc, board.get("toolchain.package", "gcc")]] + list(tools)
    return [(t[0], t[1]) for t in tools]


def check_tools(board: Board) -> None:
    for exe, package in required_tools(board):
        if shutil.which(exe) is None:
            raise ToolError(f"'{exe}' not found: install the Debian package '{package}' (board '{board.name}')")


def scons_command(project: Path, jobs: int = 1) -> list[str]:
    """SCons as a module of this Python (never whatever `scons` is on PATH), so the build
    uses the SCons that was installed with the SDK."""
    return [sys.executable, "-m", "SCons", "-Q", "-f", str(SCONSTRUCT), "-C", str(project), f"-j{max(1, jobs)}"]


def run_scons(project: Path, board: Board, jobs: int = 1) -> None:
    check_tools(board)
    cmd = scons_command(project, jobs)
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        lines = [l for l in (result.stderr + result.stdout).splitlines() if l.strip()]
        errors = [l for l in lines if "error" in l.lower()] or lines
        (project / "build").mkdir(exist_ok=True)
        (project / "build" / "scons.log").write_text(result.stdout + result.stderr)
        # an error in a plugin kernel's copy is the user's, at their file and line (the copy is
        # removed with the failed build); chosen before rewriting, as the user's path may say "error"
        first = user_locations(errors[0], project) if errors else "scons failed"
        raise ToolError(f"the {board.name} build failed: {first[:300]}")


def artifacts(project: Path, final: Path, name: str, board: Board) -> dict[str, str]:
    """Map artifact kinds to absolute paths (as they will be once the folder is final)."""
    build = project / "build"
    kinds = {"so": f"lib{name}.so", "elf": f"{name}.elf", "bin": f"{name}.bin", "hex": f"{name}.hex",
             "map": f"{name}.map", "weights": f"{name}.weights"}
    for region in board.get("memory.regions", []):  # firmware: the image of each further region that holds data
        kinds[f"bin_{region['name']}"] = f"{name}_{region['name']}.bin"
    return {kind: str(final / "build" / f) for kind, f in kinds.items()
            if (build / f).exists() and (build / f).stat().st_size > 0}
