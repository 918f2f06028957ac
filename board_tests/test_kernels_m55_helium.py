"""The Helium (MVE) kernels (sdk/templates/helium, chosen by sdk/kernels/helium/rules.py) on the
cortex-m55 board under qemu-system-arm -M mps3-an547: bit for bit equal to the numpy integer
reference on kernel_cases.py's grid.

The grid is one firmware and one QEMU run: the dsp_ cases (odd sizes, channel counts that are not a
multiple of 16 or 4, strides, padding, dilations, groups, 1x1, depthwise 3x3 stride 1 and 2, channel
chunks, long pooling rows, broadcast adds, softmax, transposes, and what trained models produce:
shifts from 13 to 62, multipliers near 2^31, biases whose worst-case accumulator passes int32) and
the mve_ cases written for the Helium paths (the 64-bit requantization on the im2col tile and in the
depthwise kernel, its general tile, rows past its buffer, the FC kernel over a large pointwise
layer, channel tails of the pooling kernels, and a layer the set declines). The same samples (float
ones over a range wider than calibration, int8 codes at both extremes and random) run through
run_quantized_model. The wide softmax rows (a 132 KB input, rows past 2^15 values: the 64-bit sums)
are a firmware of their own.

A missing arm-none-eabi-gcc, qemu-system-arm or scons makes these tests fail, never skip.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import kernel_cases as kc
from cuvil_sdk.boards import get_board
from cuvil_sdk.commands import run_samples
from cuvil_sdk.kernels.contract import declarations
from cuvil_sdk.reference import run_quantized_model
from tools import missing_tools

BOARD, PROFILE = "cortex-m55", "lite"
TOOLS = ["arm-none-eabi-gcc", "arm-none-eabi-objcopy", "qemu-system-arm", "scons"]
WIDE = "dsp_softmax_wide_rows"
# the dsp_w4_ cases are int4 twins of dsp_ ones (the Helium set has no int4 kernels): int8, they would repeat them
CASES = [c for c in kc.ids_with("dsp_") if c != WIDE and kc.W4_MARK not in c] + kc.ids_with("mve_")
DECLINED = {"mve_conv_3x3_c256_declined": "conv2d_s8_dsp"}  # case -> the DSP kernel that runs it
HELIUM = set(declarations("helium"))


@dataclass
class Grid:
    net: kc.Net
    info: dict
    raw: list  # per output (samples, size), int8
    want: list  # per sample {output: int8 array}


@pytest.fixture(scope="module")
def grid(tmp_path_factory) -> Grid:
    assert not missing_tools(TOOLS), f"missing tools: {missing_tools(TOOLS)} (these tests never skip)"
    folder = tmp_path_factory.mktemp("helium")
    net = kc.save_net(kc.make_net("helium_grid", CASES), folder)
    g = kc.reference_graph(net, BOARD, PROFILE, "int8")
    samples = kc.float_samples(net, 2, seed=31) + kc.dequantized(g, kc.int8_samples(g, 2, seed=32))
    # the arena in the board's 2 MiB SRAM: the grid's float inputs fill the 512 KiB DTCM
    info = kc.build(net, folder / "build", BOARD, PROFILE, "int8", arena_region="sram")
    raw = run_samples(get_board(BOARD), info, samples, False)["raw"]
    return Grid(net, info, raw, [run_quantized_model(g, s)[0] for s in samples])


def test_m55_tools_present():
    missing = missing_tools(TOOLS)
    assert not missing, f"missing tools: {missing} (these tests never skip)"


@pytest.mark.slow
@pytest.mark.parametrize("cid", CASES)
def test_helium_kernel_bit_exact(grid, cid):
    index = {t["name"]: i for i, t in enumerate(grid.info["outputs"])}
    for y in grid.net.outputs[cid]:
        for i, want in enumerate(grid.want):
            got = grid.raw[index[y]][i].reshape(want[y].shape)
            assert np.array_equal(got, want[y]), f"{cid} output {y}, sample {i}: {kc.mismatch(got, want[y])}"


def layers_of(grid: Grid, cid: str) -> list[dict]:
    return [la for la in grid.info["layers"] if la["name"].startswith(cid + "_")]


@pytest.mark.slow
def test_every_helium_kernel_and_path_ran(grid):
    """The grid is not vacuous: each Helium kernel was chosen, each case's weighted, pooling and
    element-wise layers ran on Helium kernels (but the one it declines), and the variants reached
    include both requantizations of the conv, depthwise and FC kernels, the staged columns, and
    the depthwise kernel's assembly (3x3 stride 1 and 2) and general tiles, its row ring and its
    slots per kernel row."""
    kinds = ("Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "Add", "Softmax", "Transpose")
    used = {la["kernel"] for la in grid.info["layers"]}
    assert HELIUM <= used, f"never chosen: {sorted(HELIUM - used)}"
    for cid in CASES:
        mine = [la for la in layers_of(grid, cid) if la["op"] in kinds]
        assert mine, cid
        want = {DECLINED[cid]} if cid in DECLINED else HELIUM
        assert all(la["kernel"] in want for la in mine), (cid, [(la["name"], la["kernel"]) for la in mine])
    variants = {(la["kernel"], la.get("variant", "")) for la in grid.info["layers"]}
    for kernel, variant in (("conv2d_s8_mve", "4x2"), ("conv2d_s8_mve", "4x2 rq64"), ("conv2d_s8_mve", "4x2 staged"),
                            ("conv2d_s8_mve_dw", "4x4 3x3 s1"), ("conv2d_s8_mve_dw", "4x4 3x3 s2"),
                            ("conv2d_s8_mve_dw", "4x4 5x5 s2"), ("conv2d_s8_mve_dw", "4x4 3x3 s2 rq64"),
                            ("conv2d_s8_mve_dw", "4x4 3x3 s1 d"), ("conv2d_s8_mve_dw", "4x4 2x2 s1 d rows"),
                            ("fc_s8_mve", "1x4"), ("fc_s8_mve", "1x4 rq64"),
                            ("transpose_s8_mve", "16 lanes"), ("transpose_s8_mve", "8 lanes"),
                            ("add_s8_mve", "contiguous"), ("add_s8_mve", "strided")):
        assert (kernel, variant) in variants, (kernel, variant, sorted(variants))
    kinds_of = {la["name"]: la["kernel"] for la in grid.info["layers"]}
    assert any(kinds_of[la["name"]] == "fc_s8_mve" for la in layers_of(grid, "mve_conv_1x1_k2100"))
    assert {la["kernel"] for la in layers_of(grid, "mve_dw_row_past_buffer") if la["op"] == "Conv"} == {"conv2d_s8_mve"}


@pytest.mark.slow
def test_only_the_declined_layer_is_a_fallback(grid):
    """The layer Helium declines is the only one named in the build's fallbacks, with its reason
    and the DSP kernel that ran it; every other layer of the grid either ran a Helium kernel or
    has no kernel in any fast set (none here)."""
    fallbacks = grid.info["fallbacks"]
    assert [(f["layer"].split("_Conv")[0], f["kernel"]) for f in fallbacks] == list(DECLINED.items()), fallbacks
    assert fallbacks[0]["reason"] == "helium: a column of 2304 values (the 4-pixel im2col tile takes 2048)"


@pytest.mark.slow
def test_softmax_rows_past_2_15_values(tmp_path):
    """softmax_s8_mve's 64-bit sums (`wide`, rows of 2^15 values or more) against the reference."""
    net = kc.save_net(kc.make_net("helium_wide", [WIDE]), tmp_path)
    g = kc.reference_graph(net, BOARD, PROFILE, "int8")
    samples = kc.float_samples(net, 1, seed=33)
    info = kc.build(net, tmp_path / "build", BOARD, PROFILE, "int8")
    assert {la["kernel"] for la in info["layers"] if la["op"] == "Softmax"} == {"softmax_s8_mve"}
    raw = run_samples(get_board(BOARD), info, samples, False)["raw"]
    want = run_quantized_model(g, samples[0])[0]
    for y, got in zip(net.outputs[WIDE], raw):
        assert np.array_equal(got[0].reshape(want[y].shape), want[y]), kc.mismatch(got[0].reshape(want[y].shape), want[y])


@pytest.mark.slow
def test_grid_covers_what_trained_models_produce(grid):
    """Helium layers of the grid see shifts below 16 and above 60 and biases whose worst-case
    accumulator |bias| + K * 255 * 128 passes int32 (kernel_cases.py, "what trained models produce")."""
    g = kc.reference_graph(grid.net, BOARD, PROFILE, "int8")
    kernels = {la["name"]: la["kernel"] for la in grid.info["layers"]}
    shifts, over = [], 0
    for node in g.nodes:
        q = getattr(node, "q", None)
        if kernels.get(node.name) not in HELIUM or not q or "w" not in q:
            continue
        shifts += list(np.atleast_1d(q["shift"]))
        k = int(np.prod(q["w"].shape)) // q["w"].shape[0]
        over += int(np.abs(q["bias"].astype(np.int64)).max() + k * 255 * 128 > 2**31 - 1)
    assert min(shifts) < 16 and max(shifts) > 60 and over >= 3, (min(shifts), max(shifts), over)
