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


def dilated_conv_model(path: Path) -> None:
    """Conv 3x3 with dilation 2 (the avx2 and neon sets decline dilation), then Softmax
    (no SIMD softmax kernel)."""
    w = numpy_helper.from_array(np.random.default_rng(0).normal(0, 0.3, (8, 4, 3, 3)).astype(np.float32), "w")
    conv = helper.make_node("Conv", ["x", "w"], ["c"], name="dilated", dilations=[2, 2], pads=[2, 2, 2, 2])
    flat = helper.make_node("Flatten", ["c"], ["f"], name="flat")
    soft = helper.make_node("Softmax", ["f"], ["y"], name="soft", axis=1)
    graph = helper.make_graph([conv, flat, soft], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 288])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def compile_json(tmp: Path, board: str) -> tuple[dict, str]:
    model = tmp / "m.onnx"
    dilated_conv_model(model)
    r = subprocess.run([sys.executable, "-m", "cuvil_sdk.cli", "compile", str(model), "--board", board,
                        "--profile", "standard", "--calib", "random", "-o", str(tmp / board), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def test_declined_and_uncovered_layers_are_named_with_their_reason(tmp_path):
    report, stderr = compile_json(tmp_path, "host")
    by_layer = {f["layer"]: f for f in report["fallbacks"]}
    assert by_layer["dilated"]["kernel"] == "conv2d_s8" and by_layer["dilated"]["reason"] == "avx2: dilated convolution"
    assert by_layer["soft"]["reason"] == "avx2: no avx2 kernel for softmax_s8"
    assert "cuvil-sdk: note: layer 'dilated' (Conv) runs the portable kernel conv2d_s8: avx2: dilated convolution" \
        in stderr.splitlines()
    manifest = json.loads((tmp_path / "host" / "manifest.json").read_text())
    assert manifest["fallbacks"] == report["fallbacks"]


def test_a_board_without_a_faster_set_reports_none(tmp_path):
    report, stderr = compile_json(tmp_path, "host-portable")
    assert report["fallbacks"] == [] and "runs the portable kernel" not in stderr
