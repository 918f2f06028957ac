"""Host side of the serial test harness (runners/serial_protocol.py): run a firmware build's
samples on a board over its UART, through pyserial (a device such as /dev/ttyACM0, or a
pyserial URL such as socket://127.0.0.1:PORT for the QEMU board's UART0).

`run_on_serial` flashes the harness image through the board's ROM bootloader (sdk/flash,
AN3155), says HELLO, sends every sample and collects outputs and counts. A frame that is
lost, corrupt or NAKed is sent again, at most `retries` times; then, or when the link goes
away, a TargetError (exit 6) names the board and the sample. Every wait is bounded, and a
damaged answer never costs one: a header is only taken for one with a length this model's
frames can have, and a damaged frame is sent again as soon as the line is quiet (docs/farm.md,
"Faults on the serial link").
"""
from __future__ import annotations

import secrets
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import serial

from ..boards import Board
from ..errors import TargetError
from . import serial_protocol as proto
from .progress import Progress
from .protocol import decode_outputs, encode_inputs, output_dtypes, per_input_arrays, split_outputs

RETRIES = 3             # sends of one frame after the first
HELLO_TRIES = 8
HELLO_WAIT_S = 2.0      # per HELLO: the image starts within milliseconds of GO
REPLY_BASE_S = 20.0     # per sample, plus the time its bytes take on the wire (x4)
POLL_S = 0.05           # pyserial's read timeout; longer waits loop on it
# After a damaged frame, a line this long silent means the board has finished sending (it sends
# a frame's bytes back to back) and listens again: the frame is sent again then, not after the
# whole reply wait. Long against a USB-serial bridge's latency (milliseconds), short against
# the reply wait.
QUIET_S = 0.25
DAMAGED = "damaged answer"  # a receive() reason: a frame came but was not whole


@dataclass(frozen=True)
class SerialTarget:
    """Where a board is reached: the harness's port, the port its ROM bootloader listens on
    (often the same; not on a NUCLEO, whose ST-LINK VCP is not a bootloader port), and
    `label` for messages (the port, or the labgrid place)."""
    port: str
    flash_port: str | None = None
    baud: int = 115200
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or self.port

    def run(self, board: Board, info: dict, samples: list[dict[str, np.ndarray]], progress: bool) -> dict:
        return run_on_serial(board, info, samples, self, progress)


class SerialHarness:
    """One conversation with the harness firmware on an open link."""

    def __init__(self, link: serial.SerialBase, where: str, baud: int = 115200, retries: int = RETRIES,
                 reply_s: float = REPLY_BASE_S, output_bytes: int | None = None, request: int | None = None) -> None:
        self.link, self.where, self.baud, self.retries, self.reply_s = link, where, baud, retries, reply_s
        self.output_bytes = output_bytes  # one sample's outputs: an OUTPUT's exact payload is 8 more
        # The first request's id (`request`, else drawn at random): every request takes the next
        # one, and only an answer with its id is its answer. Random, so that an answer left on
        # the line by an earlier conversation (the same sample indices) matches no request here.
        self.next_request = secrets.randbits(32) if request is None else request
        self.board_version: int | None = None  # a whole frame of an older protocol version came
        self.buffer = bytearray()
        self.damaged = False  # a damaged frame arrived since the last send
        self.heard = time.monotonic()  # when the last byte arrived
        self.resends: list[str] = []  # why each frame was sent again ("sample 5: timeout"), in order

    @property
    def resent(self) -> int:
        """Frames sent again over the whole conversation."""
        return len(self.resends)

    # --- frames ---------------------------------------------------------------------------
    def new_request(self) -> int:
        request, self.next_request = self.next_request, (self.next_request + 1) & 0xFFFFFFFF
        return request

    def send(self, kind: int, request: int, sample: int, payload: bytes = b"") -> None:
        self.damaged = False
        self._io(lambda: self.link.write(proto.encode(kind, request, sample, payload)), sample)

    def receive(self, deadline: float, sample: int) -> proto.Frame | str:
        """The next well-formed frame, or a reason string: "timeout", DAMAGED once a damaged
        frame came and the line has been quiet for QUIET_S since, or that a whole frame of an
        older protocol version came."""
        while True:
            frame = self._parse()
            if frame is not None:
                return frame
            if self.board_version is not None:
                return f"a frame of protocol version {self.board_version}"
            now = time.monotonic()
            if self.damaged and now - self.heard >= QUIET_S:
                return DAMAGED
            if now >= deadline:
                return "timeout"
            chunk = self._io(lambda: self.link.read(max(1, self.link.in_waiting)), sample)
            if chunk:
                self.heard = time.monotonic()
                self.buffer += chunk

    def _parse(self) -> proto.Frame | None:
        """The first whole frame in the buffer, which then starts after it. Every magic is a
        candidate, and one that is still incomplete does not hide a whole frame after it:
        noise that looks like a header, or a header whose length field was damaged, costs
        nothing once the next good frame has arrived. A candidate of this protocol version whose
        header is not one a board sends for this model, or whose CRC fails, is dropped and
        marks the wait damaged."""
        pending, at = None, self.buffer.find(proto.MAGIC)
        while at >= 0:
            found = self._candidate(at)
            if isinstance(found, tuple):
                frame, end = found
                del self.buffer[:end]
                return frame
            if found and pending is None:
                pending = at
            at = self.buffer.find(proto.MAGIC, at + 1)
        if pending is not None:
            del self.buffer[:pending]
        else:  # nothing that may still become a frame, but a magic may be cut between two reads
            del self.buffer[:-1 if self.buffer[-1:] == proto.MAGIC[:1] else len(self.buffer)]
        return None

    def _candidate(self, at: int) -> tuple[proto.Frame, int] | bool:
        """The frame starting at `at` and where it ends; True: it may still become one (more
        bytes to come); False: it is none."""
        if len(self.buffer) - at > 2 and self.buffer[at + 2] != proto.VERSION:
            return self._other_version(at)
        if len(self.buffer) - at < proto.HEADER.size:
            return True
        _, _, kind, request, sample, length = proto.HEADER.unpack_from(self.buffer, at)
        if not proto.reply_length_ok(kind, length, self.output_bytes):
            self.damaged = True
            return False
        end = at + proto.HEADER.size + length
        if len(self.buffer) < end + proto.CRC.size:
            return True
        (crc,) = proto.CRC.unpack_from(self.buffer, end)
        if crc != proto.crc32(bytes(self.buffer[at:end])):
            self.damaged = True
            return False
        return proto.Frame(kind, request, sample, bytes(self.buffer[at + proto.HEADER.size:end])), end + proto.CRC.size

    def _other_version(self, at: int) -> bool:
        """A magic followed by another version byte: a whole frame of an older version is noted
        (the firmware there was built by an older cuvil-sdk); else it is noise, unless such a
        frame may still be arriving."""
        version = proto.old_version_at(self.buffer, at)
        if version:
            self.board_version = version
        return version == 0

    def _io(self, action, sample: int):
        try:
            return action()
        except (serial.SerialException, OSError) as exc:
            raise TargetError(f"{self.where}: the serial link was lost at sample {sample}: {exc}") from None

    # --- the conversation -----------------------------------------------------------------
    def hello(self) -> proto.BoardInfo:
        """The board's INFO; a board whose firmware speaks an older protocol version is named
        at once."""
        last = "no answer"
        request = self.new_request()
        for _ in range(HELLO_TRIES):
            self.send(proto.HELLO, request, 0)
            deadline = time.monotonic() + HELLO_WAIT_S
            while True:
                frame = self.receive(deadline, 0)
                if self.board_version is not None:
                    raise TargetError(f"{self.where}: the firmware there speaks serial protocol version "
                                      f"{self.board_version}, this cuvil-sdk version {proto.VERSION}: flash the "
                                      f"harness this cuvil-sdk builds")
                if isinstance(frame, str):
                    last = frame
                    break
                if frame.request != request:
                    continue  # an answer to another request (an earlier conversation's)
                if frame.kind == proto.INFO:
                    try:
                        return proto.BoardInfo.decode(frame.payload)
                    except ValueError as exc:
                        last = str(exc)
                        break
                last = f"a {frame.name} frame"
        raise TargetError(f"{self.where}: the harness firmware did not answer HELLO ({HELLO_TRIES} tries, last: "
                          f"{last}): is the serial harness running there?")

    def exchange(self, sample: int, payload: bytes, answer_bytes: int) -> tuple[int, bytes]:
        """Send one INPUT; return (count, outputs) from the board's OUTPUT of that sample."""
        answer = self.ask(proto.INPUT, sample, payload, proto.OUTPUT, 8 + answer_bytes, f"sample {sample}")
        return struct.unpack_from("<Q", answer)[0], answer[8:]

    def calibrate(self) -> tuple[int, int]:
        """The board's counts of its two calibration stretches (CALIBRATE -> CALIBRATION)."""
        answer = self.ask(proto.CALIBRATE, 0, b"", proto.CALIBRATION, proto.CALIBRATION_COUNTS.size, "calibration")
        registers, device = proto.CALIBRATION_COUNTS.unpack(answer)
        return registers, device

    def ask(self, kind: int, sample: int, payload: bytes, answer_kind: int, answer_bytes: int,
            what: str) -> bytes:
        """Send a frame and return the payload of the board's `answer_kind` frame of that
        sample index, sending it again (at most `retries` times) on a NAK, a damaged answer (as
        soon as the line is quiet) or silence; `what` names it in the error."""
        if answer_kind == proto.OUTPUT:
            self.output_bytes = answer_bytes - 8
        wire_s = 10.0 * (len(payload) + answer_bytes + 32) / self.baud
        request = self.new_request()
        last = ""
        for attempt in range(1 + self.retries):
            if attempt:
                self.resends.append(f"{what}: {last}")
            self.send(kind, request, sample, payload)
            deadline = time.monotonic() + self.reply_s + 4 * wire_s
            while True:
                frame = self.receive(deadline, sample)
                if isinstance(frame, str):
                    last = frame
                    break
                if (frame.request, frame.sample) != (request, sample):
                    # An answer to another request: late, stale or replayed, skipped. A NAK there
                    # is the board's of a frame whose header came damaged (it echoes the header
                    # as received): maybe this one's, so it is sent again once the line is quiet.
                    self.damaged = self.damaged or frame.kind == proto.NAK
                    continue
                if frame.kind not in (answer_kind, proto.ERROR, proto.NAK):
                    continue  # a frame this request has no use for
                if frame.kind == proto.NAK:
                    reason = struct.unpack_from("<I", frame.payload)[0]
                    last = f"NAK ({proto.NAK_NAMES.get(reason, reason)})"
                    break
                if frame.kind == proto.ERROR:
                    raise TargetError(f"{self.where}: the model returned an error on sample {sample}")
                if len(frame.payload) != answer_bytes:
                    last = f"{frame.name} of {len(frame.payload)} bytes, expected {answer_bytes}"
                    break
                return frame.payload
        raise TargetError(f"{self.where}: {what}: no valid answer after {1 + self.retries} tries (last: {last})")

    def reset(self) -> None:
        """Best effort: the board resets into its bootloader (where one waits)."""
        try:
            self.link.write(proto.encode(proto.RESET, self.new_request(), 0))
            self.link.flush()
        except (serial.SerialException, OSError):
            pass


def count_problem(counts: tuple[int, int], tick: int) -> str | None:
    """Why the board's SysTick counts are not guest instructions, judged from its calibration
    stretches (serial_harness.c.j2): None when both counted CALIBRATION_INSTRUCTIONS within a
    tick. One stretch alone could pass by chance on a host that happens to run one guest
    instruction a nanosecond; the device reads make the second one's host time many times
    the first's, so both cannot."""
    expected = proto.CALIBRATION_INSTRUCTIONS
    if all(abs(c - expected) <= tick for c in counts):
        return None
    return (f"SysTick does not count guest instructions there (a calibration stretch of {expected} instructions "
            f"counted {counts[0]} and {counts[1]}): is QEMU running without -icount shift=0? Its counts are "
            f"reported as unverified_counts_per_sample")


@dataclass
class Conversation:
    """What one conversation with the harness gave: per sample its count and raw outputs, the
    frames sent again (`resends`: why each was, e.g. "sample 5: timeout"), and `count_problem`
    (SysTick boards: why the counts are not guest instructions, None when the calibration says
    they are)."""
    counts: list[int]
    outputs: list[bytes]
    resends: list[str]
    count_problem: str | None = None
    calibrated: bool = False

    @property
    def resent(self) -> int:
        return len(self.resends)


def expected_info(info: dict, counter: str) -> proto.BoardInfo:
    per_input = per_input_arrays(info, [{t["name"]: np.zeros(t["size"]) for t in info["inputs"]}])
    return proto.BoardInfo(proto.COUNTERS[counter], tuple(a[0].nbytes for a in per_input),
                           tuple(t["size"] * d.itemsize for t, d in zip(info["outputs"], output_dtypes(info))))


def sample_payloads(info: dict, samples: list[dict[str, np.ndarray]]) -> list[bytes]:
    """Each sample's INPUT payload: every input in model order, float32 (an integer or bool input
    in its own type), little-endian."""
    per_input = per_input_arrays(info, samples)
    return [encode_inputs([a[i:i + 1] for a in per_input])[4:] for i in range(len(samples))]


def run_samples_on_link(link: serial.SerialBase, board: Board, info: dict, payloads: list[bytes], where: str,
                        baud: int, progress: bool, first: int = 0, reply_s: float = REPLY_BASE_S,
                        reset: bool = True) -> Conversation:
    """Counts and raw outputs of every payload (sample indices first, first+1, ...), and how
    many frames were sent again. `reply_s`: how long one try waits for its answer (plus the
    bytes' time on the wire). `reset`: at the end, also on error, the board resets into its
    bootloader (RESET frame); without, the harness stays up for another conversation.
    SysTick boards are calibrated after HELLO: counts that are not guest instructions are
    said at once on stderr and kept as `count_problem`."""
    counter = str(board.get("firmware.serial_counter", "systick"))
    want = expected_info(info, counter)
    harness = SerialHarness(link, where, baud, reply_s=reply_s, output_bytes=sum(want.output_bytes))
    got = harness.hello()
    if got != want:
        raise TargetError(f"{where}: the firmware there is not this build (it says {got}, this build is {want})")
    answer_bytes = sum(want.output_bytes)
    counts, outputs = [], []
    problem = None
    try:
        if counter == "systick":
            problem = count_problem(harness.calibrate(), int(board.get("firmware.instructions_per_tick", 40)))
            if problem:
                problem = f"{where}: {problem}"
                print(f"cuvil-sdk: warning: {problem}", file=sys.stderr)
        with Progress(f"{where}: sample", len(payloads), progress) as shown:
            for k, payload in enumerate(payloads):
                count, raw = harness.exchange(first + k, payload, answer_bytes)
                counts.append(count)
                outputs.append(raw)
                shown.step()
    finally:
        if reset:
            harness.reset()
    return Conversation(counts, outputs, harness.resends, problem, calibrated=counter == "systick")


def open_link(port: str, baud: int, where: str) -> serial.SerialBase:
    try:
        return serial.serial_for_url(port, baudrate=baud, timeout=POLL_S, write_timeout=10.0)
    except (serial.SerialException, OSError, ValueError) as exc:
        raise TargetError(f"{where}: cannot open the serial port {port}: {exc}") from None


def flash_harness(board: Board, info: dict, target: SerialTarget) -> None:
    """Put the build's image on the board through its ROM bootloader and start it (GO)."""
    from ..flash.command import flash_command
    flash_command(board, target.flash_port or target.port, target.baud, Path(info["artifacts"]["bin"]),
                  progress=False)


def run_target(board: Board, info: dict, payloads: list[bytes], target: SerialTarget, progress: bool,
               first: int = 0) -> Conversation:
    flash_harness(board, info, target)
    link = open_link(target.port, target.baud, target.name)
    try:
        return run_samples_on_link(link, board, info, payloads, target.name, target.baud, progress, first)
    finally:
        link.close()


SYSTICK_NOTE = ("guest instructions under QEMU -icount shift=0 (SysTick x {tick}, checked by a calibration "
                "stretch at HELLO); not cycles on silicon")
UNVERIFIED_NOTE = ("not guest instructions: SysTick x {tick} on a QEMU whose SysTick failed the calibration "
                   "(no -icount shift=0?), so they follow the host's clock and change from run to run")
DWT_NOTE = "processor cycles (DWT CYCCNT) on the board"


def result_of(board: Board, info: dict, conversations: list[Conversation]) -> dict:
    """The runner result (as runners/firmware.run_on_qemu's) of conversations over consecutive
    samples: outputs per sample, and the counts with their unit and source: `instructions`
    (QEMU, SysTick, every board's calibration passed), `unverified_counts` (a board's failed:
    never passed off as instructions) or `cycles` (DWT on silicon), each with its `_note`."""
    counts = [c for conv in conversations for c in conv.counts]
    raw_samples = [r for conv in conversations for r in conv.outputs]
    raw = split_outputs(b"".join(raw_samples), len(raw_samples), [t["size"] for t in info["outputs"]],
                        output_dtypes(info))
    result = {"outputs": decode_outputs(info, raw, len(raw_samples)), "raw": raw, "layer_instructions": None,
              "layers": None, "resent_frames": sum(conv.resent for conv in conversations)}
    tick = int(board.get("firmware.instructions_per_tick", 40))
    problems = [conv.count_problem for conv in conversations if conv.count_problem]
    if proto.COUNTERS[str(board.get("firmware.serial_counter", "systick"))] == proto.COUNT_CYCLES:
        result.update({"cycles": counts, "cycles_note": DWT_NOTE})
    elif problems:
        result.update({"unverified_counts": counts, "unverified_counts_note": UNVERIFIED_NOTE.format(tick=tick),
                       "warnings": problems})
    else:
        result.update({"instructions": counts, "instructions_note": SYSTICK_NOTE.format(tick=tick)})
    return result


def run_on_serial(board: Board, info: dict, samples: list[dict[str, np.ndarray]], target: SerialTarget,
                  progress: bool) -> dict:
    return result_of(board, info, [run_target(board, info, sample_payloads(info, samples), target, progress)])
