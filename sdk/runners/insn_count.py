"""Guest instruction counts for aarch64 Linux boards under qemu-aarch64 (rpi5, the jetson CPU
path), from our TCG plugin (targets/rpi5/insn_count_plugin.c; board key run.instruction_plugin).

QEMU counts instructions only in system mode (-icount); in user mode the plugin does it. The
generated code executes no-op marker instructions (CUVIL_INSN_MARKS in the board's cflags):
the harness marks each sample's start (before its input is quantized) and end (outputs ready),
the model marks the start of its layers and the end of each layer. The plugin writes the
running count at every marker; this module builds the plugin with the host's C compiler and
turns its records into instructions per sample and per layer.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..boards import Board
from ..errors import ToolError

SAMPLE_START, SAMPLE_END, LAYERS_START = 0xFFFE, 0xFFFD, 0xFFFF
PLUGIN_CC = "gcc"
NOTE = ("guest instructions under qemu-aarch64, counted by cuvil's TCG plugin (not cycles of the board's CPU); "
        "with --threads N, all threads summed")


def plugin_source(board: Board) -> Path | None:
    """The plugin's C source named by the board (relative to its folder), or None."""
    relative = board.get("run.instruction_plugin")
    return (board.family_dir / relative).resolve() if relative else None


def build_plugin(source: Path, work: Path) -> Path:
    """Compile the plugin into work/ with the host compiler (a fraction of a second)."""
    if shutil.which(PLUGIN_CC) is None:
        raise ToolError(f"{PLUGIN_CC} not found: the instruction-counting QEMU plugin is built with it "
                        f"(install the Debian package gcc)")
    plugin = work / "insn_count_plugin.so"
    done = subprocess.run([PLUGIN_CC, "-O2", "-shared", "-fPIC", "-Wall", "-Werror", "-o", str(plugin), str(source)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise ToolError(f"cannot build the QEMU plugin {source.name}: {lines[0] if lines else 'no message'}")
    return plugin


def with_plugin(command: list[str], plugin: Path, records: Path) -> list[str]:
    """The qemu-aarch64 command line with the plugin loaded (its options go first)."""
    return [command[0], "-plugin", f"{plugin},out={records}", *command[1:]]


def read_records(path: Path) -> list[tuple[int, int]]:
    """(marker immediate, instruction count) in execution order."""
    if not path.is_file():
        raise ToolError(f"the QEMU plugin wrote no records ({path.name}): does this qemu-aarch64 support -plugin?")
    records = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "mark":
            records.append((int(parts[1]), int(parts[2])))
    return records


def per_sample(records: list[tuple[int, int]]) -> tuple[list[int], list[dict[int, int]]]:
    """Instructions of each sample (start to end marker) and, per sample, {layer index:
    instructions of that layer} (from the previous layer marker to its own). Markers outside a
    sample (timed repeats after the samples) are not counted."""
    totals: list[int] = []
    layers: list[dict[int, int]] = []
    start = previous = None
    for imm, count in records:
        if imm == SAMPLE_START:
            start, previous = count, None
            layers.append({})
        elif start is None:
            continue
        elif imm == SAMPLE_END:
            totals.append(count - start)
            start = None
        elif imm == LAYERS_START:
            previous = count
        elif previous is not None:
            layers[-1][imm] = layers[-1].get(imm, 0) + count - previous
            previous = count
    return totals, layers[:len(totals)]
