"""The Helium kernel set's Python side (sdk/kernels/helium/rules.py), host only: the requantization
the MVE kernels use is the reference rule exactly, the constants they read are laid out as their
headers say, a layer the set declines is named in the build's fallbacks, and the Cortex-M boards
say which QEMU machine they run on. The kernels themselves run under QEMU in
board_tests/test_kernels_m55_helium.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.kernels.helium import rules as mve
from cuvil_sdk.kernels.requant import quantize_multiplier, requant

RNG = np.random.default_rng(31)


def mve_rq(acc: np.ndarray, m: int, s: int) -> np.ndarray:
    """cuvil_mve_rq (cuvil_mve_common.h) in numpy: VMULH.S32 keeps floor(acc * M / 2^32), VRSHL.S32
    by 32 - S adds 2^(S-33) and shifts right by S - 32 (in a wider intermediate: no overflow)."""
    hi = (acc * m) >> 32
    assert np.abs(hi).max() <= 2**30  # the lanes hold it
    r = s - 32
    return (hi + (1 << (r - 1))) >> r


def test_mve_requant_is_the_reference_rule_for_every_fast_shift():
    """For every shift 33..62 the kernels' fast form (VMULH, then VRSHL by 32 - S) equals requant()
    for int32 accumulators: the extremes, random ones, small ones and those next to a rounding tie,
    with multipliers from quantize_multiplier (2^30..2^31 - 1, and the shrunk ones of S = 62)."""
    reals = np.concatenate([np.exp(RNG.uniform(np.log(1e-21), np.log(2.0**-2), 200)), [2.0**-31, 1e-20, 0.2499]])
    shifts = set()
    for real in reals:
        m, s = quantize_multiplier(float(real))
        if s < mve.FAST_SHIFT:
            assert mve.fast_shifts(np.array([s])) == 0
            continue
        shifts.add(s)
        acc = np.concatenate([RNG.integers(-2**31, 2**31, 400, dtype=np.int64),
                              RNG.integers(-2**16, 2**16, 100, dtype=np.int64), [0, 1, -1, 2**31 - 1, -2**31]])
        ties = [((2 * k + 1) << (s - 1)) // m + d for k in range(-20, 20) for d in (-1, 0, 1)] if m else []
        acc = np.concatenate([acc, np.array([t for t in ties if -2**31 <= t < 2**31], dtype=np.int64)])
        assert np.array_equal(mve_rq(acc, m, s), requant(acc, m, s)), (real, m, s)
    assert min(shifts) == 33 and max(shifts) == 62
    assert mve.fast_shifts(np.array([33, 62])) == 1 and mve.fast_shifts(np.array([33, 32])) == 0


def test_vqrdmulh_rounding_is_not_the_rule():
    """Why the kernels do not use TFLite's VQRDMULH + rounding shift: it rounds twice and differs
    from the one rounding rule for some accumulators (here found among 20,000)."""
    m, s = quantize_multiplier(0.0123)
    acc = RNG.integers(-2**20, 2**20, 20_000, dtype=np.int64)
    doubled = (2 * acc * m + (1 << 31)) >> 32  # VQRDMULH: round(acc * M / 2^31)
    twice = (doubled + (1 << (s - 32))) >> (s - 31)  # then a rounding shift right by S - 31
    assert not np.array_equal(twice, requant(acc, m, s))


def test_folded_bias_gives_the_portable_accumulator():
    """bias' = bias - zx * sum(w) (modulo 2^32) plus the raw sum of x * w is bias + sum (x - zx) * w,
    the portable kernels' int32 accumulator, for any zero point; padded taps hold zx and add 0."""
    w = RNG.integers(-127, 128, (7, 45)).astype(np.int64)
    bias = RNG.integers(-2**20, 2**20, 7)
    for zx in (-128, -3, 0, 127):
        x = RNG.integers(-128, 128, 45).astype(np.int64)
        x[::5] = zx  # padding
        folded = mve.folded_bias(bias, w.sum(axis=1), zx).astype(np.int64)
        assert np.array_equal(folded + w @ x, bias + w @ (x - zx))
    assert mve.folded_bias(np.array([2**31 - 1]), np.array([-1]), 1)[0] == -2**31  # wraps like the int32 sums


def test_tile_and_quad_layouts():
    """The GEMM tile reads, per 16 values of K', 16 weights of each channel of a block in turn, zero
    past K and for the channels that pad the last block; the requant vectors are {M x 4, R x 4} with
    R = 32 - S (the VRSHL operand) when every shift is fast, else S (the 64-bit rule)."""
    wk = np.arange(3 * 20).reshape(3, 20) % 100
    t = mve.tile_weights(wk, 32, 2).reshape(2, 2, 2, 16)  # [pair][chunk][channel][16]
    assert np.array_equal(t[0, 0, 1], wk[1, :16]) and np.array_equal(t[0, 1, 0, :4], wk[0, 16:])
    assert not t[0, 1, 0, 4:].any() and not t[1, :, 1].any() and np.array_equal(t[1, 1, 0, :4], wk[2, 16:])
    mult, shift = np.array([10, 11, 12, 13, 14]), np.array([40, 41, 42, 43, 44])
    assert mve.quad_requant(mult, shift, 1).tolist() == [10, 11, 12, 13, -8, -9, -10, -11, 14, 0, 0, 0, -12, 0, 0, 0]
    assert mve.quad_requant(mult, shift, 0).tolist() == [10, 11, 12, 13, 40, 41, 42, 43, 14, 0, 0, 0, 44, 0, 0, 0]


def deep_conv_model(path: Path) -> None:
    """A 3x3 convolution over 256 channels (a column of 2304 values: past the Helium tile), then a
    1x1 one over as many (the FC kernel takes a pointwise layer that large)."""
    w = numpy_helper.from_array(RNG.normal(0, 0.05, (8, 256, 3, 3)).astype(np.float32), "w")
    w2 = numpy_helper.from_array(RNG.normal(0, 0.05, (4, 8, 1, 1)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="deep", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["y", "w2"], ["z"], name="point")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256, 4, 4])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4, 4, 4])], [w, w2])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_a_layer_helium_declines_runs_on_the_dsp_kernels_and_is_named(tmp_path):
    deep_conv_model(tmp_path / "m.onnx")
    r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", "compile", str(tmp_path / "m.onnx"), "--board",
                        "cortex-m55", "--profile", "lite", "--calib", "random", "-o", str(tmp_path / "out"), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    reason = "helium: a column of 2304 values (the 4-pixel im2col tile takes 2048)"
    assert report["fallbacks"] == [{"layer": "deep", "op": "Conv", "kernel": "conv2d_s8_dsp", "reason": reason}]
    assert f"cuvil-sdk: note: layer 'deep' (Conv) runs the fallback kernel conv2d_s8_dsp: {reason}" in r.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["fallbacks"] == report["fallbacks"]
    kernels = {layer["name"]: layer["kernel"] for layer in manifest["layers"]}
    assert kernels["deep"] == "conv2d_s8_dsp" and kernels["point"] == "conv2d_s8_mve"


def test_cortex_m_boards_name_their_qemu_machine():
    """`boards --json` gives each Cortex-M board's `runs_on` with the QEMU machine (the shape of
    cortex-m7's), its kernel sets and its budget."""
    r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", "boards", "--json"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    boards = {b["name"]: b for b in json.loads(r.stdout)["boards"]}
    for name, machine, kernels in (("cortex-m7", "mps2-an500", ["cortex_m_dsp"]),
                                   ("cortex-m4", "mps2-an386", ["cortex_m_dsp"]),
                                   ("cortex-m33", "mps2-an505", ["cortex_m_dsp"]),
                                   ("cortex-m55", "mps3-an547", ["helium", "cortex_m_dsp"])):
        b = boards[name]
        assert b["runs_on"] == f"qemu-system-arm -M {machine} -icount shift=0", b
        assert b["kernels"] == kernels and b["kind"] == "firmware" and b["flash_bytes"] > 0 and b["ram_bytes"] > 0


def test_options_the_new_boards_do_not_have_are_refused_in_one_line(tmp_path):
    """The Cortex-M4/M33/M55 boards have neither a serial harness nor a bootloader: --port and
    `flash` are refused with exit 2 and one line naming the board (and, for --port, those that
    have the harness)."""
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((1, 1, 8, 8), np.float32))
    model = Path(__file__).resolve().parents[1] / "sdk" / "examples" / "digits_cnn.onnx"
    for args in (["run", "--board", "cortex-m55", "--profile", "lite", "--model", str(model), "--input", str(x),
                  "--output", str(tmp_path / "y.npz"), "--calib", "random", "--port", "socket://127.0.0.1:1"],
                 ["flash", "--board", "cortex-m33", "--port", "socket://127.0.0.1:1", str(x)]):
        r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", *args], capture_output=True, text=True, timeout=120)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("cuvil-sdk: error: "), r.stderr
        assert f"board '{args[2]}'" in lines[0], lines[0]
        if args[0] == "run":
            assert "cortex-m7-app" in lines[0], lines[0]
