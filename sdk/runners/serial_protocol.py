"""The serial test harness protocol (docs/internals.md, "Serial harness protocol"): the host
sends a model's input tensors over a UART, the firmware runs the model and answers with the
output tensors and the cycle or instruction count of the inference.

Every value here is declared once: the host side (runners/serial_harness.py) uses it, and
`c_context()` hands it to the firmware template (targets/cortex_m7/serial_harness.c.j2),
so the C never spells a constant of its own.

A frame, little-endian:

    offset  size  field
    0       2     magic "CV"
    2       1     protocol version (VERSION)
    3       1     frame type (HELLO ... RESET)
    4       4     request id: the host's, new for every request (all tries of one share it);
                  the board echoes it in its answer, so an answer is tied to its request
    8       4     sample index (0 where no sample is meant)
    12      4     payload length L
    16      L     payload
    16+L    4     CRC-32 (reflected 0xEDB88320, zlib's) of bytes 0 .. 16+L-1

Frames:
    HELLO  host -> board   empty; the board answers INFO. Firmware of another version NAKs it
                           (NAK_VERSION) in its own version's frame: the host names both
                           versions (serial_harness.SerialHarness.hello)
    INFO   board -> host   u32 count kind (COUNT_*), u32 inputs n, u32 outputs m,
                           n x u32 input bytes, m x u32 output bytes
    INPUT  host -> board   one sample: every input in model order, float32
    OUTPUT board -> host   u64 count of the inference, then every output in order
                           (int8 for int8 builds, float32 otherwise); same request id and
                           sample index
    NAK    board -> host   u32 reason (NAK_*): the frame was corrupt or unexpected; the
                           host sends it again (a bounded number of times). Its request id
                           and sample index are the bad frame's, as received
    ERROR  board -> host   u32 reason (ERROR_*): the model itself failed on that sample
    RESET  host -> board   no answer: the board resets itself (SYSRESETREQ), back into
                           its bootloader where one waits (BOOT0 high on an STM32)
    CALIBRATE   host -> board  empty; SysTick boards only (QEMU): the board answers CALIBRATION
    CALIBRATION board -> host  u64 count of CALIBRATION_ITERATIONS x 4 instructions on
                           registers, u64 count of as many instructions that read a device
                           register: under -icount shift=0 both are CALIBRATION_INSTRUCTIONS
                           (within a tick); the host checks it (serial_harness.count_problem)
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

MAGIC = b"CV"
VERSION = 3  # 2: CALIBRATE / CALIBRATION; 3: the request id
HEADER = struct.Struct("<2sBBIII")  # magic, version, type, request, sample, length
OLD_HEADER = struct.Struct("<2sBBII")  # versions 1 and 2: magic, version, type, sample, length
OLD_VERSIONS = (1, 2)
MAX_OLD_PAYLOAD = 64  # what an older firmware answers this version's HELLO with is a NAK (4 bytes)
CRC = struct.Struct("<I")

HELLO, INFO, INPUT, OUTPUT, NAK, ERROR, RESET, CALIBRATE, CALIBRATION = 1, 2, 3, 4, 5, 6, 7, 8, 9
FRAME_NAMES = {HELLO: "HELLO", INFO: "INFO", INPUT: "INPUT", OUTPUT: "OUTPUT", NAK: "NAK", ERROR: "ERROR",
               RESET: "RESET", CALIBRATE: "CALIBRATE", CALIBRATION: "CALIBRATION"}

NAK_CRC, NAK_VERSION, NAK_TYPE, NAK_LENGTH = 1, 2, 3, 4
NAK_NAMES = {NAK_CRC: "CRC mismatch", NAK_VERSION: "protocol version", NAK_TYPE: "unexpected frame type",
             NAK_LENGTH: "wrong payload length"}
ERROR_MODEL = 1

COUNT_INSTRUCTIONS, COUNT_CYCLES = 0, 1
COUNT_NAMES = {COUNT_INSTRUCTIONS: "instructions", COUNT_CYCLES: "cycles"}
# board file key firmware.serial_counter -> what the firmware counts
COUNTERS = {"systick": COUNT_INSTRUCTIONS, "dwt": COUNT_CYCLES}

# The calibration stretches (serial_harness.c.j2): loops of 4 guest instructions an iteration,
# 1000 SysTick ticks long. Measured under -icount shift=0: 40000 and 40000, every time (the
# measurement's own instructions stay within the tick); without -icount, 13560-56400 on
# registers and 1.6-1.8 M with the device read, on a host that is neither fast nor idle.
CALIBRATION_ITERATIONS = 10000
CALIBRATION_INSTRUCTIONS = 4 * CALIBRATION_ITERATIONS
CALIBRATION_COUNTS = struct.Struct("<QQ")  # registers-only stretch, device-read stretch

# What a board can send, and how long each frame's payload is: a header that claims anything
# else is not a frame (noise, or a frame whose header was damaged), and the host hunts for the
# next magic at once instead of waiting for a payload that will never come.
MAX_TENSORS = 1024  # inputs plus outputs an INFO may list
MAX_OUTPUT_BYTES = 1 << 20  # an OUTPUT's bound while the host does not know the model's (a bare SerialHarness)
REPLY_LENGTHS = {NAK: 4, ERROR: 4, CALIBRATION: CALIBRATION_COUNTS.size}


def reply_length_ok(kind: int, length: int, output_bytes: int | None) -> bool:
    """Whether a board's frame of type `kind` can carry `length` payload bytes; `output_bytes`:
    the outputs of one sample of this model (None while the host does not know them yet)."""
    if kind in REPLY_LENGTHS:
        return length == REPLY_LENGTHS[kind]
    if kind == INFO:  # counted against the build after it arrives, so only its shape is checked here
        return 12 <= length <= 12 + 4 * MAX_TENSORS and length % 4 == 0
    if kind == OUTPUT:
        return length == 8 + output_bytes if output_bytes is not None else 8 <= length <= 8 + MAX_OUTPUT_BYTES
    return False  # a type only the host sends


CRC_POLY = 0xEDB88320  # reflected CRC-32 (IEEE 802.3), initial and final value 0xFFFFFFFF, as zlib


def crc_table() -> list[int]:
    """The byte-at-a-time table of CRC_POLY, rendered into the firmware as a constant."""
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (CRC_POLY if c & 1 else 0)
        table.append(c)
    return table


def crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def encode(kind: int, request: int, sample: int, payload: bytes = b"") -> bytes:
    head = HEADER.pack(MAGIC, VERSION, kind, request, sample, len(payload))
    return head + payload + CRC.pack(crc32(head + payload))


def old_version_at(data: bytes | bytearray, at: int) -> int | None:
    """The version of a whole, CRC-valid frame of an earlier version of this protocol at `at`
    (firmware built by an older cuvil-sdk NAKs this version's frames in its own); 0 while one
    may still be arriving; None: there is none."""
    if len(data) - at < OLD_HEADER.size:
        return 0 if len(data) - at < 3 or data[at + 2] in OLD_VERSIONS else None
    _, version, _, _, length = OLD_HEADER.unpack_from(data, at)
    if version not in OLD_VERSIONS or length > MAX_OLD_PAYLOAD:
        return None
    end = at + OLD_HEADER.size + length
    if len(data) < end + CRC.size:
        return 0
    return version if CRC.unpack_from(data, end)[0] == crc32(bytes(data[at:end])) else None


@dataclass(frozen=True)
class Frame:
    kind: int
    request: int
    sample: int
    payload: bytes

    @property
    def name(self) -> str:
        return FRAME_NAMES.get(self.kind, f"type {self.kind}")


@dataclass(frozen=True)
class BoardInfo:
    """What INFO says: the firmware's count kind and its input and output sizes in bytes."""
    count_kind: int
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]

    @classmethod
    def decode(cls, payload: bytes) -> "BoardInfo":
        if len(payload) < 12:
            raise ValueError(f"INFO has {len(payload)} bytes, fewer than 12")
        kind, n, m = struct.unpack_from("<III", payload)
        if len(payload) != 12 + 4 * (n + m):
            raise ValueError(f"INFO of {n} inputs and {m} outputs has {len(payload)} bytes")
        sizes = struct.unpack_from(f"<{n + m}I", payload, 12)
        return cls(kind, tuple(sizes[:n]), tuple(sizes[n:]))

    def encode(self) -> bytes:
        sizes = (*self.input_bytes, *self.output_bytes)
        return struct.pack(f"<III{len(sizes)}I", self.count_kind, len(self.input_bytes), len(self.output_bytes),
                           *sizes)


def c_context(counter: str) -> dict:
    """The protocol's constants for the firmware template (one place: this module)."""
    if counter not in COUNTERS:
        raise ValueError(f"firmware.serial_counter '{counter}' is not one of {', '.join(COUNTERS)}")
    table = crc_table()
    return {"proto": {
        "magic0": MAGIC[0], "magic1": MAGIC[1], "version": VERSION, "header_bytes": HEADER.size,
        "crc_bytes": CRC.size, "crc_poly": CRC_POLY,
        "crc_table": [f"0x{v:08X}u" for v in table],
        "types": {name: code for code, name in FRAME_NAMES.items()},
        "nak": {"CRC": NAK_CRC, "VERSION": NAK_VERSION, "TYPE": NAK_TYPE, "LENGTH": NAK_LENGTH},
        "error_model": ERROR_MODEL, "counter": counter, "count_kind": COUNTERS[counter],
        "calibration_iterations": CALIBRATION_ITERATIONS}}
