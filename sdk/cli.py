"""cuvil-sdk command line. Parsing only: each command calls one function in commands.py.

Exit codes: 0 ok, 2 bad option, 3 model/data rejected, 4 over the board's budget,
5 a tool failed or is missing, 6 the target faulted or hung, 7 flashing failed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import __version__
from .errors import CuvilError, UsageError
from .quant.calibrate import METHODS


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad option
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def add_model_options(p: argparse.ArgumentParser, model_positional: bool = False) -> None:
    if model_positional:
        p.add_argument("model", help="the ONNX model")
    else:
        p.add_argument("--model", help="the ONNX model")
    p.add_argument("--board", required=True, help="where it runs (see `cuvil-sdk boards`)")
    p.add_argument("--profile", required=True, help="what it may contain (see `cuvil-sdk profiles`)")
    p.add_argument("--precision", choices=["int8", "fp16", "fp32"], help="default: the profile's")
    p.add_argument("--calib", help="calibration samples (.npy/.npz), or 'random' (not representative)")
    p.add_argument("--calib-method", choices=METHODS, default="minmax", help="activation range method")
    p.add_argument("--name", help="C symbol prefix (default: the model file's name)")
    p.add_argument("--accuracy-target", type=float, metavar="COSINE",
                   help="keep the layers that hurt most in higher precision (float in standard, int16 "
                        "activations in lite) until the model's outputs reach this cosine similarity to the "
                        "float model on the calibration data")
    p.add_argument("--int16-layers", metavar="NAME,...", help="layers (Conv/Gemm/MatMul node names) to build "
                   "as 16x8: int16 activations, int8 weights")
    p.add_argument("--input-shape", action="append", metavar="NAME=1x3x32x32", help="fix a dynamic input shape")
    add_plugin_option(p)
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")


def add_plugin_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plugin", action="append", metavar="FILE.py|MODULE",
                   help="load custom ops from a plugin file or module (repeatable; see docs/custom_ops.md)")


def add_threads_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="standard profile on Linux boards: split large layers over N threads per call "
                        "(default 1: single-threaded code, no thread support compiled in)")


def build_parser() -> Parser:
    parser = Parser(prog="cuvil-sdk", description="Compile ONNX models into C for microcontrollers and edge boards.")
    parser.add_argument("--version", action="version", version=f"cuvil-sdk {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    p = sub.add_parser("compile", help="generate the C sources of a model")
    add_model_options(p, model_positional=True)
    add_threads_option(p)
    p.add_argument("-o", "--output", help="output folder")

    p = sub.add_parser("build", help="compile and build firmware or a shared library")
    add_model_options(p)
    add_threads_option(p)
    p.add_argument("-o", "--output", help="output folder")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="parallel compile jobs")
    p.add_argument("--run", action="store_true", help="then run the bundled example's test set on the target")

    p = sub.add_parser("run", help="build and run a model on data files (QEMU for boards)")
    add_model_options(p)
    add_threads_option(p)
    p.add_argument("--input", required=True, help="input samples (.npy or .npz)")
    p.add_argument("--output", required=True, help="where to write outputs (.npz)")
    p.add_argument("-o", "--build-dir", help="keep the build here")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)

    p = sub.add_parser("validate", help="accuracy of the built artifact on the target against ONNX Runtime")
    add_model_options(p)
    p.add_argument("--data", required=True, help=".npz with inputs 'x' (or by input name) and optional labels 'y'")
    p.add_argument("--per-layer", action="store_true", help="also compare every layer's output (debug build)")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)

    p = sub.add_parser("flash", help="flash firmware over a serial port (AN3155 bootloader)")
    p.add_argument("firmware", help="the .bin or .hex image")
    p.add_argument("--board", required=True)
    p.add_argument("--port", required=True, help="a serial device or a pyserial URL (socket://host:port)")
    p.add_argument("--baud", type=int, default=115200)
    p.add_argument("--allow-mass-erase", action="store_true", help="allow erasing the whole flash")
    p.add_argument("--json", action="store_true")

    for name, text in (("boards", "list the boards"), ("profiles", "list the profiles")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--json", action="store_true")

    p = sub.add_parser("ops", help="list the ops (built-in and from plugins), their int8 rule and kernel sets")
    add_plugin_option(p)
    p.add_argument("--json", action="store_true")
    return parser


def emit(report: dict, as_json: bool, human: str) -> None:
    if as_json:
        print(json.dumps(report, indent=2, default=str))
        if human:
            print(human, file=sys.stderr)
    else:
        print(human)


def human_build(info: dict) -> str:
    lines = [f"built {info['name']} for {info['board']} ({info['precision']}, profile {info['profile']})"]
    lines.append(f"  arena {info.get('arena_bytes')} B, RAM {info.get('ram_bytes')} B, flash {info.get('flash_bytes')} B")
    for kind, path in sorted(info.get("artifacts", {}).items()):
        lines.append(f"  {kind:4} {path}")
    return "\n".join(lines)


def dispatch(args: argparse.Namespace) -> None:
    from . import commands
    if args.command == "boards":
        report = commands.list_boards()
        emit(report, args.json, "\n".join(f"{b['name']:18} {b['kind']:15} {b['description']}" for b in report["boards"]))
    elif args.command == "profiles":
        report = commands.list_profiles()
        emit(report, args.json, "\n".join(f"{p['name']:10} {p['description']}" for p in report["profiles"]))
    elif args.command == "ops":
        from .plugins import human_ops
        report = commands.list_ops(args.plugin)
        emit(report, args.json, human_ops(report))
    elif args.command == "compile":
        req = commands.make_request(args)
        req.threads = args.threads
        out = Path(args.output) if args.output else commands.default_out_dir(req.model, req.board, req.profile.name)
        info = commands.do_compile(req, out)
        report = {k: info[k] for k in ("name", "board", "profile", "precision", "arena_bytes", "weight_bytes", "out_dir")}
        emit(report, args.json, f"generated {info['name']} in {info['out_dir']} (arena {info['arena_bytes']} B)")
    elif args.command == "build":
        req = commands.make_request(args)
        req.threads = args.threads
        out = Path(args.output) if args.output else commands.default_out_dir(req.model, req.board, req.profile.name)
        info = commands.do_build(req, out, args.jobs)
        report = commands.summary_of_build(info)
        human = human_build(info)
        if args.run:
            if args.model:
                raise UsageError("--run runs the bundled example; use `cuvil-sdk run` for your own model")
            report["run"] = commands.example_accuracy(req.board, info)
            human += (f"\n  accuracy {report['run']['accuracy']:.4f} on {report['run']['samples']} test images")
            if "instructions" in report["run"]:
                human += f"\n  {report['run']['instructions']} guest instructions per inference (QEMU -icount, not cycles)"
        emit(report, args.json, human)
    elif args.command == "run":
        req = commands.make_request(args)
        req.threads = args.threads
        report = commands.do_run(req, Path(args.input), Path(args.output), Path(args.build_dir) if args.build_dir
                                 else None, args.jobs)
        human = f"ran {report['samples']} samples on {report['board']}; outputs in {report['outputs']}"
        if "instructions" in report:
            human += f"\n  {report['instructions']} guest instructions per inference (QEMU -icount, not cycles)"
        emit(report, args.json, human)
    elif args.command == "validate":
        from .validate import human_table, validate
        req = commands.make_request(args)
        report = validate(req, Path(args.data), args.per_layer, args.jobs)
        emit(report, args.json, human_table(report))
    elif args.command == "flash":
        from .boards import get_board
        from .flash.command import flash_command
        report = flash_command(get_board(args.board), args.port, args.baud, Path(args.firmware),
                               allow_mass_erase=args.allow_mass_erase, progress=sys.stderr.isatty(),
                               json_out=args.json)
        emit(report, args.json, f"flashed {args.firmware} to {args.board} on {args.port}")


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        dispatch(args)
        return 0
    except CuvilError as exc:
        print(f"cuvil-sdk: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("cuvil-sdk: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: one line, unless debugging
        if os.environ.get("CUVIL_DEBUG"):
            raise
        print(f"cuvil-sdk: internal error: {type(exc).__name__}: {exc} (set CUVIL_DEBUG=1 for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
