"""The Linux boards' test harness: src/harness.c of a generated project.

A stdio program with the file protocol of the firmware harness (docs/internals.md): it reads
input.bin, runs every sample through the model's shared library and writes output.bin. It
is rendered from the Jinja2 template named by the board file (key `harness.template`,
relative to the board's folder, so a board family may point at another family's template:
jetson uses ../rpi5/harness.c.j2). The board's SConscript links it against lib<name>.so;
it is never part of the library.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from ..boards import Board
from ..errors import CuvilError
from .harness_types import with_types

HARNESS_SOURCE = "src/harness.c"


def harness_template(board: Board) -> Path:
    """The harness template file of a board (key harness.template, relative to its folder)."""
    relative = board.get("harness.template")
    if not relative:
        raise CuvilError(f"board '{board.name}' names no harness template (key harness.template)")
    path = (board.family_dir / relative).resolve()
    if not path.is_file():
        raise CuvilError(f"board '{board.name}': harness template {path} does not exist")
    return path


def render_linux_harness(board: Board, out_dir: Path, context: dict[str, Any]) -> list[str]:
    """Render src/harness.c into out_dir and return ["src/harness.c"].

    `context` is what project.harness_context builds. Consumed keys:
      name     the C prefix of the model: the harness includes "<name>.h" and calls
               <name>_quantize_input / <name>_run_int8 (int8) or <name>_run (float);
      NAME     the macro prefix: buffers are sized by <NAME>_INPUT_<i>_SIZE / <NAME>_OUTPUT_<i>_SIZE;
      inputs   list of {"index": i}, in model order (with "size", "dtype" and "scale", a
               manifest entry: typed by codegen/harness_types.py; without, a float tensor);
      outputs  list of {"index": i}, in model order, the same way;
      int8     True: int8 outputs in output.bin; False: float32 run and outputs;
      weights_file  optional: the weights file of a --weights file build ("<name>.weights"), which
               the harness loads from beside itself (or $CUVIL_WEIGHTS) before the first sample.
    The returned path is the harness source, which is not a library source: the caller
    must not add it to the model's sources.
    """
    template = harness_template(board)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template.parent)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    target = Path(out_dir) / HARNESS_SOURCE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(env.get_template(template.name).render({"weights_file": "", **with_types(context)}))
    return [HARNESS_SOURCE]
