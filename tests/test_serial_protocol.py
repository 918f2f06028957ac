"""The serial test harness protocol (sdk/runners/serial_protocol.py) and its host side
(sdk/runners/serial_harness.py) over a real pseudo-terminal pair with pyserial: the board's
side is played by a thread on the pty's master, byte for byte as the firmware template
frames them. The firmware itself is run under QEMU in board_tests/test_serial_farm.py.
"""
from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import jinja2
import pytest
import serial

from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen.harness_types import with_types
from cuvil_sdk.errors import TargetError
from cuvil_sdk.runners import serial_protocol as proto
from cuvil_sdk.runners.serial_harness import SerialHarness

ROOT = Path(__file__).resolve().parents[1]


def test_crc_table_is_zlibs_crc32():
    table = proto.crc_table()
    rng = random.Random(7)
    for size in (0, 1, 5, 300):
        data = bytes(rng.randrange(256) for _ in range(size))
        crc = 0xFFFFFFFF
        for byte in data:  # the firmware's loop (serial_harness.c.j2, crc_byte)
            crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
        assert crc ^ 0xFFFFFFFF == zlib.crc32(data)


def test_frame_layout():
    frame = proto.encode(proto.INPUT, 0x0A0B0C0D, 0x01020304, b"\xaa\xbb")
    assert frame[:2] == b"CV" and frame[2] == proto.VERSION == 3 and frame[3] == proto.INPUT
    assert frame[4:8] == bytes([13, 12, 11, 10]) and frame[8:12] == bytes([4, 3, 2, 1])
    assert frame[12:16] == bytes([2, 0, 0, 0]) and frame[16:18] == b"\xaa\xbb"
    assert frame[18:] == struct.pack("<I", zlib.crc32(frame[:18]))


def test_board_info_round_trip_and_bad_sizes():
    info = proto.BoardInfo(proto.COUNT_CYCLES, (256, 12), (10,))
    assert proto.BoardInfo.decode(info.encode()) == info
    with pytest.raises(ValueError, match="2 inputs and 1 outputs has 20 bytes"):
        proto.BoardInfo.decode(info.encode()[:20])


def test_the_firmware_template_takes_every_constant_from_python():
    board = get_board("cortex-m7-app")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(board.family_dir)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    context = {"name": "net", "NAME": "NET", "int8": True, "instructions_per_tick": 40,
               "inputs": [{"index": 0, "size": 64, "bytes": 256}], "outputs": [{"index": 0, "size": 10, "dtype": "int8"}],
               **proto.c_context("dwt")}
    text = env.get_template("serial_harness.c.j2").render(with_types(context))  # as codegen/firmware.py renders it
    assert f"#define PROTO_VERSION {proto.VERSION}u" in text and f"#define FRAME_INPUT {proto.INPUT}u" in text
    assert f"#define NAK_CRC {proto.NAK_CRC}u" in text and f"#define COUNT_KIND {proto.COUNT_CYCLES}u" in text
    assert f"0x{proto.crc_table()[255]:08X}u" in text and "DWT_CYCCNT" in text and "SysTick" not in text
    with pytest.raises(ValueError, match="serial_counter 'tsc'"):
        proto.c_context("tsc")


class FakeLine:
    """The board's end of a pty pair: what the firmware would send and receive."""

    def __init__(self) -> None:
        self.master, slave = os.openpty()
        self.host = serial.Serial(os.ttyname(slave), 115200, timeout=0.05)
        os.close(slave)
        import tty
        tty.setraw(self.host.fileno())

    def read_frame(self, timeout_s: float = 5.0) -> tuple[int, int, int, bytes]:
        """(type, request id, sample index, payload) of the host's next frame."""
        data = b""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            data += os.read(self.master, 4096)
            if len(data) >= proto.HEADER.size:
                _, _, kind, request, sample, length = proto.HEADER.unpack_from(data)
                if len(data) >= proto.HEADER.size + length + proto.CRC.size:
                    return kind, request, sample, data[proto.HEADER.size:proto.HEADER.size + length]
        raise AssertionError("no frame from the host")

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self) -> None:
        self.host.close()
        os.close(self.master)


@pytest.fixture
def line():
    line = FakeLine()
    yield line
    line.close()


def answer(line: FakeLine, replies: list) -> threading.Thread:
    """A board that reads one frame per reply and sends that reply (bytes, or None: silence)."""
    def board() -> None:
        for reply in replies:
            line.read_frame()
            if reply is not None:
                line.send(reply)
    thread = threading.Thread(target=board, daemon=True)
    thread.start()
    return thread


REQUEST = 0x5EED0000  # the first request id of the scripted conversations (else drawn at random)


def output(sample: int, count: int, values: bytes, request: int = REQUEST) -> bytes:
    return proto.encode(proto.OUTPUT, request, sample, struct.pack("<Q", count) + values)


def test_garbage_split_frames_and_late_answers_are_handled(line):
    harness = SerialHarness(line.host, "board", reply_s=2.0, request=REQUEST)
    good = output(3, 12345, b"\x01\x02")
    stale = output(2, 1, b"\x00\x00", REQUEST - 1)  # a late answer to an earlier request: skipped
    thread = answer(line, [b"\x00noise CV\xff" + stale + good[:5]])
    threading.Timer(0.3, lambda: line.send(good[5:])).start()  # the rest of the frame comes later
    assert harness.exchange(3, b"\x00" * 8, 2) == (12345, b"\x01\x02")
    assert harness.resent == 0
    thread.join(5)


def test_a_nak_and_a_corrupt_answer_are_sent_again(line):
    harness = SerialHarness(line.host, "board", reply_s=0.5, request=REQUEST)
    nak = proto.encode(proto.NAK, REQUEST, 0, struct.pack("<I", proto.NAK_CRC))
    corrupt = bytearray(output(0, 7, b"\x05\x06"))
    corrupt[proto.HEADER.size + 2] ^= 0x40
    thread = answer(line, [nak, bytes(corrupt), output(0, 7, b"\x05\x06")])
    assert harness.exchange(0, b"\x00" * 8, 2) == (7, b"\x05\x06")
    # the corrupt answer: sent again as soon as the line is quiet, not after the reply wait
    assert harness.resends == ["sample 0: NAK (CRC mismatch)", "sample 0: damaged answer"]
    assert harness.resent == 2
    thread.join(5)


def test_a_silent_board_gives_target_error_after_bounded_tries(line):
    harness = SerialHarness(line.host, "place 'x'", reply_s=0.3, retries=2)
    thread = answer(line, [None, None, None])
    began = time.monotonic()
    with pytest.raises(TargetError, match=r"^place 'x': sample 9: no valid answer after 3 tries \(last: timeout\)$"):
        harness.exchange(9, b"\x00" * 8, 2)
    assert time.monotonic() - began < 10
    thread.join(5)


def test_a_model_error_is_not_retried(line):
    harness = SerialHarness(line.host, "board", reply_s=2.0, request=REQUEST)
    thread = answer(line, [proto.encode(proto.ERROR, REQUEST, 4, struct.pack("<I", proto.ERROR_MODEL))])
    with pytest.raises(TargetError, match="the model returned an error on sample 4"):
        harness.exchange(4, b"\x00" * 8, 2)
    assert harness.resent == 0
    thread.join(5)


def test_a_lost_link_names_the_sample(line):
    harness = SerialHarness(line.host, "board", reply_s=2.0)
    line.host.close()
    with pytest.raises(TargetError, match="board: the serial link was lost at sample 5"):
        harness.exchange(5, b"\x00" * 8, 2)


# --- the command line: refused before any work ------------------------------------------------------
def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *args], capture_output=True, text=True, timeout=120,
                          env=env)


@pytest.mark.slow
def test_port_on_a_board_without_serial_harness_is_a_usage_error(tmp_path):
    r = cli("validate", "--board", "cortex-m7", "--profile", "lite", "--model", "m.onnx", "--data", "d.npz",
            "--port", "/dev/null")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == ("cuvil-sdk: error: board 'cortex-m7' has no serial test harness "
                                                 "(--port/--place work on: cortex-m7-app, nucleo-f767zi)")


@pytest.mark.slow
@pytest.mark.parametrize("extra, message", [
    (["--port", "/dev/null", "--place", "a"], "--port and --place both name the board: give one of them"),
    (["--port", "/dev/null", "--per-layer"], "--per-layer needs the semihosting harness under QEMU: not with "
                                             "--port or --place"),
])
def test_conflicting_options_are_usage_errors(tmp_path, extra, message):
    model = ROOT / "sdk" / "examples" / "digits_cnn.onnx"
    r = cli("validate", "--board", "cortex-m7-app", "--profile", "lite", "--model", str(model), "--data",
            str(ROOT / "sdk" / "examples" / "digits_data.npz"), *extra)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1] == f"cuvil-sdk: error: {message}"


@pytest.mark.slow
def test_place_without_labgrid_is_one_line_exit_5(tmp_path):
    (tmp_path / "labgrid").mkdir()
    (tmp_path / "labgrid" / "__init__.py").write_text("raise ImportError('labgrid is not installed here')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = cli("run", "--board", "cortex-m7-app", "--profile", "lite", "--model",
            str(ROOT / "sdk" / "examples" / "digits_cnn.onnx"), "--calib", str(ROOT / "sdk" / "examples" /
                                                                                 "digits_calib.npy"),
            "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npz"), "--place", "a", env=env)
    assert r.returncode == 5, r.stderr
    assert r.stderr.strip().splitlines()[-1] == ("cuvil-sdk: error: --place needs labgrid: pip install "
                                                 "'cuvil-sdk[farm]' (or pip install labgrid)")


def test_calibration_counts_are_judged_within_one_tick():
    from cuvil_sdk.runners.serial_harness import count_problem
    exact = proto.CALIBRATION_INSTRUCTIONS
    assert count_problem((exact, exact), 40) is None
    assert count_problem((exact + 40, exact - 40), 40) is None
    # measured on a QEMU without -icount: SysTick follows the host clock
    assert count_problem((56400, 1823160), 40) == (
        "SysTick does not count guest instructions there (a calibration stretch of 40000 instructions counted "
        "56400 and 1823160): is QEMU running without -icount shift=0? Its counts are reported as "
        "unverified_counts_per_sample")
    # a host that happens to run one guest instruction a nanosecond passes one stretch, not both
    assert count_problem((exact, 1635640), 40) is not None
    assert count_problem((exact + 80, exact), 40) is not None  # -icount with another shift, say


def test_calibrate_asks_the_board_and_sends_again_on_a_nak(line):
    harness = SerialHarness(line.host, "board", reply_s=0.5, request=REQUEST)
    nak = proto.encode(proto.NAK, REQUEST, 0, struct.pack("<I", proto.NAK_CRC))
    counts = proto.encode(proto.CALIBRATION, REQUEST, 0, proto.CALIBRATION_COUNTS.pack(40000, 40040))
    thread = answer(line, [nak, counts])
    assert harness.calibrate() == (40000, 40040)
    assert harness.resent == 1
    thread.join(5)
