"""docs/farm.md is enough on its own to set a loopback farm up (issue 26, point 5): its
recipe starts each QEMU board with the board file's own bootloader command (so with
`-icount shift=0`, which makes the counts guest instructions), as does the bootloader's
README, and everything listens on 127.0.0.1. board_tests/test_serial_farm.py runs the recipe.
"""
from __future__ import annotations

import re

from cuvil_sdk.boards import get_board
from cuvil_sdk.runners.emulator import board_command
from farm_docs import BOOTLOADER_README, FARM_MD, commands, qemu_commands, recipe_blocks, recipe_section

ELF = "bl/bootloader.elf"


def bootloader_command(port: str) -> list[str]:
    return board_command(get_board("cortex-m7"), "flash.bootloader_command", elf=ELF, port=port)


def test_the_recipe_starts_each_board_with_the_board_files_command():
    assert qemu_commands(recipe_section()) == [bootloader_command("4444"), bootloader_command("4445")]
    assert "-icount" in bootloader_command("4444") and "shift=0" in bootloader_command("4444")
    assert any(line.startswith(f"python -m cuvil_sdk.flash.bootloader {ELF.split('/')[0]}")
               for block in recipe_blocks() for line in commands(block))


def test_the_bootloader_readme_starts_the_board_with_the_board_files_command():
    assert qemu_commands(BOOTLOADER_README.read_text()) == [bootloader_command("4444")]


def test_everything_listens_on_loopback():
    section = recipe_section()
    assert set(re.findall(r"\b\d+\.\d+\.\d+\.\d+\b", section)) == {"127.0.0.1"}
    listens = re.findall(r"labgrid-coordinator -l (\S+)", FARM_MD.read_text())
    assert listens == ["127.0.0.1:20408"]
