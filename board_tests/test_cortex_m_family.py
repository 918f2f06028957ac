"""The Cortex-M family boards under QEMU: cortex-m4 (mps2-an386), cortex-m33 (mps2-an505, Secure
state) and cortex-m55 (mps3-an547), built from board data on the Cortex-M7 family's start-up code,
linker script and harness (targets/cortex_m4, cortex_m33, cortex_m55).

- SysTick counts guest instructions under -icount shift=0 at each board's own rate (40, 50 and
  31.25 instructions per tick): a firmware times loops of a known instruction count;
- the Armv8-M stack limit (MSPLIM) stops an overflow with a fault report (M33, M55);
- digits runs on the three boards with outputs bit-identical to cortex-m7's and the host's, an
  instruction count and a per-layer profile, as on cortex-m7;
- the DSP kernels (the M7's set) are bit-exact on the M33: kernel_cases.py's dsp_ grid against the
  numpy reference, one firmware.

A missing arm-none-eabi-gcc, qemu-system-arm or scons makes these tests fail, never skip.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import jinja2
import numpy as np
import pytest

import kernel_cases as kc
from cuvil_sdk.boards import get_board, include_folders, instructions_per_tick, linker_context
from cuvil_sdk.commands import run_samples
from cuvil_sdk.reference import run_quantized_model
from cuvil_sdk.runners.emulator import board_command
from models import EXAMPLES, cli_run
from tools import missing_tools

TOOLS = ["arm-none-eabi-gcc", "qemu-system-arm", "scons"]
FAMILY = ["cortex-m4", "cortex-m33", "cortex-m55"]
MACHINES = {"cortex-m7": "mps2-an500", "cortex-m4": "mps2-an386", "cortex-m33": "mps2-an505",
            "cortex-m55": "mps3-an547"}
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cortex_m_clock" / "clock.c"
STARTUP = kc.ROOT / "targets" / "cortex_m7"


def test_family_tools_present():
    missing = missing_tools(TOOLS)
    assert not missing, f"missing tools: {missing} (these tests never skip)"


def build_clock(board_name: str, out: Path, *defines: str) -> Path:
    """clock.c as a firmware of the board: its compiler and CPU flags, the family's start-up
    sources, and the linker script rendered from its [memory] table as a model build renders it."""
    board = get_board(board_name)
    out.mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(p) for p in include_folders(board)]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    (out / "linker.ld").write_text(env.get_template(board.get("firmware.linker_template")).render(linker_context(board)))
    sources = [str((board.family_dir / s).resolve()) for s in board.get("firmware.sources")]
    uart = f"-DCUVIL_UART0_BASE={board.get('peripherals.uart0')}u"
    cmd = [board.get("toolchain.prefix") + "gcc", *board.get("toolchain.cpu_flags"), "-O2", "-Wall", "-Werror", uart,
           *defines, "-I", str(STARTUP), str(FIXTURE), *sources, *board.get("toolchain.linkflags"),
           "-T", str(out / "linker.ld"), "-o", str(out / "clock.elf")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out / "clock.elf"


def run_clock(board_name: str, elf: Path) -> subprocess.CompletedProcess:
    command = board_command(get_board(board_name), "run.command", elf=str(elf))
    return subprocess.run(command, cwd=elf.parent, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("board", ["cortex-m7", *FAMILY])
def test_systick_counts_guest_instructions_at_the_board_rate(board, tmp_path):
    """ticks x firmware.instructions_per_tick is the loop's 2 n instructions, within one tick and the
    two instructions that read the timer: 40 per tick on mps2-an500 and mps2-an386 (25 MHz), 50 on
    mps2-an505 (20 MHz), 31.25 on mps3-an547 (32 MHz); the board says which machine it runs on."""
    board_data = get_board(board)
    assert board_data.get("run.how") == f"qemu-system-arm -M {MACHINES[board]} -icount shift=0"
    r = run_clock(board, build_clock(board, tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    per_tick = instructions_per_tick(board_data)
    pairs = [tuple(map(int, line.split())) for line in (tmp_path / "ticks.txt").read_text().splitlines()]
    assert [n for n, _ in pairs] == [100000, 200000, 400000]
    for n, ticks in pairs:
        assert abs(ticks * per_tick - 2 * n) <= per_tick + 2, (board, n, ticks, float(per_tick))


@pytest.mark.parametrize("board", ["cortex-m33", "cortex-m55"])
def test_stack_limit_stops_an_overflow(board, tmp_path):
    """Armv8-M: MSPLIM at the top of the stack guard turns an overflow into a UsageFault (STKOF)
    reported on the board's UART0 (its Secure alias), and the run fails."""
    r = run_clock(board, build_clock(board, tmp_path, "-DOVERFLOW"))
    assert r.returncode == 3, r.stdout + r.stderr
    fault = [line for line in r.stdout.splitlines() if line.startswith("FAULT")]
    assert fault and "FAULT UsageFault" in fault[0] and "(stack overflow)" in fault[0], r.stdout


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """digits (8 samples) on cortex-m7, the three family boards and the host (its portable C build),
    through `run --json`."""
    assert not missing_tools(TOOLS), f"missing tools: {missing_tools(TOOLS)} (these tests never skip)"
    tmp = tmp_path_factory.mktemp("family-digits")
    data = np.load(EXAMPLES / "digits_data.npz")
    np.save(tmp / "calib.npy", data["calib"])
    return {board: cli_run(tmp, board, "lite", "digits_cnn.onnx", data["x"][:8], tmp / "calib.npy")
            for board in ["cortex-m7", *FAMILY, "host-portable"]}


@pytest.mark.slow
@pytest.mark.parametrize("board", FAMILY)
def test_digits_equals_cortex_m7_and_host(digits, board):
    outputs, report = digits[board]
    for name, want in digits["cortex-m7"][0].items():
        assert np.array_equal(outputs[name], want), name
        assert np.array_equal(outputs[name], digits["host-portable"][0][name]), name
    assert report["fallbacks"] == []
    counts = report["instructions_per_sample"]
    assert report["instructions"] > 0 and len(counts) == 8
    # the per-layer profile, as on cortex-m7: every layer timed, the sum within the whole inference
    layers = report["layers"]
    assert len(layers) == len(digits["cortex-m7"][1]["layers"]) and all(la["instructions"] >= 0 for la in layers)
    total = report["layers_total"]
    assert 0 < total["layers_instructions"] <= total["instructions"] == counts[0]
    tick = float(instructions_per_tick(get_board(board)))
    assert f"({tick:g}-instruction ticks)" in total["note"]
    kernels = {la["kernel"] for la in layers if la["op"] == "Conv"}
    assert kernels <= ({"conv2d_s8_mve", "conv2d_s8_mve_dw"} if board == "cortex-m55" else
                       {"conv2d_s8_dsp", "conv2d_s8_dsp_dw", "conv2d_s8_dsp_dw3x3"}), kernels


@pytest.mark.slow
@pytest.mark.parametrize("board", ["cortex-m33"])
def test_dsp_grid_bit_exact(board, tmp_path):
    """The cortex_m_dsp kernels built for the board (its -mcpu: Armv8-M Mainline with the DSP
    extension) against the numpy reference on the dsp_ cases (the wide softmax rows excepted: a
    132 KB input, and the int4 twins, int8 here: their shapes are the int8 cases'), every weighted layer on them. (On the M4, an Armv7E-M like the M7, digits runs
    them: test_digits_equals_cortex_m7_and_host.)"""
    cases = [c for c in kc.ids_with("dsp_") if c != "dsp_softmax_wide_rows" and kc.W4_MARK not in c]
    net = kc.save_net(kc.make_net(f"dsp_{board[-3:].replace('-', '')}", cases), tmp_path)
    g = kc.reference_graph(net, board, "lite", "int8")
    samples = kc.float_samples(net, 1, seed=31) + kc.dequantized(g, kc.int8_samples(g, 1, seed=32))
    info = kc.build(net, tmp_path / "build", board, "lite", "int8")
    assert info["fallbacks"] == [] and {la["kernel"] for la in info["layers"] if la["op"] == "Conv"} <= \
        {"conv2d_s8_dsp", "conv2d_s8_dsp_dw", "conv2d_s8_dsp_dw3x3", "fc_s8_dsp"}  # (a large 1x1 conv runs the FC)
    raw = run_samples(get_board(board), info, samples, False)["raw"]
    index = {t["name"]: i for i, t in enumerate(info["outputs"])}
    for i, sample in enumerate(samples):
        want = run_quantized_model(g, sample)[0]
        for cid in cases:
            for y in net.outputs[cid]:
                got = raw[index[y]][i].reshape(want[y].shape)
                assert np.array_equal(got, want[y]), f"{board} {cid} {y} sample {i}: {kc.mismatch(got, want[y])}"
