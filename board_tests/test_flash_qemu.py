"""Serial flashing end to end on an emulated board: `cuvil-sdk flash` against the cuvil
bootloader (targets/cortex_m7/bootloader/) running in qemu-system-arm -M mps2-an500, its
UART0 on a TCP socket of 127.0.0.1.

The application is the bundled digits model built by the real CLI for board
cortex-m7-app (linked at the bootloader's app_start, integrity header stamped in); once
started by GO its demo harness prints the int8 output and the prediction for a built-in
digits test image on UART0, which must equal the numpy integer reference of the same
compilation. A TCP proxy cuts the link at points of every step of a flash: the CLI must
exit 7 naming the step, the bootloader must not have started anything (it still answers
0x7F, and refuses GO to a half-written image), and the next flash must get further; the
last one succeeds and runs.

Every QEMU is started in a session of its own and killed at the end of its test. A
missing tool (arm-none-eabi-gcc, qemu-system-arm) fails these tests, never skips them.
"""
from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from cuvil_sdk.boards import get_board  # noqa: E402
from cuvil_sdk.errors import FlashError  # noqa: E402
from cuvil_sdk.flash.an3155 import An3155Client, Timeouts, open_port  # noqa: E402
from cuvil_sdk.flash.bootloader import QemuBootloader, build_bootloader, header_module  # noqa: E402
from cuvil_sdk.flash.command import flash_command  # noqa: E402
from cuvil_sdk.flash.image import FlashGeometry, load_image  # noqa: E402
from cuvil_sdk.reference import run_quantized_model  # noqa: E402
from flash_helpers.fault_proxy import FaultProxy, Faults  # noqa: E402
from flash_helpers.tcp_proxy import CutProxy  # noqa: E402
from models import EXAMPLES, reference_graph, request  # noqa: E402

pytestmark = pytest.mark.slow
BOARD = "cortex-m7-app"
APP_START = 0x00010000
RESULT = re.compile(rb"output ((?:-?\d+ ?)+)\r\nprediction (\d+)\r\n")
# For the test's own client: the emulated board answers at once; `init` is short on
# purpose (resuming a session waits it out once or twice).
QUICK = Timeouts(init=0.15, byte=2.0, write=2.0, erase_per_sector=2.0, mass_erase=4.0, quiet=0.02)


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def flash_cli(url: str, image: Path) -> subprocess.CompletedProcess:
    return cli("flash", "--board", BOARD, "--port", url, "--json", image, timeout=60)


@pytest.fixture(scope="module")
def bootloader(tmp_path_factory) -> Path:
    return build_bootloader(tmp_path_factory.mktemp("bootloader"))


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Path:
    """The digits model built by the CLI for cortex-m7-app: the .bin carries the header."""
    out = tmp_path_factory.mktemp("app") / "digits"
    r = cli("build", "--board", BOARD, "--profile", "lite", "-o", out, "-j", "2", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["board"] == BOARD and report.get("fits", True)
    image = Path(report["artifacts"]["bin"])
    assert header_module(get_board(BOARD)).problem(image.read_bytes()) is None
    return image


@pytest.fixture(scope="module")
def expected() -> tuple[list[int], int]:
    """The numpy integer reference on the demo harness's built-in sample."""
    data = np.load(EXAMPLES / "digits_data.npz")
    x = data["x"][demo_sample_index()][None]
    g = reference_graph(request("digits_cnn.onnx", BOARD, "lite", EXAMPLES / "digits_calib.npy"))
    out = run_quantized_model(g, {g.inputs[0]: x})[0][g.outputs[0]].reshape(-1)  # int8, as printed
    return [int(v) for v in out], int(np.argmax(out))


def demo_sample_index() -> int:
    text = (ROOT / "targets" / "cortex_m7" / "bootloader" / "demo_sample.c").read_text()
    return int(re.search(r"cuvil_demo_sample_index = (\d+)u;", text).group(1))


def console_result(qemu: QemuBootloader) -> tuple[list[int], int]:
    """What the started application prints: its output vector and its prediction."""
    text = qemu.read_console(RESULT, timeout_s=15)
    m = RESULT.search(text)
    assert m, f"no result on UART0 (QEMU running: {qemu.running}): {text[-300:]!r}"
    return [int(v) for v in m.group(1).split()], int(m.group(2))


def client(url: str, timeouts: Timeouts = QUICK):
    link = open_port(url, 115200)
    return link, An3155Client(link, timeouts=timeouts, retries=0)


def test_demo_sample_is_a_bundled_test_image():
    data = np.load(EXAMPLES / "digits_data.npz")
    index = demo_sample_index()
    text = (ROOT / "targets" / "cortex_m7" / "bootloader" / "demo_sample.c").read_text()
    body = text[text.index("cuvil_demo_sample[64] = {"):]
    values = np.array([float(v) for v in re.findall(r"(-?\d+\.\d+)f", body)], dtype=np.float32)
    assert np.array_equal(values, data["x"][index].reshape(-1))
    assert f"cuvil_demo_sample_label = {int(data['y'][index])};" in text


def test_bootloader_fits_below_app_start(bootloader):
    """Its link region is [0, app_start): linking at all proves the fit; the ELF says where it went."""
    link_map = (bootloader.parent / "bootloader.map").read_text()
    assert re.search(r"^FLASH\s+0x0+\s+0x0*10000\s", link_map, re.M), "FLASH region is not [0, 0x10000)"
    entry = int(re.search(r"Entry point address:\s+0x([0-9a-f]+)",
                          subprocess.run(["arm-none-eabi-readelf", "-h", str(bootloader)], capture_output=True,
                                         text=True, check=True).stdout).group(1), 16)
    assert 0 < entry < APP_START


def test_flash_verify_go_prints_the_reference_prediction(bootloader, app, expected):
    with QemuBootloader(bootloader) as qemu:
        r = flash_cli(qemu.url, app)
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        assert report["verified"] is True and report["go_address"] == f"0x{APP_START:08X}"
        sectors = -(-app.stat().st_size // 0x4000)  # 16 KiB sectors from app_start (sector 4) on
        assert report["device_id"] == "0x500" and report["erased_sectors"] == list(range(4, 4 + sectors))
        assert report["bytes"] == app.stat().st_size and report["retries"] == 0
        outputs, prediction = console_result(qemu)
        assert (outputs, prediction) == expected
        assert prediction == 3  # the built-in sample is a "3", and the model gets it right
        assert qemu.running

        # Now the application owns UART0: flashing again ends in a clear error, in bounded time.
        with pytest.raises(FlashError, match=r"^connect: the port talks but does not answer 0x7F") as info:
            flash_command(get_board(BOARD), qemu.url, None, app, progress=False,
                          timeouts=dataclasses.replace(QUICK, sync=2.0))
        assert "running its application" in str(info.value)


def test_bootloader_refuses_what_it_must(bootloader, app):
    """Read-only bootloader sectors, no GO without a valid image, GO after a clean write."""
    image = app.read_bytes()
    with QemuBootloader(bootloader) as qemu:  # returns once the bootloader said it listens
        # A fresh bootloader: its first ACK may take longer than QUICK's init on a loaded machine,
        # and a second 0x7F sent meanwhile would read as a session to resume.
        link, c = client(qemu.url, dataclasses.replace(QUICK, init=5.0))
        try:
            assert c.connect() is False
            info = c.identify()
            assert info.device_id == 0x500 and info.version_text == "1.0"
            assert c.read_memory(0, 8)[:4] != b"\x00" * 4  # the bootloader's own vectors read back
            with pytest.raises(FlashError, match=r"^go at 0x00010000: NACK"):
                c.go(APP_START)  # nothing there yet
            with pytest.raises(FlashError, match=r"^erase at 0x0000C000: NACK"):
                c.erase(3, 0xC000)  # the bootloader's last sector
            with pytest.raises(FlashError, match=r"^write at 0x0000FF00: NACK"):
                c.write_memory(0xFF00, b"\x00" * 16)
            with pytest.raises(FlashError, match=r"^write at 0x00010000: NACK"):
                c.write_memory(APP_START, b"\x5a" * 16)  # not erased: QEMU's RAM starts as 0, "programmed"
            geometry = FlashGeometry.from_board(get_board(BOARD))
            loaded = load_image(app, geometry)
            erase_image = lambda: [c.erase(s.index, s.address) for s in loaded.plan(geometry)]  # noqa: E731
            erase_image()
            assert c.read_memory(APP_START, 256) == b"\xff" * 256
            blocks = loaded.blocks()
            for address, data in blocks:
                c.write_memory(address, data)
            # One bit of the image cleared (programming can clear bits): the CRC no longer matches.
            last, data = blocks[-1]
            word = next(i for i in range(0, len(data), 4) if data[i] != 0)
            c.write_memory(last + word, bytes([data[word] & (data[word] - 1)]) + data[word + 1:word + 4])
            with pytest.raises(FlashError, match=r"^go at 0x00010000: NACK"):
                c.go(APP_START)
            erase_image()
            for address, data in blocks:
                c.write_memory(address, data)
            assert b"".join(c.read_memory(a, len(d)) for a, d in blocks)[:len(image)] == image
            with pytest.raises(FlashError, match=r"^go at 0x00010100: NACK"):
                c.go(APP_START + 0x100)  # not an image's start
            c.go(APP_START)
        finally:
            link.close()
        outputs, prediction = console_result(qemu)
        assert prediction == 3


def test_flash_refuses_an_image_without_header(app, tmp_path):
    """A .bin without the integrity header is refused before the port is opened."""
    bare = bytearray(app.read_bytes())
    bare[28:40] = bytes(12)
    (tmp_path / "bare.bin").write_bytes(bytes(bare))
    r = flash_cli("socket://127.0.0.1:9", tmp_path / "bare.bin")  # nothing listens there: never opened
    assert r.returncode == 2, r.stderr
    assert "no integrity header" in r.stderr and "would refuse to start it" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def step_starts(image: Path, resumed: bool) -> tuple[dict[str, int], list[int]]:
    """Host-to-device byte offset at which each step of a flash starts, and the size of each
    WRITE MEMORY exchange (command pair, address, count, data, checksum). Connecting takes
    one 0x7F, or two when the bootloader is already in a session (the first is taken as a
    command byte, the second completes a bad pair: NACK)."""
    geometry = FlashGeometry.from_board(get_board(BOARD))
    loaded = load_image(image, geometry)
    blocks, sectors = loaded.blocks(), loaded.plan(geometry)
    writes = [2 + 5 + 1 + len(data) + 1 for _, data in blocks]
    at = {"connect": 0, "identify": 2 if resumed else 1}
    at["protection check"] = at["identify"] + 4      # after the GET and GET ID pairs: a 4-byte READ MEMORY
    at["erase"] = at["protection check"] + 9         # EXTENDED ERASE of one page each
    at["write"] = at["erase"] + 7 * len(sectors)
    at["verify"] = at["write"] + sum(writes)         # READ MEMORY of each block
    at["go"] = at["verify"] + 9 * len(blocks)
    return at, writes


# (step, where in it), in the order of a flash. Only the first attempt finds a fresh
# bootloader; after it the test's own client always leaves one in a session.
CUTS = [("connect", "before the first byte"), ("erase", "right after the command"),
        ("write", "halfway through the image"), ("write", "after the last block's address"),
        ("verify", "inside the third read"), ("go", "inside the address")]


def cut_offset(at: dict[str, int], writes: list[int], step: str, where: str) -> int:
    """Host-to-device bytes after which the link is cut."""
    if where == "before the first byte":
        return 0
    if where == "right after the command":
        return at[step] + 2  # the bootloader then waits for the page count
    if where == "halfway through the image":
        return at["write"] + sum(writes[:len(writes) // 2]) + 130
    if where == "after the last block's address":
        return at["write"] + sum(writes[:-1]) + 7
    if where == "inside the third read":
        return at["verify"] + 2 * 9 + 4
    return at[step] + 3  # inside the step's first command


def test_cut_link_at_each_step_then_a_flash_succeeds_and_runs(bootloader, app, expected):
    """One emulated board, the link cut at every point of CUTS in turn (each attempt starts
    over from what the last one left, as a user retrying would), then a clean flash."""
    fresh, resumed = step_starts(app, resumed=False), step_starts(app, resumed=True)
    offsets = [cut_offset(*(fresh if i == 0 else resumed), step, where) for i, (step, where) in enumerate(CUTS)]
    assert offsets == sorted(offsets)  # each attempt gets past the point where the last one died
    with QemuBootloader(bootloader) as qemu:
        for (step, where), k in zip(CUTS, offsets):
            with CutProxy(qemu.port, cut_after=k) as proxy:
                r = flash_cli(proxy.url, app)
            what = f"cut {where} ({step}, after {k} bytes)"
            assert proxy.cut.is_set() and proxy.forwarded == k, what
            assert r.returncode == 7, f"{what}: {r.stderr}"
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"cuvil-sdk: error: {step}"), f"{what}: {r.stderr}"
            assert "serial link lost" in lines[0], f"{what}: {lines[0]}"
            if step not in ("connect", "identify"):
                assert re.search(r" at 0x[0-9A-F]{8}: ", lines[0]), f"{what}: {lines[0]}"
            assert qemu.running, what

            # The bootloader did not jump: it still answers 0x7F and GET ID, and while the
            # image is not whole it refuses to start it.
            link, c = client(qemu.url)
            try:
                c.connect()
                assert c.identify().device_id == 0x500, what
                if step in ("connect", "identify", "protection check", "erase", "write"):
                    with pytest.raises(FlashError, match=r"^go at 0x00010000: NACK"):
                        c.go(APP_START)
            finally:
                link.close()

        r = flash_cli(qemu.url, app)
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        assert report["verified"] is True and report["resumed_session"] is True  # our client left a session open
        assert console_result(qemu) == expected


class CountingLink:
    """A serial link that counts the bytes the host reads (all the bootloader sent it)."""

    def __init__(self, link) -> None:
        self.link, self.received = link, 0

    def read(self, size: int = 1) -> bytes:
        data = self.link.read(size)
        self.received += len(data)
        return data

    def __getattr__(self, name: str):
        return getattr(self.link, name)


def test_lost_ack_after_go_is_a_verified_image_whose_start_is_unconfirmed(bootloader, app, expected, monkeypatch):
    """Issue 38, defect 8, on the real bootloader and application: the ACK after GO's address
    is corrupted on its way to the host. The image was verified and the bootloader jumped,
    so the flash succeeds with go_confirmed false and one warning line, and the application
    prints the reference result."""
    import cuvil_sdk.flash.command as command
    counted = []
    monkeypatch.setattr(command, "open_port", lambda port, baud: counted.append(CountingLink(open_port(port, baud)))
                        or counted[-1])
    with QemuBootloader(bootloader) as qemu:
        report = flash_command(get_board(BOARD), qemu.url, None, app, progress=False)
        assert report["go_confirmed"] is True
    go_ack = counted[-1].received - 1  # GO's ACK is the last byte a clean flash reads
    monkeypatch.undo()
    with QemuBootloader(bootloader) as qemu:
        with FaultProxy(qemu.port, {0: Faults(flip_to_host={go_ack})}) as proxy:
            r = flash_cli(proxy.url, app)
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        assert report["verified"] is True and report["go_confirmed"] is False
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 2 and lines[0].startswith("cuvil-sdk: warning: go at 0x00010000: "), r.stderr
        assert report["warnings"] == [lines[0].removeprefix("cuvil-sdk: warning: ")]
        assert console_result(qemu) == expected
