"""What each CLI command does. cli.py parses; these functions take plain values."""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from typing import Iterator
from pathlib import Path

import numpy as np

from .boards import Board, all_boards
from .build_info import BuildInfo
from .compiler import compile_into, compile_model, input_graph
from .data import load_samples, require_file, write_outputs
from .errors import BudgetError, ToolError, UsageError
from .paths import PACKAGE_DIR
from .profiles import all_profiles
from .reports import write_report
from .request import OPTIONS, CompileRequest, default_out_dir, new_request
from .scons_build import artifacts, run_scons
from .staging import KEPT_ON_FAILURE, StagedOutput

EXAMPLES = PACKAGE_DIR / "examples"
EXAMPLE_MODEL = EXAMPLES / "digits_cnn.onnx"
EXAMPLE_DATA = EXAMPLES / "digits_data.npz"
EXAMPLE_CALIB = EXAMPLES / "digits_calib.npy"


def do_compile(req: CompileRequest, out_dir: Path) -> BuildInfo:
    with StagedOutput(out_dir) as stage:
        info = compile_into(req, stage)
    info["out_dir"] = str(out_dir.resolve())
    return info


def do_build(req: CompileRequest, out_dir: Path, jobs: int) -> BuildInfo:
    out_dir = out_dir.resolve()
    with StagedOutput(out_dir) as stage:
        info = compile_into(req, stage)  # the whole project: model, kernels, harness, linker script, build.json
        with link_map_kept_on_budget_error(stage, out_dir, info["name"]):
            if req.progress:
                print(f"cuvil-sdk: compiling {len(info['sources'])} C files for {req.board.name} (-j{jobs}) ...",
                      file=sys.stderr, flush=True)
            build_checked(stage, req.board, info["name"], jobs)
            made = artifacts(stage, out_dir, info["name"], req.board, info.get("weights", {}).get("placement"))
            report = memory_report(req.board, stage, info)
        info.update(report)
        info["artifacts"] = made
        write_report(info, stage)
        info["artifacts"].update({"report_json": str(out_dir / "report.json"),
                                  "report_html": str(out_dir / "report.html")})
    info["out_dir"] = str(out_dir)
    return info


@contextlib.contextmanager
def link_map_kept_on_budget_error(stage: Path, out_dir: Path, name: str) -> Iterator[None]:
    """A build over budget fails, and its staged folder is removed; its link map (what took
    the space) is kept under the requested output folder, and the error says where."""
    try:
        yield
    except BudgetError as exc:
        link_map = stage / "build" / f"{name}.map"
        if not link_map.is_file():
            raise
        kept = out_dir / KEPT_ON_FAILURE / link_map.name
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(link_map, kept)
        raise BudgetError(f"{exc}; the link map is kept in {kept}") from None


def build_checked(stage: Path, board: Board, name: str, jobs: int) -> None:
    """Run the build; a firmware link that overflows the budget regions is a BudgetError
    naming what took the space, not a tool failure."""
    try:
        run_scons(stage, board, jobs)
    except ToolError:
        log = stage / "build" / "scons.log"
        if board.kind == "firmware" and log.exists():
            from .build_report import budget_error_from_link
            budget = budget_error_from_link(log.read_text(), stage / "build" / f"{name}.map", board, name)
            if budget is not None:
                raise budget from None
        raise


def memory_report(board: Board, stage: Path, info: BuildInfo) -> BuildInfo:
    if board.kind == "firmware":
        from .build_report import check_budget, check_no_malloc, size_report
        name = info["name"]
        build = stage / "build"
        models = tuple(m["name"] for m in info.get("models", []))  # an image of several models
        report = size_report(build / f"{name}.elf", build / f"{name}.map", sorted(build.rglob("*.su")), board,
                             models=models)
        check_budget(report)
        objects = [o for n in models or (name,) for o in sorted(build.glob(f"obj/{n}*.o"))]
        check_no_malloc(build / f"{name}.elf", board, objects)
        if models:
            report["models_memory"] = report.pop("models")
        return report
    lib = stage / "build" / f"lib{info['name']}.so"
    return {"arena_bytes": info["arena_bytes"], "ram_bytes": info["arena_bytes"],
            "flash_bytes": lib.stat().st_size,
            "flash_budget": board.flash_bytes, "ram_budget": board.ram_bytes}


# --- several models in one firmware image (a project file with two or more [[models]]) ----------
def image_requests(plan) -> list[CompileRequest]:
    """One request per model of the image; their C prefixes must differ (and from the image's)."""
    from .codegen.sanitize import c_identifier
    reqs = [make_request(run) for run in plan.runs]
    image = c_identifier(plan.runs[0].image)
    seen: dict[str, Path] = {}
    for req in reqs:
        name = c_identifier(req.name or req.model.stem)
        if name in seen or name == image:
            other = f"model {seen[name].name}" if name in seen else "the image (key `image`)"
            raise UsageError(f"{req.model.name} and {other} are both named '{name}': give the model another "
                             f"`name` in its [[models]] table")
        seen[name] = req.model
    return reqs


def image_out_dir(plan) -> Path:
    args = plan.runs[0]
    if args.out_dir:
        return Path(args.out_dir)
    return default_out_dir(args.image, args.board, args.profile)


def do_build_image(plan, out_dir: Path | None = None) -> BuildInfo:
    """Compile every model of the plan into one project, render the multi-model harness (one
    arena for all, the largest model's, unless shared-arena = false), build one firmware image."""
    from .codegen.project import aligned, assemble_image
    from .codegen.sanitize import c_identifier
    reqs = image_requests(plan)
    args, board = plan.runs[0], reqs[0].board
    image = c_identifier(args.image)
    out_dir = (out_dir or image_out_dir(plan)).resolve()
    with StagedOutput(out_dir) as stage:
        infos = [compile_model(req, stage) for req in reqs]
        info = assemble_image(board, stage, image, infos, bool(args.shared_arena))
        with link_map_kept_on_budget_error(stage, out_dir, image):
            build_checked(stage, board, image, args.jobs)
            made = artifacts(stage, out_dir, image, board, info.get("weights", {}).get("placement"))
            info.update(memory_report(board, stage, info))
        info["artifacts"] = made
        for req, model, use in zip(reqs, infos, info["models_memory"]):
            model["artifacts"] = info["artifacts"]
            model["harness_suffix"] = f"_{model['name']}"  # input_<name>.bin, output_<name>.bin, stats_<name>.txt
            model["model"] = str(req.model)
            model["memory"] = dict(use, arena_bytes=aligned(model["arena_bytes"]) if info["shared_arena"]
                                   else use["arena_bytes"], arena_shared=info["shared_arena"])
        write_image_reports(info, stage, out_dir)
    info["out_dir"] = str(out_dir)
    return info


def write_image_reports(info: dict, stage: Path, out_dir: Path) -> None:
    """report.json: the image's summary; report-<model>.json|html: each model's own report,
    with the image's memory figures."""
    import json
    info["artifacts"].update({"report_json": str(out_dir / "report.json")})
    for model in info["models"]:
        write_report({**model, **{k: info[k] for k in ("flash_bytes", "ram_bytes", "flash_budget", "ram_budget",
                                                       "flash", "ram", "fits", "stack") if k in info},
                      "arena_bytes": info["arena_bytes"]}, stage, name=f"report-{model['name']}")
        info["artifacts"][f"report_{model['name']}_html"] = str(out_dir / f"report-{model['name']}.html")
    (stage / "report.json").write_text(json.dumps(summary_of_image(info), indent=2, default=str))


def summary_of_image(info: dict) -> dict:
    """build --json of an image: the image's figures and `models`, one entry per model."""
    report = summary_of_build(info)
    report["shared_arena"] = info["shared_arena"]
    report["models"] = [{"name": m["name"], "model": m["model"], "precision": m["precision"],
                         **{k: m["memory"][k] for k in ("arena_bytes", "weights_bytes", "code_bytes", "flash_bytes",
                                                        "ram_bytes", "arena_shared")},
                         "inputs": [t["name"] for t in m["inputs"]], "outputs": [t["name"] for t in m["outputs"]]}
                        for m in info["models"]]
    return report


def image_builder(plan):
    """For validate: build the plan's image into a folder, and give the selected model's info."""
    return lambda out_dir: do_build_image(plan, out_dir)["models"][plan.selected]


def do_run_in_image(plan, input_path: Path, output_path: Path, out_dir: Path | None) -> dict:
    """run --model X in a project whose models share one firmware image: build the image and run
    X's samples on it (its own harness files); the report is X's, with the image's figures."""
    req = make_request(plan.runs[plan.selected])
    require_file(input_path, "--input")
    samples = load_samples(input_path, input_graph(req), "input data")
    with tempfile.TemporaryDirectory(prefix="cuvil-run-") as tmp:
        info = do_build_image(plan, out_dir or Path(tmp) / "project")
        model = info["models"][plan.selected]
        result = run_samples(req.board, model, samples, sys.stderr.isatty())
    output_path.parent.mkdir(parents=True, exist_ok=True)
    write_outputs(output_path, [t["name"] for t in model["outputs"]], result["outputs"])
    report = summary_of_image(info)
    report.update({"model": model["name"], "samples": len(samples), "outputs": str(output_path.resolve())})
    report.update(instruction_summary(result.get("instructions"), result.get("instructions_note")))
    report.update(remote_summary(result))
    if out_dir is None:
        report.pop("artifacts", None)
        report.pop("out_dir", None)
    return report


def run_samples(board: Board, info: dict, samples: list, progress: bool, layers: bool = False,
                timing: bool = False, target=None) -> dict:
    """Outputs per sample (and, for debug builds with layers=True, each layer's raw output);
    timing=True: also `times_ns` of repeated runs (host, and the Linux boards' harnesses).
    `target` (remote_target()): a board reached over a serial port or in a labgrid farm,
    running the serial test harness that `info` was built with."""
    if target is not None:
        if layers:
            raise UsageError("per-layer dumps need the semihosting harness under QEMU: not with --port or --place")
        return target.run(board, info, samples, progress)
    if board.kind == "shared_library" and board.get("arch", "") == "x86_64":
        from .runners.host import run_host
        return run_host(Path(info["artifacts"]["so"]), samples, progress, layers, timing,
                        info.get("weights", {}).get("path"))
    if board.kind == "firmware":
        from .runners.firmware import run_on_qemu
        if layers:
            return run_on_qemu(board, info, samples, progress, layers=True)
        return run_on_qemu(board, info, samples, progress)
    if layers:
        raise UsageError(f"per-layer dumps are not supported on board '{board.name}' yet (host and cortex-m7 are)")
    from .runners.linux_qemu import run_on_qemu_user
    return run_on_qemu_user(board, info, samples, progress, timing)


def remote_target(req: CompileRequest, args) -> tuple[CompileRequest, object | None]:
    """--port (a serial device or pyserial URL; --flash-port where the ROM bootloader listens
    elsewhere) or --place (labgrid places, repeatable; --coordinator): the request for the
    board's serial harness and where to run it. Neither: (req, None), the board's own runner."""
    port, places = getattr(args, "port", None), list(getattr(args, "place", None) or [])
    if not port and not places:
        if getattr(args, "flash_port", None):
            raise UsageError("--flash-port goes with --port")
        return req, None
    if port and places:
        raise UsageError("--port and --place both name the board: give one of them")
    from dataclasses import replace
    from .boards import serial_harness_board
    board = serial_harness_board(req.board)
    baud = int(board.get("console.baud", board.get("flash.default_baud", 115200)))
    if port:
        from .runners.serial_harness import SerialTarget
        return replace(req, board=board), SerialTarget(port, getattr(args, "flash_port", None), baud)
    if getattr(args, "flash_port", None):
        raise UsageError("--flash-port goes with --port, not --place (the place's serial port is used)")
    from .runners.labgrid_farm import FarmTarget, require_labgrid
    require_labgrid()  # before the build: a missing package is one line, at once
    return replace(req, board=board), FarmTarget(tuple(places), getattr(args, "coordinator", None), baud)


def summary_of_build(info: BuildInfo) -> dict:
    keys = ("name", "board", "profile", "precision", "arena_bytes", "flash_bytes", "ram_bytes", "weight_bytes",
            "artifacts", "out_dir", "size", "fits", "float_layers", "int16_layers", "weight_bits", "int4_layers",
            "int8_weight_layers", "int4_unpacked", "weight_values", "cuda", "plugin_kernels", "fallbacks", "weights", "regions",
            "tiling", "range_splits")
    return {k: info[k] for k in keys if k in info}


def do_run(req: CompileRequest, input_path: Path, output_path: Path, out_dir: Path | None, jobs: int,
           target=None) -> dict:
    """Build, run every sample of --input, write --output; with -o DIR keep the build there and
    rewrite its report with the per-layer profile (QEMU boards that profile layers).
    `target`: run on a board over serial or in a farm (remote_target())."""
    require_file(input_path, "--input")
    samples = load_samples(input_path, input_graph(req), "input data")
    with tempfile.TemporaryDirectory(prefix="cuvil-run-") as tmp:
        info = do_build(req, out_dir or Path(tmp) / "project", jobs)
        result = run_samples(req.board, info, samples, sys.stderr.isatty(), timing=True, target=target)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    write_outputs(output_path, [t["name"] for t in info["outputs"]], result["outputs"])
    report = summary_of_build(info)
    report.update({"samples": len(samples), "outputs": str(output_path.resolve())})
    report.update(instruction_summary(result.get("instructions"), result.get("instructions_note")))
    report.update(remote_summary(result))
    if result.get("warnings"):  # said on stderr as they arose; kept in the JSON
        report["warnings"] = list(result["warnings"])
    report.update(timing_summary(result.get("times_ns") or [], result.get("timing_note", "")))
    if result.get("layer_instructions"):  # per-layer profile (firmware built with -D<NAME>_PROFILE)
        from .runners.firmware import layer_table
        report.update(profile_of_run(req, info, result["layer_instructions"][0], report["instructions"],
                                     result.get("instructions_note")))
        print(layer_table(report), file=sys.stderr)
        if out_dir is not None:
            report["report_html"] = rewrite_report_with_profile(info, Path(info["out_dir"]), report["layers"])
    if out_dir is None:
        report.pop("artifacts", None)
        report.pop("out_dir", None)
    return report


QEMU_ICOUNT_NOTE = "guest instructions under QEMU -icount shift=0 (not cycles on silicon)"


def instruction_summary(counts: list | None, note: str | None = None) -> dict:
    """Guest instructions per inference on QEMU boards that count them (empty elsewhere)."""
    if counts is None:
        return {}
    counts = [int(c) for c in counts]
    # the first sample's count: deterministic for the same input, whatever runs after it
    # (counts vary a little with the data: clamps and max-pooling branch)
    return {"instructions": counts[0], "instructions_median": int(np.median(counts)),
            "instructions_min": min(counts), "instructions_max": max(counts), "instructions_per_sample": counts,
            "instructions_note": note or QEMU_ICOUNT_NOTE}


def remote_summary(result: dict) -> dict:
    """What a run adds beyond outputs: over the serial harness, cycles per sample (DWT, on
    silicon), the frames sent again, the labgrid places and their shards; on host, the kernel
    variant the library chose from the CPU (isa: amx, avx512vnni, avxvnni or avx2)."""
    report = {}
    if result.get("cycles") is not None:
        counts = [int(c) for c in result["cycles"]]
        report.update({"cycles": counts[0], "cycles_median": int(np.median(counts)), "cycles_per_sample": counts,
                       "cycles_note": result.get("cycles_note") or "processor cycles (DWT CYCCNT) on the board"})
    if result.get("unverified_counts") is not None:  # SysTick that failed its calibration: not instructions
        report.update({"unverified_counts_per_sample": [int(c) for c in result["unverified_counts"]],
                       "unverified_counts_note": result["unverified_counts_note"]})
    for key in ("resent_frames", "places", "isa"):
        if result.get(key) is not None:
            report[key] = result[key]
    return report


def timing_summary(times_ns: list[int], note: str) -> dict:
    """Time per inference on host and Linux boards: the median of repeated runs of one sample."""
    if not times_ns:
        return {}
    return {"time_per_inference_us": round(float(np.median(times_ns)) / 1000.0, 3), "timing_repeats": len(times_ns),
            "timing_note": note}


def profile_of_run(req: CompileRequest, info: dict, counts: dict[int, int], instructions: int,
                   note: str | None = None) -> dict:
    from .compiler import frontend_and_passes
    from .boards import instructions_per_tick
    from .runners.firmware import layer_macs, layer_profile, profile_note
    if note is None and req.board.get("firmware.instructions_per_tick") is not None:  # SysTick under QEMU
        note = profile_note(instructions_per_tick(req.board))
    return layer_profile(info, counts, layer_macs(frontend_and_passes(req)), instructions, note)


def rewrite_report_with_profile(info: dict, out_dir: Path, layers: list[dict]) -> str:
    """report.json and report.html of the kept build, now with the per-layer profile."""
    write_report(info, out_dir, layers)
    return str(out_dir / "report.html")


def list_boards() -> dict:
    return {"boards": [b.summary() for b in all_boards().values()]}


def list_profiles() -> dict:
    return {"profiles": [p.summary() for p in all_profiles().values()]}


def list_ops(plugins: list[str] | None) -> dict:
    from .plugins import describe_ops, load_plugins
    from .frontend.loader import IMPLEMENTED_OPSET
    load_plugins(plugins)
    return {"onnx_opset": IMPLEMENTED_OPSET, **describe_ops()}


def make_request(args) -> CompileRequest:
    """The request of one model of a parsed command line (cuvil.toml merged in): the same
    constructor as the Python API's, with `build`'s bundled example when no model is given."""
    model, calib = getattr(args, "model", None), getattr(args, "calib", None)
    if not model:
        if args.command != "build":
            raise UsageError("--model is required")
        model, calib = bundled_example(calib)
    options = {option: getattr(args, dest, None) for option, dest in REQUEST_OPTIONS.items()}
    return new_request(model, board=args.board, profile=args.profile, progress=sys.stderr.isatty(),
                       weights_file=getattr(args, "weights_file", None), verbose=bool(getattr(args, "verbose", False)),
                       **{**options, "calib": calib})


# the request's options (sdk/request.py) -> where the parsed command line keeps them
REQUEST_OPTIONS = {**{option: option for option in OPTIONS}, "plugins": "plugin"}


def bundled_example(calib: str | None) -> tuple[Path, str]:
    """`build` without --model builds the bundled example, and says so (it is easy to forget --model)."""
    calib = calib or str(EXAMPLE_CALIB)
    print(f"cuvil-sdk: note: no --model given: building the bundled example {EXAMPLE_MODEL.name} "
          f"(calibration {Path(calib).name})", file=sys.stderr)
    return EXAMPLE_MODEL, calib


def example_accuracy(board: Board, info: dict) -> dict:
    """The main job's --run: the bundled digits test set on the built artifact."""
    data = np.load(EXAMPLE_DATA)
    g_inputs = [t["name"] for t in info["inputs"]]
    samples = [{g_inputs[0]: x[None]} for x in data["x"]]
    result = run_samples(board, info, samples, sys.stderr.isatty())
    logits = np.concatenate([r[info["outputs"][0]["name"]] for r in result["outputs"]])
    accuracy = float((logits.reshape(len(samples), -1).argmax(1) == data["y"]).mean())
    report = {"samples": len(samples), "accuracy": accuracy}
    if result.get("instructions") is not None:
        report["instructions"] = int(np.median(result["instructions"]))  # median over the test set
        report["instructions_note"] = result.get("instructions_note") or QEMU_ICOUNT_NOTE
    return report


__all__ = ["do_compile", "do_build", "do_run", "list_boards", "list_profiles", "make_request", "example_accuracy",
           "os"]
