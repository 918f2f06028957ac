"""Render the generated C project from Jinja2 templates (StrictUndefined): the model
header and source, its weights, the kernels it uses, and the manifest."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from typing import Callable

from ..boards import Board
from ..build_info import BuildInfo, to_json
from ..ir import Graph
from ..kernels.kernel_sets import KERNEL_SETS
from ..kernels.options import CodegenOptions
from ..kernels.segments import axis_tables
from ..paths import TEMPLATES
from ..planner import ArenaPlan, Sharing
from .cuda import generate_cuda
from .input_copy import copy_entry, input_copies
from .kernel_files import environment, kernel_source
from ..kernels.dtypes import CTYPES
from .harness_types import pointer_type
from .lowering import Lowered, Selection, c_float, lower_graph, select_layers
from .sanitize import c_char_codes, c_identifier
from .weights_blob import Blob, layout, write_blob

ARENA_ALIGN = 16

# What a kernel set that does not run on the CPU (KernelSet.cpu False) adds to the project,
# by set name: renders its sources into out_dir and returns what to add to the manifest.
SetOutput = Callable[[Graph, ArenaPlan, Board, CodegenOptions, str, Path, dict], dict]
SET_OUTPUTS: dict[str, SetOutput] = {"cuda": generate_cuda}  # device code and its host side (cuda.py)


def weights_context(lowered: Lowered, blob: Blob, options: CodegenOptions, prefix: str) -> dict:
    """What weights.h/.c and the model's files need of the blob and its placement (every offset,
    size, checksum and section name computed here)."""
    placement = options.weights
    return {"placement": placement.placement, "region": placement.region, "section": placement.section(prefix),
            "blob_bytes": len(blob.data), "blob_crc32": blob.crc32,
            "arena_section": f".{options.arena_region}.bss.{prefix}_arena" if options.arena_region else "",
            "weights": [{"name": w.name, "ctype": w.ctype, "count": w.values.size, "offset": offset}
                        for w, offset in zip(lowered.weights, blob.offsets)]}


def weights_info(context: dict, prefix: str, arena_region: str) -> dict:
    """The manifest's account of the placements (build --json, report.json/html)."""
    in_elf = context["placement"] != "file"  # a file placement is loaded at run time: no section holds it
    return {"placement": context["placement"], "region": context["region"] or None,
            "section": context["section"] if in_elf else None, "file": f"{prefix}.weights", "bytes": context["blob_bytes"], "crc32": f"{context['blob_crc32']:08x}",
            "arena_region": arena_region or None}


def io_entries(g: Graph, names: list[str], plan: ArenaPlan, int8: bool) -> list[dict]:
    """The model's inputs or outputs as the C API and the manifest describe them. A float tensor
    is float at run() (int8 at run_int8(), quantized by its scale and zero point, in int8
    builds); an integer or bool tensor is its own type everywhere, never quantized (its manifest
    scale and zero point are null), and so is a float tensor that an int8 build keeps in float
    (--input-precision NAME=float, a state written by a layer kept in float: quant/mixed.py)."""
    entries = []
    for i, name in enumerate(names):
        t = g.tensors[name]
        if t.is_integer or (int8 and t.q is None):
            dtype, scale, zp = t.dtype, None, None
        else:  # int16: an --input-precision NAME=int16 input, quantized by run() to int16
            dtype = ("int16" if t.dtype == "int16" else "int8") if int8 else "float32"
            scale, zp = t.q.scalar() if int8 else (1.0, 0)
        entries.append({"index": i, "name": name, "shape": list(t.shape), "size": t.size, "offset": plan.offsets[name],
                        "dtype": dtype, "scale": scale, "zero_point": zp,
                        # the C side: element types at run() and run_int8(), bytes of one sample,
                        # the quantization tables' entries (size 0: quantize_input leaves it alone)
                        "scale_c": c_float(1.0 if scale is None else scale), "zp_c": 0 if zp is None else zp,
                        "integer": scale is None, "ctype": CTYPES[dtype] if scale is None else "float",
                        "raw_ctype": CTYPES[dtype], "bytes": t.nbytes if scale is None else t.size * 4,
                        "raw_bytes": t.size * np.dtype(dtype).itemsize,
                        "quantized_size": 0 if scale is None else t.size})
        if name in plan.copied_in:  # copied in the layout of the Transpose it feeds (input_copy.py)
            entries[-1]["layout_copy"] = copy_entry(g, name, plan.copied_in[name])
        if int8 and t.segments is not None:
            entries[-1].update(segment_entry(t))
    return entries


def segment_entry(t) -> dict:
    """A range-split output (quant/range_split.py): its segments for the manifest, and for the C
    side the per-index tables along the axis that dequantize_output reads by (i / inner) % dim."""
    entry = t.segments.as_manifest()
    inner, dim, scales, zps = axis_tables(t.shape, entry["segments"], entry["segment_axis"])
    entry.update({"seg_inner": inner, "seg_dim": dim, "seg_scale_c": [c_float(s) for s in scales], "seg_zp": zps,
                  "seg_c": [{"start": s["start"], "stop": s["stop"], "scale_c": c_float(s["scale"]),
                             "zero_point": s["zero_point"], "source": c_comment(s["source"])}
                            for s in entry["segments"]]})
    return entry


def c_comment(text: str) -> str:
    """A name as it may appear inside a C comment."""
    return text.replace("*/", "* /").replace("\n", " ")


# the entries' keys that only the C templates read (the manifest leaves them out)
C_ONLY = ("offset", "scale_c", "zp_c", "integer", "ctype", "raw_ctype", "bytes", "raw_bytes", "quantized_size",
          "layout_copy", "seg_inner", "seg_dim", "seg_scale_c", "seg_zp", "seg_c")


def manifest(g: Graph, prefix: str, board: Board, precision: str, plan: ArenaPlan, inputs, outputs) -> BuildInfo:
    return {"name": prefix, "board": board.name, "arch": board.get("arch", ""), "precision": precision,
            "arena_bytes": plan.size, "inputs": [{k: v for k, v in e.items() if k not in C_ONLY} for e in inputs],
            "outputs": [{k: v for k, v in e.items() if k not in C_ONLY} for e in outputs]}


def common_header(half: bool) -> str:
    """cuvil_common.h: the fp16 type only in fp16 builds (it is not ISO C99 or C++11: -Wpedantic).
    Kernels of bool tensors include <stdbool.h> themselves (several models of one image share
    this file)."""
    return environment().get_template("common/cuvil_common.h.j2").render(half=half)


def cpu_kernel_sets(board: Board) -> list[str]:
    return [s for s in board.kernels if KERNEL_SETS[s].cpu]


def select_for_plan(g: Graph, board: Board, options: CodegenOptions) -> tuple[Selection, Sharing]:
    """The CPU kernels of every node, and what the planner may put in place or overlap by
    their overlap rules (nothing on a board with a kernel set off the CPU: its device kernels
    use the plan too)."""
    selection = select_layers(g, cpu_kernel_sets(board), options)
    if any(not KERNEL_SETS[s].cpu for s in board.kernels):
        return selection, Sharing()
    copies = input_copies(g, board)
    selection.absorb_copies({n.name for n in g.nodes if n.outputs and n.outputs[0] in copies.values()})
    return selection, Sharing(selection.in_place(), selection.overlaps(), copies)


def generate(g: Graph, plan: ArenaPlan, board: Board, options: CodegenOptions, name: str, out_dir: Path,
             selection: Selection | None = None) -> BuildInfo:
    prefix = c_identifier(name)
    precision, debug_dump = options.precision, options.debug_dump
    int8 = precision == "int8"
    lowered: Lowered = lower_graph(g, plan, cpu_kernel_sets(board), options, prefix, selection)
    inputs = io_entries(g, g.inputs, plan, int8)
    outputs = io_entries(g, g.outputs, plan, int8)
    info = manifest(g, prefix, board, precision, plan, inputs, outputs)
    src = out_dir / "src"
    (src / "kernels").mkdir(parents=True, exist_ok=True)
    blob = layout([w.values for w in lowered.weights])
    write_blob(blob, src / f"{prefix}.weights")
    weights = weights_context(lowered, blob, options, prefix)
    info["weights"] = weights_info(weights, prefix, options.arena_region)  # in the library's manifest too
    context = {
        "name": prefix, "NAME": prefix.upper(), "int8": int8, "ctype": CTYPES["int8" if int8 else "float32"],
        # what the arena holds at the model's inputs and outputs (fp16 builds convert while copying)
        "arena_ctype": CTYPES["float16" if precision == "fp16" else "float32"],
        "half": precision == "fp16",
        "arena_bytes": max(plan.size, ARENA_ALIGN), "arena_align": ARENA_ALIGN, "inputs": inputs, "outputs": outputs,
        # the element types of the run functions' pointer arrays: float (int8_t at run_int8) while
        # every input (output) is, else void (the header gives each tensor's type)
        "in_ptr": pointer_type(inputs, "ctype"), "out_ptr": pointer_type(outputs, "ctype"),
        "in_ptr8": pointer_type(inputs, "raw_ctype"), "out_ptr8": pointer_type(outputs, "raw_ctype"),
        # <stdbool.h> where a tensor or a constant is bool (in the header: a bool input or output)
        "bools": any(e["ctype"] == "bool" for e in inputs + outputs),
        "bool_weights": any(w.ctype == "bool" for w in lowered.weights),
        "checked": any(c.checked for c in lowered.calls),
        "calls": lowered.calls, "kernel_headers": sorted(set(lowered.kernel_files.values())),
        "stack_arrays": sorted(lowered.stack_arrays.items()),
        "manifest_codes": c_char_codes(info),
        "threads": options.threads,
        "isa_variants": list(board.get("isa_variants", [])),  # x86-64: the kernel variants chosen at load time
        **weights,
    }
    env = environment()
    for template, target in (("common/model.h.j2", f"{prefix}.h"), ("common/model.c.j2", f"{prefix}.c"),
                             ("common/weights.h.j2", f"{prefix}_weights.h"),
                             ("common/weights.c.j2", f"{prefix}_weights.c")):
        (src / target).write_text(env.get_template(template).render(context))
    (src / "cuvil_common.h").write_text(common_header(context["half"]))
    if options.threads > 1:  # cuvil_common.h includes it under CUVIL_THREADS
        shutil.copy(TEMPLATES / "common" / "cuvil_pool.h", src / "cuvil_pool.h")
    for header in context["kernel_headers"]:
        kernel_set, file_name = header.split("/")
        stem = Path(file_name).stem
        (src / "kernels" / file_name).write_text(kernel_source(kernel_set, stem, lowered.kernel_features.get(stem,
                                                                                                          frozenset())))
        for shared in (TEMPLATES / kernel_set).glob("cuvil_*.h"):  # the set's shared helpers
            shutil.copy(shared, src / "kernels" / shared.name)
    weight_bytes = sum(w.nbytes for w in lowered.weights)
    sources = [f"src/{prefix}.c", f"src/{prefix}_weights.c"]
    if debug_dump:
        info["defines"] = {f"{prefix.upper()}_DEBUG_DUMP": 1}
        if board.kind == "shared_library":  # firmware harnesses implement the dump themselves
            (src / f"{prefix}_debug.c").write_text(env.get_template("common/debug_dump.c.j2").render(context))
            sources.append(f"src/{prefix}_debug.c")
    info.update({"weight_bytes": weight_bytes, "layers": lowered.layers, "sources": sources,
                 "fallbacks": [f.as_dict() for f in lowered.fallbacks], "plugin_kernels": lowered.plugin_kernels})
    if lowered.int4_unpacked:  # only where there are int4 layers (other manifests stay as they were)
        info["int4_unpacked"] = [f.as_dict() for f in lowered.int4_unpacked]
    for set_name in board.kernels:  # the accelerator sets the board lists: their own project output
        if set_name in SET_OUTPUTS:
            info.update(SET_OUTPUTS[set_name](g, plan, board, options, prefix, out_dir, info))
    return info


def dump_manifest(info: BuildInfo, out_dir: Path) -> None:
    (out_dir / "manifest.json").write_text(to_json(info))
