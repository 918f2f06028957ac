"""The compile pipeline: frontend -> passes -> quantize -> plan -> generate. Each stage
takes the previous stage's output; this module only wires them and stages the output
folder so that a failure leaves nothing half-written."""
from __future__ import annotations

import copy
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .boards import all_boards
from .build_info import BuildInfo
from .codegen.emit import dump_manifest, generate, select_for_plan
from .codegen.project import assemble_project
from .codegen.weights_blob import arena_region_of, choose_placement
from .data import load_samples, memory_samples, random_samples
from .errors import CuvilError, UsageError
from .frontend import load_model
from .ir import Graph
from .kernels.contract import declarations
from .kernels.options import CodegenOptions
from .passes import optimize
from .passes.layout import inputs_channels_last
from .ops import get_op
from .planner import ArenaPlan, plan_arena
from .planner.budget import fit_budget
from .plugins import load_plugins
from .quant.calibrate import calibrate
from .quant.half import to_half
from .quant.int16 import WIDENABLE
from .quant.mixed import bridged_layers
from .quant.quantize import needs_calibration, quantize_graph
from .quant.sensitivity import choose_int4, choose_int4_scales, choose_layers
from .quant.weight_bits import WEIGHT_BITS, int4_candidates, mark_int4, report_auto, staying_int8
from .request import CompileRequest

RANDOM_CALIB_SAMPLES = 32


def choose_precision(req: CompileRequest) -> str:
    precision = req.precision or req.profile.default_precision
    if precision not in req.profile.precisions:
        raise UsageError(f"precision '{precision}' is not allowed by profile '{req.profile.name}' "
                         f"(allowed: {', '.join(req.profile.precisions)})")
    board_precisions = req.board.get("precisions", ["int8"])
    if precision not in board_precisions and not any(precision in b.get("precisions", ["int8"])
                                                     for b in all_boards().values()):
        raise UsageError(f"--precision {precision}: no board has {precision} kernels yet "
                         f"(board '{req.board.name}' has: {', '.join(board_precisions)})")
    if precision not in board_precisions:
        raise UsageError(f"board '{req.board.name}' has no {precision} kernels (it has: {', '.join(board_precisions)})")
    if req.profile.name not in req.board.profiles:
        raise UsageError(f"board '{req.board.name}' does not support profile '{req.profile.name}' "
                         f"(it supports: {', '.join(req.board.profiles)})")
    return precision


# The pool's job word counts parts in 16 bits (templates/common/cuvil_pool.h); far fewer threads
# than that already split a layer into parts too small to pay for themselves.
MAX_THREADS = 1024


def check_threads(req: CompileRequest) -> int:
    """--threads N: 1 <= N <= MAX_THREADS; above 1 only for the standard profile on a Linux (shared
    library) board."""
    threads = int(req.threads)
    if not 1 <= threads <= MAX_THREADS:
        raise UsageError(f"--threads must be from 1 to {MAX_THREADS} (got {threads})")
    if threads > 1 and (req.profile.name != "standard" or req.board.kind != "shared_library"):
        raise UsageError(f"--threads {threads} needs the standard profile on a Linux board "
                         f"(board '{req.board.name}' is {req.board.kind}, profile '{req.profile.name}')")
    return threads


def input_graph(req: CompileRequest) -> Graph:
    """The model as its inputs take data: the ONNX graph, with 4-D inputs channels-last under
    --input-layout nhwc (so data files are checked against the shapes the build takes)."""
    load_plugins(req.plugins)  # a no-op for those already loaded
    g = load_model(req.model, req.profile, req.board, req.input_shapes, req.input_values)
    if req.input_layout not in ("nchw", "nhwc"):
        raise UsageError(f"input layout {req.input_layout!r}: expected nchw or nhwc")
    if req.input_layout == "nhwc":
        inputs_channels_last(g)
    return g


def frontend_and_passes(req: CompileRequest) -> Graph:
    g = input_graph(req)
    optimize(g)
    return g


def quantize(g: Graph, req: CompileRequest) -> dict[str, list[str]]:
    """Quantize in place; returns the layers kept in float and those made int16."""
    observer, samples = None, None
    if needs_calibration(g):
        if req.calib is None:
            raise UsageError("an int8 build of a float model needs calibration data: pass --calib FILE "
                             "(or --calib random for a quick, unrepresentative try)")
        if isinstance(req.calib, str) and req.calib == "random":
            print("cuvil-sdk: warning: calibrating on random inputs; the scales are not representative "
                  "of real data", file=sys.stderr)
            samples = random_samples(g, RANDOM_CALIB_SAMPLES)
        elif isinstance(req.calib, str):
            samples = load_samples(Path(req.calib), g, "calibration data")
        else:  # arrays given to the Python API
            samples = memory_samples(req.calib, g, "calibration data")
        observer = calibrate(g, samples, len(samples), req.calib_method, req.progress)
    inputs = input_precision_layers(g, req)
    float_layers, int16_layers = inputs.float_layers, inputs.int16_layers
    int16_layers += [n for n in req.int16_layers if n not in int16_layers]
    if req.accuracy_target is not None:
        mode = "float" if float_allowed(req) else "int16"
        chosen = higher_precision_layers(g, req, observer, samples, mode)
        (float_layers if mode == "float" else int16_layers).extend(chosen)
    float_layers += bridged_layers(g, float_layers)
    if int16_layers and observer is None:
        raise UsageError("int16 layers need calibration data (--calib) for their int16 scales")
    int4_layers = choose_weight_bits(g, req, observer, samples, set(float_layers), set(int16_layers))
    if (inputs.int16_inputs or inputs.int16_states) and observer is None:
        raise UsageError("--input-precision NAME=int16 needs calibration data (--calib) for its int16 scale")
    splits = quantize_graph(g, observer, set(float_layers), set(int16_layers), set(int4_layers), inputs.int16_inputs,
                            inputs.int16_states, req.range_split)
    for split in splits:
        say(split.message(req.range_split))
    chosen = {"float_layers": float_layers, "int16_layers": sorted(set(int16_layers))}
    if splits:  # report.json and build --json name the rule where it applied
        chosen["range_splits"] = [split.as_report() for split in splits]
    int4_layers = [n.name for n in g.nodes if n.weight_bits == 4]  # INT4 QDQ weights included
    if req.weight_bits is not None or int4_layers:  # a build that says nothing of weight bits keeps its manifest
        mode = weight_bits_mode(req) if req.weight_bits or req.int4_layers else "qdq"  # else the model's INT4 weights
        chosen.update({"weight_bits": mode, "int4_layers": int4_layers,
                       "int8_weight_layers": staying_int8(g) if weight_bits_mode(req) in ("4", "auto") else []})
    return chosen


def float_allowed(req: CompileRequest) -> bool:
    """Layers may be kept in float: the profile and the board both have fp32 (standard)."""
    return "fp32" in req.profile.precisions and "fp32" in req.board.get("precisions", [])


@dataclass
class InputPrecision:
    """What --input-precision asks of the quantizer."""
    float_layers: list[str] = field(default_factory=list)  # kept in float (standard)
    int16_layers: list[str] = field(default_factory=list)  # made 16x8 (lite)
    int16_inputs: set[str] = field(default_factory=set)  # model inputs taken as int16
    int16_states: set[str] = field(default_factory=set)  # recurrent state outputs written as int16


def input_precision_layers(g: Graph, req: CompileRequest) -> InputPrecision:
    """--input-precision: the layers kept in float, and those made 16x8, so that each named input
    reaches its first computing layer unquantized (float; the input itself then stays float:
    quant/mixed.py) or in int16. Layers that only move or pick values (Reshape, Transpose, ...:
    their output keeps the input's scale) are kept with it, up to the first that computes. An
    int16 state input of an LSTM pairs with its state output (Y_h for h, Y_c for c), also int16."""
    chosen = InputPrecision()
    for name, precision in req.input_precision.items():
        check_input_precision(g, req, name, precision)
        chain = first_layers(g, name)
        if precision == "float":
            chosen.float_layers += [n for n in chain if n not in chosen.float_layers]
            continue
        layers, states = int16_chain(g, name, chain)
        chosen.int16_layers += [n for n in layers if n not in chosen.int16_layers]
        chosen.int16_inputs.add(name)
        chosen.int16_states |= states
    check_state_pairs(g, chosen.int16_inputs)
    return chosen


def check_state_pairs(g: Graph, int16_inputs: set[str]) -> None:
    """An LSTM's h and c are int16 together (its int16-state kernel takes both)."""
    for node in g.nodes:
        if node.op != "LSTM":
            continue
        states = [i for i in node.inputs[5:7] if i]
        named = [i for i in states if i in int16_inputs]
        if named and len(named) != len(states):
            other = next(i for i in states if i not in int16_inputs)
            raise UsageError(f"--input-precision {named[0]}=int16: layer '{node.name}' (LSTM) takes its h and c "
                             f"states in int16 together: give {other}=int16 too")


def check_input_precision(g: Graph, req: CompileRequest, name: str, precision: str) -> None:
    """The named input is a float input of the model, and its precision is one the build has."""
    if name not in g.inputs:
        raise UsageError(f"--input-precision {name}={precision}: the model has no input '{name}' "
                         f"(its inputs: {', '.join(g.inputs)})")
    if g.tensors[name].is_integer:
        raise UsageError(f"--input-precision {name}={precision}: '{name}' is a {g.tensors[name].dtype} input, "
                         f"never quantized")
    if precision == "float" and not float_allowed(req):
        raise UsageError(f"--input-precision {name}=float: profile '{req.profile.name}' on board "
                         f"'{req.board.name}' has no float layers (int8 only): use {name}=int16")


def first_layers(g: Graph, name: str) -> list[str]:
    """The layers from input `name` to the first ones that compute on it: its readers, and the
    readers of those whose output keeps its quantization ("same": Reshape, Transpose, ...)."""
    chain: list[str] = []
    frontier = [name]
    while frontier:
        tensor = frontier.pop()
        for node in g.consumers(tensor):
            if node.name in chain:
                continue
            chain.append(node.name)
            if get_op(node.op).qparams_rule(node, g) == "same":
                frontier += [o for o in node.outputs if o]
    return chain


def int16_chain(g: Graph, name: str, chain: list[str]) -> tuple[list[str], set[str]]:
    """--input-precision NAME=int16: (the layers of the chain made 16x8, the recurrent state
    outputs paired with it). Aliases (Reshape, Squeeze: the input's bytes under another shape)
    pass it on; an LSTM that takes it as its initial h or c (inputs 5, 6) keeps it int16 as its
    state and writes the matching Y_h or Y_c in int16; any other layer is made 16x8, and one
    that cannot be is refused, naming it."""
    nodes = {n.name: n for n in g.nodes}
    layers, states = [], set()
    for n in chain:
        node = nodes[n]
        if get_op(node.op).alias:
            continue
        if node.op == "LSTM" and name in node.inputs[5:7] and name not in node.inputs[:5]:
            index = node.inputs.index(name, 5)
            if len(node.outputs) > index - 4 and node.outputs[index - 4]:
                states.add(node.outputs[index - 4])
            continue
        if node.op not in WIDENABLE:
            raise UsageError(f"--input-precision {name}=int16: its first layer '{n}' ({node.op}) cannot take it in "
                             f"int16 (only {', '.join(sorted(WIDENABLE))} as 16x8, or an LSTM as its h or c state)")
        layers.append(n)
    return layers, states


def weight_bits_mode(req: CompileRequest) -> str:
    """8, 4 or auto (--weight-bits), or "layers" (--int4-layers names them)."""
    return "layers" if req.int4_layers else req.weight_bits or "8"


def choose_weight_bits(g: Graph, req: CompileRequest, observer, samples, float_layers: set[str],
                       int16_layers: set[str]) -> list[str]:
    """The layers with int4 weights: those --int4-layers names, every one that can (--weight-bits 4),
    those auto keeps within the accuracy target (quant/sensitivity.py, choose_int4), or none. Layers
    kept in float or 16x8 keep their int8 weights."""
    if req.int4_layers and req.weight_bits is not None:
        raise UsageError(f"--int4-layers names the int4 layers itself: not with --weight-bits {req.weight_bits}")
    if req.int4_layers:
        names = list(dict.fromkeys(req.int4_layers))
        mark_int4(copy.deepcopy(g), set(names))  # a name that is no int4 layer: refused before any measuring
        choose_int4_scales(g, observer, samples, names, float_layers, int16_layers, req.range_split)
        return names
    mode = weight_bits_mode(req)
    if mode == "8":
        return []
    probe = copy.deepcopy(g)
    for node in probe.nodes:  # what can be int4 once the float and 16x8 layers are set apart
        if node.name in float_layers | int16_layers:
            node.precision = "fp32" if node.name in float_layers else "int16"
    # each layer's scale rule (max|w| / 7 or clipped), measured with every candidate int4
    choose_int4_scales(g, observer, samples, int4_candidates(probe), float_layers, int16_layers, req.range_split)
    if mode == "4":
        return int4_candidates(probe)
    if mode == "auto":
        if observer is None:
            raise UsageError("--weight-bits auto needs calibration data (--calib) to measure each layer's "
                             "sensitivity on")
        chosen, reached, base, goal = choose_int4(copy.deepcopy(g), observer, samples, req.accuracy_target,
                                                  float_layers, int16_layers, req.range_split)
        report_auto(chosen, len(int4_candidates(probe)), reached, base, goal)
        return chosen
    raise UsageError(f"--weight-bits {mode}: expected 4, 8 or auto")


def higher_precision_layers(g: Graph, req: CompileRequest, observer, samples, mode: str) -> list[str]:
    """Layers to keep in float (standard) or int16 (lite: 16x8) so the model reaches --accuracy-target."""
    if observer is None:
        raise UsageError("--accuracy-target needs calibration data (--calib) to measure accuracy on")
    kept, reached, base, stopped = choose_layers(copy.deepcopy(g), observer, samples, req.accuracy_target, mode,
                                                 req.range_split, say=say, time_limit=req.accuracy_time)
    what = "in float" if mode == "float" else "as int16 (16x8)"
    say(f"accuracy target {req.accuracy_target} (the lowest cosine over outputs and their Concat segments): int8 "
        f"reaches {base:.5f}; with {len(kept)} layer(s) {what} {reached:.5f}" + (f" ({', '.join(kept)})" if kept else ""))
    if stopped:
        say(f"warning: the search stopped at its time bound ({req.accuracy_time:g} s, --accuracy-time): "
            f"keeping the best set it scored")
    elif reached < req.accuracy_target:
        say(f"warning: the accuracy target is not reached even with those layers {what}")
    return kept


def compile_into(req: CompileRequest, out_dir: Path) -> BuildInfo:
    """Compile the model into out_dir (which must be new or empty); returns the manifest."""
    info = compile_model(req, out_dir)
    assemble_project(req.board, out_dir, info)
    dump_manifest(info, out_dir)
    return info


WEIGHT_LAYOUTS = ("int8", "int16")


def weight_layout_of(req: CompileRequest) -> str:
    """--weight-layout, else the board file's `weight_layout`, else int8: how kernel sets that
    can widen weights in registers store them (cortex_m_dsp: int8 bytes, or int16 pre-widened)."""
    layout = req.weight_layout or req.board.get("weight_layout", "int8")
    if layout not in WEIGHT_LAYOUTS:
        raise UsageError(f"weight layout {layout!r}: expected one of {', '.join(WEIGHT_LAYOUTS)}")
    return layout


def compile_model(req: CompileRequest, out_dir: Path) -> BuildInfo:
    """The model's own sources and kernels in out_dir/src, without the board's files and build
    spec (several models of one firmware image share those: codegen/project.py)."""
    precision = choose_precision(req)
    threads = check_threads(req)
    # placement options are checked before the long work (frontend, calibration)
    placement = choose_placement(req.board, req.weights, req.weights_region)
    arena_region = arena_region_of(req.board, req.arena_region)
    check_weight_bits(req, precision)
    if req.weights_file and placement.placement != "file":
        raise UsageError("--weights-file needs a --weights file build")
    stage(req, f"reading {req.model.name}")
    g = frontend_and_passes(req)
    stage(req, f"{len(g.nodes)} layers; " + ("quantizing" if precision == "int8" else f"{precision} build"))
    precision_layers = quantize(g, req) if precision == "int8" else {"float_layers": [], "int16_layers": []}
    if precision == "fp16":
        precision_layers["float_layers"] = to_half(g)
    options = CodegenOptions(precision=precision, threads=threads, debug_dump=req.debug_dump,
                             weight_layout=weight_layout_of(req), weights=placement, arena_region=arena_region,
                             weight_bits_rows="weight_bits" in precision_layers)
    selections = {}

    def planned(graph: Graph, search: int = 0) -> ArenaPlan:
        selection, sharing = select_for_plan(graph, req.board, options)  # kernels first: their overlap rules
        selections[id(graph)] = selection
        return plan_arena(graph, sharing, search)

    stage(req, f"planning memory, choosing kernels and writing C for {len(g.nodes)} layers")
    budget, board_ram = arena_budget_of(req, arena_region)
    g, plan, tiling = fit_budget(g, budget, planned, note=say, board=board_ram)
    info = generate(g, plan, req.board, options, req.name or req.model.stem, out_dir, selections[id(g)])
    info["profile"] = req.profile.name
    info["threads"] = threads
    info["weight_layout"] = options.weight_layout
    if req.weights_file:  # run/validate load this file instead of the one built beside the library
        info["weights"]["path"] = str(Path(req.weights_file).resolve())
    info.update(precision_layers)
    if "weight_bits" in info:
        info["weight_values"] = weight_values(info["layers"])
    info["arena"] = plan.buffers
    if tiling is not None:
        info["tiling"] = tiling.as_dict()
        say(f"{len(tiling.region)} layers in {tiling.bands} row bands: arena {plan.size} B (whole layers: "
            f"{tiling.untiled_arena} B), {tiling.macs - tiling.whole_macs} multiply-adds computed again "
            f"({(tiling.macs - tiling.whole_macs) / max(1, tiling.whole_macs):.1%} of those layers)")
    report_fallbacks(info["fallbacks"], req.verbose)
    report_weight_notes(info)
    return info


def say(message: str) -> None:
    print(f"cuvil-sdk: {message}", file=sys.stderr)


def stage(req: CompileRequest, message: str) -> None:
    """A step of a long build, on stderr when it is a terminal (req.progress): a 3 GMAC model's
    int8 build takes minutes, which must not pass in silence."""
    if req.progress:
        print(f"cuvil-sdk: {message} ...", file=sys.stderr, flush=True)


def arena_budget_of(req: CompileRequest, arena_region: str | None) -> tuple[int | None, str | None]:
    """(budget, the board whose RAM it is): --arena-budget (no board), else on a firmware board
    whose arena is in its RAM, that RAM less the stack (the link then proves the whole image
    fits): the planner goes to row bands only when the arena would not fit."""
    if req.arena_budget is not None:
        return req.arena_budget, None
    ram = req.board.get("memory.ram_bytes")
    if req.board.kind != "firmware" or arena_region or not ram:
        return None, None
    return int(ram) - int(req.board.get("memory.stack_bytes", 0)), req.board.name


def report_weight_notes(info: dict) -> None:
    """One line on stderr per layer that keeps int8 weights under --weight-bits 4/auto because it
    cannot have int4 ones, and per int4 layer whose kernel stores the values unpacked."""
    for f in info.get("int8_weight_layers", []):
        print(f"cuvil-sdk: note: layer '{f['layer']}' ({f['op']}) keeps int8 weights: {f['reason']}", file=sys.stderr)
    for f in info.get("int4_unpacked", []):
        print(f"cuvil-sdk: note: layer '{f['layer']}' ({f['op']}) has int4 weights stored as int8 bytes by "
              f"{f['kernel']}: {f['reason']}", file=sys.stderr)


def weight_values(layers: list[dict]) -> dict:
    """The weighted layers' weight values (biases and requantization constants apart) in bytes: as
    int8 (one each), as int4 (two per byte) and as this build stores them (an int4 layer packed,
    unless its kernel keeps int8 bytes), in all and per layer (build --json, report.json)."""
    rows = [{"layer": layer["name"], "op": layer["op"], "bits": layer["weight_bits"], "storage": layer["weight_storage"],
             "int8_bytes": layer["int8_weight_bytes"], "int4_bytes": layer["int4_weight_bytes"]}
            for layer in layers if layer.get("weight_bits")]
    int8 = sum(r["int8_bytes"] for r in rows)
    stored = sum(r["int4_bytes" if r["storage"] == "int4" else "int8_bytes"] for r in rows)
    return {"int8_bytes": int8, "int4_bytes": sum(r["int4_bytes"] for r in rows), "stored_bytes": stored,
            "stored_vs_int8": round(stored / int8, 3) if int8 else None, "layers": rows}


def check_weight_bits(req: CompileRequest, precision: str) -> None:
    """--weight-bits / --int4-layers: int8 builds only (float builds have no integer weights)."""
    if req.weight_bits is not None and req.weight_bits not in WEIGHT_BITS:
        raise UsageError(f"--weight-bits {req.weight_bits}: expected 4, 8 or auto")
    for option, value in (("--weight-bits", req.weight_bits), ("--int4-layers", req.int4_layers)):
        if value and precision != "int8":
            raise UsageError(f"{option} applies to int8 builds, not --precision {precision}")


# Up to this many layers on slower kernels are named one line each; more are summed up one line per
# kernel and reason (a detector can have 500 such layers), the full list in report.json / --verbose.
FALLBACK_LINES = 8


def report_fallbacks(fallbacks: list[dict], verbose: bool = False) -> None:
    """Say on stderr every layer that runs a slower kernel than its board's first sets offer (a
    portable kernel, or a later set's where an earlier set declined): a slow path is never taken
    in silence. A few are named one line each; many, one line per kernel and reason, with a count,
    the ops, the first layers, and where the whole list is."""
    if verbose or len(fallbacks) <= FALLBACK_LINES:
        for f in fallbacks:
            print(f"cuvil-sdk: note: layer '{f['layer']}' ({f['op']}) runs the {fallback_kind(f)} kernel "
                  f"{f['kernel']}: {f['reason']}", file=sys.stderr)
        return
    groups: dict[tuple[str, str], list[dict]] = {}
    for f in fallbacks:
        groups.setdefault((f["kernel"], f["reason"]), []).append(f)
    for (kernel, reason), layers in groups.items():
        ops = ", ".join(dict.fromkeys(f["op"] for f in layers))
        first = ", ".join(f"'{f['layer']}'" for f in layers[:3]) + (", ..." if len(layers) > 3 else "")
        print(f"cuvil-sdk: note: {len(layers)} layer{'s' if len(layers) > 1 else ''} ({ops}: {first}) "
              f"run{'' if len(layers) > 1 else 's'} the {fallback_kind(layers[0])} kernel {kernel}: {reason}",
              file=sys.stderr)
    print(f"cuvil-sdk: note: {len(fallbacks)} layers on slower kernels in all; each is listed under `fallbacks` in "
          f"manifest.json and report.json, and by --verbose", file=sys.stderr)


def fallback_kind(f: dict) -> str:
    return "portable" if f["kernel"] in declarations("portable") else "fallback"


__all__ = ["compile_into", "compile_model", "CuvilError"]
