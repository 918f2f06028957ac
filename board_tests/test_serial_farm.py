"""The serial test harness end to end under QEMU, and a labgrid farm of two QEMU boards.

Every board is the cuvil AN3155 bootloader in qemu-system-arm -M mps2-an500, its UART0 on a
TCP socket of 127.0.0.1 (flash/bootloader.py's QemuBootloader). `run --port` and
`validate --place` flash the digits model's serial-harness firmware through it, send the
samples over UART0 and must give what the semihosting harness gives on board cortex-m7: the
same outputs (bit for bit), the same metrics, and per-sample instruction counts equal within
one SysTick tick (40 instructions: the serial harness's code around the inference is not the
semihosting harness's, docs/internals.md).

A proxy between host and board (tests/flash_helpers/fault_proxy.py) corrupts and drops
frames: they are retried and the outputs stay right; a link that stays bad ends in exit-6
material (TargetError) naming the sample. The farm is labgrid's own coordinator and two
exporters on 127.0.0.1, one place per board; killing one board mid-run ends the command with
exit code 6 naming the place and the sample, and both places are released. Place a also has
a power switch (labgrid's `simplerest` NetworkPowerPort, served by the test): its board is
power-cycled (a fresh QEMU) before it is flashed.

Every process (QEMU, coordinator, exporters; the switch and proxies are threads) runs in a session of its own and is killed at
the end of its fixture, also on failure. A missing tool fails these tests, never skips them.
"""
from __future__ import annotations

import dataclasses
import json
import re
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from cuvil_sdk.boards import get_board, serial_harness_board  # noqa: E402
from cuvil_sdk.commands import do_build  # noqa: E402
from cuvil_sdk.errors import TargetError  # noqa: E402
from cuvil_sdk.flash.bootloader import QemuBootloader, build_bootloader, free_port  # noqa: E402
from cuvil_sdk.flash.an3155 import An3155Client, Timeouts, open_port  # noqa: E402
from cuvil_sdk.flash.command import flash_command  # noqa: E402
from cuvil_sdk.runners import serial_protocol as proto  # noqa: E402
from cuvil_sdk.runners.serial_harness import open_link, result_of, run_samples_on_link, sample_payloads  # noqa: E402
from farm_docs import PORTS, commands, recipe_blocks  # noqa: E402
from flash_helpers.fault_proxy import FaultProxy, Faults  # noqa: E402
from cuvil_sdk.reference import run_quantized_model  # noqa: E402
from cuvil_sdk.runners.protocol import decode_outputs  # noqa: E402
from cuvil_sdk.validate import human_table  # noqa: E402
from models import EXAMPLES, reference_graph, request  # noqa: E402

pytestmark = pytest.mark.slow
BOARD = "cortex-m7-app"
SAMPLES = 40
TICK = 40  # instructions per SysTick tick (board.toml, firmware.instructions_per_tick)
BIN = Path(sys.executable).parent
# Frame sizes of the digits model (1x1x8x8 float input, 10 int8 outputs) on the wire.
HELLO_BYTES = proto.HEADER.size + proto.CRC.size
INPUT_BYTES = proto.HEADER.size + 64 * 4 + proto.CRC.size
INFO_BYTES = proto.HEADER.size + 12 + 2 * 4 + proto.CRC.size
OUTPUT_BYTES = proto.HEADER.size + 8 + 10 + proto.CRC.size
NAK_BYTES = proto.HEADER.size + 4 + proto.CRC.size
CALIBRATION_BYTES = proto.HEADER.size + proto.CALIBRATION_COUNTS.size + proto.CRC.size
# What each side sends before the first sample: HELLO and CALIBRATE (both empty), INFO and CALIBRATION.
OPENING_TO_BOARD = 2 * HELLO_BYTES
OPENING_TO_HOST = INFO_BYTES + CALIBRATION_BYTES


def cli(*args, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def model_args(data_option: str, data: Path) -> list:
    return ["--profile", "lite", "--model", EXAMPLES / "digits_cnn.onnx", "--calib", EXAMPLES / "digits_calib.npy",
            data_option, data, "-j", "2", "--json"]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The first SAMPLES digits test images, as run's input and validate's data."""
    folder = tmp_path_factory.mktemp("serial")
    data = np.load(EXAMPLES / "digits_data.npz")
    np.save(folder / "x.npy", data["x"][:SAMPLES])
    np.savez(folder / "data.npz", x=data["x"][:SAMPLES], y=data["y"][:SAMPLES])
    return folder


@pytest.fixture(scope="module")
def semihosting_validate(work) -> dict:
    r = cli("validate", "--board", "cortex-m7", *model_args("--data", work / "data.npz"), cwd=work)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def bootloader(tmp_path_factory) -> Path:
    return build_bootloader(tmp_path_factory.mktemp("bootloader"))


@pytest.fixture(scope="module")
def board(bootloader):
    with QemuBootloader(bootloader) as qemu:
        yield qemu


def assert_counts_match(serial_counts: list[int], semihosting_counts: list[int]) -> None:
    assert len(serial_counts) == len(semihosting_counts)
    assert all(c > 100_000 for c in serial_counts)
    assert all(abs(a - b) <= TICK for a, b in zip(serial_counts, semihosting_counts)), \
        (serial_counts[:4], semihosting_counts[:4])


# --- one board over its serial port -------------------------------------------------------------
def test_run_over_serial_equals_semihosting(board, work, harness_build, reference, semihosting_validate):
    r = cli("run", "--board", BOARD, *model_args("--input", work / "x.npy"), "--output", work / "serial.npz",
            "--port", board.url, cwd=work)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    ours = dict(np.load(work / "serial.npz"))
    assert list(ours) == [t["name"] for t in harness_build["outputs"]]
    for name, value in ours.items():  # bit for bit the integer reference, as the semihosting harness
        assert np.array_equal(value.reshape(SAMPLES, -1), reference[name]), name
    assert_counts_match(report["instructions_per_sample"], semihosting_validate["instructions_per_sample"])
    assert report["resent_frames"] == 0
    # the harness reset the board at the end (RESET frame): its bootloader answers again
    link = open_port(board.url, 115200)
    try:
        client = An3155Client(link, timeouts=Timeouts(init=0.5, byte=2.0), retries=2)
        client.connect()
        assert client.identify().device_id == get_board(BOARD).get("flash.device_id")
    finally:
        link.close()


@pytest.fixture(scope="module")
def reference(harness_build) -> dict[str, np.ndarray]:
    """The numpy integer reference of the same compilation, dequantized as the harness's
    outputs are: (SAMPLES, size) per output."""
    x = np.load(EXAMPLES / "digits_data.npz")["x"][:SAMPLES]
    g = reference_graph(request("digits_cnn.onnx", BOARD, "lite", EXAMPLES / "digits_calib.npy"))
    raw = [np.stack([run_quantized_model(g, {g.inputs[0]: s[None]})[0][t["name"]].reshape(-1) for s in x])
           for t in harness_build["outputs"]]
    return {name: np.stack([o[name] for o in decode_outputs(harness_build, raw, SAMPLES)]).reshape(SAMPLES, -1)
            for name in (t["name"] for t in harness_build["outputs"])}


@pytest.fixture(scope="module")
def harness_build(tmp_path_factory) -> dict:
    req = request("digits_cnn.onnx", BOARD, "lite", EXAMPLES / "digits_calib.npy")
    return do_build(dataclasses.replace(req, board=serial_harness_board(req.board)),
                    tmp_path_factory.mktemp("harness") / "digits", 2)


def digits_payloads(info: dict, count: int) -> list[bytes]:
    x = np.load(EXAMPLES / "digits_data.npz")["x"][:count]
    return sample_payloads(info, [{info["inputs"][0]["name"]: sample[None]} for sample in x])


# How long one try waits for its answer in the fault tests: the board answers within milliseconds,
# but a loaded 2-core CI machine once took over 1.5 s for one answer (a sixth frame sent again),
# so only the faults the tests make may reach this.
REPLY_S = 5.0


def converse(url: str, info: dict, payloads: list[bytes], first: int = 0):
    """One conversation with the harness already on the board; it stays up afterwards."""
    link = open_link(url, 115200, "board")
    try:
        return run_samples_on_link(link, serial_harness_board(get_board(BOARD)), info, payloads, "board", 115200,
                                   False, first, reply_s=REPLY_S, reset=False)
    finally:
        link.close()


def test_lost_and_corrupt_frames_are_sent_again_and_a_bad_link_is_reported(board, harness_build, reference,
                                                                           semihosting_validate):
    payloads = digits_payloads(harness_build, 10)
    sample = lambda k, extra=0: OPENING_TO_BOARD + INPUT_BYTES * (k + extra)  # noqa: E731  (a frame's offset)
    faults = Faults(
        flip_to_board={sample(2) + 100},                               # sample 2's input: NAK (CRC), sent again
        drop_to_board=[(sample(5, extra=1) + INPUT_BYTES - 10, 10)],   # sample 5 cut short: timeout, then NAK
        # sample 7's output corrupt on the way back: sent again once the line is quiet
        flip_to_host={OPENING_TO_HOST + 7 * OUTPUT_BYTES + 2 * NAK_BYTES + 20})
    # connection 0 flashes (no faults), 1 is the clean-up conversation, 2 goes bad from sample 3 on
    stays_bad = Faults(garble_to_board_from=OPENING_TO_BOARD + 3 * INPUT_BYTES + 20)
    with FaultProxy(board.port, {1: faults, 2: stays_bad}) as proxy:
        flash_command(BOARD, proxy.url, None, Path(harness_build["artifacts"]["bin"]), progress=False)
        conversation = converse(proxy.url, harness_build, payloads)
        assert conversation.resends == [  # sample 2 once, sample 5 twice, sample 7 once
            "sample 2: NAK (CRC mismatch)",
            "sample 5: timeout",              # its cut frame waits for 10 bytes: the resend's first 10
            "sample 5: NAK (CRC mismatch)",   # complete it, wrongly
            "sample 7: damaged answer"]       # its answer came corrupt (CRC)
        assert conversation.calibrated and conversation.count_problem is None
        board_data = serial_harness_board(get_board(BOARD))
        for k, sample_outputs in enumerate(result_of(board_data, harness_build, [conversation])["outputs"]):
            for name, value in sample_outputs.items():
                assert np.array_equal(value.reshape(-1), reference[name][k]), (k, name)
        assert_counts_match(conversation.counts, semihosting_validate["instructions_per_sample"][:10])

        began = time.monotonic()
        with pytest.raises(TargetError) as failure:
            converse(proxy.url, harness_build, payloads[:6], first=20)
        assert failure.value.exit_code == 6
        assert str(failure.value) == "board: sample 23: no valid answer after 4 tries (last: timeout)"
        assert time.monotonic() - began < 4 * REPLY_S + 10  # bounded: 4 tries of REPLY_S each


LENGTH_AT = proto.HEADER.size - 4  # a header's u32 payload length: its last field


def test_damaged_lengths_and_header_noise_are_resynced_at_once(bootloader, harness_build, reference):
    """Issue 38, defect 4, against the firmware itself: one flipped bit in an answer's length
    field (bit 23: a phantom 8 MiB payload) or in an INPUT's, noise that looks like a frame
    header in front of an answer, and a forged answer (valid CRC, the sample's index, another
    request id) in front of one. Each damaged frame is sent again as soon as the line is quiet
    (never after a reply wait: no resend says "timeout"); noise and the forgery cost nothing."""
    rng = random.Random(38)
    to_board, *flipped, noisy1, noisy2, forged = rng.sample(range(1, 10), 6)
    bits = {flipped[0]: 23, flipped[1]: rng.randrange(32)}
    noise = {k: proto.HEADER.pack(proto.MAGIC, proto.VERSION, proto.OUTPUT, rng.randrange(1 << 32), k, length)
             for k, length in ((noisy1, 8 + 10), (noisy2, rng.choice([1 << 23, 1 << 16, 4])))}
    noise[forged] = proto.encode(proto.OUTPUT, rng.randrange(1 << 32), forged, struct.pack("<Q", 1) + bytes(10))
    faults, to_board_at, to_host_at = Faults(), OPENING_TO_BOARD, OPENING_TO_HOST  # sample k's frames on each way
    for k in range(10):
        if k == to_board:  # its INPUT NAKed (wrong length), sent again, then answered
            faults.flip_to_board.add(to_board_at + LENGTH_AT + 1)
            to_board_at += INPUT_BYTES
            to_host_at += NAK_BYTES
        if k in bits:  # its first OUTPUT damaged, its INPUT sent again, answered again
            faults.xor_to_host[to_host_at + LENGTH_AT + bits[k] // 8] = 1 << (bits[k] % 8)
            to_board_at += INPUT_BYTES
            to_host_at += OUTPUT_BYTES
        if k in noise:
            faults.insert_to_host[to_host_at] = noise[k]
        to_board_at += INPUT_BYTES
        to_host_at += OUTPUT_BYTES
    with QemuBootloader(bootloader) as qemu, FaultProxy(qemu.port, {1: faults}) as proxy:  # a board of its own
        flash_command(BOARD, proxy.url, None, Path(harness_build["artifacts"]["bin"]), progress=False)
        began = time.monotonic()
        conversation = converse(proxy.url, harness_build, digits_payloads(harness_build, 10))
        took = time.monotonic() - began
    expected = {to_board: "NAK (wrong payload length)", **{k: "damaged answer" for k in bits}}
    assert conversation.resends == [f"sample {k}: {expected[k]}" for k in sorted(expected)], (bits, noise)
    assert took < 2 * REPLY_S, took  # a phantom payload would cost 4 x REPLY_S
    board_data = serial_harness_board(get_board(BOARD))
    for k, sample_outputs in enumerate(result_of(board_data, harness_build, [conversation])["outputs"]):
        for name, value in sample_outputs.items():
            assert np.array_equal(value.reshape(-1), reference[name][k]), (k, name)
    assert all(c > 100_000 for c in conversation.counts)


def test_validate_port_recovers_from_a_phantom_length_at_once(bootloader, work, semihosting_validate):
    """The issue's own case: `validate --port` while one answer's length field has bit 23
    flipped (a phantom 8 MiB payload: before the fix 4 reply waits, then exit 6 after ~105 s)
    and header-like noise precedes another answer: exit 0, the semihosting metrics, one
    frame sent again."""
    flipped_at = OPENING_TO_HOST + 3 * OUTPUT_BYTES + LENGTH_AT + 2
    noise_at = OPENING_TO_HOST + 7 * OUTPUT_BYTES  # sample 6's answer, after sample 3's second one
    noise = proto.HEADER.pack(proto.MAGIC, proto.VERSION, proto.OUTPUT, 0, 6, 1 << 22)
    faults = Faults(xor_to_host={flipped_at: 0x80}, insert_to_host={noise_at: noise})
    with QemuBootloader(bootloader) as qemu, FaultProxy(qemu.port, {1: faults}) as proxy:
        began = time.monotonic()
        r = cli("validate", "--board", BOARD, *model_args("--data", work / "data.npz"), "--port", proxy.url, cwd=work)
        took = time.monotonic() - began
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["resent_frames"] == 1 and report["samples"] == SAMPLES
    assert report["outputs"] == semihosting_validate["outputs"]
    assert report["accuracy"] == semihosting_validate["accuracy"]
    assert took < 4 * 20.0, took  # the build and the flash (8 s here); the phantom's 4 reply waits alone were 80 s


# --- a labgrid farm of two QEMU boards ------------------------------------------------------------
class Process:
    """A labgrid tool in a session of its own, its output in a log file; stop() ends it."""

    def __init__(self, command: list[str], cwd: Path, log: Path) -> None:
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def labgrid_client(address: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "labgrid-client"), "-x", address, *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def wait_for(check, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


class PowerSwitch:
    """A networked power switch for board a, as labgrid's `simplerest` model drives one
    (GET /relay/<index>/<0|1>): off kills its QEMU, on starts a fresh one (in its bootloader,
    as a board after power-up) and points the board's proxy at it."""

    def __init__(self, bootloader: Path, boards: dict, proxies: dict) -> None:
        import http.server
        import threading
        switch = self
        self.events: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server's name
                value = self.path.rstrip("/").rsplit("/", 1)[-1]
                if value == "0":
                    switch.events.append("off")
                    boards["a"].stop()
                elif value == "1":
                    switch.events.append("on")
                    boards["a"] = QemuBootloader(bootloader).start()
                    proxies["a"].target_port = boards["a"].port
                body = b"1" if boards["a"].running else b"0"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/relay/{{index}}/{{value}}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def exporter_config(proxy: FaultProxy, power_url: str | None) -> str:
    text = f"board:\n  NetworkSerialPort:\n    host: 127.0.0.1\n    port: {proxy.port}\n    protocol: raw\n" \
           f"    speed: 115200\n"
    if power_url:
        text += f"  NetworkPowerPort:\n    model: simplerest\n    host: '{power_url}'\n    index: 0\n"
    return text


@pytest.fixture(scope="module")
def farm(bootloader, tmp_path_factory):
    """A coordinator, two QEMU boards behind proxies (board a with a power switch), an
    exporter each, places a and b."""
    folder = tmp_path_factory.mktemp("farm")
    address = f"127.0.0.1:{free_port()}"
    started: list = []
    boards, proxies = {}, {}
    try:
        started.append(Process([str(BIN / "labgrid-coordinator"), "-l", address], folder, folder / "coordinator.log"))
        for name in ("a", "b"):
            boards[name] = QemuBootloader(bootloader).start()
            proxies[name] = FaultProxy(boards[name].port, on_kill=boards[name].stop).__enter__()
            started.append(proxies[name])
        switch = PowerSwitch(bootloader, boards, proxies)
        started.append(switch)
        for name in ("a", "b"):
            config = folder / f"exporter-{name}.yaml"
            config.write_text(exporter_config(proxies[name], switch.url if name == "a" else None))
            started.append(Process([str(BIN / "labgrid-exporter"), "-c", address, "-n", f"exporter-{name}",
                                    "--hostname", "127.0.0.1", str(config)], folder, folder / f"exporter-{name}.log"))
        wait_for(lambda: labgrid_client(address, "resources", cwd=folder).stdout.count("NetworkSerialPort") == 2,
                 "both exporters' resources")
        for name in ("a", "b"):
            for args in (("-p", name, "create"), ("-p", name, "add-match", f"exporter-{name}/board/*")):
                r = labgrid_client(address, *args, cwd=folder)
                assert r.returncode == 0, r.stderr
        yield {"address": address, "folder": folder, "boards": boards, "proxies": proxies, "switch": switch}
    finally:
        for thing in reversed(started):
            if isinstance(thing, FaultProxy):
                thing.__exit__(None, None, None)
            else:
                thing.stop()
        for qemu in boards.values():
            qemu.stop()


def acquired(farm: dict, place: str) -> str:
    r = labgrid_client(farm["address"], "-p", place, "show", cwd=farm["folder"])
    assert r.returncode == 0, r.stderr
    return next(line.split(":", 1)[1].strip() for line in r.stdout.splitlines() if line.strip().startswith("acquired:"))


def test_validate_shards_over_two_places(farm, work, semihosting_validate):
    r = cli("validate", "--board", BOARD, *model_args("--data", work / "data.npz"), "--place", "a", "--place", "b",
            "--coordinator", farm["address"], cwd=work)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["places"] == [{"place": "a", "first_sample": 0, "samples": 20, "count_check": "ok"},
                                {"place": "b", "first_sample": 20, "samples": 20, "count_check": "ok"}]
    assert report["samples"] == SAMPLES
    assert report["outputs"] == semihosting_validate["outputs"]  # merged in order: the very same metrics
    assert report["accuracy"] == semihosting_validate["accuracy"]
    assert_counts_match(report["instructions_per_sample"], semihosting_validate["instructions_per_sample"])
    assert "place a: samples 0-19" in r.stderr and "place b: samples 20-39" in r.stderr
    assert acquired(farm, "a") == "None" and acquired(farm, "b") == "None"
    assert all(p.connections == 2 for p in farm["proxies"].values())  # each board: one flash, one run
    assert farm["switch"].events == ["off", "on"]  # place a's power cycled through labgrid before flashing


def test_a_board_killed_mid_run_gives_exit_6_and_its_place_is_released(farm, work):
    proxy_b = farm["proxies"]["b"]
    # b's shard is samples 20-39: QEMU b dies as the host sends sample 24 (HELLO, CALIBRATE, 20-23 went through)
    proxy_b.faults = {proxy_b.connections + 1: Faults(kill_at=OPENING_TO_BOARD + 4 * INPUT_BYTES)}
    r = cli("validate", "--board", BOARD, *model_args("--data", work / "data.npz"), "--place", "a", "--place", "b",
            "--coordinator", farm["address"], cwd=work)
    assert proxy_b.killed.is_set() and not farm["boards"]["b"].running
    assert r.returncode == 6, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "place 'b'" in last and "sample 24" in last, last
    assert acquired(farm, "a") == "None" and acquired(farm, "b") == "None"
    assert farm["boards"]["a"].running


# --- counts that are not guest instructions ------------------------------------------------------
class BoardWithoutIcount(QemuBootloader):
    """The QEMU board as a user might start it by hand, forgetting `-icount shift=0`: SysTick
    then follows the host's clock and its counts are not guest instructions."""

    def command(self, port: int) -> list[str]:
        command = super().command(port)
        at = command.index("-icount")
        return command[:at] + command[at + 2:]


def test_a_board_without_icount_is_detected_and_its_counts_not_called_guest_instructions(bootloader, work):
    with BoardWithoutIcount(bootloader) as qemu:
        r = cli("run", "--board", BOARD, *model_args("--input", work / "x.npy"), "--output",
                work / "no-icount.npz", "--port", qemu.url, cwd=work)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert not {"instructions", "instructions_per_sample", "instructions_note"} & set(report), report
    assert len(report["unverified_counts_per_sample"]) == SAMPLES
    assert report["unverified_counts_note"].startswith("not guest instructions: SysTick x 40 on a QEMU")
    warnings = [line for line in r.stderr.splitlines() if line.startswith("cuvil-sdk: warning:")]
    assert len(warnings) == 1 and report["warnings"] == [warnings[0].removeprefix("cuvil-sdk: warning: ")], r.stderr
    assert re.fullmatch(rf"cuvil-sdk: warning: {re.escape(qemu.url)}: SysTick does not count guest instructions "
                        r"there \(a calibration stretch of 40000 instructions counted \d+ and \d+\): is QEMU running "
                        r"without -icount shift=0\? Its counts are reported as unverified_counts_per_sample", warnings[0])


def test_a_farm_place_without_icount_is_named_and_the_run_not_counted_in_instructions(farm, bootloader, work):
    """Place b's board swapped for one started without -icount (after the test above killed b's)."""
    with BoardWithoutIcount(bootloader) as qemu:
        farm["proxies"]["b"].target_port = qemu.port
        r = cli("validate", "--board", BOARD, *model_args("--data", work / "data.npz"), "--place", "a", "--place",
                "b", "--coordinator", farm["address"], cwd=work)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert "instructions_per_sample" not in report and len(report["unverified_counts_per_sample"]) == SAMPLES
    a, b = report["places"]
    assert a["count_check"] == "ok"
    assert b["count_check"].startswith("place 'b': SysTick does not count guest instructions there"), b
    assert report["warnings"] == [b["count_check"]] and f"cuvil-sdk: warning: {b['count_check']}" in r.stderr
    human = human_table(report)  # validate's human output of this very report
    assert "instructions per inference" not in human and "  unverified counts per inference: median" in human
    assert f"    {report['unverified_counts_note']}" in human.splitlines()


# --- docs/farm.md, followed as written ------------------------------------------------------------
class RecipeShell:
    """One bash, as the user's terminal: docs/farm.md's recipe blocks are typed into it one
    after the other (its `&` jobs are children of this shell, in its session, killed by stop())."""

    def __init__(self, folder: Path) -> None:
        self.log = folder / "shell.log"
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(["bash"], cwd=folder, env=env, stdin=subprocess.PIPE, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        self.typed = 0

    def type(self, block: str, timeout_s: float = 600.0) -> None:
        """Type the block and wait until the shell has run it."""
        self.typed += 1
        marker = f"@@ block {self.typed} done"
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{block}\necho '{marker}'\n".encode())
        self.proc.stdin.flush()
        wait_for(lambda: marker in self.output() or self.proc.poll() is not None, f"block {self.typed}", timeout_s)
        assert marker in self.output(), self.output()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def with_json(block: str) -> str:
    """The block's `cuvil-sdk` commands with --json, each report in its own file, its exit code in the log."""
    lines = []
    for line in commands(block):
        if line.startswith("cuvil-sdk "):
            k = sum(1 for l in lines if l.startswith("cuvil-sdk "))
            line = f"{line} --json > report-{k}.json; echo \"@@ rc {k} $?\""
        lines.append(line)
    return "\n".join(lines)


def test_the_docs_recipe_gives_the_semihosting_counts_on_a_loopback_farm(tmp_path):
    """docs/farm.md's blocks as written (free ports for the documented ones; --json added to
    read the reports): the farm's per-sample counts are guest instructions, equal to the
    semihosting run's within one SysTick tick, and said to be so."""
    ports = {old: str(free_port()) for old in PORTS}
    blocks = recipe_blocks(ports)
    assert len(blocks) == 5, blocks  # coordinator, boards, exporter, places, validate
    farm_dir = tmp_path / "cuvil-farm"
    shell = RecipeShell(tmp_path)
    try:
        shell.type(blocks[0])
        wait_for(lambda: listening(int(ports["20408"])), "the coordinator")
        shell.type(blocks[1])
        for n in (1, 2):
            log = farm_dir / f"board-{n}.log"
            wait_for(lambda: log.exists() and "cuvil-bootloader: ready" in log.read_text(), f"board {n}", 120)
        shell.type(blocks[2])
        address = f"127.0.0.1:{ports['20408']}"
        wait_for(lambda: labgrid_client(address, "resources", cwd=farm_dir).stdout.count("NetworkSerialPort") == 2,
                 "the exporter's resources")
        shell.type(blocks[3])
        shell.type(with_json(blocks[4]))
        assert "@@ rc 0 0" in shell.output() and "@@ rc 1 0" in shell.output(), shell.output()
    finally:
        shell.stop()
    farm_report, semihosting = (json.loads((farm_dir / f"report-{k}.json").read_text()) for k in (0, 1))
    samples = len(np.load(EXAMPLES / "digits_data.npz")["y"])
    half = samples // 2
    assert farm_report["places"] == [
        {"place": "qemu-1", "first_sample": 0, "samples": half, "count_check": "ok"},
        {"place": "qemu-2", "first_sample": half, "samples": samples - half, "count_check": "ok"}]
    assert farm_report["outputs"] == semihosting["outputs"] and farm_report["accuracy"] == semihosting["accuracy"]
    assert_counts_match(farm_report["instructions_per_sample"], semihosting["instructions_per_sample"])
    assert farm_report["warnings"] == [] and "unverified_counts_per_sample" not in farm_report
    assert farm_report["instructions_note"].startswith("guest instructions under QEMU -icount shift=0 (SysTick x 40")
    assert semihosting["instructions_note"].startswith("guest instructions under QEMU -icount shift=0")
