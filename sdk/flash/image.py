"""Firmware images (.bin, Intel .hex) and the flash geometry of the board they go to.

The geometry comes from the board file's `[flash]` table, e.g. for an STM32F767:

    [flash]
    method = "an3155"
    device_id = 0x451
    start = 0x08000000
    sectors = [{ count = 4, size = 0x8000 }, { count = 1, size = 0x20000 }, { count = 7, size = 0x40000 }]

`sectors` lists runs of equal-sized erase units (pages or sectors) from `start` upward;
the n-th unit is the page number the bootloader's erase commands take. Optional keys:
`app_start` (where a .bin goes and below which nothing is written: a resident
bootloader lives there; default `start`), `default_baud` and `max_baud` (115200), and
`image_header` (a Python file in the board folder whose `problem(image)` says why the
board's bootloader would refuse to start an image: `cuvil-sdk flash` checks it first;
see sdk/flash/bootloader.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..errors import UsageError

BLOCK = 256  # the most WRITE MEMORY / READ MEMORY move in one command (AN3155)
WORD = 4     # writes start on and cover whole 32-bit words (flash programs by word)


@dataclass(frozen=True)
class Sector:
    """One erase unit: the bootloader's page number `index` covers [address, end)."""

    index: int
    address: int
    size: int

    @property
    def end(self) -> int:
        return self.address + self.size


@dataclass(frozen=True)
class FlashGeometry:
    """Where a board's flash is, how it is cut into erase units, and who the chip is."""

    board: str
    start: int
    sectors: tuple[Sector, ...]
    app_start: int
    device_id: int
    default_baud: int = 115200
    max_baud: int = 115200

    @property
    def end(self) -> int:
        return self.sectors[-1].end

    @property
    def size(self) -> int:
        return self.end - self.start

    @classmethod
    def from_board(cls, board: Any) -> "FlashGeometry":
        """The geometry of a `Board` (anything with `.name` and `.get(dotted)`)."""
        table = board.get("flash")
        if not isinstance(table, dict):
            raise UsageError(f"board '{board.name}' cannot be flashed over a serial port "
                             f"(its board file has no [flash] table)")
        return cls.from_table(board.name, table)

    @classmethod
    def from_table(cls, name: str, table: dict[str, Any]) -> "FlashGeometry":
        """Build and check the geometry from a board file's `[flash]` table."""
        def bad(why: str) -> UsageError:
            return UsageError(f"board '{name}': [flash] {why}")

        method = table.get("method")
        if method != "an3155":
            raise bad(f"method is {method!r}; this flasher speaks only \"an3155\"")
        for key in ("start", "device_id", "sectors"):
            if key not in table:
                raise bad(f"lacks '{key}'")
        start = int(table["start"])
        sectors: list[Sector] = []
        address = start
        for run in table["sectors"]:
            count, size = int(run.get("count", 0)), int(run.get("size", 0))
            # Blocks never straddle a BLOCK boundary, so sectors that are whole blocks
            # guarantee no write or read crosses from one sector into the next.
            if count <= 0 or size <= 0 or size % BLOCK:
                raise bad(f"sector run {run!r} needs count > 0 and a size that is a multiple of {BLOCK}")
            for _ in range(count):
                sectors.append(Sector(len(sectors), address, size))
                address += size
        if not sectors:
            raise bad("'sectors' is empty")
        app_start = int(table.get("app_start", start))
        if not any(s.address == app_start for s in sectors):
            raise bad(f"app_start 0x{app_start:08X} is not the start of a sector")
        return cls(
            board=name,
            start=start,
            sectors=tuple(sectors),
            app_start=app_start,
            device_id=int(table["device_id"]),
            default_baud=int(table.get("default_baud", 115200)),
            max_baud=int(table.get("max_baud", 115200)),
        )

    def sectors_for(self, ranges: Iterable[tuple[int, int]]) -> list[Sector]:
        """The erase units that the half-open address ranges touch, in address order."""
        spans = list(ranges)
        return [s for s in self.sectors if any(lo < s.end and s.address < hi for lo, hi in spans)]


@dataclass(frozen=True)
class Segment:
    """Bytes that go to consecutive addresses starting at `address`."""

    address: int
    data: bytes

    @property
    def end(self) -> int:
        return self.address + len(self.data)


@dataclass(frozen=True)
class Image:
    """A firmware image: non-overlapping segments in address order."""

    path: Path
    format: str  # "bin" or "hex"
    segments: tuple[Segment, ...]

    @property
    def start(self) -> int:
        return self.segments[0].address

    @property
    def end(self) -> int:
        return self.segments[-1].end

    @property
    def size(self) -> int:
        """Bytes of data in the file (gaps not counted)."""
        return sum(len(s.data) for s in self.segments)

    def blocks(self) -> list[tuple[int, bytes]]:
        """(address, data) for each WRITE MEMORY command, in address order.

        Each segment is widened to whole words, the widening filled with 0xFF: erased
        flash reads 0xFF, so the padding changes nothing and verifies as written.
        Blocks are cut on absolute 256-byte boundaries, so none crosses a sector.
        """
        spans: list[tuple[int, bytearray]] = []
        for seg in self.segments:
            lo = seg.address - seg.address % WORD
            hi = -(-seg.end // WORD) * WORD
            data = bytearray(b"\xff" * (seg.address - lo)) + seg.data + b"\xff" * (hi - seg.end)
            if spans and lo <= spans[-1][0] + len(spans[-1][1]):
                # Two segments that share a word after widening become one span.
                prev_lo, prev = spans[-1]
                overlap = prev_lo + len(prev) - lo
                for i in range(overlap):
                    prev[len(prev) - overlap + i] &= data[i]
                prev.extend(data[overlap:])
            else:
                spans.append((lo, data))
        blocks: list[tuple[int, bytes]] = []
        for lo, data in spans:
            address, offset = lo, 0
            while offset < len(data):
                n = min(BLOCK - address % BLOCK, len(data) - offset)
                blocks.append((address, bytes(data[offset:offset + n])))
                address += n
                offset += n
        return blocks

    def plan(self, geometry: FlashGeometry) -> list[Sector]:
        """Check the image fits the board's writable flash; the sectors to erase."""
        if self.start < geometry.app_start or self.end > geometry.end:
            raise UsageError(
                f"{self.path.name}: image spans 0x{self.start:08X}-0x{self.end:08X}, outside the writable flash "
                f"0x{geometry.app_start:08X}-0x{geometry.end:08X} of board '{geometry.board}'")
        return geometry.sectors_for((s.address, s.end) for s in self.segments)


def load_image(path: Path, geometry: FlashGeometry) -> Image:
    """Read a .bin (placed at the board's application start) or an Intel .hex file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".bin", ".hex"):
        hint = " (flash the .bin or .hex built beside it)" if suffix in (".elf", ".axf", ".out") else ""
        raise UsageError(f"{path}: firmware must be a .bin or an Intel .hex file{hint}")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read firmware {path}: {exc.strerror or exc}") from exc
    if suffix == ".bin":
        segments = [Segment(geometry.app_start, raw)] if raw else []
    else:
        segments = parse_intel_hex(raw, path)
    if not segments:
        raise UsageError(f"{path}: the firmware image is empty")
    return Image(path=path, format=suffix[1:], segments=tuple(segments))


def parse_intel_hex(raw: bytes, path: Path) -> list[Segment]:
    """Data records of an Intel HEX file as merged segments; errors name the line."""
    chunks: dict[int, bytes] = {}
    base = 0
    saw_eof = False
    for lineno, line in enumerate(raw.decode("ascii", errors="replace").splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        where = f"{path}:{lineno}"
        if saw_eof:
            raise UsageError(f"{where}: data after the end-of-file record")
        if not line.startswith(":") or len(line) < 11 or len(line) % 2 == 0:
            raise UsageError(f"{where}: not an Intel HEX record")
        try:
            record = bytes.fromhex(line[1:])
        except ValueError:
            raise UsageError(f"{where}: not an Intel HEX record (bad hex digits)") from None
        count, offset, kind = record[0], int.from_bytes(record[1:3], "big"), record[3]
        data = record[4:-1]
        if len(data) != count:
            raise UsageError(f"{where}: record length {count} does not match its {len(data)} data bytes")
        if sum(record) & 0xFF:
            raise UsageError(f"{where}: checksum error")
        if kind == 0x00:
            address = base + offset
            if address + count > 1 << 32:
                raise UsageError(f"{where}: data beyond the 32-bit address space")
            if not data:
                continue
            if address in chunks:
                raise UsageError(f"{where}: records overlap at 0x{address:08X}")
            chunks[address] = data
        elif kind == 0x01:
            saw_eof = True
        elif kind == 0x02 and count == 2:
            base = int.from_bytes(data, "big") << 4
        elif kind == 0x04 and count == 2:
            base = int.from_bytes(data, "big") << 16
        elif kind in (0x03, 0x05) and count == 4:
            pass  # start address: GO uses the image's vector table, not the entry point
        else:
            raise UsageError(f"{where}: unsupported record type 0x{kind:02X}")
    if not saw_eof:
        raise UsageError(f"{path}: no end-of-file record (truncated file?)")
    segments: list[Segment] = []
    for address in sorted(chunks):
        data = chunks[address]
        if segments and address < segments[-1].end:
            raise UsageError(f"{path}: records overlap at 0x{address:08X}")
        if segments and address == segments[-1].end:
            segments[-1] = Segment(segments[-1].address, segments[-1].data + data)
        else:
            segments.append(Segment(address, data))
    return segments
