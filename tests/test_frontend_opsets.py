"""Opsets 13 to 21 load as exporters write them (axes as inputs from 13 for Squeeze, from 18
for ReduceMean), with weights inline or in an external-data file, and compute what ONNX
Runtime computes."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.boards import get_board
from cuvil_sdk.errors import ModelError
from cuvil_sdk.frontend import load_model
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_float

OPSETS = list(range(13, 22))


def exporter_model(opset: int) -> onnx.ModelProto:
    """Conv -> Relu -> ReduceMean over H, W -> Squeeze -> Gemm, in the form of `opset`."""
    rng = np.random.default_rng(opset)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
             numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "fc_w"),
             numpy_helper.from_array(np.array([2, 3], np.int64), "hw"),
             numpy_helper.from_array(np.array([2, 3], np.int64), "sq_axes")]
    mean_inputs, mean_attrs = (["r", "hw"], {}) if opset >= 18 else (["r"], {"axes": [2, 3]})
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("ReduceMean", mean_inputs, ["m"], keepdims=1, **mean_attrs),
             helper.make_node("Squeeze", ["m", "sq_axes"], ["s"]),
             helper.make_node("Gemm", ["s", "fc_w"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "exported", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize("external", [False, True], ids=["inline", "external-data"])
@pytest.mark.parametrize("opset", OPSETS)
def test_opset_loads_and_matches_onnxruntime(tmp_path, opset, external):
    model = exporter_model(opset)
    path = tmp_path / "m.onnx"
    if external:  # (saving moves the tensors of the model it is given out: save a copy)
        onnx.save_model(exporter_model(opset), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                        location="m.data", size_threshold=0)
        assert (tmp_path / "m.data").is_file()
        assert not onnx.load(str(path), load_external_data=False).graph.initializer[0].raw_data
    else:
        onnx.save(model, str(path))
    g = load_model(path, get_profile("standard"), get_board("host"), {})
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x})
    np.testing.assert_allclose(run_float(g, {"x": x})["y"], expected, rtol=1e-5, atol=1e-5)


def test_missing_external_data_file_is_named(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save_model(exporter_model(21), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="m.data", size_threshold=0)
    (tmp_path / "m.data").unlink()
    with pytest.raises(ModelError, match=r"m\.data.*file not found"):
        load_model(path, get_profile("standard"), get_board("host"), {})
