"""Instruction counts on the aarch64 Linux boards (issue: a speed figure for aarch64 without a
board): our TCG plugin (targets/rpi5/insn_count_plugin.c) under qemu-aarch64.

- The plugin's counts are exact: a hand-written program with a known number of instructions
  between two markers (straight-line code, and a loop crossing translation blocks).
- `cuvil-sdk run --board rpi5 --json` reports instructions per inference and per layer,
  identical on two runs, with the note that they are not cycles.

A missing tool (cross compiler, qemu-aarch64, gcc) fails the tests, never skips them.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

from cuvil_sdk.boards import get_board
from cuvil_sdk.runners import insn_count
from cuvil_sdk.runners.linux_qemu import qemu_user_command
from test_rpi5 import DIGITS, EXAMPLES, cli_exe
from tools import missing_tools

MARK = '".inst 0xd2e0001f | ((%c0 & 0xffff) << 5)" : : "i"({imm}) : "memory"'
PROGRAM = """
int main(void)
{{
    __asm__ volatile({start});
    __asm__ volatile(".rept 1000\\n nop\\n .endr");
    __asm__ volatile({middle});
    __asm__ volatile("mov x9, #100\\n1: subs x9, x9, #1\\n b.ne 1b" : : : "x9", "cc");
    __asm__ volatile({end});
    return 0;
}}
"""


def test_plugin_counts_exactly(tmp_path: Path):
    assert not missing_tools(["aarch64-linux-gnu-gcc", "qemu-aarch64", "gcc"])
    source = tmp_path / "known.c"
    source.write_text(PROGRAM.format(start=MARK.format(imm=1), middle=MARK.format(imm=2), end=MARK.format(imm=3)))
    exe = tmp_path / "known"
    subprocess.run(["aarch64-linux-gnu-gcc", "-O1", "-o", str(exe), str(source)], check=True)
    board = get_board("rpi5")
    plugin = insn_count.build_plugin(insn_count.plugin_source(board), tmp_path)
    records = tmp_path / "marks.txt"
    subprocess.run(insn_count.with_plugin(qemu_user_command(board, exe), plugin, records), check=True, timeout=60)
    marks = insn_count.read_records(records)
    assert [imm for imm, _ in marks] == [1, 2, 3]
    counts = [count for _, count in marks]
    # each interval: the code between the markers plus the later marker itself
    assert counts[1] - counts[0] == 1000 + 1
    assert counts[2] - counts[1] == 1 + 100 * 2 + 1  # mov, 100 x (subs, b.ne), marker


def run_json(tmp_path: Path, tag: str, x: np.ndarray) -> dict:
    np.save(tmp_path / "x.npy", x)
    done = subprocess.run([cli_exe(), "run", "--board", "rpi5", "--profile", "lite", "--model", str(DIGITS),
                           "--calib", str(EXAMPLES / "digits_calib.npy"), "--input", str(tmp_path / "x.npy"),
                           "--output", str(tmp_path / f"y_{tag}.npy"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_run_reports_instructions_per_inference_and_layer(tmp_path: Path):
    x = np.load(EXAMPLES / "digits_data.npz")["x"][:2]
    first, second = run_json(tmp_path, "a", x), run_json(tmp_path, "b", x)
    assert first["instructions_per_sample"] == second["instructions_per_sample"]
    assert first["layers"] == second["layers"]
    assert first["instructions"] > 10_000
    assert "not cycles" in first["instructions_note"] and "plugin" in first["instructions_note"]
    computing = [layer for layer in first["layers"] if layer["kernel"] != "(alias)"]
    assert computing and all(layer["instructions"] > 0 for layer in computing)
    total = first["layers_total"]
    assert 0 < total["layers_instructions"] < total["instructions"]  # quantize/dequantize lie outside the layers
