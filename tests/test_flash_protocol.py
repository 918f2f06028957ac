"""Serial flashing (AN3155) against the simulated bootloader: happy paths, every fault
kind, link cuts at several points of a transfer, verification, refusals."""
from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
import tty
from pathlib import Path

import pytest

# The helpers sit beside this file; put it on the path however pytest imported us.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cuvil_sdk.errors import FlashError, UsageError
from cuvil_sdk.flash import flash_command
from cuvil_sdk.flash.an3155 import (ERASE, EXTENDED_ERASE, GET, GET_ID, GO, INIT,
                                    READ_MEMORY, WRITE_MEMORY, An3155Client, open_port)
from cuvil_sdk.flash.image import Image, Segment, load_image, parse_intel_hex
from cuvil_sdk.flash.simulator import Fault, Simulator
from flash_helpers import (FAST, FLASH_START, board, flash, geometry, image_bytes,
                           write_bin, write_hex)

SIZE = 40_003  # spans sectors 0 and 1 (32 KiB each) and ends off a word boundary


def expect_flash_error(sim: Simulator, firmware: Path, step: str, **options: object) -> FlashError:
    with pytest.raises(FlashError) as info:
        flash(sim, firmware, **options)
    err = info.value
    assert err.step == step, str(err)
    assert err.exit_code == 7
    assert "\n" not in str(err) and str(err).startswith(step)
    return err


# -- happy paths ------------------------------------------------------------------------

@pytest.mark.parametrize("transport", ["pty", "tcp"])
def test_flash_verify_go(tmp_path: Path, transport: str) -> None:
    firmware = write_bin(tmp_path, SIZE)
    with Simulator(geometry(), transport=transport) as sim:
        neighbour = bytes(range(256)) * 4
        sim.program(0x08010000, neighbour)  # sector 2: not the image's, must survive
        result = flash(sim, firmware)
        assert sim.read(FLASH_START, SIZE) == firmware.read_bytes()
        assert sim.read(FLASH_START + SIZE, 1) == b"\xff"  # the word's padding
        assert sim.read(0x08010000, len(neighbour)) == neighbour
        assert sim.device.erased == [0, 1]
        assert sim.device.go_address == FLASH_START
    assert result["verified"] and result["erased_sectors"] == [0, 1]
    assert result["device_id"] == "0x451" and result["erase_command"] == "0x44"
    assert result["start_address"] == "0x08000000" and result["bytes"] == SIZE
    assert result["retries"] == 0 and result["resumed_session"] is False


def test_intel_hex_with_gaps_erases_only_touched_sectors(tmp_path: Path) -> None:
    a, b, c = image_bytes(1000, 1), image_bytes(77, 2), image_bytes(600, 3)
    firmware = write_hex(tmp_path / "app.hex", [(0x08000000, a), (0x08000402, b), (0x08020010, c)])
    with Simulator(geometry()) as sim:
        result = flash(sim, firmware)
        assert sim.read(0x08000000, len(a)) == a
        assert sim.read(0x08000402, len(b)) == b
        assert sim.read(0x08020010, len(c)) == c
        assert sim.read(0x08000400, 2) == b"\xff\xff"  # gap before an unaligned segment
        assert sim.device.erased == [0, 4]
        assert sim.device.go_address == 0x08000000
    assert result["format"] == "hex" and result["erased_sectors"] == [0, 4]


def test_legacy_erase_when_extended_is_not_offered(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, 5000)
    with Simulator(geometry(), erase_command=ERASE) as sim:
        result = flash(sim, firmware)
        assert sim.read(FLASH_START, 5000) == firmware.read_bytes()
        assert sim.device.erased == [0]
    assert result["erase_command"] == "0x43"


def test_resumes_a_session_left_open(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, 3000)
    with Simulator(geometry()) as sim:
        link = open_port(sim.port, 115200)
        An3155Client(link, timeouts=FAST).connect()
        link.close()
        result = flash(sim, firmware)
        assert sim.read(FLASH_START, 3000) == firmware.read_bytes()
    assert result["resumed_session"] is True


def test_resumes_a_session_left_in_the_middle_of_a_write(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, 3000)
    with Simulator(geometry(), transport="tcp") as sim:
        link = open_port(sim.port, 115200)
        client = An3155Client(link, timeouts=FAST)
        client.connect()
        # WRITE MEMORY, its address, then 40 of the 256 data bytes: the chip now waits
        # for 217 more bytes that never come.
        link.write(bytes([WRITE_MEMORY, WRITE_MEMORY ^ 0xFF]))
        link.write(bytes.fromhex("08000000") + bytes([0x08]))
        link.write(bytes([255]) + bytes(40))
        link.close()
        result = flash(sim, firmware)
        assert sim.read(FLASH_START, 3000) == firmware.read_bytes()
        assert sim.device.go_address == FLASH_START
    assert result["resumed_session"] is True


def test_progress_on_stderr_and_nothing_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    firmware = write_bin(tmp_path, 3000)
    with Simulator(geometry()) as sim:
        flash(sim, firmware, progress=True, json_out=False)
        out, err = capsys.readouterr()
        assert "write: 100%" in err and "verify: 100%" in err
        assert out == ""  # stdout is the CLI's: it prints the report
        sim.reset()
        flash(sim, firmware, progress=False)
        assert capsys.readouterr() == ("", "")  # stderr is no terminal here


# -- faults -----------------------------------------------------------------------------

FAULTS = {
    # name: (fault, the step a persistent fault fails)
    "nack-after-write-data": (dict(kind="nack", command=WRITE_MEMORY, nth=3, stage=2), "write"),
    "silence-after-erase": (dict(kind="silence", command=EXTENDED_ERASE, stage=1), "erase"),
    "garbage-for-get": (dict(kind="garbage", command=GET, stage=0, data=b"\x00\x42\x13"), "identify"),
    "garbage-for-get-id-reply": (dict(kind="garbage", command=GET_ID, stage=1), "identify"),
    "silence-for-init": (dict(kind="silence", command=INIT), "connect"),
    "dropped-byte-to-device": (dict(kind="drop", command=WRITE_MEMORY, nth=2, stage=9), "write"),
    "dropped-byte-from-device": (dict(kind="drop", command=READ_MEMORY, nth=2, stage=7, direction="tx"), "verify"),
    "nack-for-go": (dict(kind="nack", command=GO, stage=1), "go"),
    # issue 38: lost ACKs (the device acted and answered, the host never heard it)
    "lost-ack-after-write-address": (dict(kind="drop", command=WRITE_MEMORY, nth=3, stage=1, direction="tx"),
                                     "write"),
    "lost-ack-to-erase-command": (dict(kind="drop", command=EXTENDED_ERASE, stage=0, direction="tx"), "erase"),
    "silence-after-go-address": (dict(kind="silence", command=GO, stage=1), "go"),
    "nack-for-protection-check": (dict(kind="nack", command=READ_MEMORY, stage=0), "protection check"),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_persistent_fault_fails_naming_the_step(tmp_path: Path, name: str) -> None:
    spec, step = FAULTS[name]
    firmware = write_bin(tmp_path, 3000)
    with Simulator(geometry(), transport="tcp", faults=[Fault(**spec, times=None)]) as sim:
        err = expect_flash_error(sim, firmware, step, timeouts=FAST)
        if step not in ("connect", "identify"):
            assert err.address is not None and f"0x{err.address:08X}" in str(err)
        assert sim.device.go_address is None or step == "go"


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_transient_fault_is_retried(tmp_path: Path, name: str) -> None:
    spec, _ = FAULTS[name]
    firmware = write_bin(tmp_path, 3000)
    fault = Fault(**spec, times=1)
    with Simulator(geometry(), transport="tcp", faults=[fault]) as sim:
        result = flash(sim, firmware, timeouts=FAST)
        assert sim.read(FLASH_START, 3000) == firmware.read_bytes()
        assert sim.device.go_address == FLASH_START
    assert fault.fired == 1
    assert result["retries"] >= 1 or name == "silence-for-init"  # init recovers inside connect


def test_write_acknowledged_but_not_stored_is_caught_by_verification(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, SIZE)
    with Simulator(geometry(), faults=[Fault("lost_write", nth=5)]) as sim:
        err = expect_flash_error(sim, firmware, "verify")
        assert 0x08000400 <= err.address < 0x08000500  # the fifth 256-byte block
        assert "not stored" in str(err)
        assert sim.device.go_address is None  # never started a bad image
        result = flash(sim, firmware)  # nothing sticky: the next flash is fine
        assert sim.read(FLASH_START, SIZE) == firmware.read_bytes()
    assert result["verified"]


def test_device_id_must_match_the_board(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, 3000)
    with Simulator(geometry(), device_id=0x449) as sim:
        err = expect_flash_error(sim, firmware, "identify")
        assert "0x449" in str(err) and "nucleo-f767zi" in str(err)
        assert sim.device.erased == []


def test_writing_over_programmed_flash_is_refused_by_strict_flash() -> None:
    with Simulator(geometry()) as sim:
        sim.program(FLASH_START, bytes(256))
        client = An3155Client(open_port(sim.port, 115200), timeouts=FAST, retries=1)
        client.connect()
        client.identify()
        with pytest.raises(FlashError, match=r"^write at 0x08000000: NACK after the data"):
            client.write_memory(FLASH_START, b"\xff" * 256)
        client.link.close()


def test_and_flash_stores_the_and_of_old_and_new() -> None:
    with Simulator(geometry(), overwrite="and") as sim:
        sim.program(FLASH_START, b"\x0f\xf0\xff\x00")
        client = An3155Client(open_port(sim.port, 115200), timeouts=FAST)
        client.connect()
        client.identify()
        client.write_memory(FLASH_START, b"\x3c\x3c\x3c\x3c")
        assert client.read_memory(FLASH_START, 4) == b"\x0c\x30\x3c\x00"
        client.link.close()


# -- link cuts --------------------------------------------------------------------------

def _steps(log: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """(rx offset, opcode, the flasher's step) of each command in a simulator's log."""
    steps, written = [], False
    for offset, code in log:
        written = written or code == WRITE_MEMORY
        step = {INIT: "connect", GET: "identify", GET_ID: "identify", EXTENDED_ERASE: "erase",
                WRITE_MEMORY: "write", GO: "go"}.get(code, "?")
        if code == READ_MEMORY:
            step = "verify" if written else "protection check"
        steps.append((offset, code, step))
    return steps


def _clean_run(firmware: Path) -> list[tuple[int, int]]:
    """The simulator's command log of a flash without faults."""
    with Simulator(geometry(), transport="tcp") as sim:
        flash(sim, firmware)
        return list(sim.device.log)


def test_link_cut_at_many_points_fails_then_a_second_flash_succeeds(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, 6000)  # 24 blocks
    clean = _clean_run(firmware)
    steps = _steps(clean)
    writes = [s for s in steps if s[1] == WRITE_MEMORY]
    verifies = [s for s in steps if s[2] == "verify"]
    # (command, bytes into it): each point lies inside a command of a clean run.
    points = [
        (steps[0], 0),                                          # the very first 0x7F
        (next(s for s in steps if s[1] == GET), 1),             # between GET and its complement
        (next(s for s in steps if s[1] == GET_ID), 1),
        (next(s for s in steps if s[2] == "protection check"), 4),
        (next(s for s in steps if s[1] == EXTENDED_ERASE), 4),  # inside the page list
        (writes[0], 2), (writes[0], 100), (writes[len(writes) // 2], 7),
        (writes[-1], 110),                                      # the last block is 112 bytes
        (verifies[0], 3), (verifies[-1], 8),
        (next(s for s in steps if s[1] == GO), 4),
    ]
    seen = set()
    for (offset, _code, planned), into in points:
        cut = Fault("cut", after_bytes=offset + into)
        with Simulator(geometry(), transport="tcp", faults=[cut]) as sim:
            with pytest.raises(FlashError) as info:
                flash(sim, firmware)
            # Up to the cut the device saw what it saw in the clean run, so the cut lies
            # in the planned command. Only a retry forced by a stalled machine could
            # change that; then any step is right as long as the error names it.
            err = info.value
            same_path = sim.device.log == clean[:len(sim.device.log)]
            cut_in = planned if same_path else err.step
            assert err.step == cut_in and str(err).startswith(cut_in), f"{err} (planned: {planned})"
            assert "serial link lost" in str(err) and err.exit_code == 7
            assert cut.fired == 1
            assert sim.device.go_address is None, f"started a half-flashed image after a cut in {cut_in}"
            result = flash(sim, firmware)
            assert sim.read(FLASH_START, 6000) == firmware.read_bytes(), f"cut in {cut_in} at +{into}"
            assert sim.device.go_address == FLASH_START
            assert result["verified"]
            seen.add(cut_in)
    assert seen >= {"connect", "identify", "protection check", "erase", "write", "verify", "go"}


def test_link_cut_on_a_pty_then_a_second_flash_succeeds(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, 6000)
    writes = [s for s in _steps(_clean_run(firmware)) if s[1] == WRITE_MEMORY]
    with Simulator(geometry(), faults=[Fault("cut", after_bytes=writes[10][0] + 50)]) as sim:
        expect_flash_error(sim, firmware, "write")
        flash(sim, firmware)  # sim.port names the new pty (Linux may reuse the number)
        assert sim.read(FLASH_START, 6000) == firmware.read_bytes()
        assert sim.device.go_address == FLASH_START


def test_no_bootloader_on_the_port(tmp_path: Path) -> None:
    master, slave = os.openpty()  # a port where nothing answers
    tty.setraw(slave)
    try:
        with pytest.raises(FlashError, match=r"^connect: no answer to 0x7F") as info:
            flash_command(board(), os.ttyname(slave), 115200, write_bin(tmp_path, 100),
                          timeouts=FAST, progress=False, json_out=True)
        assert info.value.exit_code == 7
    finally:
        os.close(master)
        os.close(slave)


def test_a_port_that_talks_but_is_no_bootloader_ends_in_bounded_time(tmp_path: Path) -> None:
    """An application printing on the port (BOOT0 forgotten): every byte it prints is an
    answer to 0x7F that is neither ACK nor NACK. Re-synchronisation must still end, within
    Timeouts.sync, and say what it heard."""
    master, slave = os.openpty()
    tty.setraw(slave)
    stop = threading.Event()

    def chatter() -> None:
        while not stop.wait(0.05):
            try:
                os.write(master, b"prediction 3\r\n")
            except OSError:
                return

    talker = threading.Thread(target=chatter, daemon=True)
    talker.start()
    began = time.monotonic()
    try:
        with pytest.raises(FlashError, match=r"^connect: the port talks but does not answer 0x7F") as info:
            flash_command(board(), os.ttyname(slave), 115200, write_bin(tmp_path, 100),
                          timeouts=dataclasses.replace(FAST, sync=1.0), progress=False)
        assert "prediction 3" in str(info.value) and "BOOT0" in str(info.value)
        assert time.monotonic() - began < 5.0
    finally:
        stop.set()
        talker.join(5)
        os.close(master)
        os.close(slave)


def test_missing_port_is_a_flash_error(tmp_path: Path) -> None:
    with pytest.raises(FlashError, match=r"^open: cannot open serial port /dev/cuvil-no-such-port"):
        flash_command(board(), "/dev/cuvil-no-such-port", 115200, write_bin(tmp_path, 100), progress=False)


# -- refusals ---------------------------------------------------------------------------

@pytest.mark.parametrize("erase_command", [EXTENDED_ERASE, ERASE])
def test_mass_erase_needs_the_flag(erase_command: int) -> None:
    with Simulator(geometry(), erase_command=erase_command) as sim:
        sim.program(0x08100000, b"\x00" * 16)
        link = open_port(sim.port, 115200)
        client = An3155Client(link, timeouts=FAST)
        client.connect()
        client.identify()
        with pytest.raises(UsageError, match="refusing to mass erase without --allow-mass-erase"):
            client.mass_erase()
        assert sim.device.erased == [] and sim.read(0x08100000, 1) == b"\x00"
        allowed = An3155Client(link, timeouts=FAST, allow_mass_erase=True)
        allowed.identify()  # picks the erase command the bootloader offers
        allowed.mass_erase()
        assert sim.device.erased == list(range(12)) and sim.read(0x08100000, 1) == b"\xff"
        link.close()


@pytest.mark.parametrize("operation", ["readout_protect", "write_unprotect", "write_protect", "readout_unprotect"])
def test_protection_changes_need_a_flag(operation: str) -> None:
    with Simulator(geometry()) as sim:
        link = open_port(sim.port, 115200)
        client = An3155Client(link, timeouts=FAST)
        client.connect()
        call = getattr(client, operation)
        with pytest.raises(UsageError, match="refusing to"):
            call([0]) if operation == "write_protect" else call()
        assert not sim.device.read_protected and not sim.device.write_protected
        link.close()


def test_readout_protect_with_the_flag() -> None:
    with Simulator(geometry()) as sim:
        link = open_port(sim.port, 115200)
        client = An3155Client(link, timeouts=FAST, allow_option_bytes=True)
        client.connect()
        client.readout_protect()
        link.close()
        assert sim.device.read_protected


def test_read_protected_chip_is_unprotected_only_with_the_flag(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, 3000)
    with Simulator(geometry(), read_protected=True) as sim:
        sim.program(0x08100000, b"old firmware")
        err = expect_flash_error(sim, firmware, "protection check")
        assert "--allow-mass-erase" in str(err)
        assert sim.read(0x08100000, 12) == b"old firmware" and sim.device.read_protected
        result = flash(sim, firmware, allow_mass_erase=True)
        assert not sim.device.read_protected
        assert sim.read(0x08100000, 12) == b"\xff" * 12  # unprotecting wiped it
        assert sim.read(FLASH_START, 3000) == firmware.read_bytes()
    assert result["unprotected"] is True


# -- usage errors and images ------------------------------------------------------------

def test_usage_errors(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, 100)
    port = "/dev/unused"  # never opened: every check below comes first
    with pytest.raises(UsageError, match="--baud 300"):
        flash_command(board(), port, 300, firmware)
    with pytest.raises(UsageError, match="must be a .bin or an Intel .hex file .flash the .bin"):
        flash_command(board(), port, 115200, tmp_path / "app.elf")
    with pytest.raises(UsageError, match="cannot read firmware"):
        flash_command(board(), port, 115200, tmp_path / "missing.bin")
    with pytest.raises(UsageError, match="outside the writable flash"):
        flash_command(board(), port, 115200, write_bin(tmp_path, 2 * 1024 * 1024 + 1, name="big.bin"))
    with pytest.raises(UsageError, match=r"board 'host' cannot be flashed"):
        flash_command("host", port, 115200, firmware)
    bad_hex = tmp_path / "bad.hex"
    bad_hex.write_text(":020000040800F2\n:0400000001020304F1\n:00000001FF\n")
    with pytest.raises(UsageError, match=r"bad.hex:2: checksum error"):
        flash_command(board(), port, 115200, bad_hex)


def test_blocks_are_word_aligned_and_never_cross_256_bytes() -> None:
    # The first segment ends at 0x0800012F, inside the word the second one starts in.
    image = Image(Path("x.hex"), "hex", (Segment(0x08000003, bytes(300)), Segment(0x0800012F, b"\x01"),
                                          Segment(0x080000FE + 0x1000, bytes(5))))
    blocks = image.blocks()
    for address, data in blocks:
        assert address % 4 == 0 and len(data) % 4 == 0 and 0 < len(data) <= 256
        assert address // 256 == (address + len(data) - 1) // 256
    assert blocks[0] == (0x08000000, b"\xff\xff\xff" + bytes(253))
    flat = {a + i: b for a, d in blocks for i, b in enumerate(d)}
    assert flat[0x0800012E] == 0x00 and flat[0x0800012F] == 0x01  # one word, both segments
    assert flat[0x08000002] == 0xFF and 0x08000130 not in flat  # padding only to whole words


def _record(kind: int, offset: int, data: bytes) -> str:
    body = bytes([len(data)]) + offset.to_bytes(2, "big") + bytes([kind]) + data
    return ":" + (body + bytes([-sum(body) & 0xFF])).hex().upper() + "\n"


def test_intel_hex_parser() -> None:
    text = (_record(0x04, 0, b"\x08\x00")              # upper address 0x0800
            + _record(0x00, 0x0000, b"\x01\x02\x03\x04")
            + _record(0x00, 0x0004, b"\x05\x06")       # adjacent: merged into one segment
            + _record(0x04, 0, b"\x08\x01")
            + _record(0x00, 0x0000, b"\xaa")
            + _record(0x05, 0, bytes.fromhex("08000199")) # entry point: not used by GO
            + _record(0x01, 0, b""))
    segments = parse_intel_hex(text.encode(), Path("t.hex"))
    assert segments == [Segment(0x08000000, bytes([1, 2, 3, 4, 5, 6])), Segment(0x08010000, b"\xaa")]
    with pytest.raises(UsageError, match=r"t.hex: no end-of-file record"):
        parse_intel_hex(text.rsplit(":", 1)[0].encode(), Path("t.hex"))
    with pytest.raises(UsageError, match=r"t.hex:3: records overlap at 0x08000000"):
        parse_intel_hex((_record(0x04, 0, b"\x08\x00") + _record(0x00, 0, b"\x01") * 2
                         + _record(0x01, 0, b"")).encode(), Path("t.hex"))


def test_bin_goes_to_the_application_start(tmp_path: Path) -> None:
    image = load_image(write_bin(tmp_path, 10), geometry())
    assert image.start == FLASH_START and image.end == FLASH_START + 10
    assert [s.index for s in image.plan(geometry())] == [0]


def test_board_geometry() -> None:
    g = geometry()
    assert (g.start, g.end, g.size, g.device_id) == (0x08000000, 0x08200000, 2 * 1024 * 1024, 0x451)
    assert [s.size // 1024 for s in g.sectors] == [32] * 4 + [128] + [256] * 7
    assert board().flash_bytes == g.size and board().ram_bytes == 512 * 1024


def test_simulator_stops_cleanly() -> None:
    sim = Simulator(geometry(), transport="tcp").start()
    link = open_port(sim.port, 115200)
    link.write(b"\x7f")  # leave the device mid-session with a client attached
    sim.stop()
    assert not sim.running
    link.close()
