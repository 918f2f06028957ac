"""Firmware-only files of a generated project: the linker script and the test harness.

Both are Jinja2 templates in the board's folder (board file keys `firmware.linker_template`
and `firmware.harness_template`); Python computes every value, the templates only render.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from ..boards import Board, instructions_per_tick, linker_context, include_folders
from .harness_types import with_types

LINKER_SCRIPT = "src/linker.ld"  # where targets/*/SConscript expects it
HARNESS_SOURCE = "src/harness.c"


def _environment(board: Board) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(p) for p in include_folders(board)]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def tick_context(board: Board) -> dict[str, Any]:
    """SysTick ticks -> guest instructions for the harness: `instructions_per_tick` (an integer,
    the numerator) and `tick_divide`: "" where a tick is a whole number of instructions, else
    " / <denominator>u" appended to `ticks * INSTRUCTIONS_PER_TICK` (mps3-an547's 32 MHz clock:
    ticks * 125u / 4u; the product is taken first, so the count is truncated once, below one tick)."""
    per_tick = instructions_per_tick(board)
    return {"instructions_per_tick": per_tick.numerator,
            "tick_divide": "" if per_tick.denominator == 1 else f" / {per_tick.denominator}u"}


# A float input of an int8 firmware build is read this many floats at a time and quantized as it
# comes (1 KiB of RAM instead of the whole float copy: 602 KB for a 224x224x3 image).
HARNESS_CHUNK_FLOATS = 256


def buffer_context(context: dict[str, Any]) -> dict[str, Any]:
    """Where the harness keeps its sample buffers and how it reads int8 inputs: in chunks,
    quantized as they come (an int16 input, --input-precision NAME=int16, is read whole)."""
    section = context.get("buffer_section", "")
    return {"buffer_section": section,
            "buffer_attribute": f' __attribute__((section("{section}")))' if section else "",
            "chunk_floats": HARNESS_CHUNK_FLOATS,
            # (an image of several models renders the multi-model harness: no inputs of its own here)
            "quantized_inputs": bool(context.get("int8")) and any(not i["integer"] and i["run_ctype"] == "int8_t"
                                                                  for i in context.get("inputs", []))}


def render_firmware_files(board: Board, out_dir: Path, context: dict[str, Any],
                          harness_key: str = "firmware.harness_template") -> list[str]:
    """Render src/linker.ld and src/harness.c into out_dir; return the sources to compile.

    `context` describes the model for the harness. Consumed keys (others are ignored):
      name     the C prefix of the model ("net"): the harness includes "<name>.h" and calls
               <name>_quantize_input / <name>_run_int8 (int8) or <name>_run (float);
      NAME     the macro prefix ("NET"): buffers are sized by <NAME>_INPUT_<i>_SIZE and
               <NAME>_OUTPUT_<i>_SIZE from the model header;
      inputs   list of {"index": i}, in model order (with "size", "dtype" and "scale", a
               manifest entry: typed by codegen/harness_types.py; without, a float tensor);
      outputs  list of {"index": i}, in model order, the same way;
      int8     True: int8 outputs in output.bin; False: float32 run and outputs;
      buffer_section  optional: the section of the sample buffers (the arena's region under
               --arena-region); default: .bss.
    The board adds `instructions_per_tick` and `tick_divide` (tick_context) and, where it has
    a serial harness (key firmware.serial_counter), `proto`: serial_protocol.c_context().
    Returns paths relative to out_dir of the C sources added ("src/harness.c"); the linker
    script is not a source, the SConscript finds it at src/linker.ld.
    An image of several models renders the board's `firmware.multi_harness_template` instead
    (harness_key), with the context of codegen/project.py's image_context.
    """
    env = _environment(board)
    src = Path(out_dir) / "src"
    src.mkdir(parents=True, exist_ok=True)
    linker = env.get_template(board.get("firmware.linker_template", "linker.ld.j2"))
    (Path(out_dir) / LINKER_SCRIPT).write_text(linker.render(linker_context(board)))
    harness_context = with_types(context)  # a tensor given by its index alone is a float one
    harness_context.update(tick_context(board))
    harness_context.update(buffer_context(harness_context))
    if board.get("firmware.serial_counter"):  # a board with the serial harness: the protocol's constants
        from ..runners.serial_protocol import c_context
        harness_context.update(c_context(str(board.get("firmware.serial_counter"))))
    harness = env.get_template(board.get(harness_key, "harness.c.j2"))
    (Path(out_dir) / HARNESS_SOURCE).write_text(harness.render(harness_context))
    return [HARNESS_SOURCE]
