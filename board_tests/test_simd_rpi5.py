"""The neon kernel set on the rpi5 board (aarch64, -mcpu=cortex-a76: SDOT), cross-built and
run under qemu-aarch64, against the numpy integer reference, bit for bit; and the same
layers without the dot-product extension (an armv8-a variant of the board, as a CPU without
SDOT would build them).

Grids: kernel_cases.HOST_GROUPS (every shared case) and simd_cases.GROUPS (the SIMD edge
cases). Each group is one multi-input model: one cross build and one QEMU run. The harness
takes float inputs, so the samples are random floats a bit beyond the calibration range plus
the dequantized values of random int8 codes over the whole range and of all -128 / all 127
(they quantize back to exactly those codes). Checked per case:
  - the raw int8 outputs equal run_quantized_model's int8 outputs (and so the host build's,
    which test_kernels_host.py / test_simd_host.py hold to the same reference), and for the
    SIMD cases also the host avx2 library's outputs on the same inputs, directly;
  - each SIMD case's layer really runs its neon kernel;
  - fp32 builds agree with run_float to a relative 1e-5.
A missing cross compiler, sysroot, qemu-aarch64 or scons makes these tests fail, never skip.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import kernel_cases as kc
import simd_cases as sc
from cuvil_sdk import runtime
from cuvil_sdk.boards import Board, get_board
from cuvil_sdk.commands import do_build, run_samples
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_float, run_quantized_model
from tools import missing_tools

BOARD, PROFILE = "rpi5", "standard"
FLOAT_SAMPLES = 3
INT8_SAMPLES = 3
FP32_RTOL = 1e-5
TOOLS = ["aarch64-linux-gnu-gcc", "qemu-aarch64", "scons"]

GRID = {**{f"grid_{k}": v for k, v in kc.HOST_GROUPS.items()}, **{f"simd_{k}": v for k, v in sc.GROUPS.items()}}
PARAMS = [pytest.param(group, cid, id=cid) for group, ids in GRID.items() for cid in ids]
NO_DOTPROD_GROUPS = ["simd_conv", "simd_dw_fc", "grid_qdq_ties"]


def no_dotprod_board() -> Board:
    """rpi5 with -march=armv8-a instead of -mcpu=cortex-a76: no __ARM_FEATURE_DOTPROD."""
    board = get_board(BOARD)
    data = dict(board.data)
    tool = dict(data["toolchain"])
    tool["cflags"] = [("-march=armv8-a" if f.startswith("-mcpu=") else f) for f in tool["cflags"]]
    data["toolchain"] = tool
    return dataclasses.replace(board, name="rpi5-armv8a", data=data)


@dataclasses.dataclass
class Run:
    net: kc.Net
    info: dict
    raw: list  # per sample: {output: int8 or float array}
    want_q: list
    want_f: list
    outputs: list  # per sample: {output: float array} as the harness dequantized them
    samples: list


def make_net(group: str) -> kc.Net:
    ids = GRID[group]
    return sc.make_net(f"r_{group}", ids) if group.startswith("simd_") else kc.make_net(f"r_{group}", ids)


def build_and_run(folder: Path, group: str, board: Board, int4: bool = True) -> Run:
    """int4: the w4_ cases' layers int4 (the neon int4 kernels)."""
    net = kc.save_net(make_net(group), folder)
    g = kc.reference_graph(net, BOARD, PROFILE, "int8", int4=int4)
    req = CompileRequest(model=net.path, board=board, profile=get_profile(PROFILE), precision="int8",
                         calib=str(net.calib), name=net.name, int4_layers=kc.int4_layers(net) if int4 else [])
    info = do_build(req, folder / "out", 2)
    kc.check_io_contract(info, g, int8=True)
    samples = kc.float_samples(net, FLOAT_SAMPLES, seed=31)
    samples += kc.dequantized(g, kc.int8_samples(g, INT8_SAMPLES, seed=32))
    result = run_samples(board, info, samples, False)
    names = [t["name"] for t in info["outputs"]]
    raw = [{n: result["raw"][j][i].reshape(g.tensors[n].shape) for j, n in enumerate(names)}
           for i in range(len(samples))]
    refs = [run_quantized_model(g, s) for s in samples]
    return Run(net, info, raw, [r[0] for r in refs], [r[1] for r in refs], result["outputs"], samples)


@pytest.fixture(scope="module")
def rpi5_group(tmp_path_factory):
    return kc.Lazy(lambda group: build_and_run(tmp_path_factory.mktemp(f"rpi5_{group}"), group, get_board(BOARD)))


def test_rpi5_tools_present():
    missing = missing_tools(TOOLS)
    assert not missing, f"missing tools: {missing} (Debian: gcc-aarch64-linux-gnu, qemu-user, scons)"


@pytest.mark.parametrize("group, cid", PARAMS)
def test_neon_int8_bit_exact(rpi5_group, group, cid):
    run = rpi5_group(group)
    for y in run.net.outputs[cid]:
        for i, (got, want) in enumerate(zip(run.raw, run.want_q)):
            assert got[y].dtype == np.int8
            assert np.array_equal(got[y], want[y]), f"{cid} output {y}, sample {i}: {kc.mismatch(got[y], want[y])}"


@pytest.mark.parametrize("group", list(sc.GROUPS))
def test_neon_kernels_are_selected_and_equal_host(rpi5_group, tmp_path_factory, group):
    """Each SIMD case's layer runs its neon kernel (int4 cases: the int4 one); the host (avx2)
    library gives the same int8 outputs for the same inputs (the int8 cases: the int4 twins
    equal the reference here, and on host in test_x86_variants.py)."""
    run = rpi5_group(f"simd_{group}")
    chosen = sc.main_layer_kernels(run.info, run.net)
    for cid in sc.GROUPS[group]:
        assert chosen[cid] == sc.expected_kernel(cid, "neon", int4=True), f"{cid}: {chosen[cid]}"
    layers = sc.main_layers(run.info, run.net)
    for cid in [c for c in sc.GROUPS[group] if c in sc.NEON_PATHS]:  # the path the case is there for
        assert sc.NEON_PATHS[cid] in layers[cid].get("variant", ""), f"{cid}: {layers[cid].get('variant')}"
    host = kc.build(run.net, tmp_path_factory.mktemp(f"host_{group}") / "out", "host", PROFILE, "int8")
    with runtime.load(host["artifacts"]["so"]) as model:
        for i, s in enumerate(run.samples):
            ours = model.run(s)  # quantize, int8 layers, dequantize: in C on both sides
            for cid in [c for c in sc.GROUPS[group] if kc.W4_MARK not in c]:
                for y in run.net.outputs[cid]:
                    theirs = run.outputs[i][y].reshape(ours[y].shape)
                    assert np.array_equal(ours[y], theirs), f"{cid}: host and rpi5 differ on sample {i}"


@pytest.mark.slow
@pytest.mark.parametrize("group", NO_DOTPROD_GROUPS)
def test_neon_without_dotprod_bit_exact(tmp_path_factory, group):
    """The same layers built for armv8-a (SDOT replaced by widening multiplies) are bit-exact too."""
    board = no_dotprod_board()
    run = build_and_run(tmp_path_factory.mktemp(f"armv8a_{group}"), group, board, int4=False)
    source = (Path(run.info["out_dir"]) / "build.json").read_text()
    assert "-march=armv8-a" in source and "cortex-a76" not in source
    assert any(l["kernel"].endswith("_neon") for l in run.info["layers"])
    for cid in GRID[group]:
        for y in run.net.outputs[cid]:
            for i, (got, want) in enumerate(zip(run.raw, run.want_q)):
                assert np.array_equal(got[y], want[y]), f"{cid} output {y}, sample {i}: {kc.mismatch(got[y], want[y])}"


def float_grid_run(folder: Path, precision: str = "fp32", ids: list[str] | None = None):
    """The float grid (kernel_cases.FP32_CASES and the SIMD float cases, or `ids`) as one model
    built in `precision` for rpi5 and run under QEMU: (net, build info, outputs, run_float's, ids)."""
    ids = ids or kc.FP32_CASES + sc.FP32_IDS
    saved = dict(kc.CASES)
    try:
        kc.CASES.update(sc.BY_ID)
        net = kc.save_net(kc.make_net(f"r_{precision}", ids), folder)
    finally:
        kc.CASES.clear()
        kc.CASES.update(saved)
    g = kc.reference_graph(net, BOARD, PROFILE, "fp32")
    info = kc.build(net, folder / "out", BOARD, PROFILE, precision)
    samples = kc.float_samples(net, FLOAT_SAMPLES, seed=33)
    result = run_samples(get_board(BOARD), info, samples, False)
    return net, info, result["outputs"], [run_float(g, s) for s in samples], ids


@pytest.fixture(scope="module")
def fp32_run(tmp_path_factory):
    return kc.Lazy(lambda _key: float_grid_run(tmp_path_factory.mktemp("rpi5_fp32")))


def test_neon_fp32_matches_run_float(fp32_run):
    net, info, got, want, ids = fp32_run("fp32")
    chosen = sc.main_layer_kernels(info, net)
    for cid in sc.FP32_IDS:
        assert chosen[cid] == f"{sc.EXPECT[cid]}_f32_neon", f"{cid}: {chosen[cid]}"
    for cid in ids:
        for y in net.outputs[cid]:
            for i, (a, b) in enumerate(zip(got, want)):
                atol = FP32_RTOL * float(np.abs(b[y]).max())
                np.testing.assert_allclose(a[y].reshape(b[y].shape), b[y], rtol=FP32_RTOL, atol=atol,
                                           err_msg=f"{cid} output {y}, sample {i}")
