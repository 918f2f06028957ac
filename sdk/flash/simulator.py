"""A simulated STM32 ROM bootloader: the device side of AN3155, for tests.

`Simulator(geometry, transport="pty" | "tcp")` serves one `Bootloader` from a thread,
over a pty pair (`.port` is the slave, e.g. /dev/pts/5: what stm32flash and pyserial
open) or a TCP socket on 127.0.0.1 (`.port` is a pyserial URL, socket://127.0.0.1:N).

Flash model: the board's geometry, erased bytes read 0xFF, programming can only
clear bits. With `overwrite="strict"` (the default) a WRITE MEMORY that would need
a 0 bit to become 1 is NACKed and stores nothing, as parts whose flash controller
flags a programming error do; so a missing erase shows up as a failure rather than
as corrupted data. With `overwrite="and"` the data is ANDed into what is there, as
bare flash cells do. Nothing below the geometry's `app_start` may be erased or
written (a resident bootloader lives there; on STM32 parts app_start is the flash
start, so this never bites).

Like the real chip, the bootloader's state survives a broken link: cut the cable in
the middle of a command and it still waits for the rest of it when the host returns.
After GO it "runs the application" and ignores the port until `reset()`.

Fault injection (`Fault`): NACK, silence or garbage at any ACK of a command, dropped
bytes in either direction, a write that is acknowledged but not stored, and a link
cut after the device has received k bytes.
"""
from __future__ import annotations

import os
import select
import socket
import threading
import tty
from collections import deque
from dataclasses import dataclass
from typing import Callable, Protocol

from .an3155 import (ACK, ERASE, EXTENDED_ERASE, GET, GET_ID, GET_VERSION, GO, INIT, NACK,
                     READ_MEMORY, READOUT_PROTECT, READOUT_UNPROTECT, WRITE_MEMORY,
                     WRITE_PROTECT, WRITE_UNPROTECT, checksum)
from .image import FlashGeometry

POLL_S = 0.05  # how often a waiting device looks at the stop and reset requests
FAULT_KINDS = ("nack", "silence", "garbage", "drop", "lost_write", "cut")


@dataclass
class Fault:
    """One injected failure; `fired` counts how often it took effect.

    kind        what happens
    ----------  -------------------------------------------------------------------
    nack        NACK instead of ACK number `stage` of the command (0 = the ACK of
                the command byte), then back to waiting for a command
    silence     nothing at that ACK; the command is abandoned
    garbage     `data` instead of that ACK; the command is abandoned
    drop        byte number `stage` of the command is lost: with direction "rx" the
                `stage`-th byte the host sends after the command pair, with "tx"
                the `stage`-th byte the device sends
    lost_write  a WRITE MEMORY is acknowledged but nothing is stored
    cut         the link is cut once the device has received `after_bytes` bytes
                (counted from start); the device keeps its state

    `command` is the opcode hit (INIT, 0x7F, for the init byte; lost_write implies
    WRITE MEMORY; cut needs none). The fault hits occurrences `nth`, `nth + 1`, ...
    of that command, `times` of them (None: every one from `nth` on).
    """

    kind: str
    command: int | None = None
    nth: int = 1
    times: int | None = 1
    stage: int = 0
    direction: str = "rx"
    after_bytes: int = 0
    data: bytes = b"\x55\xaa"
    fired: int = 0

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"fault kind {self.kind!r} is not one of {', '.join(FAULT_KINDS)}")
        if self.kind == "lost_write" and self.command is None:
            self.command = WRITE_MEMORY
        if self.kind not in ("cut",) and self.command is None:
            raise ValueError(f"a {self.kind} fault needs the command it hits")
        if self.direction not in ("rx", "tx"):
            raise ValueError("direction is 'rx' (host to device) or 'tx' (device to host)")

    def hits(self, command: int | None, occurrence: int) -> bool:
        last = None if self.times is None else self.nth + self.times
        return self.command == command and self.nth <= occurrence and (last is None or occurrence < last)


class _Abort(Exception):
    """The command ended early (NACK or an injected fault); wait for the next one."""


class _SystemReset(Exception):
    """The chip resets: back to waiting for 0x7F, flash kept."""


class _Stopped(Exception):
    """The simulator is shutting down."""


class Link(Protocol):
    """A byte pipe to the host that can be cut and comes back."""

    port: str

    def read_byte(self, check: Callable[[], None]) -> int: ...
    def write(self, data: bytes) -> None: ...
    def cut(self) -> None: ...
    def close(self) -> None: ...


class PtyLink:
    """The device end (master) of a pty pair; the host opens `port`, the slave."""

    def __init__(self) -> None:
        self._open()

    def _open(self) -> None:
        self._master, self._slave = os.openpty()
        # Raw: no echo, no CR/LF mapping, and no XON/XOFF, which would swallow 0x11
        # (READ MEMORY). Holding the slave open keeps the pty alive between clients.
        tty.setraw(self._slave)
        os.set_blocking(self._master, False)
        self.port = os.ttyname(self._slave)
        self._rx: deque[int] = deque()

    def read_byte(self, check: Callable[[], None]) -> int:
        while not self._rx:
            check()
            if select.select([self._master], [], [], POLL_S)[0]:
                try:
                    self._rx.extend(os.read(self._master, 4096))
                except OSError:
                    pass  # EAGAIN, or EIO while no client has the slave open
        return self._rx.popleft()

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._master, view):]
            except OSError:
                return  # nobody reads and the pty is full: bytes into a dead cable

    def cut(self) -> None:
        """Replace the pty (`port` names the new one), then close the old one: the
        host's reads fail, and by then `port` already says where to reconnect."""
        old = (self._master, self._slave)
        self._open()
        for fd in old:
            os.close(fd)

    def close(self) -> None:
        for fd in (self._master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass


class TcpLink:
    """A TCP listener on 127.0.0.1; one host connection at a time, new ones accepted."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = f"socket://127.0.0.1:{self._server.getsockname()[1]}"
        self._conn: socket.socket | None = None
        self._rx: deque[int] = deque()

    def read_byte(self, check: Callable[[], None]) -> int:
        while not self._rx:
            check()
            if self._conn is None:
                if select.select([self._server], [], [], POLL_S)[0]:
                    self._conn, _ = self._server.accept()
                    self._conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                continue
            if select.select([self._conn], [], [], POLL_S)[0]:
                try:
                    data = self._conn.recv(4096)
                except OSError:
                    data = b""
                if data:
                    self._rx.extend(data)
                else:
                    self.cut()  # the host hung up; wait for the next one
        return self._rx.popleft()

    def write(self, data: bytes) -> None:
        if self._conn is not None:
            try:
                self._conn.sendall(data)
            except OSError:
                self.cut()

    def cut(self) -> None:
        """Drop the connection and whatever it had sent that was not read yet."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._rx.clear()

    def close(self) -> None:
        self.cut()
        self._server.close()


class Bootloader:
    """The bootloader's protocol engine and flash; transport-free."""

    def __init__(self, geometry: FlashGeometry, *, device_id: int | None = None, version: int = 0x31,
                 erase_command: int = EXTENDED_ERASE, overwrite: str = "strict",
                 read_protected: bool = False, faults: tuple[Fault, ...] | list[Fault] = ()) -> None:
        if overwrite not in ("strict", "and"):
            raise ValueError("overwrite is 'strict' or 'and'")
        if erase_command not in (ERASE, EXTENDED_ERASE):
            raise ValueError("erase_command is 0x43 or 0x44")
        self.geometry = geometry
        self.flash = bytearray(b"\xff" * geometry.size)
        self.device_id = geometry.device_id if device_id is None else device_id
        self.version = version
        self.commands = (GET, GET_VERSION, GET_ID, READ_MEMORY, GO, WRITE_MEMORY, erase_command,
                         WRITE_PROTECT, WRITE_UNPROTECT, READOUT_PROTECT, READOUT_UNPROTECT)
        self.overwrite = overwrite
        self.read_protected = read_protected
        self.write_protected: set[int] = set()
        self.faults = list(faults)
        # What tests look at.
        self.rx_count = 0                   # bytes received from the host, all sessions
        self.log: list[tuple[int, int]] = []  # (rx offset of the command's first byte, opcode)
        self.erased: list[int] = []          # sector numbers, in the order erased
        self.stores: list[tuple[int, bytes]] = []  # (address, data) of each WRITE MEMORY that stored
        self.go_address: int | None = None
        self.in_session = False
        self.started = threading.Event()     # set by GO
        self._handlers: dict[int, Callable[[], None]] = {
            GET: self._get, GET_VERSION: self._get_version, GET_ID: self._get_id,
            READ_MEMORY: self._read, GO: self._go, WRITE_MEMORY: self._write,
            ERASE: self._erase, EXTENDED_ERASE: self._extended_erase,
            WRITE_PROTECT: self._write_protect, WRITE_UNPROTECT: self._write_unprotect,
            READOUT_PROTECT: self._readout_protect, READOUT_UNPROTECT: self._readout_unprotect,
        }
        self._occurrences: dict[int, int] = {}
        self._command: int | None = None
        self._occurrence = self._stage = self._rx_index = self._tx_index = 0
        self._link: Link | None = None
        self._check: Callable[[], None] = lambda: None

    def serve(self, link: Link, check: Callable[[], None]) -> None:
        """Run until `check` raises to stop; it may also raise a reset request."""
        self._link, self._check = link, check
        while True:
            try:
                self._boot()
            except _SystemReset:
                self.in_session = False

    def power_on_reset(self) -> None:
        """What a reset with BOOT0 high does to the state tests observe."""
        self.go_address = None
        self.started.clear()
        self.in_session = False

    # -- session -----------------------------------------------------------------------

    def _boot(self) -> None:
        while not self.in_session:
            if self._recv_byte() != INIT:
                continue  # before autobaud the chip hears only 0x7F
            self._begin(INIT)
            try:
                self._ack()
                self.in_session = True
            except _Abort:
                pass
        while True:
            code = self._recv_byte()
            if self._recv_byte() != code ^ 0xFF or code not in self.commands:
                self._link_write(bytes([NACK]))
                continue
            self._begin(code)
            try:
                self._handlers[code]()
            except _Abort:
                pass

    def _begin(self, code: int) -> None:
        self._occurrences[code] = self._occurrences.get(code, 0) + 1
        self._command, self._occurrence = code, self._occurrences[code]
        self._stage = self._rx_index = self._tx_index = 0
        self.log.append((self.rx_count - (1 if code == INIT else 2), code))

    def _fault(self, kinds: tuple[str, ...], stage: int | None = None, direction: str = "rx") -> Fault | None:
        for fault in self.faults:
            if (fault.kind in kinds and fault.hits(self._command, self._occurrence)
                    and (stage is None or fault.stage == stage)
                    and (fault.kind != "drop" or fault.direction == direction)):
                fault.fired += 1
                return fault
        return None

    def _ack(self) -> None:
        """Send ACK number `_stage` of this command, or what a fault puts in its place."""
        fault = self._fault(("nack", "silence", "garbage"), self._stage)
        self._stage += 1
        if fault is None:
            self._send(bytes([ACK]))
            return
        if fault.kind == "nack":
            self._send(bytes([NACK]))
        elif fault.kind == "garbage":
            self._send(fault.data)
        raise _Abort

    def _nack(self) -> None:
        self._send(bytes([NACK]))
        raise _Abort

    # -- bytes -------------------------------------------------------------------------

    def _recv_byte(self) -> int:
        assert self._link is not None
        while True:
            byte = self._link.read_byte(self._check)
            cut = next((f for f in self.faults if f.kind == "cut" and not f.fired
                        and self.rx_count >= f.after_bytes), None)
            if cut is None:
                self.rx_count += 1
                return byte
            cut.fired += 1
            self._link.cut()  # this byte and all in flight are lost with the cable

    def _recv(self, size: int) -> bytes:
        """Payload bytes of the current command, minus any an rx drop fault loses."""
        out = bytearray()
        while len(out) < size:
            byte = self._recv_byte()
            self._rx_index += 1
            if self._fault(("drop",), self._rx_index - 1, "rx") is None:
                out.append(byte)
        return bytes(out)

    def _send(self, data: bytes) -> None:
        out = bytearray()
        for byte in data:
            self._tx_index += 1
            if self._fault(("drop",), self._tx_index - 1, "tx") is None:
                out.append(byte)
        self._link_write(bytes(out))

    def _link_write(self, data: bytes) -> None:
        assert self._link is not None
        self._link.write(data)

    # -- memory ------------------------------------------------------------------------

    def _offset(self, address: int, size: int) -> int | None:
        g = self.geometry
        if g.start <= address and address + size <= g.end:
            return address - g.start
        return None

    def _recv_address(self) -> int:
        raw = self._recv(5)
        address = int.from_bytes(raw[:4], "big")
        if checksum(raw[:4]) != raw[4] or self._offset(address, 1) is None:
            self._nack()
        return address

    def _erase_sectors(self, numbers: list[int]) -> None:
        sectors = self.geometry.sectors
        for n in numbers:
            if n >= len(sectors) or sectors[n].address < self.geometry.app_start or n in self.write_protected:
                self._nack()
        for n in numbers:
            lo = sectors[n].address - self.geometry.start
            self.flash[lo:lo + sectors[n].size] = b"\xff" * sectors[n].size
            self.erased.append(n)

    def _mass_erase(self) -> None:
        if self.geometry.app_start != self.geometry.start:
            self._nack()  # it would erase the resident bootloader
        self._erase_sectors(list(range(len(self.geometry.sectors))))

    # -- commands ----------------------------------------------------------------------

    def _get(self) -> None:
        self._ack()
        self._send(bytes([len(self.commands), self.version, *self.commands]))
        self._ack()

    def _get_version(self) -> None:
        self._ack()
        self._send(bytes([self.version, 0x00, 0x00]))  # option bytes 1 and 2: none here
        self._ack()

    def _get_id(self) -> None:
        self._ack()
        self._send(bytes([1]) + self.device_id.to_bytes(2, "big"))
        self._ack()

    def _read(self) -> None:
        if self.read_protected:
            self._nack()
        self._ack()
        address = self._recv_address()
        self._ack()
        count, complement = self._recv(2)
        offset = self._offset(address, count + 1)
        if complement != count ^ 0xFF or offset is None:
            self._nack()
        self._ack()
        self._send(bytes(self.flash[offset:offset + count + 1]))

    def _write(self) -> None:
        if self.read_protected:
            self._nack()
        self._ack()
        address = self._recv_address()
        self._ack()
        count = self._recv(1)[0]
        data = self._recv(count + 1)
        if checksum(bytes([count]) + data) != self._recv(1)[0]:
            self._nack()
        offset = self._offset(address, len(data))
        # Flash is programmed by whole words: the bootloader refuses anything else.
        if offset is None or address % 4 or len(data) % 4 or address < self.geometry.app_start:
            self._nack()
        touched = self.geometry.sectors_for([(address, address + len(data))])
        if any(s.index in self.write_protected for s in touched):
            self._nack()
        merged = bytes(old & new for old, new in zip(self.flash[offset:offset + len(data)], data))
        if self.overwrite == "strict" and merged != data:
            self._nack()
        if self._fault(("lost_write",)) is None:
            self.flash[offset:offset + len(data)] = merged
            self.stores.append((address, data))
        self._ack()

    def _go(self) -> None:
        if self.read_protected:
            self._nack()
        self._ack()
        address = self._recv_address()
        # Recorded before the ACK goes out: the host may look as soon as it has it.
        self.go_address = address
        try:
            self._ack()
        except _Abort:
            self.go_address = None
            raise
        self.started.set()
        while True:
            self._recv_byte()  # the application runs; the bootloader hears nothing until reset

    def _erase(self) -> None:
        if self.read_protected:
            self._nack()
        self._ack()
        count = self._recv(1)[0]
        if count == 0xFF:
            if self._recv(1)[0] != 0x00:
                self._nack()
            self._mass_erase()
        else:
            pages = self._recv(count + 1)
            if checksum(bytes([count]) + pages) != self._recv(1)[0]:
                self._nack()
            self._erase_sectors(list(pages))
        self._ack()

    def _extended_erase(self) -> None:
        if self.read_protected:
            self._nack()
        self._ack()
        head = self._recv(2)
        count = int.from_bytes(head, "big")
        if count >= 0xFFF0:
            if self._recv(1)[0] != head[0] ^ head[1] or count != 0xFFFF:
                self._nack()  # 0xFFFE / 0xFFFD are bank erases; this chip is single-bank
            self._mass_erase()
        else:
            body = self._recv(2 * (count + 1))
            if checksum(head + body) != self._recv(1)[0]:
                self._nack()
            self._erase_sectors([int.from_bytes(body[i:i + 2], "big") for i in range(0, len(body), 2)])
        self._ack()

    def _write_protect(self) -> None:
        if self.read_protected:
            self._nack()
        self._ack()
        count = self._recv(1)[0]
        sectors = self._recv(count + 1)
        if checksum(bytes([count]) + sectors) != self._recv(1)[0] or max(sectors) >= len(self.geometry.sectors):
            self._nack()
        self.write_protected |= set(sectors)
        self._ack()
        raise _SystemReset  # option bytes take effect through a reset

    def _write_unprotect(self) -> None:
        if self.read_protected:
            self._nack()
        self._ack()
        self.write_protected.clear()
        self._ack()
        raise _SystemReset

    def _readout_protect(self) -> None:
        self._ack()
        self.read_protected = True
        self._ack()
        raise _SystemReset

    def _readout_unprotect(self) -> None:
        self._ack()
        self.write_protected.clear()
        self.flash[:] = b"\xff" * len(self.flash)  # the whole flash, resident bootloader or not
        self.erased.extend(range(len(self.geometry.sectors)))
        self.read_protected = False
        self._ack()
        raise _SystemReset


class Simulator:
    """A `Bootloader` served from a thread over a pty pair or a TCP socket.

    Use as a context manager, or call start() and stop(). `port` is what a host
    opens (a pty path, or socket://127.0.0.1:N); after a pty link is cut it names the
    new pty. Device options (device_id, erase_command, overwrite, read_protected,
    faults, ...) go to `Bootloader`, reachable as `.device`.
    """

    def __init__(self, geometry: FlashGeometry, *, transport: str = "pty", **device_options: object) -> None:
        if transport not in ("pty", "tcp"):
            raise ValueError("transport is 'pty' or 'tcp'")
        self.device = Bootloader(geometry, **device_options)  # type: ignore[arg-type]
        self.transport = transport
        self.error: BaseException | None = None
        self._link: PtyLink | TcpLink | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._reset = threading.Event()
        self._reset_done = threading.Event()

    @property
    def port(self) -> str:
        assert self._link is not None, "start() the simulator first"
        return self._link.port

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> "Simulator":
        self._link = PtyLink() if self.transport == "pty" else TcpLink()
        self._thread = threading.Thread(target=self._run, name="an3155-simulator", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread and close the link; re-raise a crash of the device loop."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError("the AN3155 simulator thread did not stop")
        if self._link is not None:
            self._link.close()
        if self.error is not None:
            raise RuntimeError(f"the AN3155 simulator crashed: {self.error!r}") from self.error

    def reset(self, timeout: float = 5.0) -> None:
        """Reset the chip (BOOT0 high): back in the bootloader, waiting for 0x7F."""
        self._reset_done.clear()
        self._reset.set()
        if not self._reset_done.wait(timeout):
            raise RuntimeError("the AN3155 simulator did not reset")

    def __enter__(self) -> "Simulator":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def read(self, address: int, size: int) -> bytes:
        """Flash contents, straight from the simulated chip."""
        offset = address - self.device.geometry.start
        return bytes(self.device.flash[offset:offset + size])

    def program(self, address: int, data: bytes) -> None:
        """Put data into flash behind the protocol's back (a previous firmware)."""
        offset = address - self.device.geometry.start
        self.device.flash[offset:offset + len(data)] = data

    def _check(self) -> None:
        if self._stop.is_set():
            raise _Stopped
        if self._reset.is_set():
            self._reset.clear()
            self.device.power_on_reset()
            self._reset_done.set()
            raise _SystemReset

    def _run(self) -> None:
        assert self._link is not None
        try:
            self.device.serve(self._link, self._check)
        except _Stopped:
            pass
        except BaseException as exc:  # surfaced by stop(), so a test sees the crash
            self.error = exc
