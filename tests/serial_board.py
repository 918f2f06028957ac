"""A stand-in for the serial harness firmware (targets/cortex_m7/serial_harness.c.j2), in
Python, on the board's end of a pseudo-terminal pair: the host talks to it through pyserial
over a real tty, as to a board. It receives as the firmware does (hunts for the magic, NAKs a
wrong header at once, checks the CRC) and answers HELLO with INFO and INPUT with OUTPUT.

What it sends back can be damaged on purpose: `tamper(reply, frame)` gets each frame it sends,
with what it is (`Reply`: its type, its sample index, and how many times that frame was sent
before), and returns the bytes that go on the wire instead (the fault a test makes).
Its "model" is a digest of the input, so a wrong answer cannot pass for a right one.
"""
from __future__ import annotations

import hashlib
import os
import select
import struct
import threading
import tty
from dataclasses import dataclass
from typing import Callable

import serial

from cuvil_sdk.runners import serial_protocol as proto



@dataclass(frozen=True)
class Reply:
    kind: int
    request: int
    sample: int
    repeat: int  # 0: the first answer of this type to this sample index


Tamper = Callable[[Reply, bytes], bytes]


def model(payload: bytes, size: int) -> bytes:
    """The stand-in's outputs for an input: `size` bytes that depend on every input byte."""
    out = b""
    while len(out) < size:
        out += hashlib.sha256(bytes([len(out)]) + payload).digest()
    return out[:size]


def count_of(sample: int) -> int:
    return 1000 + sample


class BoardStandIn:
    """The board's end of a pty pair; `host` is the pyserial port the host side uses."""

    def __init__(self, info: proto.BoardInfo, tamper: Tamper | None = None) -> None:
        self.info = info
        self.tamper = tamper or (lambda reply, frame: frame)
        self.sent: dict[tuple[int, int], int] = {}  # (type, sample) -> frames sent
        self.inputs: list[int] = []  # sample index of every INPUT it ran, in order
        self.master, slave = os.openpty()
        tty.setraw(self.master)
        self.host = serial.Serial(os.ttyname(slave), 115200, timeout=0.05)
        os.close(slave)
        tty.setraw(self.host.fileno())
        self._stop = threading.Event()
        self._rx = bytearray()
        self._thread = threading.Thread(target=self._serve, name="board-stand-in", daemon=True)

    def __enter__(self) -> "BoardStandIn":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.host.close()
        os.close(self.master)

    # --- the wire -------------------------------------------------------------------------------
    def _byte(self) -> int:
        while not self._rx:
            if self._stop.is_set():
                raise EOFError
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                try:
                    self._rx += os.read(self.master, 4096)
                except OSError:
                    raise EOFError from None
        return self._rx.pop(0)

    def _bytes(self, n: int) -> bytes:
        return bytes(self._byte() for _ in range(n))

    def send(self, data: bytes) -> None:
        """Raw bytes to the host (noise, a forged frame)."""
        os.write(self.master, data)

    def _reply(self, kind: int, request: int, sample: int, payload: bytes) -> None:
        """An answer: it echoes the request id and sample index of the frame it answers."""
        frame = proto.encode(kind, request, sample, payload)
        repeat = self.sent.get((kind, sample), 0)
        self.sent[(kind, sample)] = repeat + 1
        self.send(self.tamper(Reply(kind, request, sample, repeat), frame))

    # --- the firmware's loop --------------------------------------------------------------------
    def _serve(self) -> None:
        try:
            while True:
                self._answer(*self._receive())
        except EOFError:
            pass

    def _receive(self) -> tuple[int, int, int, int, bytes]:
        """(NAK reason or 0, type, request, sample, payload), as serial_harness.c.j2's receive()."""
        previous, byte = 0, 0
        while (previous, byte) != tuple(proto.MAGIC):
            previous, byte = byte, self._byte()
        head = proto.MAGIC + self._bytes(proto.HEADER.size - 2)
        _, version, kind, request, sample, length = proto.HEADER.unpack(head)
        if version != proto.VERSION:
            return proto.NAK_VERSION, kind, request, sample, b""
        wanted = {proto.HELLO: 0, proto.CALIBRATE: 0, proto.INPUT: sum(self.info.input_bytes)}
        if kind not in wanted:
            return proto.NAK_TYPE, kind, request, sample, b""
        if length != wanted[kind]:
            return proto.NAK_LENGTH, kind, request, sample, b""
        payload = self._bytes(length)
        (crc,) = proto.CRC.unpack(self._bytes(proto.CRC.size))
        return (0 if crc == proto.crc32(head + payload) else proto.NAK_CRC), kind, request, sample, payload

    def _answer(self, nak: int, kind: int, request: int, sample: int, payload: bytes) -> None:
        if nak:
            self._reply(proto.NAK, request, sample, struct.pack("<I", nak))
        elif kind == proto.HELLO:
            self._reply(proto.INFO, request, sample, self.info.encode())
        elif kind == proto.CALIBRATE:
            counts = proto.CALIBRATION_INSTRUCTIONS
            self._reply(proto.CALIBRATION, request, sample, proto.CALIBRATION_COUNTS.pack(counts, counts))
        else:
            self.inputs.append(sample)
            outputs = model(payload, sum(self.info.output_bytes))
            self._reply(proto.OUTPUT, request, sample, struct.pack("<Q", count_of(sample)) + outputs)
