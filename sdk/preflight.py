"""Option combinations that cannot work, refused (exit 2) before any model is loaded or built,
so that a user does not wait for a build to learn that the board cannot do what was asked."""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from .boards import Board, get_board
from .errors import UsageError
from .request import CompileRequest


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


@dataclass(frozen=True)
class Command:
    """What a command asks beyond the build itself, as plain values (sdk/cli.py fills it from its
    options and cuvil.toml; the Python API from its calls)."""

    command: str  # compile, build, run, validate, or a listing command
    board: str | None = None
    model: str | None = None
    precision: str | None = None
    accuracy_target: float | None = None
    int16_layers: str | list[str] | None = None
    weight_bits: str | int | None = None
    int4_layers: str | list[str] | None = None
    run: bool = False  # build --run: the bundled example's accuracy
    remote: bool = False  # --port or --place
    per_layer: bool = False  # validate --per-layer
    output: str | None = None  # run --output
    out_dir: str | None = None  # -o/--out-dir
    misplaced_output: str | None = None  # compile/build given --output (run's option) instead of -o


def check_remote(board: Board, per_layer: bool) -> None:
    """--port/--place: a board with a serial harness, no per-layer dumps (they need semihosting)."""
    if not board.get("firmware.serial_harness_template"):
        from .boards import serial_harness_board
        serial_harness_board(board)  # the UsageError that names the boards that have one
    if per_layer:
        raise UsageError("--per-layer needs the semihosting harness under QEMU: not with --port or --place")


def check_output_file(path: str) -> None:
    """--output is a file: refuse a folder before the build, not when writing the outputs."""
    if Path(path).is_dir():
        raise UsageError(f"--output '{path}' is a folder; --output names the outputs file (.npz), "
                         f"-o the output folder")
    check_creatable(path, "--output")


def check_creatable(path: str | Path, option: str) -> None:
    """A path the command will create (a file or a folder, with its missing parents): refused
    before any work when a parent is a file or the nearest existing folder is not writable,
    rather than failing after the build."""
    path = Path(path)
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{option} '{path}': '{parent}' is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise UsageError(f"{option} '{path}': cannot write in '{parent}' (permission denied)")
            return


def check_out_dir(path: str | None) -> None:
    """-o DIR (or the API's out_dir): a folder, so neither an existing file nor under one."""
    if path is None:
        return
    if Path(path).exists() and not Path(path).is_dir():
        raise UsageError(f"-o '{path}' is a file; -o names the output folder")
    check_creatable(path, "-o")


def check_misplaced_output(cmd: Command) -> None:
    """compile and build take the output folder as -o/--out-dir; --output is run's outputs file."""
    if cmd.misplaced_output is not None:
        raise UsageError(f"`{cmd.command}` takes its output folder as -o/--out-dir DIR; --output names the "
                         f"outputs file of `cuvil-sdk run`")


def check_precision_options(precision: str | None, accuracy_target: float | None, int16_layers: object,
                            weight_bits: object = None, int4_layers: object = None) -> None:
    """--accuracy-target, --int16-layers, --weight-bits and --int4-layers change int8 builds only;
    with another precision they would be silently ignored (float builds have no integer weights)."""
    if int4_layers and weight_bits is not None:
        raise UsageError(f"--int4-layers names the int4 layers itself: not with --weight-bits {weight_bits}")
    if precision in (None, "int8"):
        return
    for option, value in (("--accuracy-target", accuracy_target), ("--int16-layers", int16_layers),
                          ("--weight-bits", weight_bits), ("--int4-layers", int4_layers)):
        if value is not None and value != [] and value != "":
            raise UsageError(f"{option} applies to int8 builds, not --precision {precision}")


def check_request(req: CompileRequest) -> None:
    """The one check of a build request before its model is read (the Python API's and, through
    check_command, the command line's)."""
    check_precision_options(req.precision, req.accuracy_target, req.int16_layers, req.weight_bits, req.int4_layers)
    check_out_dir(None if req.out_dir is None else str(req.out_dir))


def check_command(cmd: Command) -> None:
    """Everything about a command's options alone that can be checked before any work."""
    check_misplaced_output(cmd)
    if cmd.command not in ("compile", "build", "run", "validate"):
        return
    board = get_board(cmd.board)
    check_precision_options(cmd.precision, cmd.accuracy_target, cmd.int16_layers, cmd.weight_bits, cmd.int4_layers)
    check_out_dir(cmd.out_dir)
    if cmd.command == "build" and cmd.run:
        if cmd.model:
            raise UsageError("--run runs the bundled example; use `cuvil-sdk run` for your own model")
        check_runnable(board, "build --run")
    if cmd.command in ("run", "validate") and cmd.remote:
        check_remote(board, cmd.per_layer)
    elif cmd.command in ("run", "validate"):
        check_runnable(board, cmd.command)
    if cmd.command == "run":
        check_output_file(cmd.output)
    if cmd.command == "validate" and cmd.per_layer and not can_dump_layers(board):
        raise UsageError(f"--per-layer needs per-layer dumps, which board '{board.name}' cannot give yet "
                         f"(host boards and QEMU firmware boards can)")


def check_image(board_name: str) -> None:
    """Several models in one firmware image need a board with a multi-model harness."""
    board = get_board(board_name)
    if not board.get("firmware.multi_harness_template"):
        raise UsageError(f"board '{board.name}' cannot hold several models in one image yet; build each "
                         f"model on its own (cuvil-sdk build --model FILE)")
