"""A model whose input is larger than the Cortex-M7's RAM runs when its arena goes to PSRAM (issue
39: the semihosting harness kept a 602 KB float and a 150 KB int8 copy of a 224x224x3 input in
SRAM, so the link failed however the arena was placed). The harness now reads a float input in
chunks, quantized as it comes, and keeps its sample buffers with the arena; the outputs equal the
host library's bit for bit (int8 is the same on every board)."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from models import cli

pytestmark = pytest.mark.slow


def image_model(path) -> None:
    """1x3x224x224 (602 KB as float, 150 KB as int8) -> 8x8 stride-8 conv -> Relu -> mean."""
    w = numpy_helper.from_array((np.random.default_rng(0).standard_normal((4, 3, 8, 8)) * 0.1).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], strides=[8, 8], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["g"], name="pool"),
             helper.make_node("Flatten", ["g"], ["y"], name="flat")]
    graph = helper.make_graph(nodes, "image", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def test_a_224x224x3_input_runs_with_its_arena_in_psram(tmp_path):
    image_model(tmp_path / "image.onnx")
    rng = np.random.default_rng(1)
    np.save(tmp_path / "calib.npy", rng.random((4, 3, 224, 224), dtype=np.float32))
    np.save(tmp_path / "x.npy", rng.random((2, 3, 224, 224), dtype=np.float32))
    common = ["--profile", "lite", "--model", tmp_path / "image.onnx", "--calib", tmp_path / "calib.npy",
              "--input", tmp_path / "x.npy", "--json"]
    m7 = cli("run", "--board", "cortex-m7", "--arena-region", "psram", *common, "--output", tmp_path / "m7.npz",
             cwd=tmp_path)
    assert m7.returncode == 0, m7.stderr
    report = json.loads(m7.stdout)
    assert report["ram_bytes"] < 64 * 1024  # neither copy of the input is in SRAM
    host = cli("run", "--board", "host", *common, "--output", tmp_path / "host.npz", cwd=tmp_path)
    assert host.returncode == 0, host.stderr
    assert np.array_equal(np.load(tmp_path / "m7.npz")["y"], np.load(tmp_path / "host.npz")["y"])
