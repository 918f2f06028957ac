"""Weight placements (--weights linked|region|file) and memory regions (--arena-region), built
by the real pipeline and run where each board runs: natively (host), under qemu-system-arm
(cortex-m7) and qemu-aarch64 (rpi5). Every placement gives the same int8 outputs, equal to the
numpy reference; a weights file that is missing, truncated or corrupted is refused with one line
(ModelError, exit 3); a region over its budget is a BudgetError (exit 4) naming the region.

A missing tool (compilers, QEMU, scons) makes the tests fail, never skip.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

import cuvil_sdk
from cuvil_sdk import runtime
from cuvil_sdk.boards import get_board
from cuvil_sdk.commands import do_compile
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.errors import BudgetError, ModelError
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_quantized_model
from models import EXAMPLES, cli, reference_graph, request
from tools import missing_tools

DIGITS = EXAMPLES / "digits_cnn.onnx"
CALIB = EXAMPLES / "digits_calib.npy"
SAMPLES = 4
ERR_NO_WEIGHTS = 16  # <NAME>_ERR_NO_WEIGHTS of the generated header
pytestmark = pytest.mark.slow


def test_tools_present():
    missing = missing_tools(["gcc", "arm-none-eabi-gcc", "qemu-system-arm", "aarch64-linux-gnu-gcc", "qemu-aarch64",
                             "scons", "readelf"])
    assert not missing, f"missing tools: {missing}"


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return np.load(EXAMPLES / "digits_data.npz")["x"][:SAMPLES]


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> dict:
    """The digits model built for the host twice: weights linked in, and as a file beside the library."""
    tmp = tmp_path_factory.mktemp("weights-host")
    return {w: cuvil_sdk.build(DIGITS, board="host", profile="standard", calib=CALIB, weights=w, out_dir=tmp / w)
            for w in ("linked", "file")}


def reference(board: str, profile: str, x: np.ndarray) -> np.ndarray:
    g = reference_graph(request("digits_cnn.onnx", board, profile, CALIB))
    return np.stack([run_quantized_model(g, {g.inputs[0]: x[i:i + 1]})[1][g.outputs[0]] for i in range(len(x))])


def test_host_linked_and_file_outputs_equal_each_other_and_the_reference(host, x):
    outputs = {}
    for placement, built in host.items():
        with built.load() as model:
            outputs[placement] = model(x)
    assert np.array_equal(outputs["linked"], outputs["file"])
    assert np.array_equal(outputs["linked"], reference("host", "standard", x))


def rodata_bytes(so: Path) -> int:
    """The size of a shared library's .rodata section (readelf -S -W), where linked weights go."""
    for line in subprocess.run(["readelf", "-S", "-W", str(so)], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        fields = line.replace("[ ", "[").split()
        if len(fields) > 5 and fields[1] == ".rodata":
            return int(fields[5], 16)
    raise AssertionError(f"{so}: no .rodata section")


def test_host_file_build_ships_the_checked_blob_beside_a_library_without_it(host):
    weights = host["file"].info["weights"]
    blob = Path(host["file"].artifacts["weights"]).read_bytes()
    assert weights["placement"] == "file" and len(blob) == weights["bytes"]
    assert f"{zlib.crc32(blob):08x}" == weights["crc32"]
    # the linked library's read-only data holds the blob, the file build's not even a tenth of it
    # (file sizes would also move with code and page alignment)
    linked, file = (rodata_bytes(Path(host[w].artifacts["so"])) for w in ("linked", "file"))
    assert linked >= len(blob) > 10 * file, (linked, file, len(blob))
    assert host["linked"].info["weights"]["section"] == ".rodata.digits_cnn_weights"
    assert "weights" not in host["linked"].artifacts


def bad_copies(blob: Path, tmp: Path) -> dict[str, Path]:
    data = blob.read_bytes()
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x01
    (tmp / "truncated.weights").write_bytes(data[:-16])
    (tmp / "corrupted.weights").write_bytes(bytes(flipped))
    return {"truncated": tmp / "truncated.weights", "corrupted": tmp / "corrupted.weights",
            "missing": tmp / "missing.weights"}


def test_runtime_refuses_missing_truncated_and_corrupted_files(host, tmp_path):
    so, spec = host["file"].artifacts["so"], host["file"].info["weights"]
    expected = {"truncated": f"has {spec['bytes'] - 16} bytes, the library expects {spec['bytes']}",
                "corrupted": "is corrupted: its CRC-32 is", "missing": "is missing or unreadable"}
    for kind, path in bad_copies(Path(host["file"].artifacts["weights"]), tmp_path).items():
        with pytest.raises(ModelError) as err:
            runtime.load(so, weights=path)
        message = str(err.value)
        assert f"weights file '{path}'" in message and expected[kind] in message and "\n" not in message, message


def test_a_file_build_run_without_loaded_weights_returns_an_error(host):
    lib = ctypes.CDLL(str(Path(host["file"].artifacts["so"]).resolve()))
    try:
        lib.digits_cnn_unload_weights()
        assert lib.digits_cnn_run_int8(None, None) == ERR_NO_WEIGHTS  # checked before any pointer is used
        assert lib.digits_cnn_run(None, None) == ERR_NO_WEIGHTS
    finally:
        ctypes.CDLL(None).dlclose(ctypes.c_void_p(lib._handle))


@pytest.mark.parametrize("kind", ["truncated", "corrupted"])
def test_cli_run_refuses_a_bad_weights_file_with_exit_3_and_one_line(host, x, tmp_path, kind):
    bad = bad_copies(Path(host["file"].artifacts["weights"]), tmp_path)[kind]
    np.save(tmp_path / "x.npy", x)
    r = cli("run", "--board", "host", "--profile", "standard", "--model", DIGITS, "--calib", CALIB, "--weights", "file",
            "--weights-file", bad, "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npz", cwd=tmp_path)
    assert r.returncode == 3, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"cuvil-sdk: error: weights file '{bad}'"), r.stderr
    assert not (tmp_path / "y.npz").exists()


def test_rpi5_file_build_runs_under_qemu_aarch64_identical_to_host(host, x, tmp_path):
    built = cuvil_sdk.build(DIGITS, board="rpi5", profile="standard", calib=CALIB, weights="file",
                            out_dir=tmp_path / "rpi5")
    assert Path(built.artifacts["weights"]).parent == Path(built.artifacts["so"]).parent
    with host["linked"].load() as model:
        assert np.array_equal(built.run(x)[built.info["outputs"][0]["name"]], model(x))
    # the harness itself refuses a corrupted file (the C check, not only the runner's)
    corrupted = bad_copies(Path(built.artifacts["weights"]), tmp_path)["corrupted"]
    harness = Path(built.artifacts["so"]).parent / "digits_cnn_harness"
    (tmp_path / "input.bin").write_bytes(b"\0\0\0\0")
    r = subprocess.run(["qemu-aarch64", "-cpu", "max", "-L", "/usr/aarch64-linux-gnu", str(harness)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120, env={**os.environ, "CUVIL_WEIGHTS": str(corrupted)})
    assert r.returncode == 1 and f"weights file {corrupted} refused (code 3)" in r.stderr, r.stderr


def test_cortex_m7_weights_and_arena_in_psram_run_under_qemu_identical_to_linked(x, tmp_path):
    linked = cuvil_sdk.build(DIGITS, board="cortex-m7", calib=CALIB, out_dir=tmp_path / "linked")
    placed = cuvil_sdk.build(DIGITS, board="cortex-m7", calib=CALIB, weights="region", arena_region="psram",
                             out_dir=tmp_path / "psram")
    y = linked.run(x)
    assert np.array_equal(placed.run(x)["logits"], y["logits"])
    assert np.array_equal(y["logits"], reference("cortex-m7", "lite", x))
    for built, flash_weights in ((linked, True), (placed, False)):
        regions = built.info["regions"]
        assert set(regions) == {"FLASH", "RAM", "PSRAM"}
        psram = regions["PSRAM"]
        assert psram["origin"] == 0x60000000 and psram["budget"] == 16 << 20
        assert ("weights" in regions["FLASH"]["bytes"]) == flash_weights
        assert psram["bytes"].get("weights", 0) == (0 if flash_weights else built.info["weights"]["bytes"])
        assert ("arena" in psram["bytes"]) != flash_weights and ("arena" in regions["RAM"]["bytes"]) == flash_weights
    assert placed.info["flash_bytes"] < linked.info["flash_bytes"] - placed.info["weights"]["bytes"] + 64
    assert Path(placed.artifacts["bin_psram"]).stat().st_size >= placed.info["weights"]["bytes"]


@pytest.mark.parametrize("option", [{"weights": "region"}, {"arena_region": "psram"}])
def test_a_region_over_its_budget_is_exit_4_naming_it(tmp_path, option):
    with pytest.raises(BudgetError) as err:
        cuvil_sdk.build(DIGITS, board="cortex-m7-small", calib=CALIB, out_dir=tmp_path / "small", **option)
    assert err.value.exit_code == 4
    assert "PSRAM overflowed by" in str(err.value) and "(budget 2048 B)" in str(err.value), str(err.value)
    assert ("digits_cnn_weights" if "weights" in option else "digits_cnn_arena") in str(err.value)


def test_the_weights_section_override_still_places_the_linked_blob(tmp_path):
    """-D<NAME>_WEIGHTS_SECTION=__attribute__((section("..."))) (docs/integration.md) names the blob's section."""
    req = CompileRequest(model=DIGITS, board=get_board("cortex-m7"), profile=get_profile("lite"), calib=str(CALIB))
    do_compile(req, tmp_path / "out")
    src = tmp_path / "out" / "src"
    blob = (src / "digits_cnn.weights").read_bytes()
    obj = tmp_path / "w.o"
    override = '-DDIGITS_CNN_WEIGHTS_SECTION=__attribute__((section(".qspi_rodata")))'
    r = subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m7", "-mthumb", "-std=c99", "-Wall", "-Wextra", "-Werror",
                        f"-I{src}", f"-Wa,-I{src}", override, "-c", str(src / "digits_cnn_weights.c"), "-o", str(obj)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    section = tmp_path / "section.bin"
    dump = subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "-j", ".qspi_rodata", str(obj), str(section)],
                          capture_output=True, text=True)
    assert dump.returncode == 0, dump.stderr
    assert section.read_bytes() == blob  # the whole blob, and only it, in the user's section


def test_each_arena_of_an_image_goes_to_the_named_region(tmp_path):
    """A project file of two models with an arena each (shared-arena = false), both in PSRAM."""
    (tmp_path / "cuvil.toml").write_text(f'''board = "cortex-m7"
profile = "lite"
arena-region = "psram"
shared-arena = false
out-dir = "out"

[[models]]
model = "{DIGITS}"
calib = "{CALIB}"

[[models]]
model = "{EXAMPLES / 'resnet8_qdq.onnx'}"
''')
    r = cli("build", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    psram, ram = report["regions"]["PSRAM"], report["regions"]["RAM"]
    arenas = [m["arena_bytes"] for m in report["models"]]
    assert all(arenas) and psram["bytes"]["arena"] == sum(arenas) and "arena" not in ram["bytes"]
