"""Run an aarch64 Linux build (rpi5, the jetson CPU path) under qemu-user.

The build has build/lib<name>.so and the harness build/<name>_harness linked against it
(rpath $ORIGIN, targets/rpi5/SConscript). The harness speaks the file protocol of
runners/protocol.py: it reads input.bin and writes output.bin in its working folder, here a
temporary one. The QEMU command line is board data: key run.command, with "{exe}".
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from .. import weights_file
from ..boards import Board
from ..errors import TargetError, ToolError
from . import insn_count
from .emulator import board_command
from .progress import Progress
from .protocol import decode_outputs, encode_inputs, model_error, output_dtypes, per_input_arrays, split_outputs

SECONDS_PER_SAMPLE = 5.0
# The slowest guest we run (a CUDA build's GPU path on the CPU-emulated libcuda, portable fp32
# under TCG) does well over this many multiply-adds a second: a big model (ResNet-50, 4.1 G MACs)
# gets a deadline that fits, a small one keeps SECONDS_PER_SAMPLE.
SLOWEST_MACS_PER_S = 20e6
POLL_S = 0.25


def deadline_s(info: dict, samples: int, repeats: int) -> float:
    """How long a run of `samples` inferences (and `repeats` timed ones) may take before it is a hang."""
    inference_s = sum(layer.get("macs") or 0 for layer in info.get("layers", [])) / SLOWEST_MACS_PER_S
    return 30.0 + (SECONDS_PER_SAMPLE + inference_s) * samples + inference_s * repeats


def harness_path(info: dict) -> Path:
    """build/<name>_harness, beside the library."""
    return Path(info["artifacts"]["so"]).parent / f"{info['name']}_harness"


def qemu_user_command(board: Board, exe: Path) -> list[str]:
    """The board's command line (run.command) for this executable. ToolError when QEMU or
    the sysroot that -L names is missing, naming the Debian package to install."""
    command = board_command(board, "run.command", exe=str(Path(exe).resolve()))
    if "-L" in command[:-1]:
        sysroot = Path(command[command.index("-L") + 1])
        if not sysroot.is_dir():
            package = board.get("run.sysroot_package", "libc6-arm64-cross")
            raise ToolError(f"the sysroot {sysroot} for {command[0]} -L does not exist: install the Debian "
                            f"package {package}")
    return command


def _failure_line(stderr: str) -> str:
    """The harness's own ERROR line, else what QEMU said last."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("ERROR"):
            return line
    return lines[-1] if lines else "no message"


def run_harness(board: Board, exe: Path, data: bytes, samples: int, bytes_per_sample: int,
                timeout_s: float, progress: bool = False, work_dir: Path | None = None,
                env: dict[str, str] | None = None, plugin: Path | None = None) -> bytes:
    """Run the harness on input.bin = data in work_dir (kept: it also holds timing.txt, and with
    the instruction-counting `plugin`, its records insn_marks.txt) or a temporary folder, with
    `env` added to its environment; return output.bin."""
    exe = Path(exe)
    if not exe.is_file():
        raise ToolError(f"no harness executable at {exe} (the build did not make it)")
    command = qemu_user_command(board, exe)
    if plugin is not None:
        if work_dir is None:
            raise ValueError("the plugin's records need a work_dir")
        command = insn_count.with_plugin(command, plugin, Path(work_dir).resolve() / RECORDS)
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="cuvil-qemu-user-") as tmp:
            return run_in(command, exe, Path(tmp), data, samples, bytes_per_sample, timeout_s, progress, env)
    return run_in(command, exe, Path(work_dir), data, samples, bytes_per_sample, timeout_s, progress, env)


def run_in(command: list[str], exe: Path, work: Path, data: bytes, samples: int, bytes_per_sample: int,
           timeout_s: float, progress: bool, env: dict[str, str] | None = None) -> bytes:
    """One harness run in the folder `work`; returns output.bin."""
    (work / "input.bin").write_bytes(data)
    output = work / "output.bin"
    with open(work / "stderr.txt", "wb") as err_file, Progress("running", samples, progress) as bar:
        # A session of its own, so that a timeout kills QEMU and anything it started.
        proc = subprocess.Popen(command, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err_file, start_new_session=True, env={**os.environ, **(env or {})})
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None:
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise TargetError(f"harness {exe.name} hung: no exit after {timeout_s:g} s under "
                                  f"{command[0]} (killed)")
            time.sleep(POLL_S)
            if progress and output.exists() and bytes_per_sample:
                while bar.done < min(samples, output.stat().st_size // bytes_per_sample):
                    bar.step()
        if proc.returncode == 0:
            while bar.done < samples:
                bar.step()
    stderr = (work / "stderr.txt").read_text(errors="replace")
    if proc.returncode != 0:
        line = _failure_line(stderr)
        if line.startswith(f"{Path(command[0]).name}:"):  # e.g. the loader is missing
            raise ToolError(f"{command[0]} could not run {exe.name}: {line}")
        how = f"exit code {proc.returncode}" if proc.returncode > 0 else f"signal {-proc.returncode}"
        raise model_error(line, f"harness {exe.name}") or TargetError(f"harness {exe.name} failed ({how}): {line}")
    if not output.exists():
        raise TargetError(f"harness {exe.name} exited 0 but wrote no output.bin")
    return output.read_bytes()


RECORDS = "insn_marks.txt"
TIMING_REPEATS = 10  # timed runs of the last sample when `run` asks for a time per inference


def run_on_qemu_user(board: Board, info: dict, samples: list[dict[str, np.ndarray]], progress: bool,
                     timing: bool = False) -> dict:
    """Run every sample through the build's harness under qemu-aarch64 (with timing=True, then
    TIMING_REPEATS timed runs of the last sample: `times_ns`).

    Returns {"outputs": per sample {output name: float array shaped as the output,
    dequantized for int8 builds}, "raw": one (N, size) array per output, int8 (or float32 for
    float builds), and on boards with an instruction-counting plugin (run.instruction_plugin)
    "instructions" per sample and "layer_instructions" per sample {layer index: count}}."""
    spec = weights_file.weights_spec(info)
    env = {"CUVIL_TIMING_REPEATS": str(TIMING_REPEATS if timing else 0)}
    if spec is not None:  # the harness refuses a bad file too; this says what is wrong in one line (exit 3)
        weights_file.check(Path(spec.get("path") or harness_path(info).parent / spec["file"]), spec)
        if spec.get("path"):
            env["CUVIL_WEIGHTS"] = spec["path"]
    data = encode_inputs(per_input_arrays(info, samples))
    dtypes = output_dtypes(info)
    sizes = [t["size"] for t in info["outputs"]]
    timeout = deadline_s(info, len(samples), TIMING_REPEATS if timing else 0)
    source = insn_count.plugin_source(board)
    with tempfile.TemporaryDirectory(prefix="cuvil-qemu-user-") as tmp:
        work = Path(tmp)
        plugin = insn_count.build_plugin(source, work) if source is not None else None
        output = run_harness(board, harness_path(info), data, len(samples),
                             sum(n * d.itemsize for n, d in zip(sizes, dtypes)), timeout, progress, work, env, plugin)
        timing = read_timing(work / "timing.txt")
        counts, layers = insn_count.per_sample(insn_count.read_records(work / RECORDS)) if plugin else (None, None)
    if counts is not None and len(counts) != len(samples):
        raise TargetError(f"the instruction counter saw {len(counts)} of {len(samples)} samples: was the library "
                          f"built without -DCUVIL_INSN_MARKS?")
    raw = split_outputs(output, len(samples), sizes, dtypes)
    return {"outputs": decode_outputs(info, raw, len(samples)), "instructions": counts, "raw": raw,
            "layer_instructions": layers, "instructions_note": insn_count.NOTE if counts is not None else None,
            "times_ns": timing, "timing_note": f"emulated time under {Path(board.get('run.command')[0]).name} "
                                                f"on this host, not the speed of the board"}


def read_timing(path: Path) -> list[int]:
    """Nanoseconds per timed run from the harness's timing.txt ("ns <n>" lines); [] without it."""
    if not path.is_file():
        return []
    return [int(line.split()[1]) for line in path.read_text().splitlines() if line.startswith("ns ")]
