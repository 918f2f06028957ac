"""Run firmware built for a QEMU board: samples in, outputs and instruction counts out,
and the per-layer profile (docs/internals.md, instruction counts) that `run --json` reports."""
from __future__ import annotations

import numpy as np

from ..errors import TargetError
from ..ops import REGISTRY
from .protocol import decode_outputs, output_dtypes, per_input_arrays
from .qemu_m7 import run_firmware

SECONDS_PER_SAMPLE = 5.0


def profile_note(instructions_per_tick: object = 40) -> str:
    """What the per-layer counts are, with the board's tick (boards.instructions_per_tick: 40, 50, 125/4)."""
    return ("guest instructions under QEMU -icount shift=0 (not cycles on silicon), from SysTick read "
            f"around each layer ({float(instructions_per_tick):g}-instruction ticks), first sample")


PROFILE_NOTE = profile_note()


def run_on_qemu(board, info: dict, samples: list[dict[str, np.ndarray]], progress: bool, layers: bool = False) -> dict:
    """Outputs and guest instructions per sample; `layer_instructions`: per sample {layer
    index: instructions} when the firmware profiles its layers; with layers=True (a debug
    build), `layers`: per sample {layer index: the layer's raw output bytes}, as run_host."""
    per_input = per_input_arrays(info, samples)
    timeout = 30.0 + SECONDS_PER_SAMPLE * len(samples)
    # a model of a multi-model image has its own files: input_<name>.bin, ... (harness_multi.c.j2)
    result = run_firmware(info["artifacts"]["elf"], board, per_input, timeout_s=timeout,
                          suffix=info.get("harness_suffix", ""))
    raw = result.outputs([t["size"] for t in info["outputs"]], output_dtypes(info))
    if layers and result.dumps is None:
        raise TargetError("the firmware wrote no per-layer dumps (not a debug build)")
    return {"outputs": decode_outputs(info, raw, len(samples)), "instructions": list(result.instructions),
            "raw": raw, "layer_instructions": result.layers, "layers": result.dumps if layers else None}


def node_macs(node, g) -> int:
    """Multiply-accumulates of one node of the compiled graph (its op's count: 0 for ops without a weight)."""
    op = REGISTRY.get(node.op)
    return int(op.macs(node, g)) if op is not None else 0


def layer_macs(g) -> dict[str, int]:
    """{node name: MACs} for every node of the graph that code is generated from."""
    return {node.name: node_macs(node, g) for node in g.nodes}


def layer_profile(info: dict, counts: dict[int, int], macs: dict[str, int], instructions: int,
                  note: str | None = None) -> dict:
    """The run report's per-layer profile of one sample: `layers` (index, name, op, kernel,
    MACs, guest instructions, instructions per MAC) in manifest order, and `layers_total`
    (`instructions` is the whole inference, marks and the copies of inputs and outputs
    included; `layers_instructions` the sum over layers)."""
    layers = []
    for entry in info.get("layers", []):
        count = counts.get(entry["index"], 0)
        mac = macs.get(entry["name"])
        layers.append({"index": entry["index"], "name": entry["name"], "op": entry["op"], "kernel": entry["kernel"],
                       "variant": entry.get("variant", ""), "macs": mac, "instructions": count,
                       "instructions_per_mac": round(count / mac, 3) if mac else None})
    total_macs = sum(layer["macs"] or 0 for layer in layers)
    total = {"macs": total_macs, "instructions": instructions,
             "layers_instructions": sum(layer["instructions"] for layer in layers),
             "instructions_per_mac": round(instructions / total_macs, 3) if total_macs else None,
             "note": note or PROFILE_NOTE}
    return {"layers": layers, "layers_total": total}


def layer_table(profile: dict, name_width: int = 40) -> str:
    """The per-layer profile as a human-readable table (for stderr)."""
    lines = [f"{'#':>3}  {'layer':{name_width}}  {'op':18} {'kernel':20} {'MACs':>10} {'instructions':>13} {'/MAC':>6}"]
    for layer in profile["layers"]:
        name = layer["name"] if len(layer["name"]) <= name_width else "..." + layer["name"][-(name_width - 3):]
        ipm = f"{layer['instructions_per_mac']:.2f}" if layer["instructions_per_mac"] is not None else "-"
        kernel = f"{layer['kernel']} ({layer['variant']})" if layer.get("variant") else layer["kernel"]
        lines.append(f"{layer['index']:>3}  {name:{name_width}}  {layer['op']:18} {kernel:20} "
                     f"{layer['macs'] or 0:>10} {layer['instructions']:>13} {ipm:>6}")
    total = profile["layers_total"]
    ipm = f"{total['instructions_per_mac']:.2f}" if total["instructions_per_mac"] is not None else "-"
    lines.append(f"{'':>3}  {'total (whole inference)':{name_width}}  {'':18} {'':20} {total['macs']:>10} "
                 f"{total['instructions']:>13} {ipm:>6}")
    lines.append(f"  ({total['note']})")
    return "\n".join(lines)
