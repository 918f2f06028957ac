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


def artifact_files(name: str, board: Board) -> dict[str, str]:
    """Artifact kinds and the file names the board's build may make."""
    kinds = {"so": f"lib{name}.so", "elf": f"{name}.elf", "bin": f"{name}.bin", "hex": f"{name}.hex",
             "map": f"{name}.map", "weights": f"{name}.weights"}
    for region in board.get("memory.regions", []):  # firmware: the image of each further region that holds data
        kinds[f"bin_{region['name']}"] = f"{name}_{region['name']}.bin"
    return kinds


def required_kinds(board: Board, weights_placement: str | None) -> list[str]:
    """What every build for the board makes: a firmware's ELF, flash image, hex and link map; a
    library; and the weights file of a --weights file build."""
    kinds = ["elf", "bin", "hex", "map"] if board.kind == "firmware" else ["so"]
    return kinds + (["weights"] if weights_placement == "file" else [])


def artifacts(project: Path, final: Path, name: str, board: Board, weights_placement: str | None = None) -> dict[str, str]:
    """Map artifact kinds to absolute paths (as they will be once the folder is final). A build
    that the tools called a success but that lacks a file every such build makes fails (exit 5),
    naming the file: it is never reported as built without it."""
    build = project / "build"
    present = {kind: f for kind, f in artifact_files(name, board).items()
               if (build / f).is_file() and (build / f).stat().st_size > 0}
    missing = [artifact_files(name, board)[k] for k in required_kinds(board, weights_placement) if k not in present]
    if missing:
        raise ToolError(f"the {board.name} build reported success but did not make {', '.join(missing)} "
                        f"(in {final / 'build'}); nothing was kept")
    return {kind: str(final / "build" / f) for kind, f in present.items()}
