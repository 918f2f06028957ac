"""Host board: the int8 C kernels equal the numpy integer reference bit for bit, per op and
per model (kernel_cases.py has the grid: odd sizes, non-square kernels, strides, pads,
dilation, grouped and depthwise convolutions, broadcasting, pooling modes, ...).

Each group of cases is ONE multi-input, multi-output ONNX model, compiled for `host` with
a fixed random calibration file through `commands.do_build`, and loaded with
`cuvil_sdk.runtime`. The reference graph comes from the same stages in Python
(frontend -> passes -> calibrate -> quantize_graph). Compared, with np.array_equal:
  - run_int8 (raw int8 in/out) against reference.run_int, on random int8 codes over the
    whole range plus all -128 / all 127 inputs;
  - the float API model(x) against run_quantized_model's dequantized outputs;
  - fp32 builds (profile standard) against run_float, to a relative 1e-5.
A missing gcc or scons makes these tests fail, never skip.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import kernel_cases as kc
from cuvil_sdk import runtime
from cuvil_sdk.reference import run_float, run_int, run_quantized_model
from tools import missing_tools

BOARD, PROFILE = "host", "standard"
INT8_SAMPLES = 6  # random int8 samples (plus the two extreme ones)
FLOAT_SAMPLES = 4
FP32_RTOL = 1e-5

INT8_PARAMS = [pytest.param(group, cid, id=cid) for group, ids in kc.HOST_GROUPS.items() for cid in ids]


@dataclass
class Built:
    net: kc.Net
    g: object
    info: dict
    int8_got: list  # per sample: {output: array} from the library
    int8_want: list  # per sample: {output: array} from the reference
    float_got: list
    float_want: list


def build_int8(tmp_path_factory, group: str, case_ids: list[str], method: str = "minmax") -> Built:
    folder = tmp_path_factory.mktemp(f"host_{group}_{method}")
    net = kc.save_net(kc.make_net(f"k_{group}", case_ids), folder)
    g = kc.reference_graph(net, BOARD, PROFILE, "int8", method)
    info = kc.build(net, folder / "out", BOARD, PROFILE, "int8", method)
    kc.check_io_contract(info, g, int8=True)
    q_samples = kc.int8_samples(g, INT8_SAMPLES, seed=11)
    f_samples = kc.float_samples(net, FLOAT_SAMPLES, seed=12)
    with runtime.load(info["artifacts"]["so"]) as model:
        assert model.int8 and model.output_names == g.outputs
        int8_got = [model.run_int8(s) for s in q_samples]
        float_got = [model.run(s) for s in f_samples]
    return Built(net, g, info, int8_got, [run_int(g, s) for s in q_samples], float_got,
                 [run_quantized_model(g, s)[1] for s in f_samples])


@pytest.fixture(scope="module")
def int8_group(tmp_path_factory):
    return kc.Lazy(lambda group: build_int8(tmp_path_factory, group, kc.HOST_GROUPS[group]))


def test_host_tools_present():
    missing = missing_tools(["gcc", "scons"])
    assert not missing, f"missing tools: {missing} (install gcc and scons; these tests never skip)"


@pytest.mark.parametrize("group, cid", INT8_PARAMS)
def test_int8_kernel_bit_exact(int8_group, group, cid):
    built = int8_group(group)
    for y in built.net.outputs[cid]:
        want_all = np.stack([w[y] for w in built.int8_want])
        assert len(np.unique(want_all)) > 1, f"{cid}: the reference output {y} is constant: a vacuous test"
        for i, (got, want) in enumerate(zip(built.int8_got, built.int8_want)):
            assert got[y].dtype == np.int8
            assert np.array_equal(got[y], want[y]), f"{cid} output {y}, int8 sample {i}: {kc.mismatch(got[y], want[y])}"


@pytest.mark.parametrize("group, cid", INT8_PARAMS)
def test_float_api_bit_exact(int8_group, group, cid):
    """model(x): quantize in C, int8 layers, dequantize in C == the same in numpy."""
    built = int8_group(group)
    for y in built.net.outputs[cid]:
        for i, (got, want) in enumerate(zip(built.float_got, built.float_want)):
            assert got[y].dtype == np.float32
            assert np.array_equal(got[y], want[y]), \
                f"{cid} output {y}, float sample {i}: {kc.mismatch(got[y], want[y])}"


@pytest.mark.parametrize("method", ["percentile", "mse"])
def test_calibration_methods_bit_exact(tmp_path_factory, method):
    """--calib-method reaches the build: the library's scales and outputs are those of the
    reference quantized with the same method (and they differ from minmax's)."""
    cases = ["network", "conv_depthwise_mult2", "add_same_shape", "avgpool_include_pad", "concat_channels"]
    built = build_int8(tmp_path_factory, "methods", cases, method)
    minmax = kc.reference_graph(built.net, BOARD, PROFILE, "int8", "minmax")
    assert any(built.g.tensors[y].q.scalar() != minmax.tensors[y].q.scalar() for y in built.g.outputs), \
        f"{method} calibration gave exactly the minmax scales: the method is not exercised"
    for got, want in zip(built.int8_got + built.float_got, built.int8_want + built.float_want):
        for y in built.g.outputs:
            assert np.array_equal(got[y], want[y]), f"{method}, output {y}: {kc.mismatch(got[y], want[y])}"


# --- fp32 -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fp32_build(tmp_path_factory):
    def make(_key):
        folder = tmp_path_factory.mktemp("host_fp32")
        net = kc.save_net(kc.make_net("k_fp32", kc.FP32_CASES), folder)
        g = kc.reference_graph(net, BOARD, "standard", "fp32")
        info = kc.build(net, folder / "out", BOARD, "standard", "fp32")
        kc.check_io_contract(info, g, int8=False)
        samples = kc.float_samples(net, FLOAT_SAMPLES, seed=13)
        with runtime.load(info["artifacts"]["so"]) as model:
            assert not model.int8
            got = [model.run(s) for s in samples]
        return net, got, [run_float(g, s) for s in samples]
    return kc.Lazy(make)


@pytest.mark.parametrize("cid", kc.FP32_CASES)
def test_fp32_kernel_matches_run_float(fp32_build, cid):
    net, got, want = fp32_build("fp32")
    for y in net.outputs[cid]:
        for i, (a, b) in enumerate(zip(got, want)):
            assert a[y].dtype == np.float32 and a[y].shape == b[y].shape
            # relative 1e-5, measured against the output's magnitude (float32 sums vs float64)
            atol = FP32_RTOL * float(np.abs(b[y]).max())
            np.testing.assert_allclose(a[y], b[y], rtol=FP32_RTOL, atol=atol, err_msg=f"{cid} output {y}, sample {i}")


def test_qdq_cases_requantize_by_powers_of_two(int8_group):
    """The qdq_ cases keep their imposed power-of-two scales, so their multipliers are
    exactly 2^30 (Add: 2^20): the rounding of exact ties is what they test."""
    built = int8_group("qdq_ties")
    for name in built.g.inputs + built.g.outputs:
        scale = built.g.tensors[name].q.scalar()[0]
        assert np.log2(scale) == round(np.log2(scale)), f"{name}: scale {scale} is not the imposed power of two"
    checked = 0
    for node in built.g.nodes:
        q = node.q
        mults = [q[k] for k in ("ma", "mb") if k in q] if node.op == "Add" else []
        if node.op in ("Conv", "Gemm", "Mul"):
            mults.append(q["mult"])
        if node.op == "Concat":
            mults += [p["mult"] for p in q["parts"]]
        for m in mults:
            assert set(np.atleast_1d(m).tolist()) <= {1 << 30, 1 << 20}, f"{node.name}: multipliers {m}"
            checked += 1
    assert checked >= 7
