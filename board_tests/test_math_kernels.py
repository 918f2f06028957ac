"""The C kernels of the element-wise math, reductions, softmax and normalization ops
(math_cases.py) against the numpy references, on three targets:
  - host: all the cases in ONE int8 model and ONE fp32 model. int8: run_int8 equals
    reference.run_int bit for bit, on random int8 codes over the whole range plus all -128 /
    all 127 inputs, and the float API equals run_quantized_model; fp32: the library equals
    run_float to a relative 1e-5 of the output's magnitude;
  - CUDA: the same models built for host-cuda (sm_90), their GPU path run on the CPU
    emulation of the driver (test_jetson.py's machinery): int8 bit for bit, fp32 to 1e-5;
  - cortex-m7: math_cases.M7_CASES (a small encoder-like block and a few ops) in one
    firmware under qemu-system-arm, and rpi5: every int8 case in one library under
    qemu-aarch64, bit for bit with the numpy reference (hence with host int8 and CUDA).
A missing compiler, scons or QEMU makes these tests fail, never skip.
"""
from __future__ import annotations

import numpy as np
import pytest

import kernel_cases as kc
import math_cases as mc
from cuvil_sdk import runtime
from cuvil_sdk.boards import get_board
from cuvil_sdk.commands import run_samples
from cuvil_sdk.reference import run_float, run_int, run_quantized_model
from test_jetson import Emulated, build_cuda_host, emulator, needs_nvcc  # noqa: F401  (emulator: a fixture)
from tools import missing_tools

pytestmark = pytest.mark.slow

BOARD, PROFILE = "host", "standard"
INT8_SAMPLES, FLOAT_SAMPLES = 6, 4
FP32_RTOL = 1e-5


def build(tmp_path_factory, precision: str) -> dict:
    folder = tmp_path_factory.mktemp(f"math_{precision}")
    cases = mc.MATH_CASES + (mc.FP32_ONLY if precision == "fp32" else [])
    net = kc.save_net(mc.make_math_net(f"math_{precision}", cases), folder)
    g = kc.reference_graph(net, BOARD, PROFILE, precision)
    info = kc.build(net, folder / "out", BOARD, PROFILE, precision)
    kc.check_io_contract(info, g, int8=precision == "int8")
    f_samples = kc.float_samples(net, FLOAT_SAMPLES, seed=12)
    out = {"net": net, "g": g}
    with runtime.load(info["artifacts"]["so"]) as model:
        assert model.int8 == (precision == "int8")
        out["float_got"] = [model.run(s) for s in f_samples]
        if precision == "int8":
            q_samples = kc.int8_samples(g, INT8_SAMPLES, seed=11)
            out["int8_got"] = [model.run_int8(s) for s in q_samples]
            out["int8_want"] = [run_int(g, s) for s in q_samples]
            out["float_want"] = [run_quantized_model(g, s)[1] for s in f_samples]
        else:
            out["float_want"] = [run_float(g, s) for s in f_samples]
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return kc.Lazy(lambda precision: build(tmp_path_factory, precision))


def test_math_host_tools_present():
    missing = missing_tools(["gcc", "scons"])
    assert not missing, f"missing tools: {missing} (install gcc and scons; these tests never skip)"


@pytest.mark.parametrize("cid", mc.MATH_CASES + [mc.GROUPNORM])
def test_math_int8_bit_exact(built, cid):
    b = built("int8")
    for y in b["net"].outputs[cid]:
        want_all = np.stack([w[y] for w in b["int8_want"]])
        assert len(np.unique(want_all)) > 1, f"{cid}: the reference output {y} is constant: a vacuous test"
        for i, (got, want) in enumerate(zip(b["int8_got"], b["int8_want"])):
            assert got[y].dtype == np.int8
            assert np.array_equal(got[y], want[y]), f"{cid} output {y}, int8 sample {i}: {kc.mismatch(got[y], want[y])}"
        for i, (got, want) in enumerate(zip(b["float_got"], b["float_want"])):
            assert np.array_equal(got[y], want[y]), f"{cid} output {y}, float sample {i}: {kc.mismatch(got[y], want[y])}"


@pytest.mark.parametrize("cid", mc.MATH_CASES + mc.FP32_ONLY + [mc.GROUPNORM])
def test_math_fp32_matches_run_float(built, cid):
    b = built("fp32")
    for y in b["net"].outputs[cid]:
        for i, (got, want) in enumerate(zip(b["float_got"], b["float_want"])):
            assert got[y].dtype == np.float32 and got[y].shape == want[y].shape
            atol = FP32_RTOL * float(np.abs(want[y]).max())
            np.testing.assert_allclose(got[y], want[y], rtol=FP32_RTOL, atol=atol, err_msg=f"{cid} output {y}, sample {i}")


# --- CUDA (GPU path on the CPU emulation) ------------------------------------------------------
def build_cuda(tmp_path_factory, emulator_lib, precision: str) -> dict:
    """The math net built for host-cuda (sm_90), run through the GPU path on the emulation."""
    folder = tmp_path_factory.mktemp(f"math_cuda_{precision}")
    cases = mc.MATH_CASES + (mc.FP32_ONLY if precision == "fp32" else [])
    net = kc.save_net(mc.make_math_net(f"math_cuda_{precision}", cases), folder)
    g = kc.reference_graph(net, "host-cuda", PROFILE, precision)
    info = build_cuda_host(net, folder / "out", precision)
    emu = Emulated(info["artifacts"]["so"], emulator_lib)
    assert emu.start()[0] == "cuda"
    if precision == "int8":
        samples = kc.int8_samples(g, 2, seed=31)
        with runtime.load(info["artifacts"]["so"]) as model:
            got = [model.run_int8(s) for s in samples]
        return {"net": net, "info": info, "got": got, "want": [run_int(g, s) for s in samples]}
    samples = kc.float_samples(net, 2, seed=32)
    with runtime.load(info["artifacts"]["so"]) as model:
        got = [model.run(s) for s in samples]
    return {"net": net, "info": info, "got": got, "want": [run_float(g, s) for s in samples]}


@pytest.fixture(scope="module")
def cuda_built(tmp_path_factory, emulator):  # noqa: F811  (the fixture imported above)
    return kc.Lazy(lambda precision: build_cuda(tmp_path_factory, emulator, precision))


@needs_nvcc
@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_math_cuda_runs_every_layer(cuda_built, precision):
    """The GPU path runs every layer (nothing left on the CPU), int8 with every math kernel."""
    cuda_info = cuda_built(precision)["info"]["cuda"]
    assert "disabled" not in cuda_info, cuda_info.get("disabled")
    if precision == "int8":
        assert set(mc.MATH_INT8_KERNELS) <= set(cuda_info["kernels"])


@needs_nvcc
@pytest.mark.parametrize("cid", mc.MATH_CASES + [mc.GROUPNORM])
def test_math_cuda_int8_bit_exact_emulated(cuda_built, cid):
    b = cuda_built("int8")
    for y in b["net"].outputs[cid]:
        for i, (got, want) in enumerate(zip(b["got"], b["want"])):
            assert np.array_equal(got[y], want[y]), f"{cid} output {y}, int8 sample {i}: {kc.mismatch(got[y], want[y])}"


@needs_nvcc
@pytest.mark.parametrize("cid", mc.MATH_CASES + mc.FP32_ONLY + [mc.GROUPNORM])
def test_math_cuda_fp32_matches_run_float_emulated(cuda_built, cid):
    b = cuda_built("fp32")
    for y in b["net"].outputs[cid]:
        for i, (got, want) in enumerate(zip(b["got"], b["want"])):
            atol = FP32_RTOL * float(np.abs(want[y]).max())
            np.testing.assert_allclose(got[y], want[y], rtol=FP32_RTOL, atol=atol, err_msg=f"{cid} output {y}, sample {i}")


# --- cortex-m7 (qemu-system-arm) and rpi5 (qemu-aarch64) ------------------------------------------
BOARD_TOOLS = {"cortex-m7": ["arm-none-eabi-gcc", "arm-none-eabi-objcopy", "qemu-system-arm", "scons"],
               "rpi5": ["aarch64-linux-gnu-gcc", "qemu-aarch64", "scons"]}
BOARD_PROFILES = {"cortex-m7": "lite", "rpi5": "standard"}


def run_on_board(tmp_path_factory, board: str) -> dict:
    """cortex-m7: M7_CASES in one firmware; rpi5: every int8 case in one library; both under
    QEMU, on random floats and on the dequantized values of int8 codes (extremes included)."""
    missing = missing_tools(BOARD_TOOLS[board])
    assert not missing, f"missing tools: {missing} (these tests never skip)"
    folder = tmp_path_factory.mktemp(f"math_{board}")
    name = f"math_{board.replace('-', '_')}"
    net = kc.make_net(name, mc.M7_CASES, mc.OPSET) if board == "cortex-m7" else mc.make_math_net(name, mc.MATH_CASES)
    net = kc.save_net(net, folder)
    g = kc.reference_graph(net, board, BOARD_PROFILES[board], "int8")
    info = kc.build(net, folder / "out", board, BOARD_PROFILES[board], "int8")
    samples = kc.float_samples(net, 2, seed=41) + kc.dequantized(g, kc.int8_samples(g, 2, seed=42))
    result = run_samples(get_board(board), info, samples, False)
    return {"net": net, "info": info, "result": result, "want": [run_quantized_model(g, s)[0] for s in samples]}


@pytest.fixture(scope="module")
def board_run(tmp_path_factory):
    return kc.Lazy(lambda board: run_on_board(tmp_path_factory, board))


BOARD_PARAMS = [pytest.param("cortex-m7", cid, id=f"m7-{cid}") for cid in mc.M7_CASES] + \
    [pytest.param("rpi5", cid, id=f"rpi5-{cid}") for cid in mc.MATH_CASES + [mc.GROUPNORM]]


@pytest.mark.parametrize("board, cid", BOARD_PARAMS)
def test_math_int8_bit_exact_under_qemu(board_run, board, cid):
    run = board_run(board)
    index = {t["name"]: i for i, t in enumerate(run["info"]["outputs"])}
    for y in run["net"].outputs[cid]:
        raw = run["result"]["raw"][index[y]]
        assert len(np.unique(np.stack([w[y] for w in run["want"]]))) > 1, f"{cid}: constant reference output {y}"
        for i, want in enumerate(run["want"]):
            got = raw[i].reshape(want[y].shape)
            assert np.array_equal(got, want[y]), f"{cid} output {y}, sample {i}: {kc.mismatch(got, want[y])}"
