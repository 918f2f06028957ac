"""Host side of the STM32 system-memory bootloader's USART protocol (ST AN3155).

Framing, as the application note gives it:

- after reset the host sends 0x7F once; the bootloader measures the baud rate from it
  and answers ACK (0x79). Once in a session, every command is a byte followed by its
  complement, answered ACK or NACK (0x1F);
- addresses go as 4 bytes, most significant first, then their XOR;
- WRITE MEMORY sends N-1, N bytes (N <= 256, a multiple of 4, at a word-aligned
  address) and the XOR of all of these; READ MEMORY sends N-1 and its complement;
- ERASE (0x43) takes one-byte page numbers, EXTENDED ERASE (0x44) two-byte ones;
  0xFF / 0xFFFF mean "everything" (mass erase);
- GO sets MSP from the word at the address and jumps to the word after it.

Every failure ends in a `FlashError` whose one line names the step and, where there
is one, the address. A command that was NACKed, timed out or drew garbage is retried
(after re-synchronising) a bounded number of times; a serial link that went away is
not retried, since no retry will bring the cable back, nor is a re-synchronisation that
found no bootloader at all. GO is the exception: when its last ACK is lost and the
bootloader has gone quiet, the image most likely runs, and `go` says so (False) rather
than sending the application more bytes.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, TypeVar

import serial

from ..errors import FlashError, UsageError

ACK = 0x79
NACK = 0x1F
BUSY = 0x76  # "still working", sent by some bootloaders while they erase
INIT = 0x7F

GET = 0x00
GET_VERSION = 0x01
GET_ID = 0x02
READ_MEMORY = 0x11
GO = 0x21
WRITE_MEMORY = 0x31
ERASE = 0x43
EXTENDED_ERASE = 0x44
WRITE_PROTECT = 0x63
WRITE_UNPROTECT = 0x73
READOUT_PROTECT = 0x82
READOUT_UNPROTECT = 0x92

COMMAND_NAMES = {
    GET: "GET", GET_VERSION: "GET VERSION", GET_ID: "GET ID", READ_MEMORY: "READ MEMORY",
    GO: "GO", WRITE_MEMORY: "WRITE MEMORY", ERASE: "ERASE", EXTENDED_ERASE: "EXTENDED ERASE",
    WRITE_PROTECT: "WRITE PROTECT", WRITE_UNPROTECT: "WRITE UNPROTECT",
    READOUT_PROTECT: "READOUT PROTECT", READOUT_UNPROTECT: "READOUT UNPROTECT",
}
REQUIRED = (GET, GET_ID, READ_MEMORY, WRITE_MEMORY, GO)

# Re-synchronisation (see `_sync`). A bootloader in the middle of a command takes every
# byte the host sends as that command's payload until the command is complete, so the
# bytes that complete it must make it fail. A re-synchronisation sends one 0x7F (a fresh
# bootloader needs it for its autobaud) and then only FILL: with 0x7F followed by FILL no
# pending WRITE MEMORY, ERASE, EXTENDED ERASE, WRITE PROTECT, READ MEMORY or GO that was
# waiting at a frame boundary can come out with a matching checksum or complement, so it
# draws NACK and changes nothing. (0x7F as filler made a pending WRITE MEMORY a valid
# 128-byte write of 0x7F.) FILL must not be 0x00, 0x7F or 0x80; any two FILLs make a bad
# command pair.
FILL = 0x01
# Round one sends this much FILL: enough to complete anything but an EXTENDED ERASE
# (the longest other command, WRITE MEMORY, is 5 + 1 + 256 + 1 bytes).
SHORT_FILL = 600
# Round two completes the longest command of the protocol: EXTENDED ERASE of 0xFFF0
# pages (a count from 0xFFF0 up is a special erase with one byte after it). An erase left
# waiting for its page count gets 0x7F, FILL from us: 0x7F01 pages, about 65,000 bytes.
LONG_FILL = 2 + 2 * 0xFFF0 + 1
FILL_ROUNDS = ((SHORT_FILL, 64), (LONG_FILL, 4096))  # (bytes, chunk between looks at the answer)
NOISE_LIMIT = 64  # bytes that are neither ACK nor NACK: an application talks on the port
RESET_HINT = "reset the board into its bootloader (BOOT0 high, then reset) and check that this is its port"
POLL_S = 0.02  # the serial link's own read timeout; longer waits loop on it

T = TypeVar("T")


def checksum(data: bytes | bytearray) -> int:
    """XOR of all bytes: the checksum of every AN3155 frame."""
    value = 0
    for byte in data:
        value ^= byte
    return value


def address_frame(address: int) -> bytes:
    """A 32-bit address, most significant byte first, followed by its XOR."""
    raw = address.to_bytes(4, "big")
    return raw + bytes([checksum(raw)])


def flash_error(step: str, reason: str, address: int | None = None) -> FlashError:
    """The one-line FlashError of a failed step; `.step` and `.address` are kept for callers."""
    where = f" at 0x{address:08X}" if address is not None else ""
    err = FlashError(f"{step}{where}: {' '.join(reason.split())}")
    err.step = step  # type: ignore[attr-defined]
    err.address = address  # type: ignore[attr-defined]
    return err


@dataclass(frozen=True)
class Timeouts:
    """Seconds to wait for each kind of answer; tests shrink them."""

    init: float = 0.5                # the reply to one 0x7F
    byte: float = 1.0                # an ACK to a command or an address, a reply's first byte
    write: float = 1.0               # the ACK after a block is programmed
    erase_per_sector: float = 10.0   # a 256 KiB STM32F7 sector takes a few seconds
    mass_erase: float = 60.0
    quiet: float = 0.05              # silence that ends draining stale input
    # All of one re-synchronisation, however the port behaves: at 115200 baud completing the
    # longest pending command (LONG_FILL) takes about 13 s of it.
    sync: float = 30.0


@dataclass(frozen=True)
class BootloaderInfo:
    """What GET and GET ID said."""

    version: int
    commands: tuple[int, ...]
    device_id: int

    @property
    def version_text(self) -> str:
        return f"{self.version >> 4}.{self.version & 0xF}"

    @property
    def erase_command(self) -> int:
        return EXTENDED_ERASE if EXTENDED_ERASE in self.commands else ERASE


class SerialLike(Protocol):
    """The part of pyserial's API the client uses (so tests can pass fakes)."""

    def read(self, size: int = 1) -> bytes: ...
    def write(self, data: bytes) -> int | None: ...
    def reset_input_buffer(self) -> None: ...
    def reset_output_buffer(self) -> None: ...
    def close(self) -> None: ...


class _Retry(Exception):
    """A command failed in a way a re-synchronised second try may cure."""


class _Nack(_Retry):
    """The bootloader answered NACK."""


class _Unreachable(_Retry):
    """Re-synchronisation found no bootloader (silence, or an application talking): retrying
    would only send the same bytes again."""


@dataclass
class _SyncRun:
    """What one re-synchronisation has sent and heard so far."""

    deadline: float
    sent: int = 0
    noise: bytearray = field(default_factory=bytearray)

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self.deadline


def is_pty(port: str) -> bool:
    """Whether `port` is (a link to) a pseudo-terminal, which has no parity to set."""
    return os.path.realpath(port).startswith(("/dev/pts/", "/dev/pty"))


def open_port(port: str, baud: int) -> serial.SerialBase:
    """Open a device path or a pyserial URL (socket://host:port, ...).

    AN3155 frames are 8E1 on a real UART. A pty has no wire and Linux refuses even
    parity on one (EINVAL), so a pty is opened 8N1; URL transports ignore parity.
    """
    parity = serial.PARITY_NONE if is_pty(port) else serial.PARITY_EVEN
    try:
        return serial.serial_for_url(port, baudrate=baud, bytesize=serial.EIGHTBITS, parity=parity,
                                     stopbits=serial.STOPBITS_ONE, timeout=POLL_S, write_timeout=5.0)
    except (serial.SerialException, OSError, ValueError) as exc:
        raise flash_error("open", f"cannot open serial port {port}: {exc}") from exc


class An3155Client:
    """Talks to one bootloader over an open serial link."""

    def __init__(self, link: SerialLike, *, timeouts: Timeouts | None = None, retries: int = 3,
                 allow_mass_erase: bool = False, allow_option_bytes: bool = False) -> None:
        self.link = link
        self.t = timeouts or Timeouts()
        self.retries = retries
        self.allow_mass_erase = allow_mass_erase
        self.allow_option_bytes = allow_option_bytes
        self.retries_used = 0
        self.info: BootloaderInfo | None = None
        # Time to move one byte at 8E1 (11 bits); a socket reports no meaningful rate.
        self._byte_s = 11.0 / float(getattr(link, "baudrate", 0) or 115200)

    # -- steps -------------------------------------------------------------------------

    def connect(self) -> bool:
        """Start (or resume) a session; True if the bootloader was already in one."""
        return self._attempt("connect", None, self._sync, tries=1)

    def identify(self) -> BootloaderInfo:
        """GET and GET ID: protocol version, command set and device ID."""
        version, commands = self._attempt("identify", None, self._get)
        missing = [c for c in REQUIRED if c not in commands]
        if missing or not ({ERASE, EXTENDED_ERASE} & set(commands)):
            names = ", ".join(COMMAND_NAMES[c] for c in missing) or "an erase command"
            raise flash_error("identify", f"the bootloader lacks {names} (GET listed "
                              f"{' '.join(f'0x{c:02X}' for c in commands)})")
        device_id = self._attempt("identify", None, self._get_id)
        self.info = BootloaderInfo(version, commands, device_id)
        return self.info

    def is_read_protected(self, address: int) -> bool:
        """Probe with a 4-byte READ MEMORY: read protection makes the bootloader NACK it.

        A protected chip NACKs every time; one NACK may be a fault on the line, and taking
        it for protection would refuse the flash (or, with --allow-mass-erase, erase the
        whole chip). So a NACK counts only when every try draws one."""
        tries = self.retries + 1
        nacks = 0

        def op() -> bool:
            nonlocal nacks
            if not self._probe(address):
                return False
            nacks += 1
            if nacks < tries:
                raise _Retry("NACK to READ MEMORY")
            return True
        return self._attempt("protection check", address, op, tries=tries)

    def erase(self, page: int, address: int) -> None:
        """Erase one page/sector, by its number; `address` is its start, for messages."""
        def op() -> None:
            if self._erase_code() == EXTENDED_ERASE:
                frame = (0).to_bytes(2, "big") + page.to_bytes(2, "big")
            else:
                if page > 0xFE:
                    raise flash_error("erase", f"page {page} is beyond the legacy ERASE command's reach", address)
                frame = bytes([0, page])
            self._command(self._erase_code())
            self._send(frame + bytes([checksum(frame)]))
            self._ack(f"after erasing page {page}", self.t.byte + self.t.erase_per_sector)
        self._attempt("erase", address, op)

    def mass_erase(self) -> None:
        """Erase all of flash. Refused unless the client was built with allow_mass_erase."""
        self._require(self.allow_mass_erase, "mass erase", "--allow-mass-erase")

        def op() -> None:
            # 0xFFFF (extended) or 0xFF (legacy) means "all pages"; the checksum byte is 0x00 in both.
            self._command(self._erase_code())
            self._send(b"\xff\xff\x00" if self._erase_code() == EXTENDED_ERASE else b"\xff\x00")
            self._ack("after the mass erase", self.t.mass_erase)
        self._attempt("mass erase", None, op)

    def write_memory(self, address: int, data: bytes) -> None:
        """One WRITE MEMORY: up to 256 bytes at a word-aligned address, padded with 0xFF."""
        if address % 4 or not 0 < len(data) <= 256:
            raise ValueError(f"write of {len(data)} bytes at 0x{address:08X}: needs 1..256 bytes at a multiple of 4")
        padded = data + b"\xff" * (-len(data) % 4)
        frame = bytes([len(padded) - 1]) + padded

        def op() -> None:
            self._command(WRITE_MEMORY)
            self._send(address_frame(address))
            self._ack("after the address")
            self._send(frame + bytes([checksum(frame)]))
            self._ack("after the data", self.t.write + len(frame) * self._byte_s)
        self._attempt("write", address, op)

    def read_memory(self, address: int, size: int, step: str = "read") -> bytes:
        """One READ MEMORY of 1..256 bytes."""
        if not 0 < size <= 256:
            raise ValueError(f"read of {size} bytes: needs 1..256")

        def op() -> bytes:
            self._command(READ_MEMORY)
            self._send(address_frame(address))
            self._ack("after the address")
            self._send(bytes([size - 1, (size - 1) ^ 0xFF]))
            self._ack("after the byte count")
            return self._recv_exact(size, "of the data")
        return self._attempt(step, address, op)

    def go(self, address: int) -> bool:
        """GO: the bootloader jumps to the vector table at `address`.

        True once the bootloader confirmed it (ACK after the address). When that ACK does
        not come, the bootloader either jumped and the ACK was lost, or it is still there:
        two probe bytes tell which. Still there: GO is retried. Gone quiet (or something
        else talks now): False, the start is not confirmed, and nothing more is sent, since
        the port may belong to the application now."""
        def op() -> bool:
            self._command(GO)
            self._send(address_frame(address))
            try:
                self._ack("after the address")
            except _Nack:
                raise
            except _Retry:
                late = self._drain()
                if late[:1] == bytes([ACK]):
                    return True  # the ACK came, only late
                if self._bootloader_listens():
                    raise  # it did not jump: send GO again
                return False
            return True
        return self._attempt("go", address, op)

    def readout_unprotect(self) -> None:
        """Remove read protection; the chip mass-erases its flash and resets.

        Refused unless allow_mass_erase. Call connect() again afterwards.
        """
        self._require(self.allow_mass_erase, "readout unprotect (it erases all flash)", "--allow-mass-erase")

        def op() -> None:
            self._command(READOUT_UNPROTECT)
            self._ack("after the mass erase", self.t.mass_erase)
        self._attempt("readout unprotect", None, op)

    def readout_protect(self) -> None:
        """Set read protection (the chip resets). Refused unless allow_option_bytes."""
        self._require(self.allow_option_bytes, "readout protect", "an explicit option-bytes flag")
        self._attempt("readout protect", None, lambda: self._simple_option(READOUT_PROTECT))

    def write_unprotect(self) -> None:
        """Clear write protection of all sectors (the chip resets). Refused unless allow_option_bytes."""
        self._require(self.allow_option_bytes, "write unprotect", "an explicit option-bytes flag")
        self._attempt("write unprotect", None, lambda: self._simple_option(WRITE_UNPROTECT))

    def write_protect(self, pages: list[int]) -> None:
        """Write-protect sectors (the chip resets). Refused unless allow_option_bytes."""
        self._require(self.allow_option_bytes, "write protect", "an explicit option-bytes flag")
        if not 0 < len(pages) <= 256 or max(pages) > 0xFF:
            raise ValueError("write protect takes 1..256 sector numbers below 256")
        frame = bytes([len(pages) - 1, *pages])

        def op() -> None:
            self._command(WRITE_PROTECT)
            self._send(frame + bytes([checksum(frame)]))
            self._ack("after the sector list")
        self._attempt("write protect", None, op)

    # -- protocol pieces ---------------------------------------------------------------

    def _sync(self) -> bool:
        """Bring the bootloader to "waiting for a command"; True if it was in a session.

        Each round sends 0x7F, then one FILL, then FILL in chunks. A fresh bootloader
        answers the 0x7F with ACK. One already in a session takes 0x7F as a command byte:
        a pending command's complement draws NACK at once, otherwise the FILL after it
        completes a bad pair and draws NACK (stm32flash sends 0x7F twice for this). A
        session cut or stalled in the middle of a command is still waiting for the rest of
        it: the FILL completes it with a checksum that fails (see FILL), then single bytes
        find the command boundary again. Round one covers every command but a pending
        EXTENDED ERASE; round two, with a 0x7F again for a bootloader that missed the
        first, covers that worst case. A port that stays silent, or talks without ever
        answering ACK or NACK (an application printing on it), ends this within
        `Timeouts.sync` seconds with one line that says what to do.
        """
        self._drain()
        run = _SyncRun(deadline=time.monotonic() + self.t.sync)
        for budget, chunk in FILL_ROUNDS:
            if run.expired:
                break
            answer = self._sync_round(run, budget, chunk)
            if answer is not None:
                return answer
        raise self._unreachable(run)

    def _sync_round(self, run: _SyncRun, budget: int, chunk: int) -> bool | None:
        """One 0x7F, one FILL, then up to `budget` bytes of FILL; None if nothing answered."""
        reply = self._probe_byte(run, INIT)
        if reply is not None:
            return reply == NACK  # ACK: a fresh bootloader measured its baud rate from it
        if self._probe_byte(run, FILL) is not None:
            return True
        sent = 0
        while sent < budget and not run.expired:
            size = min(chunk, budget - sent)
            self._send_fill(run, size)
            sent += size
            # One short look, not a wait: on a UART the write itself keeps pace with the line.
            reply = self._recv(1, 0.0)
            if reply and self._settle(run, reply):
                return True
        reply = self._recv(1, self.t.init)  # the answer to the last bytes
        return True if reply and self._settle(run, reply) else None

    def _probe_byte(self, run: _SyncRun, byte: int) -> int | None:
        """Send one byte; its answer if that is ACK or NACK, else None (what came is noise)."""
        self._send(bytes([byte]))
        run.sent += 1
        reply = self._recv(1, self.t.init)
        if reply and reply[0] in (ACK, NACK):
            return reply[0]
        if reply:
            self._note_noise(run, reply + self._drain())
        return None

    def _send_fill(self, run: _SyncRun, size: int) -> None:
        try:
            self._send(bytes([FILL]) * size)
        except serial.SerialTimeoutException:
            # Nothing drains the port (a pty nobody reads): no bootloader is listening.
            raise self._unreachable(run, "and the port takes no more") from None
        run.sent += size

    def _settle(self, run: _SyncRun, reply: bytes) -> bool:
        """Something answered the FILL: if it was the bootloader (ACK or NACK: a pending
        command completed, then the rest of the FILL made bad pairs), send single FILLs
        until one draws ACK or NACK, which leaves it waiting for a command. Two suffice:
        the first may only complete a pair's first byte."""
        # FILL still queued for the wire (up to a few KiB on a UART) would keep drawing NACKs
        # after the singles below: it is no longer needed.
        self.link.reset_output_buffer()
        heard = reply + self._drain()
        self._note_noise(run, heard)
        if not any(b in (ACK, NACK) for b in heard):
            return False
        return any(self._probe_byte(run, FILL) is not None for _ in range(2))

    def _note_noise(self, run: _SyncRun, heard: bytes) -> None:
        run.noise += bytes(b for b in heard if b not in (ACK, NACK, BUSY))
        if len(run.noise) > NOISE_LIMIT:
            raise self._unreachable(run)

    def _unreachable(self, run: _SyncRun, why: str = "") -> _Unreachable:
        noise = bytes(run.noise)
        if len(noise) > 8:
            return _Unreachable(f"the port talks but does not answer 0x7F as a bootloader would (it sent "
                                f"{noise[:24]!r}{'...' if len(noise) > 24 else ''}): is the board running its "
                                f"application? Put it in its bootloader (BOOT0 high, reset)")
        return _Unreachable(f"no answer to 0x7F after {run.sent} bytes{' ' + why if why else ''}: {RESET_HINT}")

    def _bootloader_listens(self) -> bool:
        """Whether a bootloader still answers: 0x7F then FILL draw exactly one ACK or NACK
        from it (NACK for the bad pair, or for a frame the 0x7F completed). An application
        that prints, or a silent one, does not answer so."""
        heard = bytearray()
        for byte in (INIT, FILL):
            self._send(bytes([byte]))
            heard += self._recv(1, self.t.init)
        heard += self._drain()
        return len(heard) == 1 and heard[0] in (ACK, NACK)

    def _get(self) -> tuple[int, tuple[int, ...]]:
        self._command(GET)
        count = self._recv_exact(1, "of the GET reply")[0]
        body = self._recv_exact(count + 1, "of the GET reply")
        self._ack("at the end of the GET reply")
        return body[0], tuple(body[1:])

    def _get_id(self) -> int:
        self._command(GET_ID)
        count = self._recv_exact(1, "of the GET ID reply")[0]
        body = self._recv_exact(count + 1, "of the GET ID reply")
        self._ack("at the end of the GET ID reply")
        if len(body) < 2:
            raise _Retry("GET ID returned fewer than 2 bytes")
        return int.from_bytes(body[:2], "big")

    def _probe(self, address: int) -> bool:
        self._send(bytes([READ_MEMORY, READ_MEMORY ^ 0xFF]))
        try:
            self._ack("to READ MEMORY")
        except _Nack:
            return True
        self._send(address_frame(address))
        self._ack("after the address")
        self._send(bytes([3, 3 ^ 0xFF]))
        self._ack("after the byte count")
        self._recv_exact(4, "of the data")
        return False

    def _simple_option(self, code: int) -> None:
        self._command(code)
        self._ack(f"after {COMMAND_NAMES[code]}")

    def _erase_code(self) -> int:
        return self.info.erase_command if self.info else EXTENDED_ERASE

    def _command(self, code: int) -> None:
        self._send(bytes([code, code ^ 0xFF]))
        self._ack(f"to {COMMAND_NAMES.get(code, f'0x{code:02X}')}")

    def _ack(self, what: str, timeout: float | None = None) -> None:
        limit = self.t.byte if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            reply = self._recv(1, max(0.0, deadline - time.monotonic()))
            if not reply:
                raise _Retry(f"no ACK {what} within {limit:g} s")
            if reply[0] == ACK:
                return
            if reply[0] == NACK:
                raise _Nack(f"NACK {what}")
            if reply[0] != BUSY:
                raise _Retry(f"got 0x{reply[0]:02X} instead of ACK {what}")

    def _attempt(self, step: str, address: int | None, op: Callable[[], T], tries: int | None = None) -> T:
        """Run `op`, re-synchronising and retrying a bounded number of times."""
        tries = self.retries + 1 if tries is None else tries
        reason = ""
        for attempt in range(tries):
            try:
                if attempt:
                    self.retries_used += 1
                    self._sync()
                return op()
            except _Unreachable as exc:
                raise flash_error(step, str(exc), address) from None  # another try sends the same bytes
            except _Retry as exc:
                reason = str(exc)
            except (serial.SerialException, OSError) as exc:
                raise flash_error(step, f"serial link lost ({exc})", address) from exc
        suffix = f" (gave up after {tries} tries)" if tries > 1 else ""
        raise flash_error(step, reason + suffix, address)

    def _require(self, allowed: bool, what: str, flag: str) -> None:
        if not allowed:
            raise UsageError(f"refusing to {what} without {flag}")

    # -- bytes -------------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        self.link.write(data)

    def _recv(self, size: int, timeout: float) -> bytes:
        """Up to `size` bytes, waiting at most `timeout` seconds for all of them.

        The link keeps one short read timeout (POLL_S): changing pyserial's timeout
        reconfigures the port (a tcsetattr) on every call.
        """
        deadline = time.monotonic() + timeout
        data = bytearray(self.link.read(size))
        while len(data) < size and time.monotonic() < deadline:
            data += self.link.read(size - len(data))
        return bytes(data)

    def _recv_exact(self, size: int, what: str) -> bytes:
        data = self._recv(size, self.t.byte + size * self._byte_s)
        if len(data) != size:
            raise _Retry(f"got {len(data)} of {size} bytes {what}")
        return data

    def _drain(self) -> bytes:
        """Throw away stale input (the rest of an answer to a command that failed); return it,
        for error messages (so it is read, not dropped with reset_input_buffer)."""
        stale = bytearray()
        deadline = time.monotonic() + 1.0  # a device that never stops talking still ends this
        while time.monotonic() < deadline:
            chunk = self._recv(4096, self.t.quiet)
            if not chunk:
                break
            stale += chunk
        return bytes(stale)
