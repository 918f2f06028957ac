"""The keys of a board file (targets/<family>/board*.toml), each declared once with its type.

A board file is data that many readers take values from by dotted path (`Board.get`), each
with its own default; a misspelt key would silently read that default. So sdk/boards.py checks
every file against this table when it loads it: an unknown key (with the closest known one)
or a value of the wrong type is a UsageError (exit 2) naming the file and the key, as an
unknown key of cuvil.toml is (sdk/project_file.py).

Keys of the tables of an array of tables (`[[memory.regions]]`, `flash.sectors`) are written
`memory.regions[].name`. Entries with `documents=True` describe the board for the people who
read or wire it; no code reads them (tests/test_board_schema.py checks that every other entry
is read somewhere).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .errors import UsageError


@dataclass(frozen=True)
class Entry:
    """One key of a board file: its dotted path, the type of its value and what it means."""

    key: str
    type: str  # a name of TYPES
    meaning: str
    required: bool = False
    choices: tuple[str, ...] = ()
    documents: bool = False  # for people only: no code reads it


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


# type name -> (what a message calls it, the check of a value)
TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("an integer", _is_int),
    "number": ("a number", lambda v: _is_int(v) or isinstance(v, float)),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "strings": ("a list of strings", _is_strings),
    "string or strings": ("a string or a list of strings", lambda v: isinstance(v, str) or _is_strings(v)),
    "string pairs": ("a list of [string, string] pairs",
                     lambda v: isinstance(v, list) and all(_is_strings(p) and len(p) == 2 for p in v)),
    "table": ("a table", lambda v: isinstance(v, dict)),
    "tables": ("a list of tables", lambda v: isinstance(v, list) and all(isinstance(t, dict) for t in v)),
}

E = Entry
SCHEMA: tuple[Entry, ...] = (
    # top level: what the board is
    E("name", "string", "the board's name (--board)", required=True),
    E("description", "string", "one line for `cuvil-sdk boards`"),
    E("kind", "string", "what a build makes", required=True, choices=("firmware", "shared_library")),
    E("arch", "string", "the instruction set: armv7e-m, x86_64, aarch64 (native runs, ISA variants)"),
    E("cpu", "string", "the processor, for the reader (the flags are in [toolchain])", documents=True),
    E("mcu", "string", "the microcontroller part number", documents=True),
    E("cpu_flags", "strings", "the CPU features the board assumes (as /proc/cpuinfo names them)", documents=True),
    E("profiles", "strings", "the profiles a build for the board may use, the default first"),
    E("kernels", "strings", "kernel sets (sdk/kernels/<set>), most specific first (then portable); cuda adds the GPU path"),
    E("precisions", "strings", "the precisions the board builds (int8, fp32, fp16)"),
    E("weight_layout", "string", "cortex_m_dsp GEMM/FC weights in flash (--weight-layout overrides)",
      choices=("int8", "int16")),
    E("isa_variants", "strings", "x86-64: the kernel variants built into the library, chosen at load time"),
    E("cuda_arch", "string or strings", "CUDA boards: the SASS targets (sm_NN)"),
    E("cuda_ptx", "string", "CUDA boards: the PTX embedded (default: compute_ of the lowest cuda_arch)"),
    E("cuda_cpu_sconscript", "string", "CUDA boards: the SConscript of the CPU library, relative to this folder"),
    # [toolchain]: how the C is compiled and linked
    E("toolchain", "table", "the compiler and its flags"),
    E("toolchain.cc", "string", "Linux boards: the C compiler"),
    E("toolchain.prefix", "string", "firmware boards: the prefix of gcc, objcopy, size, nm"),
    E("toolchain.package", "string", "the Debian package of cc, named when it is missing"),
    E("toolchain.requires", "string pairs", "further [executable, Debian package] the build needs"),
    E("toolchain.sysroot", "string", "the cross sysroot that cc uses", documents=True),
    E("toolchain.sysroot_package", "string", "the Debian package of the sysroot", documents=True),
    E("toolchain.cpu_flags", "strings", "firmware: flags of both compile and link (-mcpu, -mfpu, ...)"),
    E("toolchain.cflags", "strings", "compile flags"),
    E("toolchain.linkflags", "strings", "link flags"),
    E("toolchain.libs", "strings", "libraries linked (-l)"),
    # [harness]: Linux boards' harness executable
    E("harness", "table", "Linux boards: the harness program that runs the library on data files"),
    E("harness.renderer", "string", "which renderer writes it", choices=("linux", "firmware")),
    E("harness.template", "string", "its template, relative to this folder"),
    # [memory]: budgets and regions
    E("memory", "table", "the memory budget"),
    E("memory.flash_origin", "integer", "firmware: the FLASH region's start address"),
    E("memory.flash_bytes", "integer", "the code and constant budget (the FLASH region's length)"),
    E("memory.ram_origin", "integer", "firmware: the RAM region's start address"),
    E("memory.ram_bytes", "integer", "the RAM budget (the RAM region's length)"),
    E("memory.stack_bytes", "integer", "firmware: the stack reserved at the bottom of RAM"),
    E("memory.weights_region", "string", "the region that --weights region puts the weights in by default"),
    E("memory.regions", "tables", "further memory regions (--weights region, --arena-region)"),
    E("memory.regions[].name", "string", "the region's name (the linker script's, upper-cased)"),
    E("memory.regions[].origin", "integer", "its start address"),
    E("memory.regions[].bytes", "integer", "its budget (the linker region's length)"),
    E("memory.regions[].access", "string", "r or rw", choices=("r", "rw")),
    E("memory.regions[].description", "string", "what the region is, for the linker script and reports"),
    # [peripherals]
    E("peripherals", "table", "firmware: peripheral base addresses"),
    E("peripherals.uart0", "integer", "the CMSDK UART0 (console; the cuvil bootloader's port)"),
    E("peripherals.usart3", "integer", "the STM32 USART3 (console)", documents=True),
    E("peripherals.usart1", "integer", "the STM32 USART1 (console)", documents=True),
    E("peripherals.lpuart1", "integer", "the STM32 LPUART1 (console)", documents=True),
    # [firmware]: what a firmware build adds to the generated C
    E("firmware", "table", "firmware boards: sources and templates of the image"),
    E("firmware.sources", "strings", "board C sources, relative to this folder"),
    E("firmware.include_folders", "strings", "folders (relative to this one) searched after it for the templates and the C headers of the image"),
    E("firmware.linker_template", "string", "the linker script template"),
    E("firmware.harness_template", "string", "the harness template (one model)"),
    E("firmware.multi_harness_template", "string", "the harness template of several models in one image"),
    E("firmware.serial_harness_template", "string", "the harness of run/validate --port or --place"),
    E("firmware.serial_counter", "string", "what the serial harness counts", choices=("systick", "dwt")),
    E("firmware.instructions_per_tick", "number", "guest instructions per SysTick tick under QEMU (31.25: a 32 MHz clock)"),
    E("firmware.profile_layers", "boolean", "read SysTick around each layer (layers.txt)"),
    E("firmware.post_link", "string", "a Python file run on the ELF before .bin/.hex are made"),
    # [console]: a real board's console
    E("console", "table", "a real board's console"),
    E("console.uart", "string", "the UART of the console", documents=True),
    E("console.pins", "string", "its pins", documents=True),
    E("console.bridge", "string", "what bridges it to the host", documents=True),
    E("console.baud", "integer", "its baud rate (the serial harness's port speed)"),
    # [flash]: `cuvil-sdk flash` and the cuvil QEMU bootloader
    E("flash", "table", "flashing over a serial ROM bootloader (cuvil-sdk flash)"),
    E("flash.method", "string", "the bootloader's protocol", choices=("an3155",)),
    E("flash.device_id", "integer", "what the bootloader's GET ID returns"),
    E("flash.start", "integer", "the start of the flash"),
    E("flash.app_start", "integer", "where an image goes"),
    E("flash.sectors", "tables", "the flash layout, in runs of equal sectors"),
    E("flash.sectors[].count", "integer", "how many sectors of the run"),
    E("flash.sectors[].size", "integer", "their size in bytes"),
    E("flash.default_baud", "integer", "the baud rate used unless --baud says otherwise"),
    E("flash.max_baud", "integer", "the highest baud rate the bootloader takes"),
    E("flash.image_header", "string", "a Python file that checks an image's header, relative to this folder"),
    E("flash.bootloader_port", "string", "which UART and pins the ROM bootloader listens on", documents=True),
    E("flash.enter", "string", "how to start the ROM bootloader", documents=True),
    E("flash.bootloader_sources", "strings", "the cuvil bootloader's C sources, relative to this folder"),
    E("flash.bootloader_ready", "string", "the line the cuvil bootloader prints once it listens"),
    E("flash.bootloader_ram_bytes", "integer", "the cuvil bootloader's RAM"),
    E("flash.bootloader_stack_bytes", "integer", "the cuvil bootloader's stack"),
    E("flash.bootloader_uart_rx_irq", "integer", "the NVIC line of UART0 RX, which wakes the bootloader"),
    E("flash.bootloader_command", "strings", "the QEMU command line of the bootloader ({elf}, {port})"),
    # [run]: how a build runs here
    E("run", "table", "how a build runs here"),
    E("run.how", "string", "how it runs, one line for `cuvil-sdk boards`"),
    E("run.command", "strings", "the emulator command line ({elf} or {exe} is the build)"),
    E("run.instruction_plugin", "string", "qemu-user: the TCG plugin source that counts instructions"),
    E("run.debian_package", "string", "the Debian package of the emulator, named when it is missing"),
    E("run.sysroot_package", "string", "the Debian package of the loader and libc that -L names"),
)
del E

ENTRIES: dict[str, Entry] = {e.key: e for e in SCHEMA}


def check(path: Path, data: dict[str, Any]) -> None:
    """Refuse a board file with an unknown key, a value of the wrong type or a missing key."""
    _check_table(path, data, "")
    for entry in SCHEMA:
        if entry.required and _lookup(data, entry.key) is None:
            raise UsageError(f"board file {path}: key '{entry.key}' is missing ({entry.meaning})")


def _lookup(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _check_table(path: Path, table: dict[str, Any], prefix: str) -> None:
    for name, value in table.items():
        key = prefix + name
        entry = ENTRIES.get(key)
        if entry is None:
            raise _unknown(path, key, prefix)
        _check_value(path, entry, value)
        if entry.type == "table":
            _check_table(path, value, key + ".")
        elif entry.type == "tables":
            for item in value:
                _check_table(path, item, key + "[].")


def _check_value(path: Path, entry: Entry, value: Any) -> None:
    text, ok = TYPES[entry.type]
    if not ok(value):
        raise UsageError(f"board file {path}: key '{_shown(entry.key)}' must be {text}, "
                         f"not {type(value).__name__} ({value!r})")
    if entry.choices and value not in entry.choices:
        raise UsageError(f"board file {path}: key '{_shown(entry.key)}' is {value!r}; "
                         f"it takes {', '.join(map(repr, entry.choices))}")


def _unknown(path: Path, key: str, prefix: str) -> UsageError:
    """The error for an unknown key: the closest known key of the same table, else them all."""
    known = [k for k in ENTRIES if k.startswith(prefix) and "." not in k[len(prefix):]]
    hint = difflib.get_close_matches(key, known, n=1)
    also = f"; did you mean '{_shown(hint[0])}'?" if hint else f" (keys here: {', '.join(map(_shown, known))})"
    return UsageError(f"board file {path}: unknown key '{_shown(key)}'{also}")


def _shown(key: str) -> str:
    """A key as the board file spells it (`memory.regions.name` for an item of [[memory.regions]])."""
    return key.replace("[]", "")
