"""The real boards of the Cortex-M family, built here and never run (no emulator models their
chips): nucleo-l4r5zi (STM32L4R5, Cortex-M4) and nucleo-u575zi-q (STM32U575, Cortex-M33). As for
nucleo-f767zi (test_nucleo.py), CI checks what it can without the board: digits builds within the
budget on the DSP kernels, the vector table is at the flash start 0x08000000 with the initial
stack in RAM, the image has no allocator and no semihosting, its console is the board's own UART
driver, and the M33's start-up sets the stack limit register."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from cuvil_sdk.boards import get_board
from cuvil_sdk.build_report import ALLOCATOR
from cuvil_sdk.commands import do_build
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.request import CompileRequest
from models import EXAMPLES

pytestmark = pytest.mark.slow
BOARDS = {"nucleo-l4r5zi": ("lpuart1.o", 640), "nucleo-u575zi-q": ("usart1.o", 768)}  # console object, RAM KiB
FLASH_START, FLASH_BYTES, RAM_START = 0x08000000, 2 * 1024 * 1024, 0x20000000


def tool(name: str, *args: str) -> str:
    run = subprocess.run([f"arm-none-eabi-{name}", *args], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.mark.parametrize("board", list(BOARDS))
def test_real_board_builds_boots_from_flash_and_prints_on_its_uart(board, tmp_path):
    console, ram_kib = BOARDS[board]
    req = CompileRequest(model=EXAMPLES / "digits_cnn.onnx", board=get_board(board), profile=get_profile("lite"),
                         calib=str(EXAMPLES / "digits_calib.npy"))
    info = do_build(req, tmp_path / "digits", 2)
    assert "not runnable here" in get_board(board).get("run.how") and get_board(board).get("run.command") is None
    assert info["fits"] and info["fallbacks"] == [] and info["flash_bytes"] <= FLASH_BYTES
    assert info["ram_bytes"] <= ram_kib * 1024 == get_board(board).ram_bytes
    assert {la["kernel"] for la in info["layers"] if la["op"] == "Conv"} <= \
        {"conv2d_s8_dsp", "conv2d_s8_dsp_dw", "conv2d_s8_dsp_dw3x3"}
    elf = info["artifacts"]["elf"]
    symbols = {p[2]: int(p[0], 16) for p in (line.split() for line in tool("nm", elf).splitlines()) if len(p) == 3}
    assert symbols["vector_table"] == FLASH_START
    head = Path(info["artifacts"]["bin"]).read_bytes()[:8]
    sp, reset = int.from_bytes(head[:4], "little"), int.from_bytes(head[4:], "little")
    assert sp == symbols["__stack_top"] and RAM_START < sp <= RAM_START + ram_kib * 1024
    assert reset == symbols["Reset_Handler"] | 1 and FLASH_START <= reset < FLASH_START + FLASH_BYTES
    assert not set(symbols) & set(ALLOCATOR) and not set(symbols) & {"initialise_monitor_handles", "sh_write"}
    code = tool("objdump", "-d", elf)
    assert not re.search(r"\bbkpt\s+0x00ab\b", code)  # no semihosting call left
    link_map = Path(info["artifacts"]["map"]).read_text()
    assert console in link_map and "halt.o" in link_map and "/uart.o" not in link_map
    assert bool(re.search(r"\bmsr\s+MSPLIM", code, re.IGNORECASE)) == (board == "nucleo-u575zi-q")
