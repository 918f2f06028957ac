"""Board tests for cortex-m7: the board layer alone (start-up, linker template, harness,
SConscript, size report, QEMU runner), with a hand-written model from fixtures/m7_identity.

Every test builds real firmware with arm-none-eabi-gcc through scons and runs it under
qemu-system-arm; a missing tool makes the tests fail, never skip.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "m7_identity"
try:  # the installed package (pip install [-e] .)
    import cuvil_sdk  # noqa: F401
except ModuleNotFoundError:  # a plain checkout: the package is the sdk/ folder
    sys.path.insert(0, str(ROOT))
    import sdk

    sys.modules["cuvil_sdk"] = sdk

import jinja2  # noqa: E402

from cuvil_sdk import build_report  # noqa: E402
from cuvil_sdk.boards import get_board  # noqa: E402
from cuvil_sdk.codegen.emit import common_header  # noqa: E402
from cuvil_sdk.codegen.firmware import render_firmware_files  # noqa: E402
from cuvil_sdk.errors import BudgetError, TargetError, ToolError  # noqa: E402
from cuvil_sdk.runners.qemu_m7 import encode_inputs, run_firmware  # noqa: E402
from tools import missing_tools  # noqa: E402
from cuvil_sdk.scons_build import scons_command  # noqa: E402

NAME = "m7id"
SIZE = 64  # M7ID_INPUT_0_SIZE == M7ID_OUTPUT_0_SIZE
CONTEXT = {"name": NAME, "NAME": NAME.upper(), "inputs": [{"index": 0, "size": SIZE, "bytes": SIZE * 4}],
           "outputs": [{"index": 0, "size": SIZE, "dtype": "int8"}], "int8": True}
TOOLS = ["arm-none-eabi-gcc", "arm-none-eabi-objcopy", "arm-none-eabi-nm", "qemu-system-arm", "scons"]


def build(out: Path, board_name: str = "cortex-m7", defines: dict | None = None,
          int8: bool = True) -> subprocess.CompletedProcess:
    """A generated-project folder with the fixture model, built by scons as the SDK does."""
    board = get_board(board_name)
    (out / "src").mkdir(parents=True)
    for source in FIXTURE.glob("*.[ch]"):
        shutil.copy(source, out / "src" / source.name)
    (out / "src" / "cuvil_common.h").write_text(common_header(False))  # as every generated model has
    added = render_firmware_files(board, out, dict(CONTEXT, int8=int8))
    spec = {"board": board.name, "board_dir": str(board.family_dir), "name": NAME,
            "sources": [f"src/{NAME}.c", f"src/{NAME}_weights.c", *added], "kind": "firmware",
            "cflags": [], "defines": defines or {}}
    (out / "build.json").write_text(json.dumps(spec, indent=1))
    return subprocess.run(scons_command(out, jobs=2), capture_output=True, text=True, timeout=300)


def built(out: Path, **kwargs) -> Path:
    proc = build(out, **kwargs)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out / "build" / f"{NAME}.elf"


def expected_int8(x: np.ndarray) -> np.ndarray:
    """The fixture's arithmetic in numpy: quantize (scale 0.5, the SDK's floor(x / scale + 0.5): the
    harness quantizes an int8 input as the generated code does), add 1."""
    v = x.astype(np.float32) / np.float32(0.5)
    q = np.floor(v + np.float32(0.5))
    q = np.clip(q, -128, 127)
    return np.clip(q + 1, -128, 127).astype(np.int8)


@pytest.fixture(scope="module")
def firmware(tmp_path_factory) -> Path:
    return built(tmp_path_factory.mktemp("m7") / "out")


@pytest.fixture(scope="module")
def samples() -> np.ndarray:
    x = np.random.default_rng(7).normal(0.0, 30.0, (4, SIZE)).astype(np.float32)
    x[0, :4] = [1000.0, -1000.0, 0.25, -0.25]  # saturation and rounding
    return x


def test_tools_are_installed():
    missing = missing_tools(TOOLS)
    assert not missing, f"missing tools (Debian: gcc-arm-none-eabi, libnewlib-arm-none-eabi, qemu-system-arm; pip: scons): {missing}"


def test_build_gives_elf_bin_hex_map(firmware: Path):
    for suffix in (".elf", ".bin", ".hex", ".map"):
        assert (firmware.parent / f"{NAME}{suffix}").stat().st_size > 0
    assert list((firmware.parent / "obj").glob("*.su")), "-fstack-usage files"
    linker = (firmware.parents[1] / "src" / "linker.ld").read_text()
    assert "LENGTH = 2097152" in linker and "LENGTH = 524288" in linker


def test_outputs_are_correct_and_instructions_deterministic(firmware: Path, samples: np.ndarray, tmp_path: Path):
    board = get_board("cortex-m7")
    first = run_firmware(firmware, board, [samples], work_dir=tmp_path, timeout_s=30)
    second = run_firmware(firmware, board, encode_inputs([samples]), timeout_s=30)
    (out,) = first.outputs([SIZE], np.int8)
    np.testing.assert_array_equal(out, expected_int8(samples))
    assert first.output == second.output
    assert all(n > 0 for n in first.instructions)
    assert first.instructions == second.instructions
    # The count of an inference does not depend on how many samples ran before it.
    alone = run_firmware(firmware, board, [samples[:1]], timeout_s=30)
    assert alone.instructions[0] == first.instructions[0]
    assert (tmp_path / "stats.txt").read_text().startswith("sample 0 instructions ")


def test_float_build_runs_the_float_api(tmp_path: Path, samples: np.ndarray):
    elf = built(tmp_path / "out", int8=False)
    result = run_firmware(elf, get_board("cortex-m7"), [samples], timeout_s=30)
    (out,) = result.outputs([SIZE], np.float32)
    np.testing.assert_array_equal(out, expected_int8(samples).astype(np.float32) * np.float32(0.5))


def test_size_report_names_weights_arena_and_fits(firmware: Path):
    board = get_board("cortex-m7")
    obj = firmware.parent / "obj"
    report = build_report.size_report(firmware, firmware.with_suffix(".map"), sorted(obj.glob("*.su")), board)
    size = subprocess.run(["arm-none-eabi-size", str(firmware)], capture_output=True, text=True, check=True)
    text, data, bss = (int(v) for v in size.stdout.splitlines()[1].split()[:3])
    # the image also holds the padding between output sections, which `size` leaves out
    image = firmware.with_suffix(".bin")
    assert report["flash_bytes"] == image.stat().st_size >= text + data
    assert report["ram_bytes"] == data + bss
    assert report["weights_bytes"] == 64 and report["flash"]["weights"] == 64
    assert report["arena_bytes"] == 64 and report["ram"]["arena"] == 64
    assert report["ram"]["stack"] == board.get("memory.stack_bytes")
    assert report["fits"] and report["stack"]["bounded"]
    assert 0 < report["stack"]["estimate"] < report["stack"]["reserved"]
    assert report["stack"]["path"][:2] == ["Reset_Handler", "main"]
    build_report.check_budget(report)


def test_no_malloc_or_stdio_in_model_or_image(firmware: Path):
    board = get_board("cortex-m7")
    build_report.check_no_malloc(firmware, board)
    assert build_report.forbidden_symbols(firmware, sorted((firmware.parent / "obj").glob("*.o")), board) == []


def test_malloc_in_model_code_is_caught(tmp_path: Path, firmware: Path):
    bad = tmp_path / "bad.c"
    bad.write_text('#include <stdio.h>\n#include <stdlib.h>\n'
                   'int bad(int n) { char *p = malloc(n); printf("%p", (void *)p); free(p); return 0; }\n')
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m7", "-mthumb", "-O2", "-c", str(bad), "-o",
                    str(tmp_path / "bad.o")], check=True)
    with pytest.raises(BudgetError, match=r"bad\.o calls .*free.*malloc.*printf"):
        build_report.check_no_malloc(firmware, get_board("cortex-m7"), [tmp_path / "bad.o"])


@pytest.mark.parametrize("kind, expect", [(1, r"UsageFault .*CFSR=0x00010000 .*PC=0x"),  # UNDEFINSTR
                                          (2, r"BusFault .*BFAR=0x90000000 .*PC=0x"),
                                          (3, r"MemManage .*PC=unknown \(stack overflow\)")])
def test_fault_is_a_target_error_naming_it(tmp_path: Path, samples: np.ndarray, kind: int, expect: str):
    elf = built(tmp_path / "out", defines={"M7ID_FAULT": kind})
    with pytest.raises(TargetError, match=rf"exit code 3\): FAULT {expect}"):
        run_firmware(elf, get_board("cortex-m7"), [samples[:1]], timeout_s=30)


def test_short_input_is_a_target_error(firmware: Path, samples: np.ndarray):
    data = encode_inputs([samples[:2]])[:-4]  # says 2 samples, holds 1.99
    with pytest.raises(TargetError, match=r"exit code 1\): ERROR harness: input.bin is too short \(sample 1\)"):
        run_firmware(firmware, get_board("cortex-m7"), data, timeout_s=30)


def test_hang_is_stopped_by_the_timeout(tmp_path: Path, samples: np.ndarray):
    elf = built(tmp_path / "out", defines={"M7ID_HANG": 1})
    start = time.monotonic()
    with pytest.raises(TargetError, match=r"hung: no exit after 2 s"):
        run_firmware(elf, get_board("cortex-m7"), [samples[:1]], timeout_s=2)
    assert time.monotonic() - start < 20


def test_budget_overflow_names_what_took_the_space(tmp_path: Path):
    board = get_board("cortex-m7-small")
    proc = build(tmp_path / "out", board_name=board.name, defines={"M7ID_PAD_BYTES": 100000})
    assert proc.returncode != 0, "a 100 kB weight array must not link into 64 KiB of flash"
    error = build_report.budget_error_from_link(proc.stdout + proc.stderr, tmp_path / "out" / "build" / f"{NAME}.map",
                                                board, NAME)
    assert isinstance(error, BudgetError)
    message = str(error)
    assert "cortex-m7-small" in message and "FLASH overflowed by" in message and "budget 65536 B" in message
    assert "m7id_w_pad 100000 B (weights, m7id_weights.o)" in message


def test_small_board_fits_without_padding(tmp_path: Path, samples: np.ndarray):
    board = get_board("cortex-m7-small")
    elf = built(tmp_path / "out", board_name=board.name)
    report = build_report.size_report(elf, elf.with_suffix(".map"), sorted((elf.parent / "obj").glob("*.su")), board)
    assert report["fits"] and report["flash_budget"] == 65536 and report["ram_budget"] == 16384
    assert run_firmware(elf, board, [samples[:1]], timeout_s=30).outputs([SIZE])[0].shape == (1, SIZE)
    # The same figures against a smaller budget: the check names the biggest items.
    tight = dict(report, fits=False, ram_budget=1024)
    with pytest.raises(BudgetError, match=r"RAM \d+ B > budget 1024 B; largest: .stack"):
        build_report.check_budget(tight)


def test_missing_qemu_is_a_tool_error_naming_the_package(firmware: Path, monkeypatch, samples: np.ndarray):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolError, match="install the Debian package qemu-system-arm"):
        run_firmware(firmware, get_board("cortex-m7"), [samples[:1]], timeout_s=30)


def test_harness_template_is_strict_and_renders_many_inputs(tmp_path: Path):
    board = get_board("cortex-m7")
    with pytest.raises(jinja2.UndefinedError):
        render_firmware_files(board, tmp_path / "a", {"NAME": "NET", "inputs": [{"index": 0}], "outputs": [], "int8": True})
    # Two inputs, three outputs: the rendered harness compiles against a matching header.
    context = {"name": "net", "NAME": "NET", "inputs": [{"index": 0}, {"index": 1}],
               "outputs": [{"index": 0}, {"index": 1}, {"index": 2}], "int8": True}
    assert render_firmware_files(board, tmp_path / "b", context) == ["src/harness.c"]
    (tmp_path / "b" / "src" / "net.h").write_text(
        "#include <stdint.h>\n#define NET_INPUT_0_SIZE 3\n#define NET_INPUT_1_SIZE 5\n#define NET_OUTPUT_0_SIZE 1\n"
        "#define NET_OUTPUT_1_SIZE 2\n#define NET_OUTPUT_2_SIZE 7\n"
        "#define NET_INPUT_0_SCALE 0.5f\n#define NET_INPUT_0_ZERO_POINT 0\n#define NET_INPUT_1_SCALE 0.25f\n"
        "#define NET_INPUT_1_ZERO_POINT -3\n"
        "int net_run_int8(const int8_t *const inputs[], int8_t *const outputs[]);\n")
    (tmp_path / "b" / "src" / "cuvil_common.h").write_text(common_header(False))
    tool = board.get("toolchain")
    subprocess.run([tool["prefix"] + "gcc", *tool["cpu_flags"], *tool["cflags"], "-I", str(board.family_dir),
                    "-I", str(tmp_path / "b" / "src"),
                    "-c", str(tmp_path / "b" / "src" / "harness.c"), "-o", str(tmp_path / "harness.o")],
                   check=True, cwd=tmp_path)
    harness = (tmp_path / "b" / "src" / "harness.c").read_text()
    # int8 inputs are read in chunks and quantized as they come (no float copy of a whole input)
    assert "read_quantized(in, input1_q, NET_INPUT_1_SIZE, NET_INPUT_1_SCALE," in harness and "output2" in harness
    assert "static float input1[" not in harness


def test_boards_are_listed_with_their_budget():
    big, small = get_board("cortex-m7"), get_board("cortex-m7-small")
    assert (big.kind, big.flash_bytes, big.ram_bytes) == ("firmware", 2 * 1024 * 1024, 512 * 1024)
    assert (small.flash_bytes, small.ram_bytes) == (64 * 1024, 16 * 1024)
    assert big.get("toolchain.cpu_flags") == ["-mcpu=cortex-m7", "-mthumb", "-mfpu=fpv5-d16", "-mfloat-abi=hard"]
    assert "mps2-an500" in big.get("run.command") and "{elf}" in big.get("run.command")
    assert os.path.basename(big.get("run.command")[0]) == "qemu-system-arm"
