"""Host board: the C kernels of the element-wise math, reductions, softmax and normalization
ops (math_cases.py) against the numpy references. All the cases are ONE int8 model and ONE
fp32 model (two builds for the whole grid):
  - int8: run_int8 equals reference.run_int bit for bit, on random int8 codes over the whole
    range plus all -128 / all 127 inputs, and the float API equals run_quantized_model;
  - fp32: the library equals run_float to a relative 1e-5 of the output's magnitude.
A missing gcc or scons makes these tests fail, never skip.
"""
from __future__ import annotations

import numpy as np
import pytest

import kernel_cases as kc
import math_cases as mc
from cuvil_sdk import runtime
from cuvil_sdk.reference import run_float, run_int, run_quantized_model
from tools import missing_tools

pytestmark = pytest.mark.slow

BOARD, PROFILE = "host", "standard"
INT8_SAMPLES, FLOAT_SAMPLES = 6, 4
FP32_RTOL = 1e-5


def build(tmp_path_factory, precision: str) -> dict:
    folder = tmp_path_factory.mktemp(f"math_{precision}")
    net = kc.save_net(mc.make_math_net(f"math_{precision}", mc.MATH_CASES), folder)
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


@pytest.mark.parametrize("cid", mc.MATH_CASES + [mc.GROUPNORM])
def test_math_fp32_matches_run_float(built, cid):
    b = built("fp32")
    for y in b["net"].outputs[cid]:
        for i, (got, want) in enumerate(zip(b["float_got"], b["float_want"])):
            assert got[y].dtype == np.float32 and got[y].shape == want[y].shape
            atol = FP32_RTOL * float(np.abs(want[y]).max())
            np.testing.assert_allclose(got[y], want[y], rtol=FP32_RTOL, atol=atol, err_msg=f"{cid} output {y}, sample {i}")
