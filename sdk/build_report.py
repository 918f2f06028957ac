"""What a firmware image spends its flash and RAM on, checked against the board's budget.

Everything is read from the linker map (written even when the link fails, so an image that
does not fit is explained the same way), from `nm`, and from gcc's stack-usage files:
`-fstack-usage` (.su, one frame per function) and `-fcallgraph-info=su` (.ci, the call graph
with frames) beside each object in build/obj/.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .boards import Board
from .errors import BudgetError, ToolError

BINUTILS_PACKAGE = "binutils-arm-none-eabi"
# Output sections that take no memory on the target.
_NOT_LOADED = re.compile(r"^\.(debug|comment|ARM\.attributes|stab|gnu\.attributes|note)")
# Output sections without contents: they take RAM but no flash, whatever load address the
# map gives them.
_NO_CONTENTS = re.compile(r"^\.(bss|sbss|tbss|stack|heap|noinit)")
# Input sections of the further memory regions (board key memory.regions): .psram.bss.net_arena
_REGION_SECTION = re.compile(r"^\.\w+\.(?:rodata|bss)\.(.+)$")
# Hardware exception frame with the FP extension (26 words) plus the alignment word.
EXCEPTION_FRAME_BYTES = 108
# The model must not allocate or print; the whole image must not contain an allocator.
ALLOCATOR = ("malloc", "free", "calloc", "realloc", "_sbrk", "_sbrk_r", "_malloc_r", "_free_r",
             "_calloc_r", "_realloc_r")
STDIO = ("printf", "fprintf", "sprintf", "snprintf", "vprintf", "vfprintf", "vsnprintf", "puts",
         "putchar", "fputs", "fputc", "fopen", "fclose", "fread", "fwrite", "fflush", "scanf",
         "exit", "abort")


@dataclass(frozen=True)
class Piece:
    """One input section placed by the linker."""

    output: str  # output section, e.g. ".rodata"
    name: str  # input section, e.g. ".rodata.net_w0"
    obj: str  # "net_weights.o", "libc.a(lib_a-memcpy.o)", or "" for linker-script space
    size: int

    @property
    def symbol(self) -> str:
        """The symbol a -ffunction-sections/-fdata-sections input section holds."""
        for prefix in (".text.startup.", ".text.", ".rodata.", ".data.", ".bss.", ".sbss.", ".sdata."):
            if self.name.startswith(prefix):
                return self.name[len(prefix):]
        placed = _REGION_SECTION.match(self.name)  # .<region>.rodata.<symbol>, .<region>.bss.<symbol>
        return placed.group(1) if placed else self.name


@dataclass(frozen=True)
class LinkMap:
    regions: dict[str, tuple[int, int]]  # name -> (origin, length)
    sections: dict[str, tuple[int, int, int]]  # output section -> (vma, lma, size)
    pieces: list[Piece]

    def region_of(self, address: int) -> str:
        """The region with the highest origin at or below the address (an overflowed
        section lies past its region's end, and still belongs to it)."""
        best = ""
        for name, (origin, _) in self.regions.items():
            if origin <= address and (not best or origin > self.regions[best][0]):
                best = name
        return best


def _tool(board: Board, name: str) -> str:
    exe = str(board.get("toolchain.prefix", "")) + name
    if shutil.which(exe) is None:
        raise ToolError(f"{exe} not found: install the Debian package {BINUTILS_PACKAGE}")
    return exe


def parse_map(map_file: Path) -> LinkMap:
    """Parse a GNU ld map file: memory regions, output sections, and input sections."""
    regions: dict[str, tuple[int, int]] = {}
    sections: dict[str, tuple[int, int, int]] = {}
    pieces: list[Piece] = []
    lines = Path(map_file).read_text(errors="replace").splitlines()
    hexn = r"0x([0-9a-fA-F]+)"
    region_re = re.compile(rf"^(\w+)\s+{hexn}\s+{hexn}")
    out_re = re.compile(rf"^(\S+)?\s+{hexn}\s+{hexn}(?:\s+load address {hexn})?\s*$")
    in_re = re.compile(rf"^ (\S+)?\s+{hexn}\s+{hexn}\s+(\S.*)$")
    state, output, pending = "", "", ""
    for line in lines:
        if line.startswith("Memory Configuration"):
            state = "regions"
            continue
        if line.startswith("Linker script and memory map"):
            state = "map"
            continue
        if state == "regions":
            m = region_re.match(line)
            if m and m.group(1) != "default":
                regions[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16))
            continue
        if state != "map" or not line.strip():
            continue
        m = out_re.match(line)
        if not line[0].isspace() or (pending == "@output" and m):
            # An output section; a long name has its numbers on the next line.
            if not line[0].isspace():
                output = line.split()[0]
            pending = "" if m else "@output"
            if m:
                vma = int(m.group(2), 16)
                lma = int(m.group(4), 16) if m.group(4) else vma
                sections[output] = (vma, lma, int(m.group(3), 16))
            continue
        pending = "" if pending == "@output" else pending
        if line.startswith(" *fill*"):
            size = int(line.split()[2], 16)
            pieces.append(Piece(output, output if output == ".stack" else "*fill*", "", size))
            continue
        if re.match(r"^ [^\s*]\S*$", line):  # a long input section name, numbers follow
            pending = line.strip()
            continue
        m = in_re.match(line)
        if m and (m.group(1) or pending) and not m.group(4).startswith(("0x", "(size before")):
            name = m.group(1) or pending
            obj = m.group(4).strip()
            obj = obj.rsplit("/", 1)[-1] if "(" not in obj else obj[obj.rfind("/", 0, obj.find("(")) + 1:]
            pieces.append(Piece(output, name, obj, int(m.group(3), 16)))
        pending = ""
    return LinkMap(regions, sections, pieces)


def _owner(piece: Piece, names: tuple[str, ...]) -> str | None:
    """The model a piece belongs to (its code, weights or own arena), among the image's models."""
    for name in names:
        if piece.symbol == f"{name}_arena" or piece.obj in (f"{name}.o", f"{name}_weights.o"):
            return name
    return None


def _category(piece: Piece, name: str, board_objects: set[str], models: tuple[str, ...] = ()) -> str:
    names = (name, *models)
    if piece.symbol in {f"{n}_arena" for n in names}:
        return "arena"
    if piece.obj in {f"{n}_weights.o" for n in names}:
        return "weights"
    if piece.obj in {f"{n}.o" for n in names}:
        return "model"
    if piece.obj == "harness.o":
        return "harness"
    if piece.obj in board_objects:
        return "board"
    if ".a(" in piece.obj:
        return "libraries"
    if piece.output == ".stack" and not piece.obj:
        return "stack"
    return "alignment" if not piece.obj else "other"


def memory_use(link: LinkMap, name: str, board: Board, models: tuple[str, ...] = ()) -> dict[str, Any]:
    """Bytes per region, per category (weights, model, arena, ...) and per symbol; for an image
    of several models also per model ({model: {region: {category: bytes}}})."""
    by_region: dict[str, dict[str, int]] = {r: {} for r in link.regions}
    by_model: dict[str, dict[str, dict[str, int]]] = {m: {r: {} for r in link.regions} for m in models}
    board_objects = {Path(s).stem + ".o" for s in board.get("firmware.sources", [])}
    items: list[dict[str, Any]] = []
    pieces = list(link.pieces)
    for output, (_, _, size) in link.sections.items():  # space the script itself reserves
        placed = sum(p.size for p in pieces if p.output == output)
        if size > placed and not _NOT_LOADED.match(output):
            pieces.append(Piece(output, output, "", size - placed))
    for piece in pieces:
        if _NOT_LOADED.match(piece.output) or piece.output not in link.sections or piece.size == 0:
            continue
        vma, lma, _ = link.sections[piece.output]
        category = _category(piece, name, board_objects, models)
        owner = _owner(piece, models)
        # A section with contents loaded from elsewhere (.data) takes space in both regions.
        regions = {link.region_of(vma)}
        if not _NO_CONTENTS.match(piece.output):
            regions.add(link.region_of(lma))
        for region in regions:
            if region:
                by_region[region][category] = by_region[region].get(category, 0) + piece.size
                if owner is not None:
                    by_model[owner][region][category] = by_model[owner][region].get(category, 0) + piece.size
                items.append({"symbol": piece.symbol, "object": piece.obj or "(linker script)",
                              "category": category, "region": region, "bytes": piece.size})
    items.sort(key=lambda i: -i["bytes"])
    return {"regions": by_region, "items": items, "models": by_model}


def _stack_graph(su_files: list[Path]) -> tuple[dict[str, int], dict[str, list[str]], set[str]]:
    """Frames and call edges from .ci files beside the .su files (or frames from .su alone)."""
    frames: dict[str, int] = {}
    calls: dict[str, list[str]] = {}
    unbounded: set[str] = set()
    node_re = re.compile(r'node: \{ title: "([^"]+)" label: "([^"\\]+)\\n[^"]*?(?:\\n(\d+) bytes \(([^)]*)\))?"')
    edge_re = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')
    for su in su_files:
        ci = Path(su).with_suffix(".ci")
        if ci.exists():
            text = ci.read_text(errors="replace")
            for title, _, size, kind in node_re.findall(text):
                if size:
                    frames[title] = int(size)
                    if kind.startswith("dynamic") and "bounded" not in kind:
                        unbounded.add(title)
            for source, target in edge_re.findall(text):
                calls.setdefault(source, []).append(target)
        else:
            for line in Path(su).read_text(errors="replace").splitlines():
                where, size, kind = line.rsplit("\t", 2)
                func = where.rsplit(":", 1)[-1]
                frames[func] = max(frames.get(func, 0), int(size))
                if kind.startswith("dynamic") and "bounded" not in kind:
                    unbounded.add(func)
    return frames, calls, unbounded


def stack_estimate(su_files: list[Path], entry: str = "Reset_Handler",
                   interrupts: tuple[str, ...] = ("SysTick_Handler",)) -> dict[str, Any]:
    """Worst stack depth: the deepest call chain from `entry`, plus one exception frame and
    the deepest interrupt handler chain. Library functions (libgcc, libm) have no stack
    figures and count as 0; recursion or unbounded dynamic frames make it unbounded.
    Without .ci files (no call graph) it is entry + main + the largest other frame."""
    frames, calls, unbounded = _stack_graph(su_files)
    bounded = not unbounded

    def deepest(func: str, seen: tuple[str, ...]) -> tuple[int, list[str]]:
        nonlocal bounded
        if func in seen:
            bounded = False  # recursion
            return 0, []
        best, path = 0, []
        for callee in calls.get(func, []):
            depth, sub = deepest(callee, seen + (func,))
            if depth > best:
                best, path = depth, sub
        return frames.get(func, 0) + best, [func] + path

    if calls:
        depth, path = deepest(entry, ())
        irq = max((deepest(i, ()) for i in interrupts), default=(0, []))
        depth += EXCEPTION_FRAME_BYTES + irq[0]
    else:
        others = [v for k, v in frames.items() if k not in (entry, "main")]
        depth = frames.get(entry, 0) + frames.get("main", 0) + max(others, default=0) + EXCEPTION_FRAME_BYTES
        path = [entry, "main", "(largest other frame)"]
    return {"estimate": depth, "bounded": bounded, "path": [p.rsplit(":", 1)[-1] for p in path]}


def _arena_from_nm(elf: Path, name: str, board: Board) -> int:
    out = subprocess.run([_tool(board, "nm"), "-S", str(elf)], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == f"{name}_arena":
            return int(parts[1], 16)
    return 0


def size_report(elf: Path, map_file: Path, su_files: list[Path], board: Board,
                name: str | None = None, models: tuple[str, ...] = ()) -> dict[str, Any]:
    """Flash and RAM of a linked firmware image against the board's budget.

    The model name defaults to the ELF's stem (build/<name>.elf). Keys: flash_bytes,
    ram_bytes, arena_bytes, weights_bytes, flash_budget, ram_budget, fits, flash and ram
    (bytes per category: weights, model, arena, harness, board, libraries, stack,
    alignment, other), largest (the 10 biggest symbols), stack (reserved, estimate,
    bounded, path). An image of several models (`models`: their names) adds `models`: per
    model its arena (its own, 0 when the image's arena is shared), weights, code and flash."""
    name = name or Path(elf).stem
    report = _report(parse_map(map_file), name, board, models)
    if report["arena_bytes"] == 0 and Path(elf).exists():  # arena in a custom section
        report["arena_bytes"] = _arena_from_nm(Path(elf), name, board)
    stack = stack_estimate(su_files)
    stack["reserved"] = int(board.get("memory.stack_bytes", 0))
    report["stack"] = stack
    report["fits"] = report["fits"] and stack["bounded"] and stack["estimate"] <= stack["reserved"]
    return report


def _report(link: LinkMap, name: str, board: Board, models: tuple[str, ...] = ()) -> dict[str, Any]:
    use = memory_use(link, name, board, models)
    flash_region, ram_region = _flash_and_ram(list(link.regions))
    flash = dict(use["regions"].get(flash_region, {}))
    gaps = section_gaps(link, flash_region)
    if gaps:  # the image holds the padding between output sections too
        flash["alignment"] = flash.get("alignment", 0) + gaps
    ram = use["regions"].get(ram_region, {})
    flash_bytes, ram_bytes = sum(flash.values()), sum(ram.values())
    report = {
        "board": board.name,
        "flash_bytes": flash_bytes,
        "ram_bytes": ram_bytes,
        "arena_bytes": ram.get("arena", 0),
        "weights_bytes": flash.get("weights", 0),
        "flash_budget": board.flash_bytes,
        "ram_budget": board.ram_bytes,
        "fits": flash_bytes <= board.flash_bytes and ram_bytes <= board.ram_bytes,
        "flash": dict(sorted(flash.items(), key=lambda kv: -kv[1])),
        "ram": dict(sorted(ram.items(), key=lambda kv: -kv[1])),
        "largest": use["items"][:10],
    }
    report["regions"] = region_use(link, use["regions"], {flash_region: flash_bytes})
    report["fits"] = report["fits"] and all(r["used"] <= r["budget"] for r in report["regions"].values())
    if models:
        report["models"] = [_model_use(m, use["models"][m], flash_region, ram_region) for m in models]
    return report


def region_use(link: LinkMap, by_region: dict[str, dict[str, int]], totals: dict[str, int]) -> dict[str, Any]:
    """Every memory region of the link: origin, budget (its length), bytes used and by what.
    `totals` overrides a region's used bytes (flash: with the padding between sections)."""
    return {name: {"origin": origin, "budget": length,
                   "used": totals.get(name, sum(by_region.get(name, {}).values())),
                   "bytes": dict(sorted(by_region.get(name, {}).items(), key=lambda kv: -kv[1]))}
            for name, (origin, length) in link.regions.items()}


def _model_use(model: str, regions: dict[str, dict[str, int]], flash_region: str, ram_region: str) -> dict[str, Any]:
    """A model's share of an image; its arena and weights wherever they are placed (--arena-region,
    --weights region), its flash and RAM bytes in those two regions."""
    flash, ram = regions.get(flash_region, {}), regions.get(ram_region, {})
    anywhere = {kind: sum(r.get(kind, 0) for r in regions.values()) for kind in ("arena", "weights")}
    return {"name": model, "arena_bytes": anywhere["arena"], "weights_bytes": anywhere["weights"],
            "code_bytes": flash.get("model", 0), "flash_bytes": sum(flash.values()), "ram_bytes": sum(ram.values())}


NOT_LOADED = (".bss", ".stack", ".heap", ".noinit")  # allocated in RAM, never in the image
MAX_GAP = 64  # larger distances between sections are deliberate placements, not alignment


def section_gaps(link: LinkMap, region: str) -> int:
    """Alignment padding between the output sections loaded into `region` (by load address):
    the linker leaves it between sections (e.g. .text then an 8-aligned .rodata), and the
    .bin holds it, but no input section of the map owns it."""
    if region not in link.regions:
        return 0
    origin, length = link.regions[region]
    loaded = sorted((lma, size) for name, (_, lma, size) in link.sections.items()
                    if size and origin <= lma < origin + length and not name.startswith(NOT_LOADED))
    gaps = (nxt - (lma + size) for (lma, size), (nxt, _) in zip(loaded, loaded[1:]))
    return sum(gap for gap in gaps if 0 < gap <= MAX_GAP)


def _flash_and_ram(names: list[str]) -> tuple[str, str]:
    """The map's region names for flash and RAM (FLASH and RAM in our linker scripts, listed before
    the further regions)."""
    flash = next((r for r in names if "FLASH" in r.upper() or "ROM" in r.upper()), names[0] if names else "")
    ram = next((r for r in names if "RAM" in r.upper()), names[-1] if names else "")
    return flash, ram


def _largest_text(report: dict[str, Any], region: str | None = None, count: int = 3) -> str:
    items = [i for i in report["largest"] if region is None or i["region"] == region][:count]
    return ", ".join(f"{i['symbol']} {i['bytes']} B ({i['category']}, {i['object']})" for i in items)


def check_budget(report: dict[str, Any]) -> None:
    """Raise BudgetError naming what takes the space, unless the image fits the budget."""
    if report["fits"]:
        return
    problems = []
    if report["flash_bytes"] > report["flash_budget"]:
        problems.append(f"flash {report['flash_bytes']} B > budget {report['flash_budget']} B")
    if report["ram_bytes"] > report["ram_budget"]:
        problems.append(f"RAM {report['ram_bytes']} B > budget {report['ram_budget']} B")
    for name, region in report.get("regions", {}).items():
        if region["used"] > region["budget"] and name not in _flash_and_ram(list(report["regions"])):
            problems.append(f"region {name} {region['used']} B > budget {region['budget']} B")
    stack = report.get("stack")
    if stack and not stack["bounded"]:
        problems.append("stack depth unbounded (recursion or a dynamic frame)")
    elif stack and stack["estimate"] > stack["reserved"]:
        problems.append(f"stack needs ~{stack['estimate']} B > {stack['reserved']} B reserved "
                        f"({' > '.join(stack['path'])})")
    raise BudgetError(f"the model does not fit board '{report['board']}': {'; '.join(problems)}; "
                      f"largest: {_largest_text(report)}")


def budget_error_from_link(log: str, map_file: Path, board: Board, name: str) -> BudgetError | None:
    """For a failed link: a BudgetError naming what took the space when the log says a
    region overflowed (the regions are the budget), else None (some other link error)."""
    overflows = re.findall(r"region [`']?(\w+)'? overflowed by (\d+) bytes", log)
    if not overflows or not Path(map_file).exists():
        return None
    link = parse_map(map_file)
    report = _report(link, name, board)
    parts = []
    for region, over in dict(overflows).items():
        parts.append(f"{region} overflowed by {over} bytes (budget {link.regions.get(region, (0, 0))[1]} B); "
                     f"largest in {region}: {_largest_text(report, region)}")
    return BudgetError(f"the model does not fit board '{board.name}': {'; '.join(parts)}")


def forbidden_symbols(elf: Path, model_objects: list[Path], board: Board) -> list[str]:
    """Problems with the lite memory policy: allocator or stdio symbols that the model
    objects use (undefined references), and any allocator linked into the image."""
    nm = _tool(board, "nm")
    problems = []
    for obj in model_objects:
        out = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True, check=True).stdout
        used = {line.split()[-1] for line in out.splitlines() if line.strip()}
        bad = sorted(used.intersection(ALLOCATOR + STDIO))
        if bad:
            problems.append(f"{Path(obj).name} calls {', '.join(bad)}")
    out = subprocess.run([nm, "--defined-only", str(elf)], capture_output=True, text=True, check=True).stdout
    linked = {line.split()[-1] for line in out.splitlines() if line.strip()}
    bad = sorted(linked.intersection(ALLOCATOR))
    if bad:
        problems.append(f"{Path(elf).name} links {', '.join(bad)}")
    return problems


def check_no_malloc(elf: Path, board: Board, model_objects: list[Path] | None = None) -> None:
    """Raise BudgetError if the model objects (default: build/obj/<name>.o and
    <name>_weights.o beside build/<name>.elf) call malloc/free/stdio, or if the image links
    an allocator at all (the harness does its I/O by direct semihosting, so none is needed)."""
    elf = Path(elf)
    if model_objects is None:
        model_objects = [elf.parent / "obj" / f"{elf.stem}.o", elf.parent / "obj" / f"{elf.stem}_weights.o"]
    problems = forbidden_symbols(elf, model_objects, board)
    if problems:
        raise BudgetError("the lite profile allows no malloc and no stdio in the model: " + "; ".join(problems))
