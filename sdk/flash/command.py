"""`cuvil-sdk flash`: put a firmware image on a board through its ROM bootloader."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

from ..boards import Board, get_board
from ..errors import UsageError
from .an3155 import An3155Client, Timeouts, flash_error, open_port
from .image import FlashGeometry, Image, Sector, load_image

MIN_BAUD = 1200  # the slowest rate the STM32 bootloaders' autobaud detects (AN2606)


class Progress:
    """Each step's progress on stderr: one redrawn line on a terminal, else a line per quarter."""

    def __init__(self, enabled: bool, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = self.stream.isatty()
        self._step, self._total, self._shown = "", 0, 0
        self._redrawing = False  # a terminal line waits for its newline

    def start(self, step: str, total: int = 0) -> None:
        self.finish()
        self._step, self._total, self._shown = step, total, 0
        self._say(f"{step}...")

    def update(self, done: int) -> None:
        pct = 100 * done // max(self._total, 1)
        if self.tty and pct != self._shown:
            self._say(f"{self._step:<8} [{'#' * (pct // 5):<20}] {pct:3d}% ({done}/{self._total})")
        elif not self.tty and pct // 25 > self._shown // 25:
            self._say(f"{self._step}: {pct}% ({done}/{self._total})")
        self._shown = pct

    def finish(self) -> None:
        if self._redrawing:
            print(file=self.stream, flush=True)
            self._redrawing = False

    def _say(self, text: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            print(f"\r{text}\x1b[K", end="", file=self.stream, flush=True)
            self._redrawing = True
        else:
            print(text, file=self.stream, flush=True)


def flash_command(board: Board | str, port: str, baud: int | None, firmware: Path, *,
                  allow_mass_erase: bool = False, progress: bool = True, json_out: bool = False,
                  timeouts: Timeouts | None = None, retries: int = 3) -> dict[str, Any]:
    """Flash `firmware` (.bin at the board's application start, or Intel .hex) and start it.

    Steps: connect (0x7F, or resume a session), identify (GET, GET ID must match the
    board's device ID), protection check, erase of only the sectors the image
    touches, write in 256-byte blocks, verify by reading every block back, GO to the
    image's first address. GO is sent only after verification passed, so a failed or
    interrupted flash never starts a half-written image. When the ACK after GO's address
    is lost and the bootloader no longer answers, it has most likely started the image:
    the flash succeeds with `go_confirmed: false` and a one-line warning on stderr (also
    in the report's `warnings`). A board whose bootloader
    checks an integrity header before GO ([flash] image_header, e.g. cortex-m7-app)
    gets only images with a valid header (UsageError otherwise, before any I/O).

    A read-protected chip can only be unprotected by erasing all of its flash; that
    happens only with allow_mass_erase. Progress goes to stderr when `progress` is
    true or stderr is a terminal. Nothing goes to stdout, whatever `json_out` says:
    the caller prints the returned report (as JSON for `--json`, else its own line).
    Raises UsageError (bad board, baud or file) or FlashError (one line: the step and
    the address that failed).
    """
    board = get_board(board) if isinstance(board, str) else board
    geometry = FlashGeometry.from_board(board)
    baud = geometry.default_baud if baud is None else baud
    if not MIN_BAUD <= baud <= geometry.max_baud:
        raise UsageError(f"--baud {baud}: the bootloader of board '{board.name}' "
                         f"takes {MIN_BAUD} to {geometry.max_baud}")
    image = load_image(Path(firmware), geometry)
    sectors = image.plan(geometry)
    _check_header(board, image)
    blocks = image.blocks()
    show = Progress(progress or sys.stderr.isatty())
    began = time.monotonic()

    link = open_port(port, baud)
    try:
        client = An3155Client(link, timeouts=timeouts, retries=retries, allow_mass_erase=allow_mass_erase)
        show.start("connect")
        resumed = client.connect()
        show.start("identify")
        info = client.identify()
        if info.device_id != geometry.device_id:
            raise flash_error("identify", f"device ID 0x{info.device_id:03X} is not board '{board.name}' "
                                          f"(0x{geometry.device_id:03X}): wrong --board or wrong port?")
        unprotected = False
        if client.is_read_protected(image.start):
            if not allow_mass_erase:
                raise flash_error("protection check", "the chip is read-protected; removing the protection "
                                  "erases all of its flash: pass --allow-mass-erase to do so", image.start)
            show.start("unprotect")
            client.readout_unprotect()
            client.connect()  # the chip resets after unprotecting
            client.identify()
            unprotected = True
        _erase(client, sectors, show)
        _write(client, blocks, show)
        _verify(client, image, blocks, show)
        show.start("go")
        started = client.go(image.start)
    finally:
        show.finish()
        link.close()
    warnings = [] if started else [_unconfirmed_start(image)]
    for warning in warnings:
        print(f"cuvil-sdk: warning: {warning}", file=sys.stderr, flush=True)

    return {
        "board": board.name,
        "port": port,
        "baud": baud,
        "firmware": str(Path(firmware).resolve()),
        "format": image.format,
        "start_address": f"0x{image.start:08X}",
        "end_address": f"0x{image.end:08X}",
        "bytes": image.size,
        "blocks": len(blocks),
        "erased_sectors": [s.index for s in sectors],
        "erase_command": f"0x{info.erase_command:02X}",
        "device_id": f"0x{info.device_id:03X}",
        "bootloader_version": info.version_text,
        "resumed_session": resumed,
        "unprotected": unprotected,
        "verified": True,
        "go_address": f"0x{image.start:08X}",
        "go_confirmed": started,
        "warnings": warnings,
        "retries": client.retries_used,
        "seconds": round(time.monotonic() - began, 3),
    }


def _unconfirmed_start(image: Image) -> str:
    """The one line for a GO whose ACK never came while the bootloader went quiet: what is
    known (written, verified, GO sent) and what is not (that the image runs)."""
    return (f"go at 0x{image.start:08X}: {image.path.name} is written and verified and GO was sent, but the start "
            f"is not confirmed (no ACK after GO, and the bootloader no longer answers): if the board does not run "
            f"it, reset the board with BOOT0 low, or flash again")


def _check_header(board: Board, image: Image) -> None:
    """A board whose bootloader checks an integrity header before GO ([flash] image_header)
    gets only images that carry a valid one: anything else would be written and then
    refused, so it is refused here, before the board is touched."""
    if not board.get("flash.image_header"):
        return
    from .bootloader import image_problem
    if len(image.segments) != 1:
        raise UsageError(f"{image.path.name}: the bootloader of board '{board.name}' takes one contiguous image, "
                         f"not {len(image.segments)} separate blocks")
    problem = image_problem(board, image.segments[0].data)
    if problem:
        raise UsageError(f"{image.path.name}: {problem}; the bootloader of board '{board.name}' would refuse "
                         f"to start it")


def _erase(client: An3155Client, sectors: list[Sector], show: Progress) -> None:
    show.start("erase", len(sectors))
    for done, sector in enumerate(sectors, start=1):
        client.erase(sector.index, sector.address)
        show.update(done)


def _write(client: An3155Client, blocks: list[tuple[int, bytes]], show: Progress) -> None:
    total = sum(len(data) for _, data in blocks)
    show.start("write", total)
    done = 0
    for address, data in blocks:
        client.write_memory(address, data)
        done += len(data)
        show.update(done)


def _verify(client: An3155Client, image: Image, blocks: list[tuple[int, bytes]], show: Progress) -> None:
    """Read every block back: catches a write the chip acknowledged but did not store."""
    total = sum(len(data) for _, data in blocks)
    show.start("verify", total)
    done = 0
    for address, data in blocks:
        got = client.read_memory(address, len(data), step="verify")
        if got != data:
            at = next(i for i in range(len(data)) if got[i] != data[i])
            raise flash_error("verify", f"read back 0x{got[at]:02X} where {image.path.name} has 0x{data[at]:02X} "
                              f"(the {len(data)}-byte block at 0x{address:08X} was acknowledged but not stored "
                              f"as sent); the image was not started", address + at)
        done += len(data)
        show.update(done)
