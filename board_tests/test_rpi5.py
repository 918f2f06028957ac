"""Board tests for the aarch64 Linux boards (rpi5, and jetson's CPU path): whole models
built by the real CLI (`cuvil-sdk run`), cross-compiled with aarch64-linux-gnu-gcc into
lib<name>.so plus the harness, run under qemu-aarch64, and compared with the same command
for `--board host`: int8 outputs must be identical (docs/internals.md, numerics), fp32 close.

A missing tool (cross compiler, sysroot, qemu-aarch64, scons, the CLI) makes the tests fail,
never skip.
"""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
try:  # the installed package (pip install [-e] .)
    import cuvil_sdk  # noqa: F401
except ModuleNotFoundError:  # a plain checkout: the package is the sdk/ folder
    sys.path.insert(0, str(ROOT))
    import sdk

    sys.modules["cuvil_sdk"] = sdk

from cuvil_sdk.boards import get_board  # noqa: E402
from cuvil_sdk.codegen.linux_harness import render_linux_harness  # noqa: E402
from cuvil_sdk.errors import TargetError, ToolError  # noqa: E402
from cuvil_sdk.runners import emulator, linux_qemu  # noqa: E402
from cuvil_sdk.runners.protocol import encode_inputs  # noqa: E402
from tools import missing_tools  # noqa: E402

EXAMPLES = ROOT / "sdk" / "examples"
DIGITS = EXAMPLES / "digits_cnn.onnx"
RESNET8 = EXAMPLES / "resnet8_fp32.onnx"
TOOLS = ["aarch64-linux-gnu-gcc", "qemu-aarch64", "scons"]
SYSROOT_LOADER = Path("/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1")
EM_AARCH64 = 183


def cli_exe() -> str:
    """The cuvil-sdk console script of this Python environment (else the one on PATH)."""
    beside = Path(sys.executable).parent / "cuvil-sdk"
    exe = str(beside) if beside.exists() else shutil.which("cuvil-sdk")
    assert exe, "the cuvil-sdk console script is not installed (pip install -e .)"
    return exe


def test_tools_present():
    missing = missing_tools(TOOLS)
    assert not missing, f"missing tools: {missing} (Debian: gcc-aarch64-linux-gnu, qemu-user, scons)"
    assert SYSROOT_LOADER.exists(), "no aarch64 sysroot: install libc6-dev-arm64-cross"


def run_cli(work: Path, tag: str, board: str, model: Path, x: np.ndarray, calib: np.ndarray | None = None,
            precision: str | None = None, keep: bool = False) -> tuple[dict[str, np.ndarray], dict]:
    """`cuvil-sdk run --json` on samples x; returns (outputs by name, the JSON report)."""
    d = work / tag
    d.mkdir()
    np.save(d / "in.npy", x)
    args = [cli_exe(), "run", "--board", board, "--profile", "standard", "--model", str(model),
            "--input", str(d / "in.npy"), "--output", str(d / "out.npz"), "--json"]
    if calib is not None:
        np.save(d / "calib.npy", calib)
        args += ["--calib", str(d / "calib.npy")]
    if precision:
        args += ["--precision", precision]
    if keep:
        args += ["-o", str(d / "project")]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=d, timeout=600)
    assert proc.returncode == 0, f"{board} run failed ({proc.returncode}): {proc.stderr[-2000:]}"
    report = json.loads(proc.stdout)
    assert report["samples"] == len(x)
    return dict(np.load(d / "out.npz")), report


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("aarch64")


@pytest.fixture(scope="module")
def digits():
    data = np.load(EXAMPLES / "digits_data.npz")
    return data["x"][:20], data["calib"]


@pytest.fixture(scope="module")
def resnet8_data():
    x = np.random.default_rng(3).random((5, 3, 32, 32), dtype=np.float32)
    calib = np.random.default_rng(4).random((16, 3, 32, 32), dtype=np.float32)
    return x, calib


@pytest.fixture(scope="module")
def digits_host(work, digits):
    x, calib = digits
    return run_cli(work, "digits-host", "host", DIGITS, x, calib)[0]


@pytest.fixture(scope="module")
def digits_rpi5(work, digits):
    x, calib = digits
    return run_cli(work, "digits-rpi5", "rpi5", DIGITS, x, calib, keep=True)


@pytest.fixture(scope="module")
def resnet8_host(work, resnet8_data):
    x, calib = resnet8_data
    return run_cli(work, "resnet8-host", "host", RESNET8, x, calib)[0]


def assert_identical(ours: dict, host: dict) -> None:
    assert set(ours) == set(host)
    for name in host:
        assert ours[name].shape == host[name].shape, name
        diff = np.abs(ours[name].astype(np.float64) - host[name]).max()
        assert np.array_equal(ours[name], host[name]), f"{name}: max |diff| {diff}"


def elf_header(path: Path) -> tuple[int, int, int]:
    """(EI_CLASS, e_type, e_machine) of an ELF file."""
    head = path.read_bytes()[:20]
    assert head[:4] == b"\x7fELF", f"{path} is not an ELF file"
    e_type, e_machine = struct.unpack_from("<HH", head, 16)
    return head[4], e_type, e_machine


def test_digits_int8_rpi5_identical_to_host(digits_rpi5, digits_host):
    ours, report = digits_rpi5
    assert_identical(ours, digits_host)
    assert report["board"] == "rpi5" and report["precision"] == "int8"
    assert report["flash_bytes"] > 0 and report["arena_bytes"] > 0


def test_quantize_input_edge_values_rpi5_identical_to_host(work, digits):
    """cuvil_neon_quantize against the portable cuvil_quantize (the host build) on values far
    beyond +-1024 steps (up to FLT_MAX, past int32 after the division), signed zeros and tiny
    values, in its vector blocks of 16 (the digits input has 64 values; `run` refuses NaN and
    infinities, which the same FMAXNM / FCVTMS steps map as the clamps do)."""
    x, calib = digits
    special = np.array([3.4e38, -3.4e38, 1e30, -1e30, 3e9, -3e9, 0.0, -0.0, 1e-30, -1e-30, 16.0, -16.0], np.float32)
    rng = np.random.default_rng(7)
    rows = []
    for k in range(4):
        row = x[k].copy().reshape(-1)
        row[rng.choice(row.size, special.size, replace=False)] = special
        rows.append(row.reshape(x[k].shape))
    edge = np.stack(rows).astype(np.float32)
    ours = run_cli(work, "digits-edge-rpi5", "rpi5", DIGITS, edge, calib)[0]
    host = run_cli(work, "digits-edge-host", "host", DIGITS, edge, calib)[0]
    assert_identical(ours, host)


def test_rpi5_build_layout(digits_rpi5):
    """lib<name>.so is an aarch64 shared object holding the model only; the harness is a
    separate aarch64 executable that finds the library beside it."""
    _, report = digits_rpi5
    so = Path(report["artifacts"]["so"])
    assert so.name == "libdigits_cnn.so"
    assert elf_header(so) == (2, 3, EM_AARCH64)  # ELFCLASS64, ET_DYN, EM_AARCH64
    harness = so.parent / "digits_cnn_harness"
    assert elf_header(harness)[::2] == (2, EM_AARCH64)
    spec = json.loads((so.parents[1] / "build.json").read_text())
    assert not any("harness" in s for s in spec["sources"]), spec["sources"]
    symbols = subprocess.run(["aarch64-linux-gnu-nm", "-D", "--defined-only", str(so)], capture_output=True,
                             text=True, check=True).stdout.split()
    assert "main" not in symbols
    for api in ("digits_cnn_run", "digits_cnn_run_int8", "digits_cnn_quantize_input", "digits_cnn_manifest"):
        assert api in symbols, api
    dynamic = subprocess.run(["aarch64-linux-gnu-readelf", "-d", str(harness)], capture_output=True, text=True,
                             check=True).stdout
    assert "libdigits_cnn.so" in dynamic and "$ORIGIN" in dynamic


def test_resnet8_int8_rpi5_identical_to_host(work, resnet8_data, resnet8_host):
    x, calib = resnet8_data
    ours, _ = run_cli(work, "resnet8-rpi5", "rpi5", RESNET8, x, calib)
    assert_identical(ours, resnet8_host)


def test_resnet8_int8_jetson_cpu_path_identical_to_host(work, resnet8_data, resnet8_host):
    x, calib = resnet8_data
    ours, report = run_cli(work, "resnet8-jetson", "jetson", RESNET8, x, calib, keep=True)
    assert_identical(ours, resnet8_host)
    so = Path(report["artifacts"]["so"])
    assert elf_header(so) == (2, 3, EM_AARCH64)


def test_digits_fp32_rpi5_close_to_host(work, digits):
    x, _ = digits
    ours, report = run_cli(work, "digits-fp32-rpi5", "rpi5", DIGITS, x, precision="fp32")
    host, _ = run_cli(work, "digits-fp32-host", "host", DIGITS, x, precision="fp32")
    assert report["precision"] == "fp32"
    assert set(ours) == set(host)
    for name in host:
        np.testing.assert_allclose(ours[name], host[name], rtol=0, atol=1e-5)


def test_jetson_reuses_the_rpi5_harness(tmp_path):
    context = {"name": "net", "NAME": "NET", "int8": True, "inputs": [{"index": 0, "size": 4, "bytes": 16}],
               "outputs": [{"index": 0, "size": 2, "dtype": "int8"}]}
    for board in ("rpi5", "jetson"):
        assert render_linux_harness(get_board(board), tmp_path / board, context) == ["src/harness.c"]
    text = (tmp_path / "rpi5" / "src" / "harness.c").read_text()
    assert text == (tmp_path / "jetson" / "src" / "harness.c").read_text()
    assert "net_run_int8(inputs, outputs)" in text and "net_quantize_input(0," in text
    jetson = get_board("jetson")
    assert jetson.get("cuda_arch") == "sm_87" and "CUDA" in jetson.description


def test_harness_error_is_a_target_error(digits_rpi5):
    """A truncated input.bin: the harness's own error line comes back as a TargetError."""
    _, report = digits_rpi5
    harness = Path(report["artifacts"]["so"]).parent / "digits_cnn_harness"
    data = encode_inputs([np.zeros((2, 64), np.float32)])[:-4]
    with pytest.raises(TargetError, match="ERROR harness: input.bin is too short \\(sample 1\\)"):
        linux_qemu.run_harness(get_board("rpi5"), harness, data, 2, 10, timeout_s=60)


def test_missing_qemu_is_a_tool_error(digits_rpi5, monkeypatch):
    _, report = digits_rpi5
    harness = Path(report["artifacts"]["so"]).parent / "digits_cnn_harness"
    real_which = shutil.which
    monkeypatch.setattr(emulator.shutil, "which", lambda exe: None if exe == "qemu-aarch64" else real_which(exe))
    with pytest.raises(ToolError, match="qemu-user"):
        linux_qemu.run_harness(get_board("rpi5"), harness, encode_inputs([np.zeros((1, 64), np.float32)]), 1, 10,
                               timeout_s=60)
