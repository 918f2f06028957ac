"""The thread pool of --threads N builds (sdk/templates/common/cuvil_pool.h), on its own: a C
program (fixtures/threads_pool/pool_check.c) built with each board's compiler and flags and
CUVIL_THREADS=3, run natively (host) and under qemu-aarch64 (rpi5):

  - pool: every part of every job runs exactly once with its own job's arguments; workers took
    parts; the two workers start at the first call; idle, they sleep (no CPU);
  - concurrent: four threads calling at once each get their own results (one owns the pool,
    the others run their parts themselves);
  - nested: a part that calls cuvil_parallel itself finishes (no deadlock);
  - fork: a child forked after the pool started runs its jobs on new workers; host only:
    QEMU 7.2's user mode aborts when a forked child of a threaded process creates a thread
    (qemu_plugin_vcpu_init_hook assertion), with or without the pool;
  - fallback: built so that pthread_create fails, every part runs on the caller.
The header also compiles as C++11 with -Wall -Wextra -Werror (a drop-in C project may be C++).
Unloading (dlclose joins the workers) is checked on a real model in test_threads.py.
A missing compiler or qemu-aarch64 fails these tests, never skips them.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen.emit import common_header
from tools import missing_tools

HERE = Path(__file__).resolve().parent
CHECK = HERE / "fixtures" / "threads_pool" / "pool_check.c"
COMMON = HERE.parent / "sdk" / "templates" / "common"  # cuvil_pool.h
THREADS = 3
MODES = {"host": ["pool", "concurrent", "nested", "fork"], "rpi5": ["pool", "concurrent", "nested"]}
NO_THREADS_DEFINE = "-DCUVIL_THREAD_STACK_BYTES=((size_t)1<<50)"  # no mmap that large: pthread_create fails


def common_folder(folder: Path) -> Path:
    """A folder holding cuvil_common.h as a generated project has it (a template in COMMON)."""
    (folder / "cuvil_common.h").write_text(common_header(half=False))
    return folder


def build(board_name: str, folder: Path, *defines: str) -> list[str]:
    """pool_check built with the board's C compiler and flags; the command that runs it."""
    board = get_board(board_name)
    cc = board.get("toolchain.cc")
    assert not missing_tools([cc, *(board.get("run.command") or [])[:1]]), f"{board_name}: a tool is missing"
    exe = folder / f"pool_check_{board_name}"
    cmd = [cc, *board.get("toolchain.cflags"), f"-DCUVIL_THREADS={THREADS}", *defines, f"-I{common_folder(folder)}",
           f"-I{COMMON}", str(CHECK), "-o", str(exe), "-pthread"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [str(exe) if part == "{exe}" else part for part in board.get("run.command") or ["{exe}"]]


def check(command: list[str], mode: str) -> str:
    done = subprocess.run([*command, mode], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{mode}: exit {done.returncode}: {done.stderr}"
    return done.stdout


@pytest.mark.parametrize("board", sorted(MODES))
def test_pool_checks(board, tmp_path):
    command = build(board, tmp_path)
    outputs = {mode: check(command, mode) for mode in MODES[board]}
    workers = re.search(r"on the (\d+) workers, idle workers asleep", outputs["pool"])
    assert workers and int(workers.group(1)) == THREADS - 1, outputs["pool"]


@pytest.mark.parametrize("board", sorted(MODES))
def test_pool_falls_back_to_the_caller(board, tmp_path):
    command = build(board, tmp_path, NO_THREADS_DEFINE)
    assert "every part ran on the caller" in check(command, "fallback")


def test_pool_header_compiles_as_cxx(tmp_path):
    unit = tmp_path / "unit.cpp"
    unit.write_text(f"#define CUVIL_THREADS {THREADS}\n#include \"cuvil_common.h\"\n")
    done = subprocess.run(["g++", "-std=c++11", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{common_folder(tmp_path)}",
                           f"-I{COMMON}", "-c", str(unit),
                           "-o", str(tmp_path / "unit.o")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
