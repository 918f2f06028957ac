"""Each pass on tiny graphs: the float reference gives the same outputs before and after."""
import copy

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from cuvil_sdk.boards import get_board
from cuvil_sdk.frontend import load_model
from cuvil_sdk.frontend.loader import infer_shapes, to_ir
from cuvil_sdk.passes import (fold_batchnorm, fold_constants, fold_conv_bias, fuse_activations, remove_identities,
                              to_channels_last)
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_float

RNG = np.random.default_rng(0)


def graph_of(nodes, inits, in_shape, out_name="y", extra_inputs=()):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)] + list(extra_inputs)
    g = helper.make_graph(nodes, "t", inputs, [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(v.astype(np.float32) if v.dtype.kind == "f" else v, k)
                           for k, v in inits.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    ir = to_ir(model, "t", {}, get_board("host"))
    infer_shapes(ir, get_board("host"))
    return ir


def assert_same_function(before, after, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    a = run_float(before, {"x": x})
    b = run_float(after, {"x": x})
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-5)


def conv_bn_relu():
    w = RNG.standard_normal((4, 3, 3, 3))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("BatchNormalization", ["c", "g", "beta", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("Identity", ["r"], ["i"], name="id"),
             helper.make_node("MaxPool", ["i"], ["y"], kernel_shape=[2, 2], strides=[2, 2], name="pool")]
    inits = {"w": w, "b": RNG.standard_normal(4), "g": RNG.random(4) + 0.5, "beta": RNG.standard_normal(4),
             "m": RNG.standard_normal(4), "v": RNG.random(4) + 0.1}
    return graph_of(nodes, inits, [1, 3, 6, 6])


def test_batchnorm_folds_into_conv():
    g = conv_bn_relu()
    before = copy.deepcopy(g)
    fold_batchnorm(g)
    assert "BatchNormalization" not in [n.op for n in g.nodes]
    assert_same_function(before, g, (1, 3, 6, 6))


@pytest.mark.parametrize("shape, folds", [((1, 4, 1, 1), True), ((4, 1, 1), True), ((1,), True), ((), True),
                                          ((4, 1, 6), False), ((6,), False)])
def test_add_of_a_per_channel_constant_after_conv_becomes_its_bias(shape, folds):
    """quantize_dynamic's Conv: ConvInteger (no bias), then Add(y, Reshape(b, [1, M, 1, 1]))."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Add", ["c", "b"], ["y"], name="bias_add")]
    g = graph_of(nodes, {"w": RNG.standard_normal((4, 3, 3, 3)), "b": RNG.standard_normal(shape)}, [1, 3, 6, 6])
    before = copy.deepcopy(g)
    fold_conv_bias(g)
    assert [n.op for n in g.nodes] == (["Conv"] if folds else ["Conv", "Add"])
    assert g.outputs == ["y"] and g.nodes[-1].outputs == ["y"]
    assert_same_function(before, g, (1, 3, 6, 6))


def test_lonely_batchnorm_becomes_depthwise_conv():
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[1, 1]),
             helper.make_node("BatchNormalization", ["p", "g", "beta", "m", "v"], ["y"])]
    inits = {"g": RNG.random(3) + 0.5, "beta": RNG.standard_normal(3), "m": RNG.standard_normal(3),
             "v": RNG.random(3) + 0.1}
    g = graph_of(nodes, inits, [1, 3, 4, 4])
    before = copy.deepcopy(g)
    fold_batchnorm(g)
    conv = [n for n in g.nodes if n.op == "Conv"]
    assert len(conv) == 1 and conv[0].attrs["group"] == 3
    assert_same_function(before, g, (1, 3, 4, 4))


def test_identity_removed_and_relu_fused():
    g = conv_bn_relu()
    before = copy.deepcopy(g)
    remove_identities(g)
    fold_batchnorm(g)
    fuse_activations(g)
    ops = [n.op for n in g.nodes]
    assert ops == ["Conv", "MaxPool"]
    assert g.nodes[0].activation == (0.0, np.inf)
    assert_same_function(before, g, (1, 3, 6, 6))


def test_constant_folding_evaluates_constant_subgraphs():
    nodes = [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.float32([2.0]))),
             helper.make_node("Mul", ["k", "c"], ["kc"]),
             helper.make_node("Add", ["x", "kc"], ["y"])]
    g = graph_of(nodes, {"c": np.float32([1.5, -1.0, 0.25])}, [2, 3])
    before = copy.deepcopy(g)
    fold_constants(g)
    assert [n.op for n in g.nodes] == ["Add"]
    assert_same_function(before, g, (2, 3))


def test_layout_pass_cancels_transpose_pairs_between_convs():
    w1, w2 = RNG.standard_normal((4, 3, 3, 3)), RNG.standard_normal((4, 4, 1, 1))
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["b"]),
             helper.make_node("Add", ["b", "r"], ["s"]),
             helper.make_node("GlobalAveragePool", ["s"], ["y"])]
    g = graph_of(nodes, {"w1": w1, "w2": w2}, [1, 3, 5, 5])
    before = copy.deepcopy(g)
    to_channels_last(g)
    transposes = [n for n in g.nodes if n.op == "Transpose"]
    assert len(transposes) == 1 and transposes[0].inputs == ["x"]  # only the graph input is transposed
    assert all(n.channels_last for n in g.nodes if n.op in ("Conv", "GlobalAveragePool"))
    assert_same_function(before, g, (1, 3, 5, 5))


def test_layout_pass_removes_tensorflow_style_transposes():
    """NHWC input -> Transpose to NCHW -> Conv -> Transpose back: no data movement left."""
    w = RNG.standard_normal((2, 1, 3, 3))
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["t", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["c"], ["y"], perm=[0, 2, 3, 1])]
    g = graph_of(nodes, {"w": w}, [1, 4, 4, 1])
    before = copy.deepcopy(g)
    to_channels_last(g)
    assert [n.op for n in g.nodes if n.op == "Transpose"] == []
    assert_same_function(before, g, (1, 4, 4, 1))


# --- Where(Less(x, c), c, x) -> Max / Min (passes/compare_select.py) ---------------------------

def compare_select_model(compare: str, x_first: bool, pick_c_first: bool) -> onnx.ModelProto:
    cmp_inputs = ["x", "c"] if x_first else ["c", "x"]
    picks = ["c", "x"] if pick_c_first else ["x", "c"]
    nodes = [helper.make_node(compare, cmp_inputs, ["m"], name="cmp"),
             helper.make_node("Where", ["m", *picks], ["y"], name="sel")]
    c = numpy_helper.from_array(np.array([[-0.5], [0.25], [1.0]], np.float32), "c")
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])], [c])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("compare", ["Less", "LessOrEqual", "Greater", "GreaterOrEqual"])
@pytest.mark.parametrize("x_first", [True, False])
@pytest.mark.parametrize("pick_c_first", [True, False])
def test_compare_select_becomes_min_max(tmp_path, compare, x_first, pick_c_first):
    """Every mirrored form gives ORT's values, with no comparison left (it would be refused)."""
    model = compare_select_model(compare, x_first, pick_c_first)
    onnx.save(model, str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", get_profile("standard"), get_board("host"), {})
    assert [n.op for n in g.nodes] in (["Max"], ["Min"])
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    x[0, 1, :2] = 0.25  # ties with c: both choices are equal
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(run_float(g, {"x": x})["y"], expected[0])


def test_compare_select_with_another_operand_stays_a_comparison(tmp_path):
    """Where(Less(x, c), d, x) with d != c is no Max: the comparison and the select stay (a run-time
    bool mask into Where, ops/compare.py and select.py) and equal ONNX Runtime."""
    model = compare_select_model("Less", True, True)
    model.graph.initializer.append(numpy_helper.from_array(np.float32(3.0), "d"))
    model.graph.node[1].input[1] = "d"
    onnx.save(model, str(tmp_path / "m.onnx"))
    g = load_model(tmp_path / "m.onnx", get_profile("standard"), get_board("host"), {})
    assert [n.op for n in g.nodes] == ["Less", "Where"] and g.tensors["m"].dtype == "bool"
    x = np.linspace(-4, 4, 24, dtype=np.float32).reshape(2, 3, 4)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(run_float(g, {"x": x})["y"], expected[0])
