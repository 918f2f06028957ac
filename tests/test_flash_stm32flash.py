"""The simulated bootloader is faithful: Debian's stm32flash, an independent AN3155
client, writes, verifies, reads back and starts an image through it over a pty, and
agrees byte for byte with what cuvil-sdk's own client writes and reads."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cuvil_sdk.flash.an3155 import An3155Client, open_port
from cuvil_sdk.flash.simulator import Simulator
from flash_helpers import FAST, FLASH_START, flash, geometry, image_bytes, write_bin, write_hex

SIZE = 70_001  # sectors 0-2 of 32 KiB, and a tail that is not a whole word


def stm32flash(*args: str) -> subprocess.CompletedProcess[str]:
    """Run stm32flash 8N1 (a pty has no parity) at 115200; fail the test if it is missing."""
    tool = shutil.which("stm32flash")
    if tool is None:
        pytest.fail("stm32flash is not installed; these tests need it: apt-get install stm32flash")
    run = subprocess.run([tool, "-m", "8n1", "-b", "115200", *args], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"stm32flash {' '.join(args)} failed:\n{run.stdout}\n{run.stderr}"
    return run


def test_stm32flash_writes_verifies_reads_back_and_starts(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, SIZE)
    with Simulator(geometry()) as sim:
        sim.program(0x08020000, b"keep me")  # sector 4: beyond the image, must survive
        wrote = stm32flash("-w", str(firmware), "-v", "-S", f"0x{FLASH_START:08X}", sim.port)
        assert "0x0451" in wrote.stdout  # it recognised the simulated STM32F76x
        assert sim.read(FLASH_START, SIZE) == firmware.read_bytes()
        assert sim.device.erased == [0, 1, 2]  # its page table for 0x451 agrees with the board's
        assert sim.read(0x08020000, 7) == b"keep me"

        # A second session finds the bootloader still in the first one: the recovery
        # stm32flash does then (0x7F, 0x7F -> NACK) must work against the simulator.
        readback = tmp_path / "readback.bin"
        stm32flash("-r", str(readback), "-S", f"0x{FLASH_START:08X}:{SIZE}", sim.port)
        assert readback.read_bytes() == firmware.read_bytes()

        stm32flash("-g", f"0x{FLASH_START:08X}", sim.port)
        sim.device.started.wait(5)
        assert sim.device.go_address == FLASH_START


def test_stm32flash_reads_what_cuvil_flash_wrote(tmp_path: Path) -> None:
    a, b = image_bytes(3000, 11), image_bytes(513, 12)
    firmware = write_hex(tmp_path / "app.hex", [(0x08000000, a), (0x08008000 + 6, b)])
    with Simulator(geometry()) as sim:
        flash(sim, firmware)
        sim.reset()  # GO left it running the application; back into the bootloader
        readback = tmp_path / "readback.bin"
        stm32flash("-r", str(readback), "-S", f"0x08000000:{0x8000 + 6 + len(b)}", sim.port)
        data = readback.read_bytes()
        assert data[:3000] == a and data[0x8006:] == b
        assert data[3000:0x8006] == b"\xff" * (0x8006 - 3000)


def test_cuvil_client_reads_what_stm32flash_wrote(tmp_path: Path) -> None:
    firmware = write_bin(tmp_path, 4000, seed=5)
    with Simulator(geometry()) as sim:
        stm32flash("-w", str(firmware), "-S", f"0x{FLASH_START:08X}", sim.port)
        link = open_port(sim.port, 115200)
        client = An3155Client(link, timeouts=FAST)
        assert client.connect() is True  # stm32flash left the session open
        assert client.identify().device_id == 0x451
        got = b"".join(client.read_memory(FLASH_START + i, min(256, 4000 - i)) for i in range(0, 4000, 256))
        link.close()
        assert got == firmware.read_bytes()
