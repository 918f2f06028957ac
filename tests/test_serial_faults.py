"""Faults on the serial link (issue 38, defect 4; docs/farm.md, "Faults on the serial link"):
the host (sdk/runners/serial_harness.py) talks through pyserial over a real pty pair to a
stand-in for the harness firmware (tests/serial_board.py) whose answers are damaged on the
way: flipped bits in a frame's length field, noise that looks like a frame header. The host
must resync at once, never wait for a phantom payload, take the next good frame, and give
every sample its own right answer. Every fault is drawn from a seeded generator; every test
bounds its own time. The same faults against the firmware itself under QEMU are in
board_tests/test_serial_farm.py.
"""
from __future__ import annotations

import random
import struct
import time

import pytest

from cuvil_sdk.errors import TargetError
from cuvil_sdk.runners import serial_protocol as proto
from cuvil_sdk.runners.serial_harness import SerialHarness
from serial_board import BoardStandIn, Reply, count_of, model

INFO = proto.BoardInfo(proto.COUNT_CYCLES, (32,), (10, 3))
OUTPUT_BYTES = 8 + sum(INFO.output_bytes)
REPLY_S = 5.0   # one try's wait: a fault that costs a timeout shows as seconds
SAMPLES = 12
LENGTH_AT = proto.HEADER.size - 4  # the u32 payload length is the header's last field


def payload_of(k: int) -> bytes:
    return random.Random(k).randbytes(sum(INFO.input_bytes))


def converse(board: BoardStandIn, samples: int = SAMPLES, retries: int = 3) -> SerialHarness:
    """HELLO, then every sample; each answer must be the stand-in's for that very input."""
    harness = SerialHarness(board.host, "board", reply_s=REPLY_S, retries=retries)
    assert harness.hello() == INFO
    for k in range(samples):
        payload = payload_of(k)
        assert harness.exchange(k, payload, sum(INFO.output_bytes)) == (count_of(k), model(payload, 13)), k
    return harness


def flip_bit(frame: bytes, bit: int) -> bytes:
    """The frame with one bit of its length field inverted."""
    damaged = bytearray(frame)
    damaged[LENGTH_AT + bit // 8] ^= 1 << (bit % 8)
    return bytes(damaged)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_flipped_bit_in_an_answers_length_is_resynced_at_once(seed):
    """Bit 23 claims an 8 MiB payload (the phantom issue 38 saw: 4 tries x the reply wait,
    then exit 6); the other flips are drawn anywhere in the field."""
    rng = random.Random(seed)
    bits = dict(zip(rng.sample(range(SAMPLES), 4), [23, *(rng.randrange(32) for _ in range(3))]))

    def tamper(reply: Reply, frame: bytes) -> bytes:  # the first answer to each chosen sample
        first_output = reply.kind == proto.OUTPUT and reply.repeat == 0
        return flip_bit(frame, bits[reply.sample]) if first_output and reply.sample in bits else frame

    began = time.monotonic()
    with BoardStandIn(INFO, tamper) as board:
        harness = converse(board)
    assert time.monotonic() - began < 4.0, bits  # a try's timeout is REPLY_S: no fault may cost one
    assert harness.resent == len(bits), harness.resends  # each damaged answer: its sample sent once more
    assert all(reason.endswith(": damaged answer") for reason in harness.resends), harness.resends


def header_noise(rng: random.Random, request: int, sample: int) -> bytes:
    """Bytes that look like the start of a frame: the magic, this version, a type the board
    sends, the request's id and sample's index, a length that fits the type or is a phantom;
    no payload."""
    kind, length = rng.choice([(proto.OUTPUT, OUTPUT_BYTES), (proto.OUTPUT, 1 << 23), (proto.NAK, 4),
                               (proto.INFO, 20), (proto.OUTPUT, rng.randrange(1 << 24))])
    head = proto.HEADER.pack(proto.MAGIC, proto.VERSION, kind, request, sample, length)
    return rng.randbytes(rng.randrange(4)) + head[:rng.randrange(3, len(head) + 1)]


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_noise_that_looks_like_a_header_does_not_hide_the_next_good_frame(seed):
    rng = random.Random(seed)
    noisy = set(rng.sample(range(SAMPLES), 5))

    def tamper(reply: Reply, frame: bytes) -> bytes:
        if reply.kind != proto.OUTPUT or reply.sample not in noisy:
            return frame
        return header_noise(random.Random(seed * 100 + reply.sample), reply.request, reply.sample) + frame

    began = time.monotonic()
    with BoardStandIn(INFO, tamper) as board:
        harness = converse(board)
    assert time.monotonic() - began < 3.0, noisy
    assert harness.resent == 0, harness.resends  # the good frame after the noise is the answer


def test_a_link_that_damages_every_answer_ends_quickly_in_exit_6():
    """Every OUTPUT's length damaged: 4 tries, each given up as soon as the line is quiet."""
    began = time.monotonic()
    with BoardStandIn(INFO, lambda reply, frame: flip_bit(frame, 20) if reply.kind == proto.OUTPUT else frame) as board:
        harness = SerialHarness(board.host, "place 'x'", reply_s=REPLY_S)
        harness.hello()
        with pytest.raises(TargetError) as failure:
            harness.exchange(0, payload_of(0), sum(INFO.output_bytes))
    assert failure.value.exit_code == 6
    assert str(failure.value) == "place 'x': sample 0: no valid answer after 4 tries (last: damaged answer)"
    assert time.monotonic() - began < 4.0
    assert board.inputs == [0, 0, 0, 0]


def test_a_stale_nak_header_in_front_of_an_answer_is_skipped():
    """A NAK-shaped header (of the right length) whose CRC fails: hunt on from its next byte."""
    nak_head = proto.HEADER.pack(proto.MAGIC, proto.VERSION, proto.NAK, 0, 0, 4)
    with BoardStandIn(INFO, lambda reply, frame: nak_head + frame if reply.kind == proto.OUTPUT else frame) as board:
        harness = converse(board, samples=2)
    assert harness.resent == 0
    assert struct.unpack_from("<I", nak_head, LENGTH_AT)[0] == 4


def test_an_answer_replayed_from_an_earlier_conversation_is_not_taken():
    """A frame with a valid CRC and the right sample index that is not the answer to this
    request: the board's answers of a first conversation, replayed in front of its answers of
    a second one on the same link (other inputs, the same sample indices). Each must be
    skipped for the answer to its own request (docs/internals.md: the request id)."""
    first: dict[int, bytes] = {}
    replaying = False

    def tamper(reply: Reply, frame: bytes) -> bytes:
        if reply.kind != proto.OUTPUT:
            return frame
        if not replaying:
            first[reply.sample] = frame
            return frame
        return first[reply.sample] + frame

    with BoardStandIn(INFO, tamper) as board:
        converse(board, samples=4)
        replaying = True
        harness = SerialHarness(board.host, "board", reply_s=REPLY_S)
        assert harness.hello() == INFO
        for k in range(4):
            payload = payload_of(100 + k)
            assert harness.exchange(k, payload, sum(INFO.output_bytes)) == (count_of(k), model(payload, 13)), k
    assert harness.resent == 0


@pytest.mark.parametrize("seed", [7, 8])
def test_a_forged_answer_of_another_request_is_not_taken(seed):
    """A well-formed OUTPUT (valid CRC, this sample's index, a payload of the right length)
    whose request id is not the host's, in front of the board's answer: skipped."""
    rng = random.Random(seed)
    forged = set(rng.sample(range(SAMPLES), 4))

    def tamper(reply: Reply, frame: bytes) -> bytes:
        if reply.kind != proto.OUTPUT or reply.sample not in forged:
            return frame
        other = (reply.request + rng.randrange(1, 1 << 32)) & 0xFFFFFFFF
        fake = proto.encode(proto.OUTPUT, other, reply.sample, struct.pack("<Q", 1) + rng.randbytes(13))
        return fake + frame

    with BoardStandIn(INFO, tamper) as board:
        harness = converse(board)
    assert harness.resent == 0


def test_firmware_of_an_older_protocol_version_is_named_at_hello():
    """Firmware built by an older cuvil-sdk NAKs this version's HELLO in its own frame layout."""
    old = proto.OLD_HEADER.pack(proto.MAGIC, 2, proto.NAK, 0, 4) + struct.pack("<I", proto.NAK_VERSION)
    old += proto.CRC.pack(proto.crc32(old))
    began = time.monotonic()
    with BoardStandIn(INFO, lambda reply, frame: old) as board:
        with pytest.raises(TargetError) as failure:
            SerialHarness(board.host, "/dev/ttyACM0").hello()
    assert failure.value.exit_code == 6
    assert str(failure.value) == ("/dev/ttyACM0: the firmware there speaks serial protocol version 2, this cuvil-sdk "
                                  "version 3: flash the harness this cuvil-sdk builds")
    assert time.monotonic() - began < 1.0  # at once, not after 8 HELLOs
