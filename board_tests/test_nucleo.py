"""nucleo-f767zi: the real-board firmware builds and fits. It cannot be run here (no
emulator models the STM32F767), so CI checks what it can without the board: the CLI build
of the bundled digits model succeeds within the board's budget, the image has no
allocator and no semihosting, its vector table is at the flash start 0x08000000 where
the chip boots from, its console is the USART3 driver, and `cuvil-sdk flash` would
accept its .bin for the board's flash layout.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.build_report import ALLOCATOR
from cuvil_sdk.flash.image import FlashGeometry, load_image

BOARD = "nucleo-f767zi"
FLASH_START = 0x08000000
FLASH_BYTES = 2 * 1024 * 1024
RAM_START, RAM_BYTES = 0x20000000, 512 * 1024


def tool(name: str, *args: str) -> str:
    run = subprocess.run([f"arm-none-eabi-{name}", *args], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("nucleo") / "digits"
    run = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", "build", "--board", BOARD, "--profile", "lite",
                          "-o", str(out), "-j", "2", "--json"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_board_data_says_it_cannot_run_here():
    board = get_board(BOARD)
    assert "not runnable here" in board.get("run.how") and board.get("run.command") is None
    assert "real board only" in board.description
    assert board.get("flash.device_id") == 0x451 and board.get("flash.start") == FLASH_START


def test_builds_within_budget(build):
    assert build["board"] == BOARD and build["fits"] is True
    assert 0 < build["flash_bytes"] <= FLASH_BYTES and 0 < build["ram_bytes"] <= RAM_BYTES
    assert build["weight_bytes"] < build["flash_bytes"]
    for kind in ("elf", "bin", "hex", "map"):
        assert Path(build["artifacts"][kind]).is_file(), kind


def test_bin_is_smaller_than_the_flash_and_flashable(build):
    image = Path(build["artifacts"]["bin"])
    assert 0 < image.stat().st_size < FLASH_BYTES
    assert image.stat().st_size == build["flash_bytes"]  # everything loaded is in the .bin, nothing else
    loaded = load_image(image, FlashGeometry.from_board(get_board(BOARD)))
    assert loaded.start == FLASH_START and [s.index for s in loaded.plan(FlashGeometry.from_board(get_board(BOARD)))] == [0]
    hexfile = Path(build["artifacts"]["hex"]).read_text()
    assert hexfile.startswith(":020000040800F2")  # extended linear address 0x0800xxxx


def test_vector_table_at_flash_start(build):
    elf = build["artifacts"]["elf"]
    sections = {m.group(1): int(m.group(2), 16) for m in re.finditer(r"^\s*\d+\s+(\S+)\s+\S+\s+([0-9a-f]{8})",
                                                                       tool("objdump", "-h", elf), re.M)}
    assert sections[".isr_vector"] == FLASH_START
    symbols = {parts[2]: int(parts[0], 16) for parts in (l.split() for l in tool("nm", elf).splitlines())
               if len(parts) == 3}
    assert symbols["vector_table"] == FLASH_START
    head = Path(build["artifacts"]["bin"]).read_bytes()[:8]
    sp, reset = int.from_bytes(head[:4], "little"), int.from_bytes(head[4:], "little")
    assert sp == symbols["__stack_top"] and RAM_START < sp <= RAM_START + RAM_BYTES and sp % 8 == 0
    assert reset == symbols["Reset_Handler"] | 1 and FLASH_START <= reset < FLASH_START + FLASH_BYTES


def test_no_malloc_no_semihosting_and_the_usart3_console(build):
    elf = build["artifacts"]["elf"]
    defined = {l.split()[-1] for l in tool("nm", "--defined-only", elf).splitlines() if l.strip()}
    assert not defined & set(ALLOCATOR)
    assert not defined & {"initialise_monitor_handles", "sh_open", "sh_read", "sh_write"}
    assert not re.search(r"\bbkpt\s+0x00ab\b", tool("objdump", "-d", elf))  # no semihosting call left
    link_map = Path(build["artifacts"]["map"]).read_text()
    assert "usart3.o" in link_map and "halt.o" in link_map and "/uart.o" not in link_map


@pytest.fixture(scope="module")
def serial_build(tmp_path_factory) -> dict:
    """The serial test harness image (what `validate --port` flashes), built as the CLI builds it."""
    from cuvil_sdk.boards import serial_harness_board
    from cuvil_sdk.commands import do_build
    from cuvil_sdk.request import CompileRequest
    from cuvil_sdk.profiles import get_profile
    examples = Path(__file__).resolve().parents[1] / "sdk" / "examples"
    req = CompileRequest(model=examples / "digits_cnn.onnx", board=serial_harness_board(get_board(BOARD)),
                         profile=get_profile("lite"), calib=str(examples / "digits_calib.npy"))
    return do_build(req, tmp_path_factory.mktemp("nucleo-serial") / "digits", 2)


def test_serial_harness_builds_fits_and_uses_usart3_and_dwt(serial_build):
    """Built and linked only: its USART3 receive path has never run (no emulator, no board here)."""
    assert serial_build["fits"] is True and 0 < serial_build["flash_bytes"] <= FLASH_BYTES
    elf = serial_build["artifacts"]["elf"]
    defined = {l.split()[-1] for l in tool("nm", "--defined-only", elf).splitlines() if l.strip()}
    assert {"uart_getc", "uart_rx_begin", "vector_table"} <= defined
    assert not defined & set(ALLOCATOR) and not defined & {"sh_open", "sh_read", "sh_write"}
    assert not re.search(r"\bbkpt\s+0x00ab\b", tool("objdump", "-d", elf))
    harness = (Path(serial_build["out_dir"]) / "src" / "harness.c").read_text()
    assert "DWT_CYCCNT" in harness and "SYST_CVR" not in harness  # cycles on silicon, not SysTick
    assert "/uart.o" not in Path(serial_build["artifacts"]["map"]).read_text()
    loaded = load_image(Path(serial_build["artifacts"]["bin"]), FlashGeometry.from_board(get_board(BOARD)))
    assert loaded.start == FLASH_START
