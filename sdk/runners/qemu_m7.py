"""Run Cortex-M7 firmware under qemu-system-arm with the semihosting harness protocol.

The firmware (targets/cortex_m7/harness.c.j2) reads input.bin from QEMU's working folder
and writes output.bin and stats.txt there (docs/internals.md, "Firmware harness protocol").
The QEMU command line is board data: key run.command of the board file, with "{elf}".
"""
from __future__ import annotations

import os
import re
import signal
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, Union

import numpy as np

from ..boards import Board
from ..errors import TargetError, ToolError
from .emulator import board_command
from .protocol import encode_inputs, model_error, split_outputs

Inputs = Union[bytes, Sequence[np.ndarray]]
_STATS_LINE = re.compile(r"^sample (\d+) instructions (\d+)$")
_LAYER_LINE = re.compile(r"^sample (\d+) layer (\d+) instructions (\d+)$")


@dataclass(frozen=True)
class FirmwareResult:
    samples: int
    output: bytes  # output.bin: every output of every sample, in order
    instructions: list[int]  # guest instructions per inference (SysTick ticks x 40)
    console: str  # what the firmware printed on UART0
    # per sample {layer index: guest instructions} from layers.txt (firmware built with
    # -D<NAME>_PROFILE, board key firmware.profile_layers); None when the firmware wrote none
    layers: list[dict[int, int]] | None = None
    # per sample {layer index: its output's raw bytes} from dumps.bin (debug builds, -D<NAME>_DEBUG_DUMP)
    dumps: list[dict[int, bytes]] | None = None

    def outputs(self, sizes: Sequence[int], dtype: np.dtype | type = np.int8) -> list[np.ndarray]:
        """Split output.bin into one (samples, size) array per model output."""
        return split_outputs(self.output, self.samples, sizes, dtype)


def qemu_command(board: Board, elf: Path) -> list[str]:
    """The board's QEMU command line (run.command) for this ELF; ToolError if QEMU is missing."""
    return board_command(board, "run.command", elf=str(Path(elf).resolve()))


def _failure_line(console: str, stderr: str) -> str:
    """The firmware's own FAULT/ERROR line, else what QEMU said last."""
    for line in console.splitlines():
        if line.startswith(("FAULT", "ERROR")):
            return line.strip()
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:  # e.g. "qemu: fatal: Lockup: can't escalate 3 to HardFault"
        if "fatal" in line or "Lockup" in line:
            return line
    return lines[-1] if lines else "no message"


def run_firmware(elf: Path, board: Board, inputs: Inputs, work_dir: Path | None = None,
                 timeout_s: float = 60.0, suffix: str = "") -> FirmwareResult:
    """Run the firmware on the samples and return its outputs and instruction counts.

    `inputs` is the whole input.bin (bytes) or one float array per model input with a
    leading sample axis. QEMU runs in `work_dir` (kept, for inspection) or in a temporary
    folder. Raises TargetError when the firmware faults, exits non-zero or hangs past
    timeout_s (QEMU's process group is killed), ToolError when QEMU is missing or cannot
    start the ELF. `suffix`: one model of a multi-model image reads input<suffix>.bin and writes
    output<suffix>.bin and stats<suffix>.txt (suffix "_<name>")."""
    elf = Path(elf)
    if not elf.exists():
        raise ToolError(f"no firmware at {elf}")
    command = qemu_command(board, elf)
    data = inputs if isinstance(inputs, (bytes, bytearray)) else encode_inputs(inputs)
    samples = struct.unpack_from("<I", data)[0]
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="cuvil-qemu-") as tmp:
            return _run(command, elf, Path(tmp), bytes(data), samples, timeout_s, suffix)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    return _run(command, elf, work_dir, bytes(data), samples, timeout_s, suffix)


def _run(command: list[str], elf: Path, work: Path, data: bytes, samples: int,
         timeout_s: float, suffix: str = "") -> FirmwareResult:
    for stale in (f"output{suffix}.bin", f"stats{suffix}.txt", "layers.txt", "dumps.bin"):
        (work / stale).unlink(missing_ok=True)
    (work / f"input{suffix}.bin").write_bytes(data)
    # A session of its own, so that a timeout kills QEMU and anything it started.
    proc = subprocess.Popen(command, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise TargetError(f"firmware {elf.name} hung: no exit after {timeout_s:g} s under "
                          f"{command[0]} (killed)") from None
    console = out.decode(errors="replace").replace("\r", "")
    stderr = err.decode(errors="replace")
    if proc.returncode != 0:
        line = _failure_line(console, stderr)
        if not console.strip() and f"{Path(command[0]).name}:" in stderr:
            raise ToolError(f"{command[0]} could not run {elf.name}: {line}")
        how = f"exit code {proc.returncode}" if proc.returncode > 0 else f"signal {-proc.returncode}"
        raise model_error(line, f"firmware {elf.name}") or TargetError(f"firmware {elf.name} failed ({how}): {line}")
    instructions = _read_stats(work / f"stats{suffix}.txt", samples)
    output = (work / f"output{suffix}.bin").read_bytes() if (work / f"output{suffix}.bin").exists() else b""
    layers = _read_layers(work / "layers.txt", samples)
    dumps = _read_dumps(work / "dumps.bin", samples)
    return FirmwareResult(samples, output, instructions, console, layers, dumps)


def _read_stats(path: Path, samples: int) -> list[int]:
    if not path.exists():
        raise TargetError("the firmware exited 0 but wrote no stats.txt")
    counts = []
    for i, line in enumerate(path.read_text().splitlines()):
        m = _STATS_LINE.match(line.strip())
        if not m or int(m.group(1)) != i:
            raise TargetError(f"stats.txt line {i + 1} is not 'sample {i} instructions <n>': {line!r}")
        counts.append(int(m.group(2)))
    if len(counts) != samples:
        raise TargetError(f"stats.txt has {len(counts)} samples, expected {samples}")
    return counts


def _read_layers(path: Path, samples: int) -> list[dict[int, int]] | None:
    """layers.txt: 'sample <i> layer <j> instructions <n>' lines, samples in order."""
    if not path.exists():
        return None
    per_sample: list[dict[int, int]] = [{} for _ in range(samples)]
    for number, line in enumerate(path.read_text().splitlines(), 1):
        m = _LAYER_LINE.match(line.strip())
        if not m or int(m.group(1)) >= samples:
            raise TargetError(f"layers.txt line {number} is not 'sample <i> layer <j> instructions <n>': {line!r}")
        per_sample[int(m.group(1))][int(m.group(2))] = int(m.group(3))
    return per_sample


def _read_dumps(path: Path, samples: int) -> list[dict[int, bytes]] | None:
    """dumps.bin: records [uint32 sample][uint32 layer][uint32 bytes][bytes], little-endian."""
    if not path.exists():
        return None
    data = path.read_bytes()
    per_sample: list[dict[int, bytes]] = [{} for _ in range(samples)]
    at = 0
    while at < len(data):
        if at + 12 > len(data):
            raise TargetError(f"dumps.bin is cut short at byte {at}")
        sample, layer, size = struct.unpack_from("<III", data, at)
        if sample >= samples or at + 12 + size > len(data):
            raise TargetError(f"dumps.bin record at byte {at} is invalid (sample {sample}, {size} bytes)")
        per_sample[sample][layer] = data[at + 12:at + 12 + size]
        at += 12 + size
    return per_sample
