"""No silent fall-back: a layer that runs a portable kernel on a board with a faster kernel
set is named, with the reason, on stderr, in `compile --json`/`build`'s report and in the
manifest. `compile` is enough (no toolchain): selection happens in code generation."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.kernels.simd_layout import SUM_RANGE


K = 70_000  # full-range weights: 255 * 127 * K passes int32, the SIMD sets' 32-bit sums could not hold it


def wide_fc_model(path: Path) -> None:
    """A fully connected layer of K inputs of weights +-0.01 (quantized to +-127: the avx2 set
    declines it), then Sigmoid (a lookup table: no SIMD kernel)."""
    signs = np.random.default_rng(0).choice([-0.01, 0.01], (4, K)).astype(np.float32)
    w = numpy_helper.from_array(signs, "w")
    fc = helper.make_node("Gemm", ["x", "w"], ["f"], name="wide", transB=1)
    sig = helper.make_node("Sigmoid", ["f"], ["y"], name="sig")
    graph = helper.make_graph([fc, sig], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def compile_json(tmp: Path, board: str) -> tuple[dict, str]:
    model = tmp / "m.onnx"
    wide_fc_model(model)
    r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", "compile", str(model), "--board", board,
                        "--profile", "standard", "--calib", "random", "-o", str(tmp / board), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def test_declined_and_uncovered_layers_are_named_with_their_reason(tmp_path):
    report, stderr = compile_json(tmp_path, "host")
    by_layer = {f["layer"]: f for f in report["fallbacks"]}
    assert by_layer["wide"]["kernel"] == "fc_s8" and by_layer["wide"]["reason"] == "avx2: " + SUM_RANGE
    assert by_layer["sig"]["reason"] == "avx2: no avx2 kernel for lut_s8"
    assert f"cuvil-sdk: note: layer 'wide' (Gemm) runs the portable kernel fc_s8: avx2: {SUM_RANGE}" \
        in stderr.splitlines()
    manifest = json.loads((tmp_path / "host" / "manifest.json").read_text())
    assert manifest["fallbacks"] == report["fallbacks"]


def test_a_board_without_a_faster_set_reports_none(tmp_path):
    report, stderr = compile_json(tmp_path, "host-portable")
    assert report["fallbacks"] == [] and "runs the portable kernel" not in stderr



def chain_of_sigmoids(path: Path, count: int) -> None:
    nodes = [helper.make_node("Sigmoid", [f"t{i}"], [f"t{i + 1}"], name=f"s{i}") for i in range(count)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info(f"t{count}", TensorProto.FLOAT, [1, 16])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_many_fallbacks_are_summed_up_per_kernel_and_listed_whole_on_request(tmp_path):
    """A detector can put 500 layers on a slower kernel: past 8, one line per kernel and reason
    (count, ops, first layers), and where the whole list is; --verbose names each."""
    chain_of_sigmoids(tmp_path / "m.onnx", 12)
    base = [sys.executable, "-m", "cuvil_sdk.cli", "compile", str(tmp_path / "m.onnx"), "--board", "host",
            "--profile", "standard", "--calib", "random", "--json"]
    short = subprocess.run(base + ["-o", str(tmp_path / "a")], capture_output=True, text=True, timeout=300)
    notes = [l for l in short.stderr.splitlines() if l.startswith("cuvil-sdk: note:")]
    assert notes == ["cuvil-sdk: note: 12 layers (Sigmoid: 's0', 's1', 's2', ...) run the portable kernel lut_s8: "
                     "avx2: no avx2 kernel for lut_s8",
                     "cuvil-sdk: note: 12 layers on slower kernels in all; each is listed under `fallbacks` in "
                     "manifest.json and report.json, and by --verbose"]
    assert len(json.loads(short.stdout)["fallbacks"]) == 12
    verbose = subprocess.run(base + ["-o", str(tmp_path / "b"), "--verbose"], capture_output=True, text=True,
                             timeout=300)
    named = [l for l in verbose.stderr.splitlines() if l.startswith("cuvil-sdk: note: layer ")]
    assert len(named) == 12 and "layer 's11' (Sigmoid) runs the portable kernel lut_s8" in named[-1]
