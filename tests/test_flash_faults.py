"""Faults during a flash (issue 38, defects 2, 3 and 8): a lost ACK after WRITE MEMORY's
address, a lost ACK or a cut right after EXTENDED ERASE, a lost ACK after GO, a spurious
NACK to the protection check, and a flasher killed mid-write. Each is injected on the
simulated bootloader; none may end in a wrong success, and each is recovered or named.
Every test here is seeded (fixed images, fixed fault points) and takes a few seconds."""
from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cuvil_sdk.cli import main as cli_main
from cuvil_sdk.errors import FlashError
from cuvil_sdk.flash.an3155 import EXTENDED_ERASE, GO, READ_MEMORY, WRITE_MEMORY
from cuvil_sdk.flash.image import load_image
from cuvil_sdk.flash.simulator import Fault, Simulator
from flash_helpers import BOARD_NAME, FAST, FLASH_START, flash, geometry, write_bin

SIZE = 6000  # 24 blocks in sectors 0


def image_blocks(firmware: Path) -> list[tuple[int, bytes]]:
    return load_image(firmware, geometry()).blocks()


def erase_command_offset(firmware: Path) -> int:
    """Host-to-device bytes before the EXTENDED ERASE of a clean flash."""
    with Simulator(geometry(), transport="tcp") as sim:
        flash(sim, firmware)
        return next(offset for offset, code in sim.device.log if code == EXTENDED_ERASE)


# -- defect 2: a lost ACK after WRITE MEMORY's address -----------------------------------

@pytest.mark.parametrize("transport", ["pty", "tcp"])
def test_lost_ack_after_the_write_address_writes_nothing_and_the_block_is_retried(
        tmp_path: Path, transport: str) -> None:
    """The bootloader ACKed the address and waits for the block; the ACK is lost. The
    recovery must complete that pending WRITE MEMORY so that it fails its checksum (the
    old 0x7F filler made a valid 128-byte write of 0x7F), then write the block again."""
    firmware = write_bin(tmp_path, SIZE)
    lost = Fault("drop", command=WRITE_MEMORY, nth=3, stage=1, direction="tx")
    with Simulator(geometry(), transport=transport, faults=[lost]) as sim:
        result = flash(sim, firmware, timeouts=FAST)
        assert lost.fired == 1
        assert sim.device.stores == image_blocks(firmware)  # each block once, nothing else stored
        assert sim.read(FLASH_START, SIZE) == firmware.read_bytes()
        assert sim.device.go_address == FLASH_START
    assert result["verified"] and result["retries"] >= 1


# -- defect 3: a lost ACK or a cut right after EXTENDED ERASE ----------------------------

def test_lost_ack_after_the_erase_command_is_completed_in_the_same_flash(tmp_path: Path) -> None:
    """The bootloader ACKed EXTENDED ERASE and waits for its page count; the ACK is lost.
    Re-synchronising makes that count 0x7F01 pages: the recovery must send all ~65,000
    bytes the bootloader then waits for, so that the command fails its checksum (no page
    is erased by it), and go on."""
    firmware = write_bin(tmp_path, SIZE)
    lost = Fault("drop", command=EXTENDED_ERASE, nth=1, stage=0, direction="tx")
    began = time.monotonic()
    with Simulator(geometry(), transport="tcp", faults=[lost]) as sim:
        result = flash(sim, firmware, timeouts=FAST)
        assert lost.fired == 1
        assert sim.device.erased == [0]  # only the image's sector, once: the completed command NACKed
        assert sim.read(FLASH_START, SIZE) == firmware.read_bytes()
        assert sim.device.go_address == FLASH_START
    assert result["verified"] and result["retries"] >= 1
    assert time.monotonic() - began < 15


@pytest.mark.parametrize("transport", ["pty", "tcp"])
def test_cut_right_after_the_erase_command_then_the_next_flash_succeeds(tmp_path: Path, transport: str) -> None:
    """The link is cut once EXTENDED ERASE's command pair is in: the bootloader waits for a
    page count. The flash that was cut fails naming the step; the next one, without a
    board reset, must complete the pending command and flash."""
    firmware = write_bin(tmp_path, SIZE)
    cut = Fault("cut", after_bytes=erase_command_offset(firmware) + 2)
    with Simulator(geometry(), transport=transport, faults=[cut]) as sim:
        with pytest.raises(FlashError, match=r"^erase at 0x08000000: serial link lost"):
            flash(sim, firmware, timeouts=FAST)
        assert cut.fired == 1 and sim.device.go_address is None
        result = flash(sim, firmware, timeouts=FAST)
        assert sim.device.erased == [0]
        assert sim.read(FLASH_START, SIZE) == firmware.read_bytes()
        assert sim.device.go_address == FLASH_START
    assert result["verified"] and result["resumed_session"] is True


def test_a_pending_erase_that_cannot_be_completed_in_time_says_reset_the_board(tmp_path: Path) -> None:
    """Where completing the pending command does not fit in Timeouts.sync (a slow link),
    the error is one line telling the user to reset the board into its bootloader; after
    that reset the next flash succeeds."""
    firmware = write_bin(tmp_path, SIZE)
    cut = Fault("cut", after_bytes=erase_command_offset(firmware) + 2)
    with Simulator(geometry(), transport="tcp", faults=[cut]) as sim:
        with pytest.raises(FlashError):
            flash(sim, firmware, timeouts=FAST)
        with pytest.raises(FlashError) as info:
            flash(sim, firmware, timeouts=dataclasses.replace(FAST, sync=0.5))
        err = str(info.value)
        assert err.startswith("connect: ") and "\n" not in err, err
        assert "reset the board into its bootloader" in err, err
        assert sim.device.erased == [] and sim.device.go_address is None
        sim.reset()
        result = flash(sim, firmware, timeouts=FAST)
        assert sim.read(FLASH_START, SIZE) == firmware.read_bytes()
        assert sim.device.go_address == FLASH_START
    assert result["verified"]


# -- defect 8: a lost ACK after GO ------------------------------------------------------

def test_lost_ack_after_go_reports_verified_but_start_unconfirmed(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The bootloader jumped, the ACK that says so is lost: the image is written and
    verified and most likely running. `flash` must not fail (exit 7) nor claim a confirmed
    start: it succeeds with a warning line and `go_confirmed: false`, and sends nothing more
    to the port (the application owns it now)."""
    firmware = write_bin(tmp_path, SIZE)
    lost = Fault("drop", command=GO, nth=1, stage=1, direction="tx")
    with Simulator(geometry(), transport="tcp", faults=[lost]) as sim:
        result = flash(sim, firmware, timeouts=FAST)
        assert lost.fired == 1 and sim.device.go_address == FLASH_START
        after_go = sim.device.rx_count - max(offset for offset, code in sim.device.log if code == GO)
        assert after_go <= 7 + 2  # GO, its address, and at most two probe bytes
    assert result["verified"] is True and result["go_confirmed"] is False
    warning = capsys.readouterr().err.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith("cuvil-sdk: warning: go at 0x08000000: "), warning
    assert "verified" in warning[0] and "not confirmed" in warning[0]
    assert result["warnings"] == [warning[0].removeprefix("cuvil-sdk: warning: ")]


def test_lost_ack_after_go_through_the_cli_exits_0_with_one_warning(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    firmware = write_bin(tmp_path, 3000)
    with Simulator(geometry(), faults=[Fault("drop", command=GO, stage=1, direction="tx")]) as sim:
        code = cli_main(["flash", "--board", BOARD_NAME, "--port", sim.port, "--baud", "115200", str(firmware)])
        assert sim.device.go_address == FLASH_START
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cuvil-sdk: warning: go at 0x08000000:"), err
    assert out.strip().endswith("(written and verified; start not confirmed)"), out


def test_go_abandoned_by_the_bootloader_is_retried_and_confirmed(tmp_path: Path) -> None:
    """No ACK after GO's address, but the bootloader still answers: it did not jump, so GO
    is sent again (not reported as an unconfirmed start)."""
    firmware = write_bin(tmp_path, 3000)
    silence = Fault("silence", command=GO, stage=1)
    with Simulator(geometry(), transport="tcp", faults=[silence]) as sim:
        result = flash(sim, firmware, timeouts=FAST)
        assert silence.fired == 1 and sim.device.go_address == FLASH_START
    assert result["go_confirmed"] is True and result["retries"] >= 1 and result["warnings"] == []


# -- a spurious NACK to the protection check ----------------------------------------------

def test_one_nack_to_the_protection_check_is_not_read_protection(tmp_path: Path) -> None:
    """A read-protected chip NACKs READ MEMORY every time; one NACK is a fault, retried,
    and must not make the flash refuse (or, with --allow-mass-erase, erase the chip)."""
    firmware = write_bin(tmp_path, 3000)
    nack = Fault("nack", command=READ_MEMORY, nth=1, stage=0)
    with Simulator(geometry(), transport="tcp", faults=[nack]) as sim:
        sim.program(0x08100000, b"keep")
        result = flash(sim, firmware, timeouts=FAST, allow_mass_erase=True)
        assert nack.fired == 1 and sim.read(0x08100000, 4) == b"keep"
        assert sim.read(FLASH_START, 3000) == firmware.read_bytes()
    assert result["unprotected"] is False


# -- a flasher killed in the middle of a write -------------------------------------------

def test_flasher_killed_mid_write_then_the_next_flash_succeeds(tmp_path: Path) -> None:
    """SIGKILL leaves the bootloader in the middle of a command, as a cut does; nothing
    half-written is started and the next flash recovers."""
    firmware = write_bin(tmp_path, 128 * 1024)
    with Simulator(geometry()) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "cuvil_sdk.cli", "flash", "--board", BOARD_NAME,
                                 "--port", sim.port, "--baud", "115200", str(firmware)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while sum(code == WRITE_MEMORY for _, code in sim.device.log) < 40 and time.monotonic() < deadline:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
        proc.stderr.close()
        assert sim.device.go_address is None
        result = flash(sim, firmware, timeouts=FAST)
        assert sim.read(FLASH_START, len(firmware.read_bytes())) == firmware.read_bytes()
        assert sim.device.go_address == FLASH_START
    assert result["verified"] and result["resumed_session"] is True
