"""Cortex-M7 board: the int8 C kernels built into firmware (arm-none-eabi-gcc, profile
lite) and run under qemu-system-arm equal the numpy integer reference bit for bit, per op
and per model.

The grid is kernel_cases.M7_GROUPS (the case definitions are shared with
test_kernels_host.py): every group is ONE multi-input, multi-output model, so one
firmware build and one QEMU run check all its cases. The harness takes float inputs, so
the samples are random floats (a bit beyond the calibration range) plus the dequantized
values of random int8 codes over the whole range and of all -128 / all 127 codes (they
quantize back to exactly those codes). `commands.run_samples` gives the raw int8 outputs,
compared with run_quantized_model's int8 outputs, and the dequantized ones.
A missing arm-none-eabi-gcc, qemu-system-arm or scons makes these tests fail, never skip.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import kernel_cases as kc
from cuvil_sdk.boards import get_board
from cuvil_sdk.commands import run_samples
from cuvil_sdk.reference import run_quantized_model
from tools import missing_tools

pytestmark = pytest.mark.slow

BOARD, PROFILE = "cortex-m7", "lite"
FLOAT_SAMPLES = 4
INT8_SAMPLES = 4
TOOLS = ["arm-none-eabi-gcc", "arm-none-eabi-objcopy", "qemu-system-arm", "scons"]

PARAMS = [pytest.param(group, cid, id=cid) for group, ids in kc.M7_GROUPS.items() for cid in ids]


@dataclass
class Run:
    net: kc.Net
    info: dict
    result: dict  # run_samples: outputs, raw, instructions
    want_q: list  # per sample: {output: int8 array}
    want_f: list  # per sample: {output: float32 array}


@pytest.fixture(scope="module")
def m7_group(tmp_path_factory):
    def make(group: str) -> Run:
        folder = tmp_path_factory.mktemp(f"m7_{group}")
        net = kc.save_net(kc.make_net(f"m7_{group}", kc.M7_GROUPS[group]), folder)
        g = kc.reference_graph(net, BOARD, PROFILE, "int8")
        info = kc.build(net, folder / "out", BOARD, PROFILE, "int8")
        kc.check_io_contract(info, g, int8=True)
        samples = kc.float_samples(net, FLOAT_SAMPLES, seed=21)
        samples += kc.dequantized(g, kc.int8_samples(g, INT8_SAMPLES, seed=22))
        result = run_samples(get_board(BOARD), info, samples, False)
        refs = [run_quantized_model(g, s) for s in samples]
        return Run(net, info, result, [r[0] for r in refs], [r[1] for r in refs])
    return kc.Lazy(make)


def test_m7_tools_present():
    missing = missing_tools(TOOLS)
    assert not missing, f"missing tools: {missing} (these tests never skip)"


@pytest.mark.parametrize("group", list(kc.M7_GROUPS))
def test_m7_firmware_ran_every_sample(m7_group, group):
    run = m7_group(group)
    count = FLOAT_SAMPLES + INT8_SAMPLES + 2
    assert len(run.result["outputs"]) == count
    assert len(run.result["instructions"]) == count and min(run.result["instructions"]) > 0
    assert [a.shape for a in run.result["raw"]] == [(count, t["size"]) for t in run.info["outputs"]]
    assert all(a.dtype == np.int8 for a in run.result["raw"])


@pytest.mark.parametrize("group, cid", PARAMS)
def test_m7_int8_kernel_bit_exact(m7_group, group, cid):
    run = m7_group(group)
    index = {t["name"]: i for i, t in enumerate(run.info["outputs"])}
    for y in run.net.outputs[cid]:
        raw = run.result["raw"][index[y]]
        want_all = np.stack([w[y] for w in run.want_q])
        assert len(np.unique(want_all)) > 1, f"{cid}: the reference output {y} is constant: a vacuous test"
        for i, want in enumerate(run.want_q):
            got = raw[i].reshape(want[y].shape)
            assert np.array_equal(got, want[y]), f"{cid} output {y}, sample {i}: {kc.mismatch(got, want[y])}"


@pytest.mark.parametrize("group, cid", PARAMS)
def test_m7_dequantized_outputs_bit_exact(m7_group, group, cid):
    run = m7_group(group)
    for y in run.net.outputs[cid]:
        for i, want in enumerate(run.want_f):
            got = run.result["outputs"][i][y]
            assert np.array_equal(got, want[y]), f"{cid} output {y}, sample {i}: {kc.mismatch(got, want[y])}"
