"""cuvil-sdk command line. Parsing only: each command calls one function in commands.py.

Exit codes: 0 ok, 2 bad option, 3 model/data rejected, 4 over the board's budget,
5 a tool failed or is missing, 6 the target faulted or hung, 7 flashing failed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from .errors import CuvilError, UsageError
from .paths import __version__
from .preflight import Command
from .quant.calibrate import METHODS


CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad option
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def add_model_options(p: argparse.ArgumentParser, model_positional: bool = False) -> None:
    if model_positional:
        p.add_argument("model", help="the ONNX model")
    else:
        p.add_argument("--model", help="the ONNX model")
    # --board and --profile are required, but may come from the project file (sdk/project_file.py):
    # every option that has a project key defaults to None here, and is checked once the file is read
    p.add_argument("--board", help="where it runs (see `cuvil-sdk boards`); required")
    p.add_argument("--profile", help="what it may contain (see `cuvil-sdk profiles`); required")
    p.add_argument("--precision", choices=["int8", "fp16", "fp32"], help="default: the profile's")
    p.add_argument("--calib", help="calibration samples (.npy/.npz), or 'random' (not representative)")
    p.add_argument("--calib-method", choices=METHODS, help="activation range method (default: minmax)")
    p.add_argument("--name", help="C symbol prefix (default: the model file's name)")
    p.add_argument("--verbose", action="store_true",
                   help="name every layer on a slower kernel one line each (default: one line per kernel "
                        "and reason past 8 layers; report.json lists them all)")
    p.add_argument("--accuracy-target", type=float, metavar="COSINE",
                   help="keep the layers that hurt most in higher precision (float in standard, int16 "
                        "activations in lite) until the model's outputs reach this cosine similarity to the "
                        "float model on the calibration data")
    p.add_argument("--accuracy-time", type=float, metavar="SECONDS",
                   help="--accuracy-target's search prints a line per step and stops after this long with the "
                        "best set it scored (default 600)")
    p.add_argument("--range-split", type=float, metavar="FACTOR",
                   help="int8: an output joined by a Concat (through Reshape/Transpose) from inputs whose ranges "
                        "differ more than FACTOR times keeps one scale per input (default 8; 0: off)")
    p.add_argument("--no-range-split", dest="range_split", action="store_const", const=0.0,
                   help="one int8 scale per output, even over ranges far apart (the build before the rule)")
    p.add_argument("--int16-layers", metavar="NAME,...", help="layers (Conv/Gemm/MatMul node names) to build "
                   "as 16x8: int16 activations, int8 weights")
    p.add_argument("--weight-bits", choices=["4", "8", "auto"],
                   help="int8 builds: the bits of the Conv/Gemm/MatMul weights (int8 activations either way): 8 "
                        "(default), 4 (symmetric per-channel int4 packed two per byte: about half the weight bytes), "
                        "or auto (int4 where the model keeps its cosine similarity to the float model on the "
                        "calibration data at --accuracy-target, else within 0.01 of the int8 model's)")
    p.add_argument("--int4-layers", metavar="NAME,...", help="layers (Conv/Gemm/MatMul node names) with int4 "
                   "weights, the others int8 (e.g. what --weight-bits auto chose)")
    p.add_argument("--input-shape", action="append", metavar="NAME=1x3x32x32",
                   help="fix an input's shape: its -1 and symbolic dimensions (repeatable)")
    p.add_argument("--input-value", action="append", metavar="NAME=VALUE",
                   help="pin a scalar input to a constant (e.g. sr=16000): it is no longer an input, and an If on "
                        "it keeps only the branch taken (repeatable)")
    p.add_argument("--input-precision", action="append", metavar="NAME=float|int16",
                   help="int8 builds: keep an input (a raw waveform, a recurrent state) and the first layer that "
                        "reads it out of int8: float (standard profile), or int16 with 16x8 layers (lite); "
                        "repeatable")
    # no argparse default: an option left unset must not override cuvil.toml's input-layout
    p.add_argument("--input-layout", choices=["nchw", "nhwc"],
                   help="nhwc: 4-D inputs take channels-last data (e.g. a camera frame), so no input transpose "
                        "runs on the device; the input's shape in the manifest and the C API becomes N,H,W,C "
                        "(default: nchw)")
    p.add_argument("--weight-layout", choices=["int8", "int16"],
                   help="cortex-m7: GEMM/FC weights in flash as int8 bytes widened in registers (default, the "
                        "board's weight_layout) or pre-widened int16 (faster, twice the weight bytes)")
    p.add_argument("--weights", choices=["linked", "region", "file"],
                   help="where the weight blob goes: linked into the library/firmware (default), region: a second "
                        "memory region of the board (cortex-m7: external memory), file: <name>.weights beside the "
                        "library, mapped at load time (Linux boards)")
    p.add_argument("--weights-region", metavar="REGION", help="with --weights region: the board memory region "
                   "(default: the board's weights_region)")
    p.add_argument("--arena-region", metavar="REGION", help="firmware: the board memory region of the arena "
                   "(default: ram; see `cuvil-sdk boards`)")
    p.add_argument("--arena-budget", type=int, metavar="BYTES",
                   help="the largest arena the build may use: over it, the first layers run in row bands (a band "
                        "of output rows at a time, recomputing the rows bands share) at the lowest cost that fits; "
                        "exit 4 naming the smallest arena reachable if none does (firmware default: the board's RAM)")
    add_plugin_option(p)
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")


def add_out_dir_option(p: argparse.ArgumentParser) -> None:
    """-o is the output folder in every command; --output, where a command takes it, is a file."""
    p.add_argument("-o", "--out-dir", dest="out_dir", metavar="DIR",
                   help="output folder (default: cuvil-build/<model>-<board>-<profile>)")
    p.add_argument("--output", dest="misplaced_output", help=argparse.SUPPRESS)


def add_config_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="the project file (default: cuvil.toml in the working folder, "
                   "if there is one); options given here override it")


def add_weights_file_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--weights-file", metavar="FILE", help="with --weights file: run with this weights file instead "
                   "of the one built beside the library (it is checked by size and CRC-32 as at load time)")


def add_jobs_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=int, help="parallel compile jobs (default: the number of CPUs)")


def add_plugin_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plugin", action="append", metavar="FILE.py|MODULE",
                   help="load custom ops from a plugin file or module (repeatable; see docs/custom_ops.md)")


def add_threads_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=int, metavar="N",
                   help="standard profile on Linux boards: split large layers over N threads per call "
                        "(default 1: single-threaded code, no thread support compiled in)")


def add_remote_options(p: argparse.ArgumentParser) -> None:
    """A real (or emulated) board over its serial port, or boards in a labgrid farm (docs/farm.md)."""
    p.add_argument("--port", help="run on the board at this serial port (a device or a pyserial URL such as "
                   "socket://127.0.0.1:PORT): flash the serial test harness through its ROM bootloader, "
                   "then send every sample over the port")
    p.add_argument("--flash-port", help="with --port: the ROM bootloader's port, where it is not --port "
                   "(nucleo-f767zi: a USB-serial adapter on USART1, while --port is the ST-LINK VCP)")
    p.add_argument("--place", action="append", metavar="NAME", help="run on the board of this labgrid place "
                   "(repeatable: the samples are shared out over the places)")
    p.add_argument("--coordinator", metavar="HOST:PORT", help="the labgrid coordinator (default: LG_COORDINATOR, "
                   "else 127.0.0.1:20408)")


def build_parser() -> Parser:
    parser = Parser(prog="cuvil-sdk", description="Compile ONNX models into C for microcontrollers and edge boards.")
    parser.add_argument("--version", action="version", version=f"cuvil-sdk {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    p = sub.add_parser("compile", help="generate the C sources of a model")
    add_model_options(p, model_positional=True)
    add_threads_option(p)
    add_out_dir_option(p)

    p = sub.add_parser("build", help="compile and build firmware or a shared library")
    add_model_options(p)
    add_threads_option(p)
    add_out_dir_option(p)
    add_config_option(p)
    add_jobs_option(p)
    p.add_argument("--run", action="store_true", help="then run the bundled example's test set on the target")

    p = sub.add_parser("run", help="build and run a model on data files (QEMU for boards)")
    add_model_options(p)
    add_threads_option(p)
    p.add_argument("--input", help="input samples (.npy or .npz); required")
    p.add_argument("--output", help="the outputs file to write (.npz keyed by output name), exactly as named; "
                   "required")
    p.add_argument("-o", "--out-dir", "--build-dir", dest="out_dir", metavar="DIR",
                   help="output folder: keep the build there, with report.json/report.html (and the per-layer "
                        "profile on QEMU boards); default: a temporary folder, removed")
    add_weights_file_option(p)
    add_config_option(p)
    add_jobs_option(p)
    add_remote_options(p)

    p = sub.add_parser("validate", help="accuracy of the built artifact on the target against ONNX Runtime "
                       "(plugin ops: the numpy reference)")
    add_model_options(p)
    p.add_argument("--data", help=".npz with inputs 'x' (or by input name) and optional labels 'y'; required")
    p.add_argument("--per-layer", action="store_true", help="also compare every layer's output (debug build)")
    p.add_argument("--metric", choices=["argmax", "topk", "detections"],
                   help="also a task metric of one output against the float model: argmax or top-k agreement of "
                        "the score fields, or detections (YOLOv8 rows: cx, cy, w, h, scores; threshold, NMS, "
                        "matched by IoU: precision, recall, F1); README, validate")
    p.add_argument("--score-slice", metavar="START:STOP", help="--metric: the score fields along the field axis "
                   "(the output's Concat axis, else the last), e.g. 4: for YOLOv8 (default: all)")
    p.add_argument("--metric-output", metavar="NAME", help="--metric: the output it reads (default: the first)")
    p.add_argument("--top-k", type=int, default=5, metavar="K", help="--metric topk: K (default 5)")
    p.add_argument("--conf", type=float, default=0.25, help="--metric detections: score threshold (default 0.25)")
    p.add_argument("--iou", type=float, default=0.5,
                   help="--metric detections: NMS and matching IoU (default 0.5)")
    p.add_argument("-o", "--out-dir", dest="out_dir", metavar="DIR",
                   help="keep the build there (and with --per-layer the debug build and the layers' values in "
                        "DIR/per-layer); default: a temporary folder, removed")
    add_weights_file_option(p)
    add_config_option(p)
    add_jobs_option(p)
    add_remote_options(p)

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

    p = sub.add_parser("init", help="write a commented starter project file (cuvil.toml) in this folder")
    p.add_argument("--config", metavar="FILE", default="cuvil.toml", help="the file to write (default: cuvil.toml)")
    p.add_argument("--force", action="store_true", help="replace the file if it exists")
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


def memory_text(row: dict) -> str:
    """'RAM 19.7 KiB of 512 KiB (3.85%)': a memory row of the build report, as one phrase."""
    text = f"{row['what']} {row['kib']:.1f} KiB"
    if row["budget_kib"] is not None:
        text += f" of {row['budget_kib']:.0f} KiB ({row['share_percent']:.2f}%)"
    return text


def human_build(info: dict) -> str:
    from .reports.report import memory_summary  # the report module loads jinja2: only when a build reports
    lines = [f"built {info['name']} for {info['board']} ({info['precision']}, profile {info['profile']})"]
    lines.append("  " + "; ".join(memory_text(row) for row in memory_summary(info)["rows"]))
    values = info.get("weight_values")
    if values:  # --weight-bits builds: the weight values as stored against int8 and int4
        lines.append(f"  weights (values) {values['stored_bytes']} B as stored, {values['int8_bytes']} B as int8, "
                     f"{values['int4_bytes']} B as int4 (--weight-bits {info['weight_bits']}: "
                     f"{len(info.get('int4_layers', []))} int4 layer(s))")
    for kind, path in sorted(info.get("artifacts", {}).items()):
        lines.append(f"  {kind:4} {path}")
    return "\n".join(lines)


def do_list(args: argparse.Namespace) -> None:
    from . import commands
    if args.command == "boards":
        report = commands.list_boards()
        emit(report, args.json, "\n".join(f"{b['name']:18} {b['kind']:15} {b['description']}" for b in report["boards"]))
    else:
        report = commands.list_profiles()
        emit(report, args.json, "\n".join(f"{p['name']:10} {p['description']}" for p in report["profiles"]))


def do_ops(args: argparse.Namespace) -> None:
    from . import commands
    from .plugins import human_ops
    report = commands.list_ops(args.plugin)
    emit(report, args.json, human_ops(report))


def do_compile(plan) -> None:
    from . import commands
    args = plan.runs[0]
    req = commands.make_request(args)
    info = commands.do_compile(req, req.output_folder())
    report = {k: info[k] for k in ("name", "board", "profile", "precision", "arena_bytes", "weight_bytes", "out_dir",
                                   "fallbacks")}
    emit(report, args.json, f"generated {info['name']} in {info['out_dir']} (arena {info['arena_bytes']} B)")


def do_build(plan) -> None:
    from . import commands
    args = plan.runs[0]
    if plan.image:  # several models in one firmware image
        info = commands.do_build_image(plan)
        report = commands.summary_of_image(info)
        emit(report, args.json, human_image(info, report))
        return
    if len(plan.runs) > 1:  # several models, each built on its own (not one firmware board)
        infos = [commands.do_build(req, req.output_folder(), req.jobs)
                 for req in (commands.make_request(run) for run in plan.runs)]
        emit({"models": [commands.summary_of_build(i) for i in infos]}, args.json,
             "\n".join(human_build(i) for i in infos))
        return
    req = commands.make_request(args)
    info = commands.do_build(req, req.output_folder(), req.jobs)
    report = commands.summary_of_build(info)
    human = human_build(info)
    if args.run:
        report["run"] = commands.example_accuracy(req.board, info)
        human += (f"\n  accuracy {report['run']['accuracy']:.4f} on {report['run']['samples']} test images")
        if "instructions" in report["run"]:
            human += instructions_line(report["run"])
    emit(report, args.json, human)


def human_image(info: dict, report: dict) -> str:
    lines = [human_build(info)]
    for m in report["models"]:
        lines.append(f"  model {m['name']}: arena {m['arena_bytes']} B, weights {m['weights_bytes']} B, "
                     f"flash {m['flash_bytes']} B")
    lines.append(f"  arena {'shared' if info['shared_arena'] else 'one per model'}: {info['arena_bytes']} B")
    return "\n".join(lines)


def instructions_line(report: dict) -> str:
    return f"\n  {report['instructions']} guest instructions per inference ({report['instructions_note']})"


def human_run(report: dict) -> str:
    human = f"ran {report['samples']} samples on {report['board']}; outputs in {report['outputs']}"
    if "instructions" in report:
        human += instructions_line(report)
    if "cycles" in report:
        human += f"\n  {report['cycles']} cycles per inference ({report['cycles_note']})"
    if "unverified_counts_per_sample" in report:  # never printed as instructions
        counts = report["unverified_counts_per_sample"]
        human += f"\n  counts per inference {min(counts)}-{max(counts)}: {report['unverified_counts_note']}"
    if "time_per_inference_us" in report:
        human += (f"\n  {report['time_per_inference_us']:.1f} us per inference (median of {report['timing_repeats']}"
                  f" runs; {report['timing_note']})")
    if report.get("report_html"):
        human += f"\n  report with the per-layer profile: {report['report_html']}"
    return human


def do_run(plan) -> None:
    from . import commands
    args = plan.runs[plan.selected]
    out_dir = Path(args.out_dir) if args.out_dir else None
    if plan.image:
        report = commands.do_run_in_image(plan, Path(args.input), Path(args.output), out_dir)
    else:
        req, target = commands.remote_target(commands.make_request(args), args)
        report = commands.do_run(req, Path(args.input), Path(args.output), out_dir, args.jobs, target)
    emit(report, args.json, human_run(report))


def do_validate(plan) -> None:
    from . import commands
    from .validate import human_table, validate
    args = plan.runs[plan.selected]
    build = commands.image_builder(plan) if plan.image else None
    req, target = commands.remote_target(commands.make_request(args), args)
    if target is not None and build is not None:
        raise UsageError("--port/--place run one model's serial harness, not a firmware image of several models")
    report = validate(req, Path(args.data), args.per_layer, args.jobs, build=build, target=target,
                      out_dir=Path(args.out_dir) if args.out_dir else None, metric=task_metric_of(args))
    emit(report, args.json, human_table(report))


def task_metric_of(args: argparse.Namespace):
    """validate's --metric and its options (sdk/task_metrics.py); options without --metric are refused."""
    from .task_metrics import TaskMetric
    if args.metric is None:
        if args.score_slice is not None or args.metric_output is not None:
            raise UsageError("--score-slice and --metric-output go with --metric argmax|topk|detections")
        return None
    return TaskMetric(args.metric, args.metric_output, args.score_slice, args.top_k, args.conf, args.iou)


def do_init(args: argparse.Namespace) -> None:
    from .project_file import write_starter
    path = write_starter(Path(args.config), args.force)
    emit({"project_file": str(path.resolve())}, args.json,
         f"wrote {path}: set `model` and `calib` (and board, profile), then run `cuvil-sdk build`")


def do_flash(args: argparse.Namespace) -> None:
    from .boards import get_board
    from .flash.command import flash_command
    report = flash_command(get_board(args.board), args.port, args.baud, Path(args.firmware),
                           allow_mass_erase=args.allow_mass_erase, progress=sys.stderr.isatty(), json_out=args.json)
    unconfirmed = "" if report["go_confirmed"] else " (written and verified; start not confirmed)"
    emit(report, args.json, f"flashed {args.firmware} to {args.board} on {args.port}{unconfirmed}")


COMMANDS = {"boards": do_list, "profiles": do_list, "flash": do_flash, "ops": do_ops, "init": do_init}
MODEL_COMMANDS = {"compile": do_compile, "build": do_build, "run": do_run, "validate": do_validate}


def command_of(args: argparse.Namespace, command: str | None = None) -> Command:
    """The parsed options preflight checks, as plain values (`command` overrides the parsed one:
    the models of an image that run/validate does not select are only built)."""
    return Command(command=command or args.command, board=getattr(args, "board", None),
                   model=getattr(args, "model", None), precision=getattr(args, "precision", None),
                   accuracy_target=getattr(args, "accuracy_target", None),
                   int16_layers=getattr(args, "int16_layers", None), weight_bits=getattr(args, "weight_bits", None),
                   int4_layers=getattr(args, "int4_layers", None), run=bool(getattr(args, "run", False)),
                   remote=bool(getattr(args, "port", None) or getattr(args, "place", None)),
                   per_layer=bool(getattr(args, "per_layer", False)), output=getattr(args, "output", None),
                   misplaced_output=getattr(args, "misplaced_output", None), out_dir=getattr(args, "out_dir", None))


def check_plan(plan) -> None:
    """Every model of the command (sdk/project_file.py's Plan) through preflight before any work;
    in an image, the models run/validate does not select are only built."""
    from .preflight import check_command, check_image
    for i, args in enumerate(plan.runs):
        check_command(command_of(args, None if i == plan.selected else "build"))
    if plan.image:
        check_image(plan.runs[0].board)


def dispatch(args: argparse.Namespace) -> None:
    from .preflight import check_command
    if args.command not in MODEL_COMMANDS:
        check_command(command_of(args))
        COMMANDS[args.command](args)
        return
    from .boards import get_board
    from .project_file import plan_command
    plan = plan_command(args, lambda board: get_board(board).kind)  # the project file merged in, if any
    check_plan(plan)  # refuse what cannot work before any work is done
    MODEL_COMMANDS[args.command](plan)


def wants_json(argv: list[str] | None) -> bool:
    """--json, read from the raw arguments so that a parse error can honour it too."""
    return "--json" in (sys.argv[1:] if argv is None else argv)


def fail(kind: str, message: str, exit_code: int, as_json: bool) -> int:
    """One line on stderr; with --json also {"error", "exit_code"} on stdout. Control
    characters (a model's names may hold newlines) are shown escaped, so it stays one line."""
    message = CONTROL_CHARS.sub(lambda m: f"\\x{ord(m.group()):02x}", message)
    print(f"cuvil-sdk: {kind}{message}", file=sys.stderr)
    if as_json:
        try:
            print(json.dumps({"error": message, "exit_code": exit_code}))
        except BrokenPipeError:
            pass
    return exit_code


def quiet_broken_pipe() -> int:
    """The reader of stdout went away (`cuvil-sdk boards | head -1`): stop quietly, and send
    what is still buffered to /dev/null so Python's exit does not complain again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


def main(argv: list[str] | None = None) -> int:
    from .interrupts import Terminated, install_handlers, interrupted_exit
    as_json = wants_json(argv)
    install_handlers()
    try:
        args = build_parser().parse_args(argv)
        dispatch(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return 0
    except BrokenPipeError:
        return quiet_broken_pipe()
    except CuvilError as exc:
        return fail("error: ", str(exc), exc.exit_code, as_json)
    except (KeyboardInterrupt, Terminated) as exc:
        return interrupted_exit(exc, as_json)
    except OSError as exc:  # a write refused by the file system outside a staged folder: the system's failure
        from .staging import storage_failure
        if not storage_failure(exc) or os.environ.get("CUVIL_DEBUG"):
            return internal_error(exc, as_json)
        where = f" '{exc.filename}'" if exc.filename else ""
        return fail("error: ", f"cannot write{where}: {os.strerror(exc.errno)}", 5, as_json)
    except Exception as exc:
        return internal_error(exc, as_json)


def internal_error(exc: Exception, as_json: bool) -> int:
    """A bug of ours: one line, unless debugging."""
    if os.environ.get("CUVIL_DEBUG"):
        raise exc
    return fail("", f"internal error: {type(exc).__name__}: {exc} (set CUVIL_DEBUG=1 for details)", 1, as_json)


if __name__ == "__main__":
    sys.exit(main())
