"""Option combinations that cannot work, refused (exit 2) before any model is loaded or built,
so that a user does not wait for a build to learn that the board cannot do what was asked."""
from __future__ import annotations

import argparse
import platform
from pathlib import Path

from .boards import Board, get_board
from .errors import UsageError


def runs_natively(board: Board) -> bool:
    """A shared library this process can load with ctypes (the host boards)."""
    return board.kind == "shared_library" and board.get("arch", "") == platform.machine()


def can_run(board: Board) -> bool:
    """`run`, `validate` and `build --run` need the board's artifact to run here."""
    return runs_natively(board) or bool(board.get("run.command"))


def can_dump_layers(board: Board) -> bool:
    """Per-layer dumps come from ctypes callbacks (host) or the firmware harness (QEMU boards)."""
    return runs_natively(board) or (board.kind == "firmware" and bool(board.get("run.command")))


def check_runnable(board: Board, what: str) -> None:
    if not can_run(board):
        raise UsageError(f"{what} needs a board that runs here; board '{board.name}' does not "
                         f"({board.get('run.how', 'no run command')})")


def check_remote(board: Board, args: argparse.Namespace) -> None:
    """--port/--place: a board with a serial harness, no per-layer dumps (they need semihosting)."""
    if not board.get("firmware.serial_harness_template"):
        from .boards import serial_harness_board
        serial_harness_board(board)  # the UsageError that names the boards that have one
    if getattr(args, "per_layer", False):
        raise UsageError("--per-layer needs the semihosting harness under QEMU: not with --port or --place")


def check_output_file(path: str) -> None:
    """--output is a file: refuse a folder before the build, not when writing the outputs."""
    if Path(path).is_dir():
        raise UsageError(f"--output '{path}' is a folder; --output names the outputs file (.npz), "
                         f"-o the output folder")


def check_misplaced_output(args: argparse.Namespace) -> None:
    """compile and build take the output folder as -o/--out-dir; --output is run's outputs file."""
    if getattr(args, "misplaced_output", None) is not None:
        raise UsageError(f"`{args.command}` takes its output folder as -o/--out-dir DIR; --output names the "
                         f"outputs file of `cuvil-sdk run`")


def check_precision_options(args: argparse.Namespace) -> None:
    """--accuracy-target and --int16-layers change int8 builds only; with another precision
    they would be silently ignored."""
    if args.precision in (None, "int8"):
        return
    for option, value in (("--accuracy-target", args.accuracy_target), ("--int16-layers", args.int16_layers)):
        if value:
            raise UsageError(f"{option} applies to int8 builds, not --precision {args.precision}")


def check_options(args: argparse.Namespace) -> None:
    """Everything about the options alone that can be checked before any work."""
    check_misplaced_output(args)
    if args.command not in ("compile", "build", "run", "validate"):
        return
    board = get_board(args.board)
    check_precision_options(args)
    if args.command == "build" and getattr(args, "run", False):
        if args.model:
            raise UsageError("--run runs the bundled example; use `cuvil-sdk run` for your own model")
        check_runnable(board, "build --run")
    remote = getattr(args, "port", None) or getattr(args, "place", None)
    if args.command in ("run", "validate") and remote:
        check_remote(board, args)
    elif args.command in ("run", "validate"):
        check_runnable(board, args.command)
    if args.command == "run":
        check_output_file(args.output)
    if args.command == "validate" and args.per_layer and not can_dump_layers(board):
        raise UsageError(f"--per-layer needs per-layer dumps, which board '{board.name}' cannot give yet "
                         f"(host boards and QEMU firmware boards can)")


def check_plan(plan) -> None:
    """check_options for every model of the command (sdk/project_file.py's Plan); in an image,
    the models run/validate does not select are only built."""
    for i, args in enumerate(plan.runs):
        check_options(args if i == plan.selected else argparse.Namespace(**{**vars(args), "command": "build"}))
    if plan.image:
        board = get_board(plan.runs[0].board)
        if not board.get("firmware.multi_harness_template"):
            raise UsageError(f"board '{board.name}' cannot hold several models in one image yet; build each "
                             f"model on its own (cuvil-sdk build --model FILE)")
