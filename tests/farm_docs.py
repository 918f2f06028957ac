"""docs/farm.md's loopback recipe ("A farm on 127.0.0.1, step by step") as the tests read it:
its shell blocks, in order, so that tests/test_farm_docs.py can check its commands against the
board files and board_tests/test_serial_farm.py can run it as written."""
from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FARM_MD = ROOT / "docs" / "farm.md"
BOOTLOADER_README = ROOT / "targets" / "cortex_m7" / "bootloader" / "README.md"
RECIPE_HEADING = "### A farm on 127.0.0.1, step by step"
# The recipe's fixed ports (coordinator, board 1, board 2): a test swaps in free ones.
PORTS = ("20408", "4444", "4445")
FENCE = re.compile(r"^(?P<indent> *)```sh\n(?P<body>.*?)^(?P=indent)```$", re.M | re.S)


def recipe_section(text: str | None = None) -> str:
    text = FARM_MD.read_text() if text is None else text
    start = text.index(RECIPE_HEADING)
    end = text.find("\n### ", start + len(RECIPE_HEADING))
    return text[start:end if end > 0 else len(text)]


def shell_blocks(text: str) -> list[str]:
    """Every ```sh block of `text`, as typed: the list item's indentation taken off."""
    return [textwrap.dedent(m.group("body")) for m in FENCE.finditer(text)]


def recipe_blocks(ports: dict[str, str] | None = None) -> list[str]:
    """The recipe's shell blocks in order, each documented port replaced by ports[port]."""
    blocks = shell_blocks(recipe_section())
    for old, new in (ports or {}).items():
        blocks = [re.sub(rf"\b{old}\b", new, block) for block in blocks]
    return blocks


def commands(block: str) -> list[str]:
    """The block's command lines, backslash continuations joined (heredoc bodies included)."""
    return [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def program_argv(line: str) -> list[str]:
    """A command line's program and arguments: the words before its first redirection or `&`."""
    words = shlex.split(line, comments=True)
    stop = next((i for i, w in enumerate(words) if w in ("&", "|", ";", "&&") or w[:1] in "<>" or w[:2] == "2>"),
                len(words))
    return words[:stop]


def qemu_commands(text: str) -> list[list[str]]:
    return [program_argv(line) for block in shell_blocks(text) for line in commands(block)
            if line.startswith("qemu-system-arm ")]
